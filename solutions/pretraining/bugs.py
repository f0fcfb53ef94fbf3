"""Planted bugs of the assignment "Pretraining" (``pretraining.ipynb`` beside this file).

Each :class:`~grader.spec.Bug` is one exact substring replacement in one answer cell of the source notebook's
solution. The solution with that one bug must lose points in exactly the test cells listed in ``loses`` and
keep full marks in every other. ``fine_tune_reviews`` trains the chapter's GPT with the student's
``masked_lm_loss``, ``causal_lm_loss`` (the auxiliary LM loss), ``layer_rates`` and ``triangular_lr``:
whether a bug in one of those spoils the fine-tuned classifier is measured, not guessed (TRAINING_WITH_BUGS:
the grader's test AUC for seeds 1, 2 and 3 on the sentiment of 1,000 labelled snippets, threshold 0.685; the
solution gets 0.699 to 0.730 over 20 seeds, the same network from random weights at most 0.671). The bugs of
``mask_tokens``, ``cls_logits`` and ``masked_lm_loss_grad`` do not reach the trainer; the mean of
``masked_lm_loss`` over every position equals the right one there (one labelled position a snippet), and so
does ``layer_rates`` upwards at the default decay of 1. The grading test suite
(tests/test_grading_assignments.py) plants each one; private.

One run per submission: the grader fine-tunes once, on a seed of its own (four passes over the 1,000
snippets). Measured that way, with ``python scripts/trained_part_seeds.py pretraining --bug N --first 1
--seeds 3 --jobs 2``: the triangular peak at the wrong step 0.711 to 0.717, both causal_lm_loss bugs (0.706
to 0.719, 0.705 to 0.709) and the GPT left in evaluation mode (0.690 to 0.706) pass the outcome; no
zero_grad (0.506 to 0.561) and zero_grad after backward (0.457 to 0.593) fail it. The recipe case
(reference.RECIPE_SETTINGS: 3 steps at a flat rate, the weights compared with the reference recipe's, to the
bit for the solution) fails every trainer bug and both causal_lm_loss bugs on every seed measured (relative
error 0.41 to 1.37: the auxiliary loss is part of every step), so they lose the training cell whatever their
outcome; the labels taken in the data's order rather than the batch's differ from the recipe's first step, and
its full run raises an error once the order passes the 1,000 labels. The triangular peak at the wrong step
passes the recipe (a flat schedule, ratio 1, puts its peak nowhere) and loses its own part; its outcome
depends on the seed (``may_lose`` the training cell): student seeds 0 to 19 gave 0.693 to 0.731, all passing
(``--bug 12 --seeds 16 --first 4`` with the three below), but a grading run in CI scored 0.674 on its case
seed 468679155, under the bar: a warm-up over 90% of the steps leaves the peak rate to the last few, and
where they land varies.
"""
from __future__ import annotations

from grader.spec import Bug

MASK, LOSS, PAIR, EMBED, HEAD, MIX, RATES, CAUSAL, TRAIN = (
    "mask-test", "loss-test", "pair-test", "embed-test", "head-test", "mix-test", "rates-test", "causal-test",
    "train-test")

#: The grader's test AUC of the trainer with each bug upstream of it (seeds 1, 2, 3; measured).
TRAINING_WITH_BUGS: dict[str, tuple[float, ...]] = {
    "triangular_lr: the peak at the wrong step": (0.7116, 0.7169, 0.7107),  # passes: a warm-up over 90% of the
    # steps still reaches the peak rate once
    "causal_lm_loss: the targets not shifted": (0.706, 0.7193, 0.7152),  # passes: an auxiliary loss that asks
    # each position for its own piece teaches nothing, and the labels still train the classifier (the recipe
    # fails it)
    "causal_lm_loss: padding targets counted": (0.7049, 0.7086, 0.7071),  # passes (the recipe fails it)
    "fine_tune_reviews: no zero_grad": (0.5255, 0.5056, 0.5614),  # fails: the summed gradients throw the
    # classifier about; it ranks no better than chance
    "fine_tune_reviews: zero_grad after backward": (0.5931, 0.4941, 0.4571),  # fails: AdamW never sees a
    # gradient, only its weight decay moves the weights
    "fine_tune_reviews: the GPT left in evaluation mode": (0.6976, 0.706, 0.6903),  # passes (the recipe fails it)
}

BUGS: list[Bug] = [
    Bug("mask_tokens: [CLS] and [SEP] may be chosen (only padding excluded)",
        "mask-solution", "chosen = (u_choose < rate) & (ids >= 5)", "chosen = (u_choose < rate) & (ids != PAD)",
        {MASK}),
    Bug("mask_tokens: every chosen piece replaced by [MASK] (no random piece, none kept)",
        "mask-solution",
        "inputs = torch.where(chosen & (u_how < 0.8), torch.full_like(ids, MASK), ids)\n"
        "    inputs = torch.where(chosen & (u_how >= 0.8) & (u_how < 0.9), random_ids, inputs)",
        "inputs = torch.where(chosen, torch.full_like(ids, MASK), ids)", {MASK}),
    Bug("mask_tokens: labels at every position (the loss would score the visible pieces too)",
        "mask-solution", "labels = torch.where(chosen, ids, torch.full_like(ids, IGNORE))", "labels = ids.clone()",
        {MASK}),
    Bug("mask_tokens: the 80/10/10 split drawn with the same number that chose the position",
        "mask-solution", "u_how = torch.rand(ids.shape, generator=generator).to(ids.device)",
        "u_how = u_choose", {MASK}),
    Bug("masked_lm_loss: the mean over every position (divided by B * T), not over the labelled ones",
        "loss-solution", "return -picked.mean()", "return -picked.sum() / labels.numel()", {LOSS}),
    Bug("masked_lm_loss_grad: not divided by the number of labelled positions",
        "grad-solution", "return grad * chosen[..., None] / chosen.sum()", "return grad * chosen[..., None]", {LOSS}),
    Bug("pair_input: segment ids swapped (the first text in segment 1, the second in 0)",
        "pair-solution",
        "segments = [0] * len(ids)\n    if b is not None:\n        ids += [*b, SEP]\n"
        "        segments += [1] * (len(b) + 1)",
        "segments = [1] * len(ids)\n    if b is not None:\n        ids += [*b, SEP]\n"
        "        segments += [0] * (len(b) + 1)", {PAIR}),
    Bug("bert_embed: positions counted from 1", "embed-solution", "E_pos[:T][None]", "E_pos[1:T + 1][None]",
        {EMBED}),
    Bug("bert_embed: the segment embeddings left out (every position in segment 0)",
        "embed-solution", "+ E_seg[segments]", "+ E_seg[0]", {EMBED}),
    Bug("cls_logits: the pooler's tanh missing",
        "head-solution", "torch.tanh(h[:, 0] @ W_pool.T + b_pool)", "h[:, 0] @ W_pool.T + b_pool", {HEAD}),
    Bug("scalar_mix: the weights used without the softmax",
        "mix-solution", "s = torch.softmax(w, dim=0)  # (L,)", "s = w", {MIX}),
    Bug("layer_rates: the decay applied upwards (the bottom group gets lr)",
        "rates-solution", "lr / decay ** (groups - 1 - k)", "lr / decay ** k", {RATES}),
    Bug("triangular_lr: the peak at the wrong step (total * (1 - cut_frac))",
        "rates-solution", "cut = max(1, math.floor(total * cut_frac))",
        "cut = max(1, math.floor(total * (1 - cut_frac)))", {RATES}, may_lose=frozenset({TRAIN})),
    Bug("causal_lm_loss: the targets not shifted (position t scored on its own piece)",
        "causal-solution", "targets = ids[:, 1:]  # (B, T-1)", "targets = ids[:, :-1]", {CAUSAL, TRAIN}),
    Bug("causal_lm_loss: padding targets counted",
        "causal-solution", "real = targets != pad", "real = torch.ones_like(targets, dtype=torch.bool)",
        {CAUSAL, TRAIN}),
    Bug("fine_tune_reviews: no zero_grad (the gradients of every step add up)",
        "train-solution", "        opt.zero_grad()\n", "", {TRAIN}),
    Bug("fine_tune_reviews: zero_grad after backward (each step's gradients erased before AdamW sees them)",
        "train-solution", "        opt.zero_grad()\n        loss.backward()\n",
        "        loss.backward()\n        opt.zero_grad()\n", {TRAIN}),
    Bug("fine_tune_reviews: the GPT left in evaluation mode (no dropout while it trains)",
        "train-solution", "gpt, head = load_gpt(), init_head(seed)",
        "gpt, head = load_gpt().eval(), init_head(seed)", {TRAIN}),
    Bug("fine_tune_reviews: the labels taken in the data's order, not the batch's (not shuffled with the snippets)",
        "train-solution", "labels[index][:, None]", "labels[t * batch:(t + 1) * batch][:, None]", {TRAIN}),
    Bug("numerical_gradient: forward differences (f(x + eps) - f(x)) / eps",
        "gradcheck-solution", "(f(x + bump) - f(x - bump)) / (2 * eps)", "(f(x + bump) - f(x)) / eps",
        {"gradcheck-test"}),
    Bug("relative_error: 0 / 0 = nan when both tensors are zero (no special case)",
        "gradcheck-solution", "    if size == 0:\n        return 0.0\n", "", {"gradcheck-test"}),
]

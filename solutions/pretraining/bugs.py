"""Planted bugs of the assignment "Pretraining" (``pretraining.ipynb`` beside this file).

Each :class:`~grader.spec.Bug` is one exact substring replacement in one answer cell of the source notebook's
solution. The solution with that one bug must lose points in exactly the test cells listed in ``loses`` and
keep full marks in every other. ``fine_tune_reviews`` trains with the student's ``cls_logits``,
``masked_lm_loss``, ``layer_rates`` and ``triangular_lr``: whether a bug in one of those spoils the fine-tuned
classifier is measured, not guessed (TRAINING_WITH_BUGS: the grader's test AUC for seeds 1, 2 and 3 on the
word-order task, threshold 0.6; the solution gets 0.732 to 0.775 over 140 seeds, a model that ignores word order
0.5). The grader scores the returned weights with its own head, [CLS] through the tanh pooler; a model trained
with another head is scored as a different function from the one it learnt. The grading test suite
(tests/test_grading_assignments.py) plants each one; private.

One run per submission: the grader fine-tunes once, on a seed of its own (two passes over the 8,000 training
snippets). Measured that way, with ``python scripts/trained_part_seeds.py pretraining --bug N --seeds K``: the
solution's test AUC 0.732 to 0.775 over student seeds 0-139, all pass; no zero_grad 0.491 to 0.500 (seeds 1-3),
all fail (on the reviews' sentiment, the task before, it reached 0.606 here and once cleared that task's bar in
CI); the pooler's tanh missing 0.762 to 0.767 and the triangular peak at the wrong step 0.754 to 0.766 (seeds
1-3), both pass the outcome. The recipe case (reference.RECIPE_SETTINGS: 3 steps at a flat rate, the weights
compared with the reference recipe's, to the bit for the solution) fails the tanh missing (relative error 0.18
to 0.56 over seeds 1-3; 0.18 to 0.76 over seeds 0-19 with the one-pass recipe, whose first steps are these) and
every trainer bug on every seed measured: no zero_grad (0.69 to 2.6 over seeds 1-3), zero_grad after backward
(1.0 to 1.015 over seeds 0-9, its outcome 0.492 to 0.512), the BERT left in evaluation
mode (no dropout: 0.48 to 0.69 over seeds 0-1, while its outcome, 0.758 to 0.767, passes) and the labels taken in
the data's order rather than the batch's (2.1 to 2.2 over seeds 0-1; its full run raises an IndexError when the
second pass begins, past the 8,000 labels). So they lose the training cell whatever their outcome. The triangular
peak at the wrong step passes the recipe (a flat schedule, ratio 1, puts its peak nowhere) and loses only its
own part.
"""
from __future__ import annotations

from grader.spec import Bug

MASK, LOSS, PAIR, EMBED, HEAD, MIX, RATES, CAUSAL, TRAIN = (
    "mask-test", "loss-test", "pair-test", "embed-test", "head-test", "mix-test", "rates-test", "causal-test",
    "train-test")

#: The grader's test AUC of the trainer with each bug upstream of it (seeds 1, 2, 3; measured).
TRAINING_WITH_BUGS: dict[str, tuple[float, ...]] = {
    "cls_logits: the pooler's tanh missing": (0.7631, 0.762, 0.767),  # passes the outcome: scored through
    # the grader's head, tanh included, it ranks the snippets as well as the solution (the recipe fails it)
    "triangular_lr: the peak at the wrong step": (0.7658, 0.7628, 0.7535),  # passes: a warm-up over 90% of the
    # steps still reaches the peak rate once (its accuracy, 0.6833, 0.6777, 0.6813, is the solution's)
    "fine_tune_reviews: no zero_grad": (0.5, 0.4981, 0.4914),  # fails: the summed gradients throw the
    # classifier about; it ranks no better than chance
    "fine_tune_reviews: zero_grad after backward": (0.5064, 0.507, 0.5116),  # fails (0.492 to 0.512 over
    # seeds 0-9): AdamW never sees a gradient, only its weight decay moves the weights
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
        "head-solution", "torch.tanh(h[:, 0] @ W_pool.T + b_pool)", "h[:, 0] @ W_pool.T + b_pool", {HEAD, TRAIN}),
    Bug("scalar_mix: the weights used without the softmax",
        "mix-solution", "s = torch.softmax(w, dim=0)  # (L,)", "s = w", {MIX}),
    Bug("layer_rates: the decay applied upwards (the bottom group gets lr)",
        "rates-solution", "lr / decay ** (groups - 1 - k)", "lr / decay ** k", {RATES}),
    Bug("triangular_lr: the peak at the wrong step (total * (1 - cut_frac))",
        "rates-solution", "cut = max(1, math.floor(total * cut_frac))",
        "cut = max(1, math.floor(total * (1 - cut_frac)))", {RATES}),
    Bug("causal_lm_loss: the targets not shifted (position t scored on its own piece)",
        "causal-solution", "targets = ids[:, 1:]  # (B, T-1)", "targets = ids[:, :-1]", {CAUSAL}),
    Bug("causal_lm_loss: padding targets counted",
        "causal-solution", "real = targets != pad", "real = torch.ones_like(targets, dtype=torch.bool)", {CAUSAL}),
    Bug("fine_tune_reviews: no zero_grad (the gradients of every step add up)",
        "train-solution", "        opt.zero_grad()\n", "", {TRAIN}),
    Bug("fine_tune_reviews: zero_grad after backward (each step's gradients erased before AdamW sees them)",
        "train-solution", "        opt.zero_grad()\n        loss.backward()\n",
        "        loss.backward()\n        opt.zero_grad()\n", {TRAIN}),
    Bug("fine_tune_reviews: the BERT left in evaluation mode (no dropout while it trains)",
        "train-solution", "bert, head = load_bert(), init_head(seed)",
        "bert, head = load_bert().eval(), init_head(seed)", {TRAIN}),
    Bug("fine_tune_reviews: the labels taken in the data's order, not the batch's (not shuffled with the snippets)",
        "train-solution", "labels[index][:, None]", "labels[t * batch:(t + 1) * batch][:, None]", {TRAIN}),
    Bug("numerical_gradient: forward differences (f(x + eps) - f(x)) / eps",
        "gradcheck-solution", "(f(x + bump) - f(x - bump)) / (2 * eps)", "(f(x + bump) - f(x)) / eps",
        {"gradcheck-test"}),
    Bug("relative_error: 0 / 0 = nan when both tensors are zero (no special case)",
        "gradcheck-solution", "    if size == 0:\n        return 0.0\n", "", {"gradcheck-test"}),
]

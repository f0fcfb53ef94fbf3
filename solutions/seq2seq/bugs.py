"""Planted bugs of the assignment "Sequence to sequence with attention" (``seq2seq.ipynb`` beside this file).

Each :class:`~grader.spec.Bug` is one exact substring replacement in one answer cell of the source notebook's
solution. The solution with that one bug must lose points in exactly the test cells listed in ``loses`` and
keep full marks in every other. ``decoder_step`` calls the student's ``dot_attention``, and
``train_translator`` trains with the student's ``decoder_step``, ``teacher_forced_nll`` and
``masked_cross_entropy``: whether a bug upstream of the trainer spoils the trained part is measured, not
guessed (TRAINING_WITH_BUGS).

The trained part has two cases: the full run, whose teacher-forced test loss the grader measures with the course's
``Seq2Seq`` (the bar 2.8 after two epochs; the solution 2.417 to 2.575 over 20 seeds, the same translator without
attention 2.993 to 3.080, on the 757 test verses whose source does not occur in training), and the recipe's first 3
steps in small settings (batches of 512 pairs, so that every batch holds padding; clipping at 0.01, so that it acts
at every step), whose weights must be the reference recipe's up to a relative error of 1e-3 per tensor (the
solution: 1.8e-7 to 6.1e-6 over 40 seeds). The grader reads the weights in the course's layout, so a bug the
student's own decoder adapts to (the context and the state concatenated in the other order) still fails. A mistake
that the full run learns around (padding attended to, a gradient never zeroed, no clipping) fails the recipe. The
grading test suite (tests/test_grading_assignments.py) plants each one; private.

Measured with ``python scripts/trained_part_seeds.py seq2seq --bug N --seeds 20`` (the full run) and the
recipe case alone over 20 random seeds: every bug listed as losing the training cell fails it on every
seed measured at the rate 0.005 the recipe had before (the softmax over the queries: nan; [h; c] in the other
order 4.89 to 5.88; no teacher forcing 4.06 to 4.20; BOS/EOS off by one 11.6 to 12.4; the recipe's errors in
TRAINING_WITH_BUGS); TRAINING_WITH_BUGS gives today's full run (two epochs at 0.01) on student seeds 0 and 1
(``--bug N --seeds 2``): the bugs that the full run learns around stay 0.33 nats or more under the bar, the ones
that fail it 0.7 nats or more over it. These were measured on the 807 test verses before the 50 whose source
occurs in training were dropped; the solution's mean loss went from 2.431 (seeds 0-139) to 2.471 (seeds 0-19),
a shift far inside both margins. The mean per
sentence fails the recipe on 19 of 20 seeds (0.00075 to 0.032: a batch whose sentences are nearly all of one
length weighs them nearly alike), so it may lose the training cell (``may_lose``).
"""
from __future__ import annotations

from grader.spec import Bug

ATTENTION, BACKWARD, DECODER, LOSS, GREEDY, BEAM, BLEU, TRAIN = (
    "attention-test", "backward-test", "decoder-test", "loss-test", "greedy-test", "beam-test", "bleu-test",
    "train-test")

#: Each bug upstream of the trainer or in it: the grader's test loss of the full run (nats per token, the bar
#: 2.8: student seeds 0 and 1, two epochs at the rate 0.01) and the recipe case's largest relative error over
#: random seeds (bar 1e-3).
TRAINING_WITH_BUGS = {
    "dot_attention: softmax over the wrong axis": ((float("nan"),) * 2, ()),  # fails: nan in the weights
    "dot_attention: padding not masked": ((2.413, 2.428), (0.10, 0.22)),  # the recipe fails
    "dot_attention: padding masked with 0": ((2.413, 2.428), (0.10, 0.22)),  # the recipe fails
    "decoder_step: [h; c] in the other order": ((6.385, 6.319), ()),  # fails: the course's model reads [c; h]
    "masked_cross_entropy: padding not ignored": ((2.462, 2.423), (0.014, 0.28)),  # the recipe fails
    "masked_cross_entropy: the mean per sentence": ((2.394, 2.402), (0.00075, 0.032)),  # may lose (19 of 20)
    "teacher_forced_nll: fed its own prediction": ((3.544, 3.511), (0.17, 0.23)),  # fails both
    "teacher_forced_nll: BOS/EOS off by one": ((16.452, 15.976), (0.24, 0.33)),  # fails both
    "train_translator: zero_grad never called": ((), (0.0089, 0.031)),  # the recipe fails
    "train_translator: zero_grad after backward": ((), (0.18, 0.23)),  # fails: nothing is ever learnt
    "train_translator: the gradients not clipped": ((), (0.013, 0.048)),  # the recipe fails
}

BUGS: list[Bug] = [
    Bug("dot_attention: softmax over the wrong axis (the queries, dim=1, instead of the source positions)",
        "attention-solution", "weights = torch.softmax(scores, dim=-1)  # over the source positions",
        "weights = torch.softmax(scores, dim=1)", {ATTENTION, DECODER, TRAIN}),
    Bug("dot_attention: padding not masked (padded source positions get weight)",
        "attention-solution", '    scores = scores.masked_fill(~mask[:, None, :], float("-inf"))  # padding: weight '
        'exp(-inf) = 0\n', "", {ATTENTION, DECODER, TRAIN}),
    Bug("dot_attention: padding masked with 0 instead of -inf before the softmax",
        "attention-solution", 'scores.masked_fill(~mask[:, None, :], float("-inf"))  # padding',
        "scores.masked_fill(~mask[:, None, :], 0.0)  # padding", {ATTENTION, DECODER, TRAIN}),
    Bug("additive_attention: the tanh left out (a linear score)",
        "attention-solution", "hidden = torch.tanh((q @ W_q.T)[:, :, None, :] + (keys @ W_k.T)[:, None, :, :])",
        "hidden = (q @ W_q.T)[:, :, None, :] + (keys @ W_k.T)[:, None, :, :]", {ATTENTION}),
    Bug("dot_attention_backward: the softmax's Jacobian taken as diagonal (the row's sum term left out)",
        "backward-solution", "weights * (dweights - (weights * dweights).sum(dim=-1, keepdim=True))",
        "weights * dweights", {BACKWARD}),
    Bug("dot_attention_backward: dkeys paired with the values' gradient instead of the queries",
        "backward-solution", "dkeys = dscores.transpose(1, 2) @ q", "dkeys = dweights.transpose(1, 2) @ q",
        {BACKWARD}),
    Bug("decoder_step: [h; c] concatenated in the other order (the state first)",
        "decoder-solution", "torch.cat([context[:, 0], h], dim=-1)", "torch.cat([h, context[:, 0]], dim=-1)",
        {DECODER, TRAIN}),
    Bug("decoder_step: the attention weights returned with the query axis kept, (B, 1, S) instead of (B, S)",
        "decoder-solution", 'params["b_out"], h, weights[:, 0]', 'params["b_out"], h, weights', {DECODER}),
    Bug("masked_cross_entropy: padding not ignored (the mean over every position)",
        "loss-solution", "return -picked[real].mean()", "return -picked.mean()", {LOSS, TRAIN}),
    Bug("masked_cross_entropy: the mean per sentence, then over sentences (not per token)",
        "loss-solution", "return -picked[real].mean()",
        "return -((picked * real).sum(1) / real.sum(1)).mean()", {LOSS}, may_lose=frozenset({TRAIN})),
    Bug("teacher_forced_nll: the decoder fed its own prediction instead of the reference (no teacher forcing)",
        "loss-solution",
        "    for t in range(tgt.shape[1] - 1):\n        out, h = step(tgt[:, t], h)  # reads the reference's token t\n",
        "    y = tgt[:, 0]\n    for t in range(tgt.shape[1] - 1):\n        out, h = step(y, h)\n"
        "        y = out.argmax(dim=-1)\n", {LOSS, TRAIN}),
    Bug("teacher_forced_nll: BOS/EOS off by one (each position's target is the token it reads)",
        "loss-solution", "tgt[:, 1:], pad_id)  # predicts token t + 1", "tgt[:, :-1], pad_id)", {LOSS, TRAIN}),
    Bug("greedy_translate: finished sentences keep growing after their <eos>",
        "greedy-solution", "            if not finished[b]:\n                outputs[b].append(int(y[b]))\n"
        "                finished[b] = int(y[b]) == eos\n",
        "            outputs[b].append(int(y[b]))\n            finished[b] = finished[b] or int(y[b]) == eos\n",
        {GREEDY}),
    Bug("greedy_translate: the whole batch stops at the first <eos>",
        "greedy-solution", "if all(finished):", "if any(finished):", {GREEDY}),
    Bug("beam_search: length penalty inverted (multiplied by length ** alpha)",
        "beam-solution", "/ t ** alpha", "* t ** alpha", {BEAM}),
    Bug("beam_search: finished hypotheses keep growing (<eos> extensions stay in the beam)",
        "beam-solution", '        total[:, eos] = float("-inf")  # <eos> extensions are finished, not open\n', "",
        {BEAM}),
    Bug("corpus_scores: BLEU on token ids instead of text",
        "bleu-solution", "words.append(itos[i])", "words.append(str(i))", {BLEU}),
    Bug("corpus_scores: case-sensitive (lowercase=True left out)",
        "bleu-solution", "sacrebleu.BLEU(lowercase=True)", "sacrebleu.BLEU()", {BLEU}),
    Bug("corpus_scores: the words after <eos> kept (<eos> skipped, not the end)",
        "bleu-solution", "if i == 3:  # <eos>: the translation ends here\n                break",
        "if i == 3:  # <eos>\n                continue", {BLEU}),
    Bug("train_translator: zero_grad never called (each batch's gradients added to all the earlier ones)",
        "train-solution", "        optimizer.zero_grad()\n", "", {TRAIN}),
    Bug("train_translator: zero_grad after backward (the gradients erased before the step)",
        "train-solution", "        optimizer.zero_grad()\n        loss.backward()\n",
        "        loss.backward()\n        optimizer.zero_grad()\n", {TRAIN}),
    Bug("train_translator: the gradients not clipped",
        "train-solution", "        torch.nn.utils.clip_grad_norm_(list(params.values()), clip)\n", "", {TRAIN}),
    Bug("numerical_gradient: forward differences (f(x + eps) - f(x)) / eps",
        "gradcheck-solution", "(f(x + bump) - f(x - bump)) / (2 * eps)", "(f(x + bump) - f(x)) / eps",
        {"gradcheck-test"}),
    Bug("relative_error: 0 / 0 = nan when both tensors are zero (no special case)",
        "gradcheck-solution", "    if size == 0:\n        return 0.0\n", "", {"gradcheck-test"}),
]

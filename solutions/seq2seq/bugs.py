"""Planted bugs of the assignment "Sequence to sequence with attention" (``seq2seq.ipynb`` beside this file).

Each :class:`~grader.spec.Bug` is one exact substring replacement in one answer cell of the source notebook's
solution. The solution with that one bug must lose points in exactly the test cells listed in ``loses`` and
keep full marks in every other. ``decoder_step`` calls the student's ``dot_attention``, and
``train_translator`` trains with the student's ``decoder_step``, ``teacher_forced_nll`` and
``masked_cross_entropy``: whether a bug upstream of the trainer spoils the trained model is measured, not
guessed (TRAINING_WITH_BUGS: the grader's test loss for seeds 1237374186 and 5, threshold 3.6; the solution
gets 3.30 and 3.24 there, 3.23 to 3.35 over seeds 0-9 and 11-16; a decoder blind to the source 3.75 to 3.77).

The grader scores the trained weights with the course's ``Seq2Seq``, so a bug the student's own decoder adapts
to (the context and the state concatenated in the other order) still fails: the weights are read in the
course's layout. The grading test suite (tests/test_grading_assignments.py) plants each one; private.

One run per submission: the grader trains once, on a seed of its own. Measured that way, with
``python scripts/trained_part_seeds.py seq2seq --bug N --seeds 20`` (student seeds 0-19; the solution 3.27 to
3.40, all 20 pass): every bug listed as losing the training cell fails it on all 20 seeds, by far (the softmax
over the queries: nan; [h; c] in the other order 4.89 to 5.88; no teacher forcing 4.06 to 4.20; BOS/EOS off by
one 11.6 to 12.4).
"""
from __future__ import annotations

from grader.spec import Bug

ATTENTION, BACKWARD, DECODER, LOSS, GREEDY, BEAM, BLEU, TRAIN = (
    "attention-test", "backward-test", "decoder-test", "loss-test", "greedy-test", "beam-test", "bleu-test",
    "train-test")

#: The grader's test loss (nats per token) of the trainer with each bug upstream of it (measured, defaults).
TRAINING_WITH_BUGS = {
    "dot_attention: softmax over the wrong axis": (float("nan"),) * 2,  # fails: one query, -inf alone in a softmax
    "dot_attention: padding not masked": (3.322, 3.245),  # passes (3.27 to 3.36 over seeds 21-28): the
    # encoder's states at padding are zeros, so padding only dilutes the context a little
    "dot_attention: padding masked with 0": (3.322, 3.245),  # passes: the same scores as unmasked here
    "decoder_step: [h; c] in the other order": (5.130, 4.989),  # fails: the course's model reads W_c as [c; h]
    "masked_cross_entropy: padding not ignored": (3.304, 3.269),  # passes (3.25 to 3.40 over seeds 21-28):
    # bucketed batches hold little padding
    "masked_cross_entropy: the mean per sentence": (3.306, 3.236),  # passes (3.23 to 3.35 over seeds 21-28)
    "teacher_forced_nll: fed its own prediction": (4.113, 4.075),  # fails
    "teacher_forced_nll: BOS/EOS off by one": (11.914, 11.776),  # fails: it learns to copy its input
}

BUGS: list[Bug] = [
    Bug("dot_attention: softmax over the wrong axis (the queries, dim=1, instead of the source positions)",
        "attention-solution", "weights = torch.softmax(scores, dim=-1)  # over the source positions",
        "weights = torch.softmax(scores, dim=1)", {ATTENTION, DECODER, TRAIN}),
    Bug("dot_attention: padding not masked (padded source positions get weight)",
        "attention-solution", '    scores = scores.masked_fill(~mask[:, None, :], float("-inf"))  # padding: weight '
        'exp(-inf) = 0\n', "", {ATTENTION, DECODER}),
    Bug("dot_attention: padding masked with 0 instead of -inf before the softmax",
        "attention-solution", 'scores.masked_fill(~mask[:, None, :], float("-inf"))  # padding',
        "scores.masked_fill(~mask[:, None, :], 0.0)  # padding", {ATTENTION, DECODER}),
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
        "loss-solution", "return -picked[real].mean()", "return -picked.mean()", {LOSS}),
    Bug("masked_cross_entropy: the mean per sentence, then over sentences (not per token)",
        "loss-solution", "return -picked[real].mean()",
        "return -((picked * real).sum(1) / real.sum(1)).mean()", {LOSS}),
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
]

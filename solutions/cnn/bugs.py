"""Planted bugs of the assignment "A CNN sentence classifier from its parts" (``cnn.ipynb`` beside this file).

Each :class:`~grader.spec.Bug` is one exact substring replacement in one answer cell of the source notebook's
solution. The solution with that one bug must lose points in exactly the test cells listed in ``loses`` and
keep full marks in every other: ``encode_sentences`` calls the student's ``conv1d_unfold`` and
``max_over_time``, ``cnn_logits`` calls ``encode_sentences``, and ``train_cnn`` calls ``cnn_logits`` and
``project_max_norm``, so a bug upstream also loses the cells downstream where it changes their output. The
gradient-check cell's hidden cases call only ``numerical_gradient`` and ``relative_error``.

Whether a bug upstream of the trainer spoils the trained classifier is measured, not guessed, the way the
grader judges a submission: one run on the word-order task, on a seed of the grader's choosing, with
``python scripts/trained_part_seeds.py cnn --bug N --seeds 20 --jobs 2`` (student seeds 0-19). The bar is a
test accuracy of 0.56; over the same seeds the solution gets 0.612 to 0.649 (all 20 pass), the order-blind
width-1 control at most 0.516:

==============================================================  ===================  ==========
bug                                                             test accuracy        training
==============================================================  ===================  ==========
conv1d_unfold: windows flattened width-major                    0.508-0.515          fails 20
conv1d_unfold: pads only before the sentence                    0.598-0.645          passes 20
max_over_time: padding counted in the max                       0.610-0.646          passes 20
max_over_time: padding masked with 0, or an empty row at -inf   0.612-0.649          passes 20
max_over_time: one window per word                              0.487-0.497          fails 20
encode_sentences: narrow convolution                            0.616-0.647          passes 20
project_max_norm: columns' norms, or the whole matrix's         0.612-0.649          passes 20
project_max_norm: rows stretched to length s                    0.585-0.628          passes 20 (may lose)
cnn_logits: dropout left on at evaluation                       0.612-0.649          passes 20
cnn_logits: kept features not rescaled                          0.624-0.654          passes 20
cnn_logits: keeps with probability p                            0.616-0.645          passes 20
train_cnn: no zero_grad                                         0.476-0.532          fails 20
train_cnn: labels not shuffled with the sentences               0.499-0.523          fails 20
train_cnn: zero_grad after backward                             0.480-0.510          fails 10
==============================================================  ===================  ==========

One window per word fails (on the reviews it passed): the student's pooling never trains the last h - 1
windows of a sentence, which the grader's forward pass includes. The
stretched rows cost about 2 points (a grader seed of the reviews' task fell below its bar in CI once), so
that bug may still lose the training cell or not (``may_lose``); every other bug's training outcome holds on
every seed (zero_grad after backward, measured on seeds 0-9: Adam never sees a gradient and the
classifier stays at chance). A trainer that never applies dropout (``training=False`` in its steps) was
tried as a bug and passes all 20, at 0.626 to 0.663: over two epochs dropout does not help this task, so
it is not planted.

The grader scores the trained parameters with its own (correct) forward pass, so a bug that the training
adapts to (the model learns with the padding windows in its max, say) still gives a good classifier: the
bug loses its own cell and those downstream, not the training cell. The flattening bug trains well in the student's own
layout, but its filters are not laid out as nn.Conv1d's weight, which the returned W must be: PyTorch's
convolution reads them scrambled. The grading test suite (tests/test_grading_assignments.py)
plants each one; private.
"""
from __future__ import annotations

from grader.spec import Bug

CONV, BACKWARD, GRADCHECK, POOL, ENCODER, MULTI, MAXNORM, LOGITS, TRAIN = (
    "conv-test", "backward-test", "gradcheck-test", "pool-test", "encoder-test", "multichannel-test",
    "maxnorm-test", "logits-test", "train-test")
DOWNSTREAM = {ENCODER, LOGITS}  # the cells whose parts call encode_sentences

BUGS: list[Bug] = [
    Bug("conv1d_unfold: windows flattened width-major (x_j, x_j+1, ... as in the paper) against W flattened "
        "channel-major", "conv-solution", "windows.reshape(B, L, D * h)",
        "windows.transpose(2, 3).reshape(B, L, h * D)", {CONV, TRAIN} | DOWNSTREAM),
    Bug("conv1d_unfold: pads only before the sentence (the output is pad positions too short)",
        "conv-solution", "torch.cat([zeros, X, zeros], dim=1)", "torch.cat([zeros, X], dim=1)",
        {CONV} | DOWNSTREAM),
    Bug("conv1d_backward: overlapping windows overwrite each other's gradient (= instead of +=)",
        "backward-solution", "d_padded[:, k:k + L] += grad_out @ W[:, :, k]",
        "d_padded[:, k:k + L] = grad_out @ W[:, :, k]", {BACKWARD}),
    Bug("conv1d_backward: the filter flipped in dW (the textbook convolution, not PyTorch's cross-correlation)",
        "backward-solution", "padded[:, k:k + L])  # sum", "padded[:, h - 1 - k:h - 1 - k + L])  # sum", {BACKWARD}),
    Bug("conv1d_backward: the gradient of the padded input returned (padding not cut off)",
        "backward-solution", "return d_padded[:, pad:pad + T], dW, db", "return d_padded, dW, db", {BACKWARD}),
    Bug("conv1d_backward: db as the mean of the upstream gradient instead of its sum",
        "backward-solution", "db = grad_out.sum(dim=(0, 1))", "db = grad_out.mean(dim=(0, 1))", {BACKWARD}),
    Bug("numerical_gradient: forward differences (f(x + eps) - f(x)) / eps",
        "gradcheck-solution", "(f(x + bump) - f(x - bump)) / (2 * eps)", "(f(x + bump) - f(x)) / eps", {GRADCHECK}),
    Bug("relative_error: 0 / 0 = nan when both tensors are zero (no special case)",
        "gradcheck-solution", "    if size == 0:\n        return 0.0\n", "", {GRADCHECK}),
    Bug("max_over_time: padding counted in the max (no mask)",
        "pool-solution", "filled = A.masked_fill(~valid.unsqueeze(-1), float(\"-inf\"))", "filled = A",
        {POOL} | DOWNSTREAM),
    Bug("max_over_time: padding masked with 0 instead of -inf (0 wins when every real window is negative)",
        "pool-solution", "float(\"-inf\")", "0.0", {POOL}),
    Bug("max_over_time: one window per word (the wide convolution's h - 1 extra windows left out)",
        "pool-solution", "lengths[:, None] + width - 1)", "lengths[:, None])", {POOL, TRAIN} | DOWNSTREAM),
    Bug("max_over_time: a row of padding only gives -inf (no special case)",
        "pool-solution", "    return torch.where(valid.any(dim=1, keepdim=True), pooled, torch.zeros_like(pooled))",
        "    return pooled", {POOL}),
    Bug("encode_sentences: narrow convolution (no padding), so short sentences lose their windows",
        "encoder-solution", "conv1d_unfold(X, W, b, h - 1)", "conv1d_unfold(X, W, b, 0)", DOWNSTREAM),
    Bug("multichannel_embedding: the frozen copy receives gradients (no detach)",
        "multichannel-solution", "static[tokens].detach()", "static[tokens]", {MULTI}),
    Bug("multichannel_embedding: padding positions not zeroed (they get row 0 of the tables)",
        "multichannel-solution", "dim=-1) * real", "dim=-1)", {MULTI}),
    Bug("project_max_norm: the norms of the columns instead of the rows",
        "maxnorm-solution", "W.norm(dim=1, keepdim=True)", "W.norm(dim=0, keepdim=True)", {MAXNORM}),
    Bug("project_max_norm: the norm of the whole matrix (Frobenius) instead of each row's",
        "maxnorm-solution", "W.norm(dim=1, keepdim=True)", "W.norm()", {MAXNORM}),
    Bug("project_max_norm: every row rescaled to length s, short ones stretched (not a projection)",
        "maxnorm-solution", "torch.clamp(s / norms, max=1.0)", "s / norms", {MAXNORM},
        may_lose=frozenset({TRAIN})),
    Bug("cnn_logits: dropout left on at evaluation",
        "logits-solution", "    if training:\n", "    if p > 0:\n", {LOGITS}),
    Bug("cnn_logits: kept features not rescaled by 1 / (1 - p)",
        "logits-solution", "features * keep / (1 - p)", "features * keep", {LOGITS}),
    Bug("cnn_logits: keeps a feature with probability p (drops with 1 - p)",
        "logits-solution", "generator=rng, device=features.device, dtype=features.dtype) >= p",
        "generator=rng, device=features.device, dtype=features.dtype) < p", {LOGITS}),
    Bug("train_cnn: gradients never reset (no zero_grad: each step follows the sum of all past gradients)",
        "train-solution", "            optimizer.zero_grad()\n", "", {TRAIN}),
    Bug("train_cnn: zero_grad after backward (each step's gradients erased before Adam sees them)",
        "train-solution", "            optimizer.zero_grad()\n            loss.backward()\n",
        "            loss.backward()\n            optimizer.zero_grad()\n", {TRAIN}),
    Bug("train_cnn: the labels taken in the stored order, not shuffled with the sentences",
        "train-solution", "train.labels[rows]", "train.labels[first:first + batch]", {TRAIN}),
]

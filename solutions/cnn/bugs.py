"""Planted bugs of the assignment "A CNN sentence classifier from its parts" (``cnn.ipynb`` beside this file).

Each :class:`~grader.spec.Bug` is one exact substring replacement in one answer cell of the source notebook's
solution. The solution with that one bug must lose points in exactly the test cells listed in ``loses`` and
keep full marks in every other: ``encode_sentences`` calls the student's ``conv1d_unfold`` and
``max_over_time``, ``cnn_logits`` calls ``encode_sentences``, and ``train_cnn`` calls ``cnn_logits`` and
``project_max_norm``, so a bug upstream also loses the cells downstream where it changes their output. The
gradient-check cell's hidden cases call only ``numerical_gradient`` and ``relative_error``.

Whether a bug upstream of the trainer spoils the trained classifier is measured, not guessed: the test
accuracy of the trainer with each bug, seeds 0-4 (the grader's threshold is 0.73; the solution gets
0.754-0.776 on these seeds):

==============================================================  ===================  ==========
bug                                                             test accuracy        training
==============================================================  ===================  ==========
conv1d_unfold: windows flattened width-major                    0.464-0.646          fails
conv1d_unfold: pads only before the sentence                    0.756-0.772          passes
max_over_time: padding counted in the max                       0.758-0.775          passes
max_over_time: padding masked with 0                            0.754-0.776          passes
max_over_time: one window per word                              0.756-0.771          passes
encode_sentences: narrow convolution                            0.757-0.778          passes
project_max_norm: columns' norms, or the whole matrix's         0.752-0.776          passes
project_max_norm: rows stretched to length s (seeds 0-19)        0.742-0.775          may fail
cnn_logits: any of the three dropout bugs                       0.754-0.777          passes
train_cnn: no zero_grad                                         0.498-0.615          fails
==============================================================  ===================  ==========

The stretched rows lose about 0.6 points on average (the solution gets 0.748-0.780 over seeds 0-19, the bug
0.742-0.775), and a grader seed in CI fell below the threshold: that bug may lose the training cell or not
(``may_lose``); every other bug's training outcome holds on every seed.

One run per submission: the grader trains once, on a seed of its own. Measured that way, with
``python scripts/trained_part_seeds.py cnn --bug N --seeds 20`` (student seeds 0-19; the solution 0.754 to
0.776, all 20 pass): no zero_grad fails on all 20 (0.443 to 0.629); the stretched rows pass on all 20 (0.749 to
0.772, may lose); the width-major flattening fails on all of seeds 0-59 (0.375 to 0.697), but its accuracy
spreads widely (mean 0.571, standard deviation 0.086: about 3% of seeds would clear 0.73), so it may lose the
training cell or not (``may_lose``), while it loses its three cells on every seed.

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
        "windows.transpose(2, 3).reshape(B, L, h * D)",
        {CONV} | DOWNSTREAM, may_lose=frozenset({TRAIN})),
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
        "pool-solution", "lengths[:, None] + width - 1)", "lengths[:, None])", {POOL} | DOWNSTREAM),
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
]

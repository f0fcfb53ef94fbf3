"""Planted bugs of the assignment "Backprop by hand" (``backprop.ipynb`` beside this file), as data.

Each :class:`~grader.spec.Bug` is one exact substring replacement in one answer cell of the source
notebook's solution. The solution with that one bug must lose points in exactly the test cells listed
in ``loses`` (a hidden case or a visible test fails there) and keep full marks in every other test cell:
``loses`` includes the cells that fail through later parts calling the buggy function (a bug in
``linear_forward`` also breaks the MLP, and the classifier trained with it). The grading test suite
(tests/test_grading_assignments.py) plants each one and checks exactly that; private, like
``reference.py``.

Which bugs the trained classifier (part 9, ``train-test``) survives was measured, not guessed: the
solution's ``train_review_classifier`` with each bug planted, on 6 to 12 splits by movie, with 2 to 32
hidden units. A bug is listed without ``TRAIN`` only when the training runs exactly as the
solution's (the bug is in a branch or a value that training does not use: the tanh path, the loss value,
a large-logit case); with ``TRAIN``, when training crashes, diverges to inf / nan, or ends at the majority
class or below (0.39 to 0.66 held out, against the 0.69 required), so that the three cases never all pass.
Bugs whose trained accuracy straddles the threshold (a bias gradient left at 0: 0.47 to 0.75; an output
bias missing from the forward pass only: 0.39 to 0.75) are not planted: they would lose points at random.

One run per submission: the grader trains once, on a split, a hidden size and a seed of its own. Measured that
way, with ``python scripts/trained_part_seeds.py backprop --bug N --seeds 20`` (student seeds 0-19; the solution
0.726 to 0.754, all 20 pass): every bug listed with ``TRAIN`` fails it on all 20 seeds: the shape errors raise,
the steps along the gradient and the softmax over the batch diverge to inf / nan, the others end at 0.41 to
0.65. The closest, the ReLU that keeps the negative part, fails on all of seeds 0-59 (0.53 to 0.65; mean 0.616,
standard deviation 0.024: 3 standard deviations below 0.69).
"""
from __future__ import annotations

from grader.spec import Bug

GRADCHECK, LINEAR, ACTIVATION, LOGSOFTMAX, LOSS, MLP, SGD, TRAIN = (
    "gradcheck-test", "linear-test", "activation-test", "logsoftmax-test", "loss-test", "mlp-test", "sgd-test",
    "train-test")

BUGS: list[Bug] = [
    # part 2: the gradient check
    Bug("numerical_gradient: one-sided (forward) differences, whose error is of order eps",
        "gradcheck-solution", "(f(x + bump) - f(x - bump)) / (2 * eps)", "(f(x + bump) - f(x)) / eps", {GRADCHECK}),
    Bug("numerical_gradient: nudges every entry at once (x + eps), the same number for every entry",
        "gradcheck-solution", "bump.view(-1)[i] = eps", "bump += eps", {GRADCHECK}),
    Bug("numerical_gradient: divides by eps, not by the distance 2 eps between the two points",
        "gradcheck-solution", "/ (2 * eps)", "/ eps", {GRADCHECK}),
    Bug("relative_error: divides by ||b|| only (0 where b is 0, instead of 1)",
        "gradcheck-solution", "size = a.norm() + b.norm()", "size = b.norm()", {GRADCHECK}),
    Bug("relative_error: 0 / 0 = nan when both tensors are zero (no special case)",
        "gradcheck-solution", "    if size == 0:\n        return 0.0\n", "", {GRADCHECK}),
    Bug("relative_error: divides by the largest entries (max |a_i| + max |b_i|), not by the norms",
        "gradcheck-solution", "size = a.norm() + b.norm()", "size = a.abs().max() + b.abs().max()", {GRADCHECK}),
    # part 3: the linear layer
    Bug("linear_forward: X @ W instead of X @ W.T (shape error unless D == H)",
        "linear-solution", "return X @ W.T + b", "return X @ W + b", {LINEAR, MLP, TRAIN}),
    Bug("linear_backward: db summed over the wrong axis (dY.sum(dim=1), one number per example)",
        "linear-solution", "db = dY.sum(dim=0)", "db = dY.sum(dim=1)", {LINEAR, MLP, TRAIN}),
    Bug("linear_backward: dW transposed (X.T @ dY, shape (D, H))",
        "linear-solution", "dW = dY.T @ X", "dW = X.T @ dY", {LINEAR, MLP, TRAIN}),
    Bug("linear_backward: dX with W.T (dY @ W.T)",
        "linear-solution", "dX = dY @ W", "dX = dY @ W.T", {LINEAR, MLP, TRAIN}),
    # part 4: activations
    Bug("relu_backward: gradient passes at Z == 0 (Z >= 0)",
        "activation-solution", "torch.where(Z > 0, dA", "torch.where(Z >= 0, dA", {ACTIVATION, MLP}),
    Bug("relu_forward: keeps the negative part (clamp(max=0))",
        "activation-solution", "return torch.where(Z > 0, Z, torch.zeros_like(Z))", "return Z.clamp(max=0)",
        {ACTIVATION, MLP, TRAIN}),
    Bug("tanh_forward: written out as (e^Z - e^-Z) / (e^Z + e^-Z), which is inf / inf = nan for large |Z|",
        "activation-solution", "return torch.tanh(Z)",
        "return (torch.exp(Z) - torch.exp(-Z)) / (torch.exp(Z) + torch.exp(-Z))", {ACTIVATION}),
    Bug("tanh_backward: applies tanh again to the output A (1 - tanh(A)**2)",
        "activation-solution", "return dA * (1 - A * A)", "return dA * (1 - torch.tanh(A) ** 2)",
        {ACTIVATION, MLP}),
    # part 5: log-softmax
    Bug("log_softmax: row maximum not subtracted (overflows on large logits)",
        "logsoftmax-solution", "shifted = Z - m", "shifted = Z", {LOGSOFTMAX, LOSS, MLP}),
    Bug("log_softmax: normalises over the batch axis (sum over dim=0)",
        "logsoftmax-solution", "torch.exp(shifted).sum(dim=-1, keepdim=True)",
        "torch.exp(shifted).sum(dim=0, keepdim=True)", {LOGSOFTMAX, LOSS, MLP, TRAIN}),
    # part 6: the loss
    Bug("cross_entropy: sum over the batch instead of the mean",
        "loss-solution", "y].mean()", "y].sum()", {LOSS, MLP}),
    Bug("cross_entropy: Z[:, y] averages a (B, B) block instead of one entry per row",
        "loss-solution", "logp[torch.arange(B, device=Z.device), y]", "logp[:, y]", {LOSS, MLP}),
    Bug("cross_entropy_backward: not divided by B",
        "loss-solution", "return (P - onehot) / B", "return P - onehot", {LOSS, MLP, TRAIN}),
    # part 7: the MLP
    Bug("mlp_loss_and_grads: tanh_backward given the pre-activation Z_1 instead of A_1",
        "mlp-solution", 'tanh_backward(dA_1, cache["A_1"])', 'tanh_backward(dA_1, cache["Z_1"])', {MLP}),
    Bug("mlp_forward: the tanh branch calls relu_forward (copied from the line above)",
        "mlp-solution", "A_1 = tanh_forward(Z_1)", "A_1 = relu_forward(Z_1)", {MLP}),
    # part 9: training on the reviews
    Bug("train_review_classifier: calls sgd_step but drops the new parameters it returns (no step is taken)",
        "train-solution", "params = sgd_step(params, grads,", "sgd_step(params, grads,", {TRAIN}),
    Bug("train_review_classifier: shuffles the inputs every epoch but not the labels with them",
        "train-solution", "X_epoch, y_epoch = X_train[perm], y_train[perm]",
        "X_epoch, y_epoch = X_train[perm], y_train", {TRAIN}),
    Bug("train_review_classifier: W_1 initialised to zeros (with zero biases, no ReLU unit ever turns on)",
        "train-solution", "torch.randn(hidden, V, generator=g) * (2 / V) ** 0.5", "torch.zeros(hidden, V)", {TRAIN}),
    # part 8: the gradient step (last: tests/test_grading_hostile.py plants it in a batch it kills)
    Bug("sgd_step: steps along the gradient (+ instead of -)",
        "sgd-solution", "p - lr * grads[name]", "p + lr * grads[name]", {SGD, TRAIN}),
]

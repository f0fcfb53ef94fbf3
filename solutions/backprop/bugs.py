"""Planted bugs of the assignment "Backprop by hand" (``backprop.ipynb`` beside this file), as data.

Each :class:`~grader.spec.Bug` is one exact substring replacement in one answer cell of the source
notebook's solution. The solution with that one bug must lose points in exactly the test cells listed
in ``loses`` (a hidden case or a visible test fails there) and keep full marks in every other test cell:
``loses`` includes the cells that fail through later parts calling the buggy function (a bug in
``linear_forward`` also breaks the MLP). The grading test suite (tests/test_grading_assignments.py)
plants each one and checks exactly that; private, like ``reference.py``.
"""
from __future__ import annotations

from grader.spec import Bug

LINEAR, ACTIVATION, LOGSOFTMAX, LOSS, MLP, SGD = (
    "linear-test", "activation-test", "logsoftmax-test", "loss-test", "mlp-test", "sgd-test")

BUGS: list[Bug] = [
    Bug("linear_forward: X @ W instead of X @ W.T (shape error unless D == H)",
        "linear-solution", "return X @ W.T + b", "return X @ W + b", {LINEAR, MLP}),
    Bug("linear_backward: bias gradient left at zero",
        "linear-solution", "db = dY.sum(dim=0)", "db = torch.zeros_like(W[:, 0])", {LINEAR, MLP}),
    Bug("linear_backward: dW transposed (X.T @ dY, shape (D, H))",
        "linear-solution", "dW = dY.T @ X", "dW = X.T @ dY", {LINEAR, MLP}),
    Bug("linear_backward: dX with W.T (dY @ W.T)",
        "linear-solution", "dX = dY @ W", "dX = dY @ W.T", {LINEAR, MLP}),
    Bug("relu_backward: gradient passes at Z == 0 (Z >= 0)",
        "activation-solution", "torch.where(Z > 0, dA", "torch.where(Z >= 0, dA", {ACTIVATION, MLP}),
    Bug("relu_forward: keeps the negative part (clamp(max=0))",
        "activation-solution", "return torch.where(Z > 0, Z, torch.zeros_like(Z))", "return Z.clamp(max=0)",
        {ACTIVATION, MLP}),
    Bug("tanh_forward: written out as (e^Z - e^-Z) / (e^Z + e^-Z), which is inf / inf = nan for large |Z|",
        "activation-solution", "return torch.tanh(Z)",
        "return (torch.exp(Z) - torch.exp(-Z)) / (torch.exp(Z) + torch.exp(-Z))", {ACTIVATION}),
    Bug("tanh_backward: applies tanh again to the output A (1 - tanh(A)**2)",
        "activation-solution", "return dA * (1 - A * A)", "return dA * (1 - torch.tanh(A) ** 2)",
        {ACTIVATION, MLP}),
    Bug("log_softmax: row maximum not subtracted (overflows on large logits)",
        "logsoftmax-solution", "shifted = Z - m", "shifted = Z", {LOGSOFTMAX, LOSS, MLP}),
    Bug("log_softmax: normalises over the batch axis (sum over dim=0)",
        "logsoftmax-solution", "torch.exp(shifted).sum(dim=-1, keepdim=True)",
        "torch.exp(shifted).sum(dim=0, keepdim=True)", {LOGSOFTMAX, LOSS, MLP}),
    Bug("cross_entropy: sum over the batch instead of the mean",
        "loss-solution", "y].mean()", "y].sum()", {LOSS, MLP}),
    Bug("cross_entropy: Z[:, y] averages a (B, B) block instead of one entry per row",
        "loss-solution", "logp[torch.arange(B, device=Z.device), y]", "logp[:, y]", {LOSS, MLP}),
    Bug("cross_entropy_backward: not divided by B",
        "loss-solution", "return (P - onehot) / B", "return P - onehot", {LOSS, MLP}),
    Bug("mlp_loss_and_grads: tanh_backward given the pre-activation Z_1 instead of A_1",
        "mlp-solution", 'tanh_backward(dA_1, cache["A_1"])', 'tanh_backward(dA_1, cache["Z_1"])', {MLP}),
    Bug("mlp_forward: output bias b_2 forgotten",
        "mlp-solution", 'logits = linear_forward(A_1, params["W_2"], params["b_2"])',
        'logits = A_1 @ params["W_2"].T', {MLP}),
    Bug("sgd_step: steps along the gradient (+ instead of -)",
        "sgd-solution", "p - lr * grads[name]", "p + lr * grads[name]", {SGD}),
]

"""The reference answers of the gradient check every assignment asks for (private: the public copy must not
hold a graded part's answer, so grader/gradcheck.py, which declares the parts and their cases, loads these from
here). ``relative_error(a, b)`` is the part of that name; ``numerical_gradient_of(functions)`` gives the reference
of ``numerical_gradient_on(name, x, eps, *fixed)``, which the hidden test records through the student's
``numerical_gradient``."""
from __future__ import annotations

from collections.abc import Callable

import torch


def relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    """``||a - b|| / (||a|| + ||b||)`` over all the entries, in float64; 0.0 when both are zero."""
    a, b = a.double(), b.double()
    size = torch.linalg.vector_norm(a) + torch.linalg.vector_norm(b)
    return 0.0 if size == 0 else float(torch.linalg.vector_norm(a - b) / size)


def numerical_gradient_of(functions: dict[str, Callable]) -> Callable:
    """The reference of ``numerical_gradient_on(name, x, eps, *fixed)``: central differences of
    ``functions[name](., *fixed)`` at ``x``, one coordinate at a time."""

    def numerical_gradient_on(name: str, x: torch.Tensor, eps: float, *fixed) -> torch.Tensor:
        f = functions[name]
        grad = torch.zeros(x.shape, dtype=x.dtype, device=x.device)
        for i in range(x.numel()):
            plus, minus = x.clone(), x.clone()
            plus.view(-1)[i] += eps
            minus.view(-1)[i] -= eps
            grad.view(-1)[i] = (f(plus, *fixed) - f(minus, *fixed)) / (2 * eps)
        return grad

    return numerical_gradient_on

"""The gradient check that every assignment deriving a gradient by hand asks its students to write, declared
once: ``numerical_gradient(f, x, eps)`` (central differences, one coordinate at a time, ``x`` left as it was)
and ``relative_error(a, b)`` (``||a - b|| / (||a|| + ||b||)`` over all the entries, 0.0 when both are zero),
with the same meaning, defaults and hidden cases in every assignment.

The hidden tests cannot hand a student's function a Python callable they do not know, so each notebook has a
locked cell ``gradcheck-functions`` with its functions by name (``GRADCHECK_FUNCTIONS``: the same dict in the
reference) and ``numerical_gradient_on(name, x, eps, *fixed)``, which the hidden test records. A reference
declares its two parts with :func:`gradcheck_parts`, giving its functions and the cases that use its own. The
two reference answers live in ``solutions/gradcheck_reference.py`` (:func:`references`), never here: this module
is in the public copy."""
from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import torch

from nlpcourse.checking import Case

from .spec import Part, make_case

f64, f32 = torch.float64, torch.float32
CaseMaker = Callable[[torch.Generator, str], list[Case]]


def cubic(x: torch.Tensor) -> torch.Tensor:
    """A polynomial of every entry, summed: the first function every notebook's check is tried on."""
    return (x ** 3 - 2 * x ** 2 + 0.5 * x).sum()


def log_sum_exp(x: torch.Tensor) -> torch.Tensor:
    """log sum exp of all the entries: the second."""
    return torch.logsumexp(x.reshape(-1), dim=0)


#: The functions of :func:`common_numerical_cases`, in every notebook's locked ``gradcheck-functions`` cell (as
#: ``_cubic`` and ``_log_sum_exp``); a reference adds its own: ``{**COMMON_FUNCTIONS, "conv": ...}``.
COMMON_FUNCTIONS: dict[str, Callable] = {"cubic": cubic, "log_sum_exp": log_sum_exp}


def references() -> ModuleType:
    """The reference answers of the two parts (``relative_error``, ``numerical_gradient_of``), kept in
    ``solutions/gradcheck_reference.py``: private, since they answer a graded part of every assignment (the
    public copy holds this module, which declares the parts, but not them)."""
    from .course import SOLUTIONS, _import_private

    return _import_private(SOLUTIONS / "gradcheck_reference.py", "_solutions_gradcheck_reference")


def _randn(g: torch.Generator, *shape: int, dtype: torch.dtype = f64) -> torch.Tensor:
    return torch.randn(*shape, generator=g, dtype=dtype)


def common_numerical_cases(g: torch.Generator, device: str) -> list[Case]:
    """The cases on the two functions every notebook has (``cubic``, ``log_sum_exp``): a step of 1e-6, a
    matrix, a 0-d tensor, a large step and float32 (whose two evaluations of f are rounded: looser)."""
    return [
        make_case("cubic, x (5,) float64, eps 1e-6", ("cubic", _randn(g, 5), 1e-6), device),
        make_case("log-sum-exp, x (3, 4) float64, eps 1e-5", ("log_sum_exp", _randn(g, 3, 4), 1e-5), device),
        make_case("cubic, x a 0-d tensor (one number) float64, eps 1e-4",
                  ("cubic", torch.tensor(1.5 + float(torch.rand((), generator=g)), dtype=f64), 1e-4), device),
        make_case("cubic, x (1,) float64, a large eps 0.1", ("cubic", _randn(g, 1) + 2.0, 0.1), device),
        make_case("log-sum-exp, x (4,) float32, eps 1e-2", ("log_sum_exp", _randn(g, 4, dtype=f32), 1e-2), device,
                  rtol=1e-3, atol=1e-4),
    ]


def relative_error_cases(g: torch.Generator, device: str) -> list[Case]:
    """Far apart, nearly equal, float32, equal, zeros on either side or both, opposite, very unequal sizes."""
    a, v = _randn(g, 4, 5), _randn(g, 6)
    x32 = _randn(g, 3, 2, 4, dtype=f32)

    def case(name: str, x: torch.Tensor, y: torch.Tensor, rtol: float | None = None) -> Case:
        return make_case(name, (x, y), device, rtol=rtol, atol=1e-12 if rtol is None else 1e-7)

    return [
        case("random (4, 5) float64, far apart", a, _randn(g, 4, 5)),
        case("nearly equal (4, 5) float64, relative differences about 1e-7", a, a * (1 + 1e-7 * _randn(g, 4, 5))),
        case("float32 (3, 2, 4), differences about 1e-3", x32, x32 + 1e-3 * _randn(g, 3, 2, 4, dtype=f32), 1e-4),
        case("equal tensors: 0", v, v.clone()),
        case("both zero (5,): 0, not nan", torch.zeros(5, dtype=f64), torch.zeros(5, dtype=f64)),
        case("a zero, b not (5,): 1", torch.zeros(5, dtype=f64), _randn(g, 5)),
        case("b zero, a not (3, 3): 1", _randn(g, 3, 3), torch.zeros(3, 3, dtype=f64)),
        case("opposite (a = -b), (6,): 1", v, -v),
        case("very different sizes: a 1000 times b (4,)", 1000 * v[:4], v[:4].clone()),
    ]


def gradcheck_parts(functions: dict[str, Callable], own_cases: CaseMaker, forbidden: tuple[str, ...],
                    test_cell: str = "gradcheck-test", solution_cell: str = "gradcheck-solution") -> dict[str, Part]:
    """The two parts, ``numerical_gradient`` (weight 2) and ``relative_error``, graded in ``test_cell``:
    the common cases, then ``own_cases`` (the assignment's own functions: a convolution, a recurrence...)."""

    def numerical_cases(g: torch.Generator, device: str) -> list[Case]:
        return common_numerical_cases(g, device) + own_cases(g, device)

    answers = references()
    return {
        "numerical_gradient": Part(test_cell, answers.numerical_gradient_of(functions), numerical_cases,
                                   (solution_cell,), forbidden, weight=2.0),
        "relative_error": Part(test_cell, answers.relative_error, relative_error_cases, (solution_cell,), forbidden),
    }

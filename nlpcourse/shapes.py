"""Shape checks shared by the book, the library and the tests.

Legend used throughout the course:
B batch, T time (target length), S source length, D model dim, H heads, Dh head dim, V vocab.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from .errors import ShapeError

Dim = int | str | None


def check_shape(
    x: torch.Tensor,
    expected: Sequence[Dim],
    name: str = "tensor",
    dims: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """Check that ``x`` has the ``expected`` shape and return the named sizes.

    ``expected`` holds one entry per axis: an int (that exact size), a letter such as ``"B"``
    (any size, but the same letter must have the same size everywhere, also across calls when
    ``dims`` is passed back in) or ``None`` (any size).

    >>> check_shape(torch.zeros(2, 3), ("B", 3))
    {'B': 2}
    """
    if not isinstance(x, torch.Tensor):
        raise ShapeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    bound: dict[str, int] = dict(dims or {})
    shape = tuple(x.shape)
    legend = "(" + ",".join("*" if e is None else str(e) for e in expected) + ")"
    if len(shape) != len(expected):
        raise ShapeError(
            f"{name}: expected {len(expected)} dims {legend}, got {len(shape)} dims {shape}"
        )
    for axis, (got, want) in enumerate(zip(shape, expected)):
        if want is None:
            continue
        if isinstance(want, int):
            if got != want:
                raise ShapeError(f"{name}: axis {axis} should be {want} in {legend}, got shape {shape}")
        else:
            if want in bound and bound[want] != got:
                raise ShapeError(
                    f"{name}: axis {axis} is {want} in {legend}; {want}={bound[want]} elsewhere "
                    f"but here {got} (shape {shape})"
                )
            bound[want] = got
    return bound

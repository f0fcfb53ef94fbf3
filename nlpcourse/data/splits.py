"""Seeded, deterministic train/validation/test splits, optionally keeping groups together."""
from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from typing import TypeVar

from ..errors import ConfigError, ShapeError

T = TypeVar("T")


def split_indices(
    n: int,
    fractions: Sequence[float] = (0.8, 0.1, 0.1),
    seed: int = 0,
    groups: Sequence[Hashable] | None = None,
) -> list[list[int]]:
    """Split ``range(n)`` into parts of the given fractions, shuffled with ``seed``.

    With ``groups`` (one key per item, e.g. the movie of each review) whole groups go to one part,
    so no group leaks between train and test; the sizes are then approximate.
    """
    if n <= 0:
        raise ConfigError(f"split_indices: nothing to split (n={n})")
    if not fractions or any(f < 0 for f in fractions) or abs(sum(fractions) - 1.0) > 1e-6:
        raise ConfigError(f"split_indices: fractions must be >= 0 and sum to 1, got {tuple(fractions)}")
    rng = random.Random(seed)
    if groups is None:
        units: list[list[int]] = [[i] for i in range(n)]
    else:
        if len(groups) != n:
            raise ShapeError(f"split_indices: {len(groups)} group keys for {n} items")
        by_key: dict[Hashable, list[int]] = {}
        for i, g in enumerate(groups):
            by_key.setdefault(g, []).append(i)
        units = [by_key[k] for k in sorted(by_key, key=str)]
    rng.shuffle(units)
    parts: list[list[int]] = [[] for _ in fractions]
    bounds, acc = [], 0.0
    for f in fractions:
        acc += f
        bounds.append(acc * n)
    taken = 0
    for unit in units:
        k = next((j for j, b in enumerate(bounds) if taken < b - 1e-9), len(bounds) - 1)
        parts[k].extend(unit)
        taken += len(unit)
    return [sorted(p) for p in parts]


def train_val_test_split(
    items: Sequence[T],
    fractions: Sequence[float] = (0.8, 0.1, 0.1),
    seed: int = 0,
    groups: Sequence[Hashable] | None = None,
) -> list[list[T]]:
    """Split ``items`` as :func:`split_indices` does and return the items of each part."""
    return [[items[i] for i in part] for part in split_indices(len(items), fractions, seed, groups)]

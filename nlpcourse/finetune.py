"""Fine-tuning a pretrained network the ULMFiT way (Howard & Ruder, 2018, sec. 3.2-3.3), for the pretraining
chapter: discriminative learning rates (each lower layer group learns ``decay`` times slower than the one
above it), the slanted triangular schedule (a short linear rise, then a long linear fall), and gradual
unfreezing (the top group trains first, one more group joins at each stage).

These are tools for any ``torch.optim`` optimiser: :func:`discriminative_groups` makes its parameter groups,
:func:`slanted_triangular` a factor for ``torch.optim.lr_scheduler.LambdaLR``, :func:`unfreeze_top` sets
which groups train.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from torch import nn

from .errors import ConfigError


def discriminative_groups(layer_groups: Sequence[nn.Module | Sequence[nn.Parameter]], lr: float,
                          decay: float = 2.6) -> list[dict]:
    """Optimiser parameter groups, bottom group first: the top group gets ``lr``, the one below it
    ``lr / decay``, and so on down (ULMFiT's eq. 2 with eta^{l-1} = eta^l / 2.6)."""
    if not layer_groups:
        raise ConfigError("discriminative_groups: no layer groups")
    if lr <= 0 or decay < 1 or not math.isfinite(lr * decay):
        raise ConfigError(f"discriminative_groups: lr must be > 0 and decay >= 1, got {lr} and {decay}")
    top = len(layer_groups) - 1
    groups = []
    for k, group in enumerate(layer_groups):
        params = list(group.parameters()) if isinstance(group, nn.Module) else list(group)
        groups.append({"params": params, "lr": lr / decay ** (top - k)})
    return groups


def slanted_triangular(total: int, cut_frac: float = 0.1, ratio: float = 32.0) -> Callable[[int], float]:
    """The factor of the peak rate at step t = 0 .. total (ULMFiT's eq. 3): it rises linearly from 1/ratio
    to 1 over the first ``cut_frac`` of the steps, then falls linearly back to 1/ratio at step ``total``.
    The fall is measured over the steps left after the peak, which is the paper's formula whenever
    ``total * cut_frac`` is a whole number (and stays in [1/ratio, 1] when it is not)."""
    if total < 2 or not 0.0 < cut_frac < 1.0 or ratio < 1:
        raise ConfigError(f"slanted_triangular: need total >= 2, 0 < cut_frac < 1, ratio >= 1; got {total}, "
                          f"{cut_frac}, {ratio}")
    cut = max(1, math.floor(total * cut_frac))

    def factor(t: int) -> float:
        p = t / cut if t < cut else max(0.0, 1 - (t - cut) / (total - cut))
        return (1 + p * (ratio - 1)) / ratio
    return factor


def unfreeze_top(layer_groups: Sequence[nn.Module | Sequence[nn.Parameter]], n: int) -> None:
    """Gradual unfreezing: the top ``n`` groups train (``requires_grad``), the others are frozen."""
    if not 1 <= n <= len(layer_groups):
        raise ConfigError(f"unfreeze_top: n must be in [1, {len(layer_groups)}], got {n}")
    for k, group in enumerate(layer_groups):
        params = group.parameters() if isinstance(group, nn.Module) else group
        for p in params:
            p.requires_grad_(k >= len(layer_groups) - n)

"""Test helper shared by the causal models' tests (Transformer decoder, GPT, ELMo's biLM): token sequences
and the same sequences with one side of a cut drawn again, for "the future never changes the past"."""
from __future__ import annotations

import torch


def redrawn(shape: tuple[int, int], low: int, high: int, cut: int, seed: int,
            side: str = "after") -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, other): random ids in [low, high) of ``shape`` (B,T), and a copy whose positions at or after
    ``cut`` (``side="after"``) or before it (``side="before"``) are drawn again."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(low, high, shape, generator=g)
    other = ids.clone()
    part = slice(cut, None) if side == "after" else slice(None, cut)
    other[:, part] = torch.randint(low, high, other[:, part].shape, generator=g)
    return ids, other

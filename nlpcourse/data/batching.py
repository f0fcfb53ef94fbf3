"""Batching: padded batches with lengths and masks, bucketing by length, and language-model streams.

Shapes: B batch, T time (window or padded length), N tokens per stream.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain

import torch

from ..errors import ConfigError


@dataclass
class Batch:
    """A padded batch of token-id sequences."""

    tokens: torch.Tensor  # (B,T) long, padded with pad_id after each sequence
    lengths: torch.Tensor  # (B,) long, true length of each sequence
    mask: torch.Tensor  # (B,T) bool, True at real tokens, False at padding

    def to(self, device: torch.device | str) -> Batch:
        return Batch(self.tokens.to(device), self.lengths.to(device), self.mask.to(device))

    def __len__(self) -> int:
        return self.tokens.shape[0]


def pad_batch(seqs: Sequence[Sequence[int]], pad_id: int = 0, max_len: int | None = None) -> Batch:
    """Pad ``seqs`` to a common length (the longest, or ``max_len`` with truncation)."""
    if len(seqs) == 0:
        raise ConfigError("pad_batch: got no sequences (an empty batch)")
    lengths = []
    for i, s in enumerate(seqs):
        if len(s) == 0:
            raise ConfigError(f"pad_batch: sequence {i} is empty; drop empty sequences before batching")
        lengths.append(len(s) if max_len is None else min(len(s), max_len))
    T = max(lengths)
    lengths_t = torch.tensor(lengths, dtype=torch.long)  # (B,)
    mask = torch.arange(T)[None, :] < lengths_t[:, None]  # (1,T) < (B,1) -> (B,T)
    kept = (s[:n].tolist() if isinstance(s, torch.Tensor) else list(s[:n]) for s, n in zip(seqs, lengths))
    tokens = torch.full((len(seqs), T), pad_id, dtype=torch.long)  # (B,T)
    tokens[mask] = torch.tensor(list(chain.from_iterable(kept)), dtype=torch.long)  # row by row, as the mask
    return Batch(tokens, lengths_t, mask)


def bucket_batches(
    lengths: Sequence[int],
    batch_size: int,
    shuffle: bool = True,
    seed: int = 0,
    bucket_factor: int = 50,
) -> list[list[int]]:
    """Group indices into batches of similar length, so that little of each batch is padding.

    Indices are (optionally) shuffled, cut into buckets of ``batch_size * bucket_factor``, sorted by
    length inside each bucket and cut into batches; the order of the batches is shuffled too.
    Every index appears exactly once. Deterministic for a given ``seed``.
    """
    if batch_size < 1:
        raise ConfigError(f"bucket_batches: batch_size must be >= 1, got {batch_size}")
    if len(lengths) == 0:
        raise ConfigError("bucket_batches: got no sequences")
    rng = random.Random(seed)
    order = list(range(len(lengths)))
    if shuffle:
        rng.shuffle(order)
    chunk = batch_size * max(1, bucket_factor)
    batches: list[list[int]] = []
    for start in range(0, len(order), chunk):
        bucket = sorted(order[start:start + chunk], key=lambda i: lengths[i])
        batches.extend(bucket[j:j + batch_size] for j in range(0, len(bucket), batch_size))
    if shuffle:
        rng.shuffle(batches)
    return batches


def shuffled_batches(seqs: Sequence[Sequence[int]], batch_size: int, seed: int = 0,
                     pad_id: int = 0) -> Callable[[int], list[torch.Tensor]]:
    """``epoch -> batches``: the sequences reshuffled each epoch (with ``seed`` and the epoch), cut into
    padded (B,T) id tensors; what ``nlpcourse.train.fit`` takes as its training data."""
    if batch_size < 1 or not seqs:
        raise ConfigError(f"shuffled_batches: need sequences and batch_size >= 1, got {len(seqs)} and {batch_size}")

    def get(epoch: int) -> list[torch.Tensor]:
        g = torch.Generator().manual_seed(seed * 1000 + epoch)
        order = torch.randperm(len(seqs), generator=g).tolist()
        return [pad_batch([seqs[i] for i in order[k:k + batch_size]], pad_id).tokens
                for k in range(0, len(order), batch_size)]
    return get


def lm_stream(ids: Sequence[int] | torch.Tensor, batch_size: int) -> torch.Tensor:
    """Cut one long sequence of ids into ``batch_size`` parallel streams: (N_total,) -> (B,N).

    Row b holds the b-th contiguous slice of the text, so hidden state can be carried from one
    window to the next (truncated BPTT). The tail that does not fill a whole row is dropped.
    """
    data = torch.as_tensor(ids, dtype=torch.long).flatten()
    if batch_size < 1:
        raise ConfigError(f"lm_stream: batch_size must be >= 1, got {batch_size}")
    n = data.numel() // batch_size
    if n < 2:
        raise ConfigError(
            f"lm_stream: {data.numel()} tokens are too few for {batch_size} streams (need >= 2 per stream)"
        )
    return data[: n * batch_size].view(batch_size, n)  # (B*N,) -> (B,N)


def lm_batches(
    ids: Sequence[int] | torch.Tensor, batch_size: int, bptt: int
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Windows for truncated BPTT: yields ``(x, y)`` of shape (B,T) with ``y`` = ``x`` shifted by one.

    The target of a window's last position is the first input of the next window, so targets
    run on across window boundaries; the last window may be shorter than ``bptt``.
    """
    if bptt < 1:
        raise ConfigError(f"lm_batches: bptt must be >= 1, got {bptt}")
    data = lm_stream(ids, batch_size)  # (B,N)
    N = data.shape[1]
    for i in range(0, N - 1, bptt):
        T = min(bptt, N - 1 - i)
        yield data[:, i:i + T], data[:, i + 1:i + 1 + T]  # (B,T), (B,T)

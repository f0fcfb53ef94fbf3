"""Test helpers shared by the decoders' tests (seq2seq, Transformer): the exact answer beam search
should find with a beam wide enough, by scoring every sequence."""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import torch

BOS, EOS = 2, 3


def exhaustive_search(logits_of: Callable[[torch.Tensor], torch.Tensor], vocab: int, max_len: int,
                      alpha: float) -> tuple[float, list[int]]:
    """(score, ids) of the best sequence that ends in <eos> within ``max_len`` tokens, ranked by
    log P / length^alpha; ``logits_of(y_in)`` gives the logits (1,T,V) after the decoder inputs y_in (1,T).
    Tokens are <unk> and the words 4..V-1 (never <pad> nor <bos>)."""
    best, best_ids = -math.inf, None
    for n in range(1, max_len + 1):
        for body in itertools.product([1, *range(4, vocab)], repeat=n - 1):
            ids = list(body) + [EOS]
            y = torch.tensor([[BOS] + ids])  # (1,n+1)
            lp = torch.log_softmax(logits_of(y[:, :-1]), -1)[0]  # (n,V)
            score = float(lp.gather(1, y[0, 1:, None]).sum().detach()) / n ** alpha
            if score > best:
                best, best_ids = score, ids
    return best, best_ids


def check_batch_decodes_as_one_at_a_time(decode: Callable, model, src: torch.Tensor, max_len: int) -> list[tuple]:
    """Decode the padded batch ``src`` (B,S) and each source alone, unpadded: the same tokens and scores, at
    most one <eos>, last. Returns (batch result, that source alone, row) for checks of a model's own."""
    batch, pairs = decode(model, src, max_len=max_len), []
    for b in range(src.shape[0]):
        one = decode(model, src[b:b + 1, :int((src[b] != 0).sum())], max_len=max_len)
        assert one.ids[0] == batch.ids[b] and abs(one.scores[0] - batch.scores[b]) < 1e-5, b
        assert batch.ids[b].count(EOS) <= 1 and (EOS not in batch.ids[b] or batch.ids[b][-1] == EOS)
        pairs.append((batch, one, b))
    return pairs

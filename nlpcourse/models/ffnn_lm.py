"""The feed-forward neural language model of Bengio et al. (2003), "A Neural Probabilistic Language Model"
(chapter "RNN language models", ``benchmarks/rnnlm.py``).

Like an n-gram model it reads a fixed window of the ``context`` previous tokens; unlike one it shares
what it learns between similar words through their vectors, so an unseen n-gram of seen words still gets
a sensible probability. Bengio et al.'s equation (1), without the direct connections W:

    y = b + U tanh(d + H x),   x = (C(w_{t-1}), ..., C(w_{t-n+1}))   (the context's vectors, concatenated)

Shapes: B batch, K context length (n - 1), E embedding dim, Hd hidden units, V vocabulary, N stream length.

    ctx     (B,K)     ids of the K previous tokens, oldest first
    x       (B,K*E)   their vectors side by side
    h       (B,Hd)    tanh(d + H x), dropout while training
    logits  (B,V)     b + U h
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import ConfigError, NumericalError
from ..train import Budget, EarlyStopping
from .rnnlm import LMHistory, perplexity_of, restore_best


@dataclass
class FFNNLMConfig:
    """Everything needed to rebuild an :class:`FFNNLM`."""

    vocab_size: int  # V
    context: int = 4  # K = n - 1: previous tokens read (a 5-gram model when 4)
    embed_dim: int = 64  # E: Bengio et al. used 30-100
    hidden_dim: int = 256  # Hd: tanh units
    dropout: float = 0.2  # on x and h while training

    def __post_init__(self) -> None:
        if self.vocab_size < 2 or self.context < 1 or self.embed_dim < 1 or self.hidden_dim < 1:
            raise ConfigError(f"FFNNLMConfig: sizes must be positive (vocab_size >= 2), got {self}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"FFNNLMConfig: dropout must be in [0, 1), got {self.dropout}")


class FFNNLM(nn.Module):
    """P(w_t | w_{t-K}..w_{t-1}) = softmax(b + U tanh(d + H x))."""

    def __init__(self, config: FFNNLMConfig):
        super().__init__()
        c = self.config = config
        self.C = nn.Embedding(c.vocab_size, c.embed_dim)
        self.H = nn.Linear(c.context * c.embed_dim, c.hidden_dim)  # weights H, bias d
        self.U = nn.Linear(c.hidden_dim, c.vocab_size)  # weights U, bias b
        self.drop = nn.Dropout(c.dropout)

    def forward(self, ctx: torch.Tensor) -> torch.Tensor:
        """Logits (B,V) of the token after each row of ``ctx`` (B,K)."""
        x = self.drop(self.C(ctx).flatten(1))  # (B,K) -> (B,K,E) -> (B,K*E)
        h = self.drop(torch.tanh(self.H(x)))  # (B,K*E) x (K*E,Hd) -> (B,Hd)
        return self.U(h)  # (B,Hd) x (Hd,V) -> (B,V)


def context_windows(stream: torch.Tensor, K: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Every position of ``stream`` (N,) that has K tokens before it: contexts (N-K,K) and targets (N-K,)."""
    if len(stream) <= K:
        raise ConfigError(f"context_windows: a stream of {len(stream)} tokens has no position with {K} before it")
    return stream.unfold(0, K, 1)[:-1], stream[K:]  # (N-K+1,K) without the last -> (N-K,K)


@torch.no_grad()
def ffnn_log_probs(model: FFNNLM, ids: torch.Tensor, context: torch.Tensor, batch: int = 4096) -> torch.Tensor:
    """Natural-log probability of each token of ``ids`` (N,) given the K tokens before it (``context`` must
    hold at least K tokens: the text just before ``ids``). (N,) float64 on the CPU."""
    model.eval()
    K = model.config.context
    if len(context) < K:
        raise ConfigError(f"ffnn_log_probs: needs {K} context tokens before the stream, got {len(context)}")
    device = next(model.parameters()).device
    ctx, tgt = context_windows(torch.cat([context[-K:], ids]).to(device), K)  # (N,K), (N,)
    out = [F.log_softmax(model(ctx[i:i + batch]).double(), -1).gather(1, tgt[i:i + batch, None])[:, 0].cpu()
           for i in range(0, len(tgt), batch)]
    return torch.cat(out)


def fit_ffnn(model: FFNNLM, train: torch.Tensor, valid: torch.Tensor, valid_context: torch.Tensor,
             epochs: int = 1, batch_size: int = 256, lr: float = 2e-3, seed: int = 0,
             max_seconds: float | None = None, max_cpu_seconds: float | None = None,
             keep_best: bool = False) -> LMHistory:
    """Adam on shuffled (context, target) pairs of ``train``; validation perplexity after each epoch, the
    learning rate halved when it did not improve (as :func:`~nlpcourse.models.rnnlm.fit_lm`). Stops after
    ``max_seconds`` of wall time or ``max_cpu_seconds`` of the process's CPU time (all threads); with
    ``keep_best`` ends with the weights of the best validation evaluation."""
    ctx, tgt = context_windows(train, model.config.context)  # (N-K,K), (N-K,)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen, hist = torch.Generator().manual_seed(seed), LMHistory()
    budget, best = Budget(max_seconds, max_cpu_seconds), EarlyStopping("min", keep_best_state=keep_best)
    for _ in range(epochs):
        order = torch.randperm(len(tgt), generator=gen)
        hist.train_loss.append(_ffnn_epoch(model, opt, ctx, tgt, order, batch_size, budget, hist))
        hist.steps.append(hist.tokens)
        hist.valid_ppl.append(perplexity_of(ffnn_log_probs(model, valid, valid_context)))
        best.update(hist.valid_ppl[-1], model)
        if best.best_epoch != len(hist.valid_ppl) - 1:  # no better than an earlier epoch: smaller steps
            for group in opt.param_groups:
                group["lr"] /= 2
        if budget.spent():
            break
    hist.seconds, hist.cpu_seconds = budget.seconds, budget.cpu_seconds
    restore_best(model, best, hist)
    return hist


def _ffnn_epoch(model: FFNNLM, opt: torch.optim.Optimizer, ctx: torch.Tensor, tgt: torch.Tensor,
                order: torch.Tensor, batch_size: int, budget: Budget, hist: LMHistory) -> float:
    """One pass over the (context, target) pairs in ``order`` (or until ``budget`` is spent); mean loss."""
    device = next(model.parameters()).device
    model.train()
    total = 0.0
    for j, i in enumerate(range(0, len(order), batch_size)):
        rows = order[i:i + batch_size]
        loss = F.cross_entropy(model(ctx[rows].to(device)), tgt[rows].to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += loss.item()
        hist.tokens += len(rows)
        if not math.isfinite(total):
            raise NumericalError(f"fit_ffnn: the loss became {loss.item()} at batch {j}")
        if budget.spent():
            break
    return total / (j + 1)

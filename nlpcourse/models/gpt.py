"""A small GPT (Radford et al., 2018): a causal Transformer language model for the pretraining chapter, built
from PyTorch's pre-LN encoder layers under a causal mask, with sampling.

Shapes: B batch, T positions, D model dim, H heads, F the feed-forward dim, V vocabulary, L layers.

    ids      (B,T)     token ids, padded with pad_id at the end
    x        (B,T,D)   E[ids] + P[0:T]: learned token and position embeddings (GPT's, not sinusoids)
    h        (B,T,D)   L pre-LN layers (GELU); position t attends to positions 0..t only
    logits   (B,T,V)   LN(h) E^T: the logits of the token after each position (the output layer is E)
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import ConfigError, ShapeError


@dataclass
class GPTConfig:
    """Everything needed to rebuild a :class:`GPT`."""

    vocab: int  # V
    d_model: int = 128  # D
    heads: int = 4  # H, dividing D
    layers: int = 4  # L
    d_ff: int = 512  # F
    max_len: int = 128  # rows of the position table: the longest context
    dropout: float = 0.1
    pad_id: int = 0

    def __post_init__(self) -> None:
        ok = (self.vocab >= 2 and self.heads >= 1 and self.d_model % self.heads == 0
              and min(self.layers, self.d_ff, self.max_len) >= 1 and 0.0 <= self.dropout < 1.0)
        if not ok:
            raise ConfigError(f"GPTConfig: need vocab >= 2, heads dividing d_model, layers, d_ff, max_len >= 1 and "
                              f"dropout in [0, 1); got {self}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class GPT(nn.Module):
    """P(x_t | x_<t) with causal self-attention."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        c = self.config = config
        self.tok_embed = nn.Embedding(c.vocab, c.d_model)
        self.pos_embed = nn.Embedding(c.max_len, c.d_model)
        layer = nn.TransformerEncoderLayer(c.d_model, c.heads, c.d_ff, c.dropout, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, c.layers, norm=nn.LayerNorm(c.d_model),
                                            enable_nested_tensor=False)
        self.drop = nn.Dropout(c.dropout)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)

    def states(self, ids: torch.Tensor) -> torch.Tensor:
        """(B,T) ids -> (B,T,D) final states, each position's from the positions up to it."""
        T = ids.shape[1]
        if T > self.config.max_len:
            raise ShapeError(f"GPT: {T} positions, the context holds {self.config.max_len} (max_len)")
        x = self.drop(self.tok_embed(ids) + self.pos_embed(torch.arange(T, device=ids.device))[None])
        causal = torch.ones(T, T, dtype=torch.bool, device=ids.device).triu(1)  # True: may NOT attend (PyTorch's)
        return self.blocks(x, mask=causal, is_causal=True)  # (B,T,D)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """(B,T) ids -> (B,T,V) logits of the next token at each position."""
        return self.states(ids) @ self.tok_embed.weight.T  # (B,T,D) x (D,V) -> (B,T,V)


class GPTClassifier(nn.Module):
    """GPT fine-tuned for classification (Radford et al., 2018, section 3.2): a linear layer on the final
    state of each sequence's last real token (eq. 3), the whole network trained with the classifier's loss plus
    ``lm_weight`` times the language-model loss of the same pass (eq. 5, lambda = 0.5), which the model leaves
    in ``aux_loss`` while training (``nlpcourse.finetune`` adds it)."""

    def __init__(self, gpt: GPT, classes: int, lm_weight: float = 0.5):
        super().__init__()
        if classes < 2 or lm_weight < 0:
            raise ConfigError(f"GPTClassifier: need classes >= 2 and lm_weight >= 0, got {classes}, {lm_weight}")
        self.gpt, self.lm_weight = gpt, lm_weight
        self.drop = nn.Dropout(gpt.config.dropout)
        self.out = nn.Linear(gpt.config.d_model, classes)
        self.aux_loss: torch.Tensor | None = None

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """(B,T) ids, padded at the end -> (B,C) logits; in training mode also sets ``aux_loss``."""
        h = self.gpt.states(ids)  # (B,T,D)
        last = (ids != self.gpt.config.pad_id).sum(1).clamp(min=1) - 1  # (B,) each sequence's last real token
        logits = self.out(self.drop(h[torch.arange(len(ids), device=ids.device), last]))  # (B,D) -> (B,C)
        self.aux_loss = None
        if self.training and self.lm_weight:
            lm = h[:, :-1] @ self.gpt.tok_embed.weight.T  # (B,T-1,D) x (D,V) -> (B,T-1,V)
            self.aux_loss = self.lm_weight * F.cross_entropy(lm.flatten(0, 1), ids[:, 1:].flatten(),
                                                             ignore_index=self.gpt.config.pad_id)
        return logits

    def layer_groups(self) -> list[list[nn.Parameter]]:
        """Bottom to top (``nlpcourse.finetune``): the embeddings, each layer, the final norm and the classifier."""
        g = self.gpt
        layers = [list(layer.parameters()) for layer in g.blocks.layers]
        return [[*g.tok_embed.parameters(), *g.pos_embed.parameters()], *layers,
                [*g.blocks.norm.parameters(), *self.out.parameters()]]


def gpt_from_config(config: dict) -> GPT:
    """A model from a checkpoint's config dict."""
    return GPT(GPTConfig(**config))


def gpt_loss(model: GPT, ids: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of each token given the ones before it (padding ignored)."""
    logits = model(ids[:, :-1])  # position t predicts ids[:, t + 1]
    return F.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten(), ignore_index=model.config.pad_id)


@torch.no_grad()
def sample(model: GPT, prompt: torch.Tensor, steps: int, generator: torch.Generator, temperature: float = 1.0,
           top_k: int | None = None) -> torch.Tensor:
    """(B,T0) prompt -> (B,T0+steps): each new token drawn from softmax(logits / temperature), among the
    ``top_k`` most probable when given; the draws come from ``generator`` (on the CPU: the same text on
    every device). The context is cut to the last ``max_len`` tokens."""
    if temperature <= 0 or steps < 0 or (top_k is not None and top_k < 1):
        raise ConfigError(f"sample: need temperature > 0, steps >= 0, top_k >= 1; got {temperature}, {steps}, "
                          f"{top_k}")
    ids = prompt
    for _ in range(steps):
        logits = model(ids[:, -model.config.max_len:])[:, -1].float().cpu() / temperature  # (B,V)
        if top_k is not None:
            kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]  # (B,1)
            logits = logits.masked_fill(logits < kth, float("-inf"))
        nxt = torch.multinomial(torch.softmax(logits, -1), 1, generator=generator)  # (B,1)
        ids = torch.cat([ids, nxt.to(ids.device)], dim=1)
    return ids

"""A bag-of-words MLP text classifier (chapter "Neural building blocks", ``scripts/train_bow_mlp.py``).

Shapes: B batch, V vocabulary size (number of features), H hidden units, K classes.

    x      (B,V)  1.0 where a word of the vocabulary occurs in the text, else 0.0
    h      (B,H)  h = act(x W_1^T + b_1), then dropout while training
    logits (B,K)  logits = h W_2^T + b_2; softmax(logits) are the class probabilities

The gradients come from autograd; the assignment "Backprop by hand" asks for them in matrix form.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from ..errors import ConfigError
from ..shapes import check_shape

ACTIVATIONS = ("relu", "tanh", "gelu", "sigmoid")


@dataclass
class BowMLPConfig:
    """Everything needed to rebuild a :class:`BowMLP` (saved in its checkpoint)."""

    vocab_size: int  # V: number of input features, one per vocabulary entry (specials included)
    hidden: int = 64  # H: hidden units; 0 means no hidden layer (logistic/softmax regression)
    n_classes: int = 2  # K: output classes (0 rotten, 1 fresh)
    dropout: float = 0.0  # probability of zeroing a hidden unit while training
    activation: str = "relu"  # non-linearity of the hidden layer: relu | tanh | gelu | sigmoid

    def __post_init__(self) -> None:
        if self.vocab_size < 1:
            raise ConfigError(f"BowMLPConfig: vocab_size must be >= 1, got {self.vocab_size}")
        if self.hidden < 0:
            raise ConfigError(f"BowMLPConfig: hidden must be >= 0, got {self.hidden}")
        if self.n_classes < 2:
            raise ConfigError(f"BowMLPConfig: n_classes must be >= 2, got {self.n_classes}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"BowMLPConfig: dropout must be in [0, 1), got {self.dropout}")
        if self.activation not in ACTIVATIONS:
            raise ConfigError(f"BowMLPConfig: activation must be one of {ACTIVATIONS}, got {self.activation!r}")


def _activation(name: str) -> nn.Module:
    return {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU, "sigmoid": nn.Sigmoid}[name]()


class BowMLP(nn.Module):
    """``x (B,V) -> logits (B,K)`` with one hidden layer (or none when ``config.hidden == 0``)."""

    def __init__(self, config: BowMLPConfig):
        super().__init__()
        self.config = config
        V, H, K = config.vocab_size, config.hidden, config.n_classes
        if H == 0:
            self.hidden = None
            self.act = nn.Identity()
            self.drop = nn.Identity()
            self.out = nn.Linear(V, K)  # weight W (K,V), bias b (K,)
        else:
            self.hidden = nn.Linear(V, H)  # weight W_1 (H,V), bias b_1 (H,)
            self.act = _activation(config.activation)
            self.drop = nn.Dropout(config.dropout)
            self.out = nn.Linear(H, K)  # weight W_2 (K,H), bias b_2 (K,)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The hidden representation h (B,H) (or x itself when there is no hidden layer)."""
        check_shape(x, ("B", self.config.vocab_size), "BowMLP input x")
        if self.hidden is None:
            return x
        return self.drop(self.act(self.hidden(x)))  # (B,V) x (V,H) -> (B,H)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.features(x))  # (B,H) x (H,K) -> (B,K)

    @torch.no_grad()
    def predict_proba(self, x: torch.Tensor) -> torch.Tensor:
        """Class probabilities (B,K), computed in eval mode (no dropout); the mode is restored after."""
        was_training = self.training
        self.eval()
        try:
            return torch.softmax(self(x), dim=-1)  # (B,K)
        finally:
            self.train(was_training)


def build_bow_mlp(config: Mapping[str, Any] | BowMLPConfig) -> BowMLP:
    """Rebuild a model from its config (a :class:`BowMLPConfig` or the dict saved in a checkpoint);
    pass it as ``build=`` to :func:`nlpcourse.load_checkpoint`. Unknown keys are an error."""
    if isinstance(config, BowMLPConfig):
        return BowMLP(config)
    known = {f.name for f in dataclasses.fields(BowMLPConfig)}
    unknown = sorted(set(config) - known)
    if unknown:
        raise ConfigError(f"build_bow_mlp: unknown config keys {unknown}; expected some of {sorted(known)}")
    return BowMLP(BowMLPConfig(**dict(config)))


def bag_of_words(docs: Sequence[Sequence[int]], vocab_size: int, binary: bool = True) -> torch.Tensor:
    """Encode documents (lists of token ids) as bag-of-words rows: (N docs) -> (N,V) float32.

    With ``binary`` a cell is 1.0 if the word occurs in the document (presence), else its count.
    """
    if vocab_size < 1:
        raise ConfigError(f"bag_of_words: vocab_size must be >= 1, got {vocab_size}")
    x = torch.zeros(len(docs), vocab_size)  # (N,V)
    for i, ids in enumerate(docs):
        if len(ids) == 0:
            continue
        idx = torch.as_tensor(list(ids), dtype=torch.long)
        if idx.min() < 0 or idx.max() >= vocab_size:
            bad = int(idx.min()) if idx.min() < 0 else int(idx.max())
            raise ConfigError(f"bag_of_words: document {i} has the id {bad}, outside [0, {vocab_size})")
        if binary:
            x[i, idx] = 1.0
        else:
            x[i].index_add_(0, idx, torch.ones(len(idx)))
    return x

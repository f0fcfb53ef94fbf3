"""ELMo's bidirectional language model and scalar mix (Peters et al., 2018), for the pretraining chapter.

Shapes: B batch, T positions, E the token vector (= H here), H the LSTM units per direction, L layers,
V vocabulary.

    ids        (B,T)       <bos> words <eos>, padded with <pad> (id 0) at the end
    x          (B,T,H)     token vectors (ELMo's character CNN is replaced by a word embedding)
    fwd[l]     (B,T,H)     layer l of the forward LSTM: reads positions 0..t
    bwd[l]     (B,T,H)     layer l of the backward LSTM: reads positions t..end (of its own sequence)
    layers     L+1 x (B,T,2H)  [x; x], then [fwd[l]; bwd[l]] for l = 1..L: what a task mixes
    loss       the forward LM predicts ids[t+1] from fwd[L] at t, the backward LM ids[t-1] from bwd[L] at t;
               both share the embedding as their output layer (eq. 1 of the paper: their log-likelihoods
               summed, here averaged)

A task uses ELMo through :class:`ScalarMix`: gamma * sum_j softmax(w)_j layers[j] (eq. 1), w and gamma
learnt with the task, the biLM frozen.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..errors import ConfigError, ShapeError


@dataclass
class BiLMConfig:
    """Everything needed to rebuild a :class:`BiLM`."""

    vocab: int  # V, the 4 specials <pad> <unk> <bos> <eos> first
    hidden: int = 256  # H: units of each LSTM direction, and the token vector's size
    layers: int = 2  # L: LSTM layers per direction
    dropout: float = 0.1  # between layers and on the output
    pad_id: int = 0

    def __post_init__(self) -> None:
        if self.vocab <= 4 or self.hidden < 1 or self.layers < 1 or not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"BiLMConfig: need vocab > 4, hidden >= 1, layers >= 1, dropout in [0, 1); got "
                              f"{self.vocab}, {self.hidden}, {self.layers}, {self.dropout}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class BiLM(nn.Module):
    """A forward and a backward LSTM language model sharing their token embedding and output layer."""

    def __init__(self, config: BiLMConfig):
        super().__init__()
        c = self.config = config
        self.embed = nn.Embedding(c.vocab, c.hidden, padding_idx=c.pad_id)
        self.fwd = nn.ModuleList(nn.LSTM(c.hidden, c.hidden, batch_first=True) for _ in range(c.layers))
        self.bwd = nn.ModuleList(nn.LSTM(c.hidden, c.hidden, batch_first=True) for _ in range(c.layers))
        self.drop = nn.Dropout(c.dropout)

    def layers(self, ids: torch.Tensor) -> list[torch.Tensor]:
        """L+1 tensors (B,T,2H): the token layer [x; x], then each layer's [forward; backward] states."""
        if ids.dim() != 2:
            raise ShapeError(f"BiLM: ids must be (B, T), got shape {tuple(ids.shape)}")
        lengths = (ids != self.config.pad_id).sum(1).clamp(min=1)
        x = self.embed(ids)  # (B,T,H)
        fwd, bwd = self._stack(self.fwd, x, lengths), self._stack(self.bwd, _reverse(x, lengths), lengths)
        bwd = [_reverse(h, lengths) for h in bwd]  # back to reading order
        return [torch.cat([x, x], dim=-1)] + [torch.cat([f, b], dim=-1) for f, b in zip(fwd, bwd)]

    def _stack(self, lstms: nn.ModuleList, x: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
        out = []
        for k, lstm in enumerate(lstms):
            packed = pack_padded_sequence(self.drop(x) if k else x, lengths.cpu(), batch_first=True,
                                          enforce_sorted=False)
            h, _ = lstm(packed)
            x, _ = pad_packed_sequence(h, batch_first=True, total_length=x.shape[1])  # (B,T,H), 0 at padding
            out.append(x)
        return out

    def loss(self, ids: torch.Tensor) -> torch.Tensor:
        """The mean of the forward and backward LMs' cross-entropies per token (padding ignored)."""
        top = self.layers(ids)[-1]
        H = self.config.hidden
        fwd, bwd = self.drop(top[..., :H]), self.drop(top[..., H:])  # (B,T,H) each
        E = self.embed.weight  # (V,H): the output layer too
        pad = self.config.pad_id
        ahead = F.cross_entropy((fwd[:, :-1] @ E.T).flatten(0, 1), ids[:, 1:].flatten(), ignore_index=pad)
        behind = F.cross_entropy((bwd[:, 1:] @ E.T).flatten(0, 1), ids[:, :-1].flatten(), ignore_index=pad)
        return (ahead + behind) / 2


def bilm_from_config(config: dict) -> BiLM:
    """A model from a checkpoint's config dict."""
    return BiLM(BiLMConfig(**config))


def _reverse(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Each sequence's first ``length`` positions reversed, padding left where it is."""
    T = x.shape[1]
    t = torch.arange(T, device=x.device)[None, :]  # (1,T)
    index = torch.where(t < lengths[:, None].to(x.device), lengths[:, None].to(x.device) - 1 - t, t)  # (B,T)
    return x.gather(1, index[..., None].expand_as(x)) if x.dim() == 3 else x.gather(1, index)


class ScalarMix(nn.Module):
    """ELMo's task-specific combination of the biLM's layers (eq. 1): gamma * sum_j softmax(w)_j h_j."""

    def __init__(self, n_layers: int):
        super().__init__()
        if n_layers < 1:
            raise ConfigError(f"ScalarMix: n_layers must be >= 1, got {n_layers}")
        self.w = nn.Parameter(torch.zeros(n_layers))  # equal weights to start
        self.gamma = nn.Parameter(torch.ones(()))

    def forward(self, layers: list[torch.Tensor]) -> torch.Tensor:
        if len(layers) != self.w.numel():
            raise ShapeError(f"ScalarMix: {len(layers)} layers given, made for {self.w.numel()}")
        s = torch.softmax(self.w, dim=0)  # (L+1,): positive, summing to 1
        return self.gamma * sum(s_j * h for s_j, h in zip(s, layers))

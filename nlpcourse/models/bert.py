"""A small BERT (Devlin et al., 2019) for the pretraining chapter, built from PyTorch's own post-LN encoder
layers, with the two pretraining heads (masked-LM and next-sentence prediction) and the masking rule.

Shapes: B batch, T positions, D model dim, H heads, F the feed-forward dim, V the WordPiece vocabulary.

    ids       (B,T)     [CLS] a [SEP] (b [SEP]), padded with [PAD] (id 0)
    segments  (B,T)     0 over the first sentence, 1 over the second
    x         (B,T,D)   LayerNorm(E_tok[ids] + E_pos[0:T] + E_seg[segments]): all three learned (sec. 3)
    h         (B,T,D)   L post-LN encoder layers, GELU in the feed-forward layer, padded keys masked
    mlm       (B,T,V)   LayerNorm(GELU(W h)) E_tok^T + b: the output layer shares the token embeddings
    pooled    (B,D)     tanh(W_p h[:, 0]): the [CLS] position, for next-sentence prediction and classifiers
    nsp       (B,2)     W_nsp pooled: is b the sentence that followed a? (1 = yes)

The same network is Hugging Face's ``BertForPreTraining``: :func:`to_huggingface` builds one from a
``BertConfig`` (nothing downloaded) and gives it these weights, and the tests check that both compute the
same logits, so what the chapter trains is the model practitioners load by name.
"""
from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..data.wordpiece import MASK_ID, PAD_ID, SPECIALS
from ..errors import ConfigError, ShapeError

#: Labels of the positions the masked-LM loss ignores (PyTorch's and Hugging Face's convention).
IGNORE = -100


@dataclass
class BertConfig:
    """Everything needed to rebuild a :class:`Bert` (saved in its checkpoint)."""

    vocab: int  # V: WordPiece pieces, the 5 specials first
    d_model: int = 128  # D: width of every residual stream
    heads: int = 4  # H: attention heads per layer, each of width D/H
    layers: int = 4  # L: encoder layers
    d_ff: int = 512  # F: hidden width of the feed-forward layer
    max_len: int = 128  # rows of the learned position table
    segments: int = 2  # rows of the segment table: sentence A and sentence B
    dropout: float = 0.1  # on the embeddings, the attention weights and each sub-layer's output
    eps: float = 1e-12  # LayerNorm's epsilon, BERT's

    def __post_init__(self) -> None:
        checks = [
            (self.vocab > len(SPECIALS), f"the vocabulary must hold more than the {len(SPECIALS)} specials, "
                                         f"got {self.vocab}"),
            (self.heads >= 1 and self.d_model % self.heads == 0,
             f"heads ({self.heads}) must divide d_model ({self.d_model})"),
            (min(self.layers, self.d_ff, self.max_len, self.segments) >= 1,
             "layers, d_ff, max_len and segments must be >= 1"),
            (0.0 <= self.dropout < 1.0, f"dropout must be in [0, 1), got {self.dropout}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(f"BertConfig: {message}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Bert(nn.Module):
    """BERT's encoder with its masked-LM and next-sentence heads."""

    def __init__(self, config: BertConfig):
        super().__init__()
        c = self.config = config
        D = c.d_model
        self.tok_embed = nn.Embedding(c.vocab, D)
        self.pos_embed = nn.Embedding(c.max_len, D)
        self.seg_embed = nn.Embedding(c.segments, D)
        self.embed_norm = nn.LayerNorm(D, eps=c.eps)
        self.drop = nn.Dropout(c.dropout)
        layer = nn.TransformerEncoderLayer(D, c.heads, c.d_ff, c.dropout, activation="gelu", layer_norm_eps=c.eps,
                                           batch_first=True, norm_first=False)
        self.encoder = nn.TransformerEncoder(layer, c.layers, enable_nested_tensor=False)
        self.mlm_dense = nn.Linear(D, D)
        self.mlm_norm = nn.LayerNorm(D, eps=c.eps)
        self.mlm_bias = nn.Parameter(torch.zeros(c.vocab))
        self.pool = nn.Linear(D, D)
        self.nsp = nn.Linear(D, 2)
        self.apply(_init_weights)

    def embed(self, ids: torch.Tensor, segments: torch.Tensor | None = None) -> torch.Tensor:
        """(B,T) ids -> (B,T,D): the sum of the three embeddings, normalised, dropped out."""
        T = ids.shape[1]
        if T > self.config.max_len:
            raise ShapeError(f"Bert: {T} positions, the position table has {self.config.max_len} rows (max_len)")
        segments = torch.zeros_like(ids) if segments is None else segments
        positions = torch.arange(T, device=ids.device)
        x = self.tok_embed(ids) + self.pos_embed(positions)[None] + self.seg_embed(segments)  # (B,T,D)
        return self.drop(self.embed_norm(x))

    def forward(self, ids: torch.Tensor, segments: torch.Tensor | None = None) -> torch.Tensor:
        """(B,T,D) hidden states; padded positions are never attended to. The encoder always takes the
        layers' own path, never PyTorch's inference fast path (:func:`_math_path`)."""
        with _math_path():
            return self.encoder(self.embed(ids, segments), src_key_padding_mask=ids == PAD_ID)

    def mlm_logits(self, h: torch.Tensor) -> torch.Tensor:
        """(B,T,D) -> (B,T,V): the masked-LM head, tied to the token embeddings."""
        z = self.mlm_norm(F.gelu(self.mlm_dense(h)))  # (B,T,D)
        return z @ self.tok_embed.weight.T + self.mlm_bias  # (B,T,D) x (D,V) -> (B,T,V)

    def pooled(self, h: torch.Tensor) -> torch.Tensor:
        """(B,T,D) -> (B,D): the [CLS] position through a tanh layer."""
        return torch.tanh(self.pool(h[:, 0]))

    def nsp_logits(self, h: torch.Tensor) -> torch.Tensor:
        """(B,T,D) -> (B,2): next-sentence prediction from the pooled [CLS]."""
        return self.nsp(self.pooled(h))


class BertClassifier(nn.Module):
    """A (pretrained) :class:`Bert` with a classifier on top: dropout, then a linear layer to ``classes``
    logits, over BERT's pooled [CLS] position (sec. 4.1, ``pooling="cls"``) or over the mean of the final
    states of the real (not padding) positions (``pooling="mean"``, in the spirit of ULMFiT's concat
    pooling, sec. 3.3: it reads every position's state, not one that masked-LM pretraining never trained).
    Fine-tuning trains all of it."""

    def __init__(self, bert: Bert, classes: int = 2, dropout: float | None = None, pooling: str = "cls"):
        super().__init__()
        if classes < 2:
            raise ConfigError(f"BertClassifier: classes must be >= 2, got {classes}")
        if pooling not in ("cls", "mean"):
            raise ConfigError(f"BertClassifier: pooling must be 'cls' or 'mean', got {pooling!r}")
        self.bert, self.pooling = bert, pooling
        self.drop = nn.Dropout(bert.config.dropout if dropout is None else dropout)
        self.out = nn.Linear(bert.config.d_model, classes)
        _init_weights(self.out)

    def forward(self, ids: torch.Tensor, segments: torch.Tensor | None = None) -> torch.Tensor:
        """(B,T) ids -> (B,classes) logits."""
        h = self.bert(ids, segments)  # (B,T,D)
        if self.pooling == "cls":
            return self.out(self.drop(self.bert.pooled(h)))
        real = (ids != PAD_ID).unsqueeze(-1).to(h.dtype)  # (B,T,1)
        mean = (h * real).sum(1) / real.sum(1).clamp(min=1)  # (B,T,D) -> (B,D)
        return self.out(self.drop(mean))

    def layer_groups(self) -> list[list[nn.Parameter]]:
        """Bottom to top, for discriminative rates and gradual unfreezing (``nlpcourse.finetune``): the
        embeddings, each encoder layer, then the pooler and the classifier."""
        b = self.bert
        embeddings = [*b.tok_embed.parameters(), *b.pos_embed.parameters(), *b.seg_embed.parameters(),
                      *b.embed_norm.parameters()]
        layers = [list(layer.parameters()) for layer in b.encoder.layers]
        return [embeddings, *layers, [*b.pool.parameters(), *self.out.parameters()]]


def _init_weights(module: nn.Module) -> None:
    """BERT's initialisation: normal(0, 0.02) weights, zero biases, unit LayerNorm gains."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.MultiheadAttention):
        nn.init.normal_(module.in_proj_weight, std=0.02)
        nn.init.zeros_(module.in_proj_bias)


@contextlib.contextmanager
def _math_path():
    """PyTorch's fast path for ``nn.TransformerEncoder`` in evaluation (no gradient) off for the block, then as it
    was. On CUDA its fused layer gave outputs 1.4e-3 away from the layer's own computation, in float64 as in
    float32, where the CPU's agreed to 4e-6: a model evaluated on a GPU was not quite the model it trained
    (``make gpu-check`` on an H200 with PyTorch 2.11: tests/test_bert.py's comparison with Hugging Face)."""
    before = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        torch.backends.mha.set_fastpath_enabled(before)


def build_bert(config: BertConfig, seed: int = 0, device: torch.device | str = "cpu") -> Bert:
    """A freshly initialised model (weights drawn with ``seed``)."""
    torch.manual_seed(seed)
    return Bert(config).to(device)


def bert_from_config(config: dict) -> Bert:
    """A model from a checkpoint's config dict."""
    return Bert(BertConfig(**config))


@torch.no_grad()
def attention_maps(model: Bert, ids: torch.Tensor, segments: torch.Tensor | None = None) -> list[torch.Tensor]:
    """Every layer's attention weights, L x (B,H,T,T): row t is where position t looked (padded keys get 0).
    Each post-LN layer attends over its own input, so its weights are its self-attention of that input."""
    x = model.embed(ids, segments)  # (B,T,D)
    pad = ids == PAD_ID  # (B,T)
    maps = []
    for layer in model.encoder.layers:
        _, w = layer.self_attn(x, x, x, key_padding_mask=pad, need_weights=True,
                               average_attn_weights=False)  # (B,H,T,T)
        maps.append(w)
        x = layer(x, src_key_padding_mask=pad)
    return maps


@torch.no_grad()
def fill_masks(model: Bert, ids: torch.Tensor, k: int = 5) -> list[tuple[int, list[int], list[float]]]:
    """For each [MASK] of the one sequence ``ids`` (T,): (its position, the ``k`` likeliest pieces, their
    probabilities)."""
    if ids.dim() != 1:
        raise ShapeError(f"fill_masks: ids must be one sequence (T,), got shape {tuple(ids.shape)}")
    where = (ids == MASK_ID).nonzero().flatten().tolist()
    if not where:
        return []
    probs = torch.softmax(model.mlm_logits(model(ids[None])[0, where]), dim=-1)  # (M,D) -> (M,V)
    top = probs.topk(k, dim=-1)
    return [(t, top.indices[m].tolist(), top.values[m].tolist()) for m, t in enumerate(where)]


# ------------------------------------------------------------------ masked-LM inputs


def mlm_corrupt(ids: torch.Tensor, generator: torch.Generator, rate: float = 0.15,
                vocab: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masking (sec. 3.1): each piece that is not a special is chosen with probability ``rate``; a
    chosen piece becomes [MASK] 80% of the time, a random piece 10%, stays itself 10%. Returns (inputs,
    labels), both (B,T): labels hold the original id at chosen positions and ``IGNORE`` elsewhere. Draws
    come from ``generator`` on the CPU, so a seed gives the same corruption on every device."""
    if not 0.0 < rate < 1.0:
        raise ConfigError(f"mlm_corrupt: rate must be in (0, 1), got {rate}")
    vocab = vocab or int(ids.max()) + 1
    cpu = ids.cpu()
    u_choose, u_how = torch.rand(cpu.shape, generator=generator), torch.rand(cpu.shape, generator=generator)
    random_ids = torch.randint(len(SPECIALS), vocab, cpu.shape, generator=generator)
    chosen = (u_choose < rate) & (cpu >= len(SPECIALS))  # [PAD] [UNK] [CLS] [SEP] [MASK] never chosen
    inputs = torch.where(chosen & (u_how < 0.8), torch.full_like(cpu, MASK_ID), cpu)
    inputs = torch.where(chosen & (u_how >= 0.8) & (u_how < 0.9), random_ids, inputs)
    labels = torch.where(chosen, cpu, torch.full_like(cpu, IGNORE))
    return inputs.to(ids.device), labels.to(ids.device)


def mlm_loss(model: Bert, inputs: torch.Tensor, labels: torch.Tensor,
             segments: torch.Tensor | None = None) -> torch.Tensor:
    """Mean cross-entropy of the original pieces at the chosen positions only."""
    logits = model.mlm_logits(model(inputs, segments))  # (B,T,V)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=IGNORE)


# ------------------------------------------------------------------ the same model in Hugging Face


def _hf_state(model: Bert) -> dict[str, torch.Tensor]:
    """Our weights under the names of Hugging Face's ``BertForPreTraining``."""
    s = {k: v.detach() for k, v in model.state_dict().items()}
    out = {"bert.embeddings.word_embeddings.weight": s["tok_embed.weight"],
           "bert.embeddings.position_embeddings.weight": s["pos_embed.weight"],
           "bert.embeddings.token_type_embeddings.weight": s["seg_embed.weight"],
           "bert.embeddings.LayerNorm.weight": s["embed_norm.weight"],
           "bert.embeddings.LayerNorm.bias": s["embed_norm.bias"],
           "bert.pooler.dense.weight": s["pool.weight"], "bert.pooler.dense.bias": s["pool.bias"],
           "cls.predictions.transform.dense.weight": s["mlm_dense.weight"],
           "cls.predictions.transform.dense.bias": s["mlm_dense.bias"],
           "cls.predictions.transform.LayerNorm.weight": s["mlm_norm.weight"],
           "cls.predictions.transform.LayerNorm.bias": s["mlm_norm.bias"],
           "cls.predictions.bias": s["mlm_bias"], "cls.predictions.decoder.weight": s["tok_embed.weight"],
           "cls.predictions.decoder.bias": s["mlm_bias"],
           "cls.seq_relationship.weight": s["nsp.weight"], "cls.seq_relationship.bias": s["nsp.bias"]}
    for i in range(model.config.layers):
        ours, theirs = f"encoder.layers.{i}.", f"bert.encoder.layer.{i}."
        for name, w, b in zip(("query", "key", "value"), s[ours + "self_attn.in_proj_weight"].chunk(3),
                              s[ours + "self_attn.in_proj_bias"].chunk(3)):
            out[theirs + f"attention.self.{name}.weight"], out[theirs + f"attention.self.{name}.bias"] = w, b
        for mine, hf in (("self_attn.out_proj", "attention.output.dense"), ("norm1", "attention.output.LayerNorm"),
                         ("linear1", "intermediate.dense"), ("linear2", "output.dense"),
                         ("norm2", "output.LayerNorm")):
            out[theirs + hf + ".weight"] = s[ours + mine + ".weight"]
            out[theirs + hf + ".bias"] = s[ours + mine + ".bias"]
    return out


def to_huggingface(model: Bert) -> nn.Module:
    """Hugging Face's ``BertForPreTraining`` built from a ``BertConfig`` of the same sizes (no download),
    holding this model's weights, in eval mode."""
    import transformers

    c = model.config
    hf = transformers.BertForPreTraining(transformers.BertConfig(
        vocab_size=c.vocab, hidden_size=c.d_model, num_hidden_layers=c.layers, num_attention_heads=c.heads,
        intermediate_size=c.d_ff, hidden_act="gelu", hidden_dropout_prob=c.dropout,
        attention_probs_dropout_prob=c.dropout, max_position_embeddings=c.max_len, type_vocab_size=c.segments,
        layer_norm_eps=c.eps, pad_token_id=PAD_ID))
    state = _hf_state(model)
    own = hf.state_dict()
    unknown = set(state) - set(own)
    left = {k for k in set(own) - set(state) if not k.endswith("position_ids")}
    if unknown or left:
        raise ConfigError(f"to_huggingface: names that do not match: ours {sorted(unknown)[:3]}, "
                          f"theirs {sorted(left)[:3]}")
    hf.load_state_dict({k: v.to(own[k].dtype) for k, v in state.items()}, strict=False)
    return hf.to(next(model.parameters()).device).eval()


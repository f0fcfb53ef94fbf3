"""The Transformer encoder-decoder (Vaswani et al., 2017) for the translation task (chapter "The Transformer",
``benchmarks/transformer.py``), built from PyTorch's own layers: ``nn.TransformerEncoderLayer`` and
``nn.TransformerDecoderLayer`` (multi-head attention through ``F.scaled_dot_product_attention``, fused
kernels where the inputs allow), so that what the chapter derives is checked against what practitioners run.

Shapes: B batch, S source length, T target length, D model dim, H heads, Dh = D/H, F the feed-forward
dim, V the (shared) vocabulary of BPE pieces, L layers.

    src      (B,S)     source piece ids, <eos> last, padded with <pad>
    x        (B,S,D)   sqrt(D) * E[src] + P[0:S]: embeddings scaled, plus positions (sec. 3.4, 3.5)
    memory   (B,S,D)   L encoder layers: self-attention over the source, then a feed-forward layer
    y_in     (B,T)     <bos> y_1 .. y_{T-1} (teacher forcing)
    h        (B,T,D)   L decoder layers: causal self-attention, attention over memory, feed-forward
    logits   (B,T,V)   h E^T: the output layer shares the embedding matrix (Press & Wolf, 2017)

Each sub-layer f is wrapped either as ``LayerNorm(x + f(x))`` (post-LN, the paper's) or as
``x + f(LayerNorm(x))`` (pre-LN, ``norm_first``; Xiong et al., 2020), in which case a final LayerNorm
closes each stack. Positions are either sinusoids (fixed) or a learned table of ``max_len`` rows.

Padded source positions are masked in every attention over the source; padded target positions are
masked as keys in the decoder's self-attention and are never targets of the loss.

Decoding one piece at a time (``greedy_decode``, ``beam_decode``) keeps a key-value cache
(``DecoderCache``): each decoder layer's self-attention keys and values of the pieces already read,
(B,H,t,Dh), and its cross-attention keys and values of the source, (B,H,S,Dh), computed once. Step t then
runs the decoder on the newest piece only, ``cached_step``, instead of on all t pieces again; the
result is the same (``cache=False`` re-reads the whole prefix, for comparison).
"""
from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from ..data.batching import bucket_batches
from ..errors import ConfigError, NumericalError, ShapeError
from ..train import Budget
from .seq2seq import Decoded, next_log_probs, pair_batch
from .seq2seq import corpus_loss as _corpus_loss

POSITIONS = ("sinusoidal", "learned")


@dataclass
class TransformerConfig:
    """Everything needed to rebuild a :class:`Transformer` (saved in its checkpoint)."""

    vocab: int  # V: BPE pieces shared by source and target, specials included
    d_model: int = 256  # D: width of every residual stream
    heads: int = 4  # H: attention heads per layer, each of width D/H
    enc_layers: int = 3  # L of the encoder
    dec_layers: int = 3  # L of the decoder
    d_ff: int = 1024  # F: hidden width of the position-wise feed-forward layer
    dropout: float = 0.1  # on embeddings+positions, attention weights, and each sub-layer's output
    norm_first: bool = True  # pre-LN (x + f(LN(x))); False: post-LN, the paper's LN(x + f(x))
    positions: str = "sinusoidal"  # "sinusoidal" (fixed) or "learned" (a table of max_len rows)
    max_len: int = 256  # the longest sequence the position table covers
    pad_id: int = 0  # the specials of every vocabulary: <pad> <unk> <bos> <eos>
    bos_id: int = 2
    eos_id: int = 3

    def __post_init__(self) -> None:
        checks = [
            (self.vocab > 4, f"the vocabulary must hold more than the 4 specials, got {self.vocab}"),
            (self.d_model >= 2 and self.d_model % 2 == 0, f"d_model must be even, got {self.d_model}"),
            (self.heads >= 1 and self.d_model % self.heads == 0,
             f"heads ({self.heads}) must divide d_model ({self.d_model})"),
            (min(self.enc_layers, self.dec_layers, self.d_ff, self.max_len) >= 1,
             "enc_layers, dec_layers, d_ff and max_len must be >= 1"),
            (0.0 <= self.dropout < 1.0, f"dropout must be in [0, 1), got {self.dropout}"),
            (self.positions in POSITIONS, f"positions must be one of {POSITIONS}, got {self.positions!r}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(f"TransformerConfig: {message}")


def _sinusoids(n: int, D: int) -> torch.Tensor:
    """(n,D) fixed positions in the [sin | cos] layout of tensor2tensor: column i < D/2 is
    sin(p / 10000^(2i/D)) and column D/2 + i the matching cosine (the paper interleaves the two; a fixed
    permutation of the columns, which the first layer's weights absorb)."""
    p = torch.arange(n, dtype=torch.float32)[:, None]  # (n,1)
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, D, 2, dtype=torch.float32) / D)  # (D/2,)
    angle = p * freq[None, :]  # (n,1) x (1,D/2) -> (n,D/2)
    return torch.cat([torch.sin(angle), torch.cos(angle)], dim=1)  # (n,D)


class Transformer(nn.Module):
    """Encoder-decoder P(y | x) = prod_t P(y_t | y_<t, x) with attention only."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        c = self.config = config
        D = c.d_model
        self.embed = nn.Embedding(c.vocab, D, padding_idx=c.pad_id)  # source, target and output layer
        nn.init.normal_(self.embed.weight, std=D ** -0.5)
        with torch.no_grad():
            self.embed.weight[c.pad_id].zero_()
        if c.positions == "learned":
            self.pos = nn.Embedding(c.max_len, D)
            nn.init.normal_(self.pos.weight, std=0.02)
        else:
            self.register_buffer("pos_table", _sinusoids(c.max_len, D), persistent=False)
        self.encoder = nn.TransformerEncoder(self._layer(nn.TransformerEncoderLayer), c.enc_layers,
                                             norm=self._final_norm(), enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(self._layer(nn.TransformerDecoderLayer), c.dec_layers,
                                             norm=self._final_norm())
        self.drop = nn.Dropout(c.dropout)

    def _layer(self, kind: type[nn.Module]) -> nn.Module:
        c = self.config
        return kind(c.d_model, c.heads, c.d_ff, c.dropout, batch_first=True, norm_first=c.norm_first)

    def _final_norm(self) -> nn.Module | None:
        return nn.LayerNorm(self.config.d_model) if self.config.norm_first else None

    def positions(self, n: int) -> torch.Tensor:
        """(n,D) the position vectors added to the first ``n`` embeddings."""
        if n > self.config.max_len:
            raise ShapeError(f"Transformer: a sequence of {n} tokens, the position table has "
                             f"{self.config.max_len} rows (TransformerConfig.max_len)")
        if self.config.positions == "learned":
            return self.pos.weight[:n]
        return self.pos_table[:n]

    def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        """(B,N) ids -> (B,N,D): sqrt(D) * embedding + position, then dropout."""
        x = self.embed(ids) * math.sqrt(self.config.d_model)  # (B,N) -> (B,N,D)
        return self.drop(x + self.positions(ids.shape[1])[None])  # (B,N,D) + (1,N,D)

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(memory (B,S,D), src_pad (B,S) True at padding) of the source ids ``src`` (B,S)."""
        src_pad = src == self.config.pad_id  # (B,S)
        return self.encoder(self.embed_tokens(src), src_key_padding_mask=src_pad), src_pad

    def decode(self, memory: torch.Tensor, src_pad: torch.Tensor, y_in: torch.Tensor) -> torch.Tensor:
        """Logits (B,T,V) of the next piece after each position of ``y_in`` (B,T); position t sees
        y_in[:, :t+1] only (the causal mask) and the unpadded source."""
        T = y_in.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool, device=y_in.device).triu(1)  # (T,T) True above the diagonal
        h = self.decoder(self.embed_tokens(y_in), memory, tgt_mask=causal, tgt_is_causal=True,
                         tgt_key_padding_mask=y_in == self.config.pad_id, memory_key_padding_mask=src_pad)
        return h @ self.embed.weight.T  # (B,T,D) x (D,V) -> (B,T,V)

    def forward(self, src: torch.Tensor, y_in: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits (B,T,V) of the next piece at every position of ``y_in``."""
        memory, src_pad = self.encode(src)
        return self.decode(memory, src_pad, y_in)


def build_transformer(config: TransformerConfig, seed: int = 0, device: torch.device | str = "cpu") -> Transformer:
    """A freshly initialised model (weights drawn with ``seed``)."""
    torch.manual_seed(seed)
    return Transformer(config).to(device)


def transformer_from_config(config: dict) -> Transformer:
    """A model from a checkpoint's config dict."""
    return Transformer(TransformerConfig(**config))


def smoothed_loss(model: Transformer, src: torch.Tensor, tgt: torch.Tensor, smoothing: float = 0.0) -> torch.Tensor:
    """Mean cross-entropy per target piece of ``tgt`` (B,T+1) = <bos> y <eos> <pad>..; padding ignored;
    with ``smoothing`` = eps the target is (1 - eps) on the reference piece + eps/V everywhere
    (Szegedy et al., 2016; sec. 5.4 of the paper)."""
    logits = model(src, tgt[:, :-1])  # reads <bos> y_1 .. : (B,T,V)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt[:, 1:].reshape(-1),  # (B*T,V) vs (B*T,)
                           ignore_index=model.config.pad_id, label_smoothing=smoothing)


# ------------------------------------------------------------------ attention maps


@torch.no_grad()
def attention_maps(model: Transformer, src: torch.Tensor, y_in: torch.Tensor) -> dict[str, list[torch.Tensor]]:
    """Every head's attention weights, per layer: ``"encoder"`` (B,H,S,S), ``"decoder"`` (B,H,T,T) (causal)
    and ``"cross"`` (B,H,T,S) (the decoder's queries over the source). The layers call their attention
    without weights (the fused path); hooks ask for them, one head at a time, on the same inputs."""
    model.eval()
    maps: dict[str, list[torch.Tensor]] = {"encoder": [], "decoder": [], "cross": []}
    hooks = []
    for name, layers, attr in (("encoder", model.encoder.layers, "self_attn"),
                               ("decoder", model.decoder.layers, "self_attn"),
                               ("cross", model.decoder.layers, "multihead_attn")):
        for layer in layers:
            mha = getattr(layer, attr)
            hooks.append(mha.register_forward_pre_hook(_ask_for_weights, with_kwargs=True))
            hooks.append(mha.register_forward_hook(lambda _m, _a, out, name=name: maps[name].append(out[1])))
    try:
        with torch.enable_grad():  # no fused encoder fast path (it would bypass the hooks)
            model.decode(*model.encode(src), y_in)
    finally:
        for h in hooks:
            h.remove()
    return {k: [w.detach() for w in v] for k, v in maps.items()}


def _ask_for_weights(_module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    return args, {**kwargs, "need_weights": True, "average_attn_weights": False}


# ------------------------------------------------------------------ training


@dataclass
class TransformerTrainConfig:
    """Adam with warm-up, label smoothing, length-bucketed batches, checkpoint averaging."""

    batch_size: int = 64  # B: pairs per step
    epochs: int = 200  # passes over the training pairs (stops earlier at a budget)
    lr: float = 1e-3  # the peak learning rate, reached at the end of the warm-up
    warmup: int = 400  # steps of linear warm-up; then lr * sqrt(warmup / step) (the paper's schedule)
    smoothing: float = 0.1  # label smoothing eps
    clip: float = 1.0  # max global L2 norm of the gradient
    average_last: int = 5  # end with the mean of the last k epoch ends if no worse on valid (1: the last)
    max_cpu_seconds: float | None = None  # stop after this much CPU time of the process (all its threads)
    max_seconds: float | None = None  # stop after this many seconds of wall time
    seed: int = 0  # batch order and dropout

    def __post_init__(self) -> None:
        if min(self.batch_size, self.epochs, self.warmup, self.average_last) < 1 or self.lr <= 0:
            raise ConfigError("TransformerTrainConfig: batch_size, epochs, warmup, average_last and lr must be > 0")
        if not 0.0 <= self.smoothing < 1.0:
            raise ConfigError(f"TransformerTrainConfig: smoothing must be in [0, 1), got {self.smoothing}")


def warmup_lr(step: int, lr: float, warmup: int) -> float:
    """The learning rate at ``step`` (1-based): linear up to ``lr`` at ``warmup``, then ``lr *
    sqrt(warmup / step)``: Vaswani et al.'s eq. 3 with its peak named instead of d^-0.5."""
    return lr * min(step / warmup, math.sqrt(warmup / step))


@dataclass
class TransformerHistory:
    """What :func:`fit_transformer` saw."""

    train_loss: list[float] = field(default_factory=list)  # mean smoothed loss of each epoch (nats)
    valid_loss: list[float] = field(default_factory=list)  # cross-entropy per piece (no smoothing), each epoch
    averaged_valid_loss: float | None = None  # the same for the mean of the last epoch ends (one end: itself)
    averaged: bool = False  # whether the model ends with that mean (it does when it is no worse)
    steps: int = 0  # optimizer steps
    epochs: float = 0.0  # epochs done (a fraction when a budget cut the last one)
    seconds: float = 0.0  # wall time of training (validation included)
    cpu_seconds: float = 0.0  # CPU time of the process (all threads) in the same span

    def to_dict(self) -> dict:
        return asdict(self)


def corpus_loss(model: Transformer, src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]],
                batch_size: int = 128) -> float:
    """Teacher-forced cross-entropy per target piece over a whole part (nats, no smoothing)."""
    return _corpus_loss(model, src, tgt, batch_size, loss=smoothed_loss)


def average_weights(states: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The element-wise mean of state dicts of one architecture (checkpoint averaging)."""
    if not states:
        raise ConfigError("average_weights: no state dicts to average")
    return {k: torch.stack([s[k].float() for s in states]).mean(0).to(states[0][k].dtype) for k in states[0]}


def fit_transformer(model: Transformer, train: tuple[Sequence, Sequence], valid: tuple[Sequence, Sequence],
                    cfg: TransformerTrainConfig) -> TransformerHistory:
    """Train on ``train`` = (source ids, target ids) until ``cfg.epochs`` or a budget, validating after
    each epoch; the model ends with the mean of its last ``cfg.average_last`` epoch-end weights when that
    mean is no worse on ``valid`` than the last weights (checkpoint averaging), else with the last."""
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, betas=(0.9, 0.98), eps=1e-9)
    hist, budget, ends = TransformerHistory(), Budget(cfg.max_seconds, cfg.max_cpu_seconds), []
    torch.manual_seed(cfg.seed)
    for epoch in range(cfg.epochs):
        _train_epoch(model, opt, train, cfg, epoch, hist, budget)
        hist.valid_loss.append(corpus_loss(model, *valid))
        ends = (ends + [copy.deepcopy(model.state_dict())])[-cfg.average_last:]
        if budget.spent():
            break
    hist.averaged_valid_loss = hist.valid_loss[-1]
    if len(ends) > 1:
        last = ends[-1]
        model.load_state_dict(average_weights(ends))
        hist.averaged_valid_loss = corpus_loss(model, *valid)
        hist.averaged = hist.averaged_valid_loss <= hist.valid_loss[-1]
        if not hist.averaged:  # still improving fast: the mean of older weights is worse
            model.load_state_dict(last)
    hist.seconds, hist.cpu_seconds = budget.seconds, budget.cpu_seconds
    return hist


def _train_epoch(model: Transformer, opt: torch.optim.Optimizer, train: tuple[Sequence, Sequence],
                 cfg: TransformerTrainConfig, epoch: int, hist: TransformerHistory, budget: Budget) -> None:
    batches = bucket_batches([len(t) for t in train[1]], cfg.batch_size, seed=cfg.seed + epoch)
    done, total = 0, 0.0
    model.train()
    for index in batches:
        hist.steps += 1
        for group in opt.param_groups:
            group["lr"] = warmup_lr(hist.steps, cfg.lr, cfg.warmup)
        total += _train_step(model, opt, *pair_batch(model, *train, index), cfg)
        done += 1
        if budget.spent():
            break
    hist.train_loss.append(total / done)
    hist.epochs += done / len(batches)


def _train_step(model: Transformer, opt: torch.optim.Optimizer, src: torch.Tensor, tgt: torch.Tensor,
                cfg: TransformerTrainConfig) -> float:
    loss = smoothed_loss(model, src, tgt, cfg.smoothing)
    if not math.isfinite(loss.item()):
        raise NumericalError(f"fit_transformer: the loss became {loss.item()} (lower lr or longer warm-up)")
    opt.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
    opt.step()
    return loss.item()


# ------------------------------------------------------------------ decoding


@dataclass
class DecoderCache:
    """What incremental decoding keeps, one entry per decoder layer (rows: the sequences decoded)."""

    self_k: list[torch.Tensor]  # (B,H,t,Dh): self-attention keys of the pieces read so far
    self_v: list[torch.Tensor]  # (B,H,t,Dh): their values
    cross_k: list[torch.Tensor]  # (B,H,S,Dh): cross-attention keys of the source, computed once
    cross_v: list[torch.Tensor]  # (B,H,S,Dh): their values
    src_keep: torch.Tensor  # (B,1,1,S): True at the source's real positions (False at padding)
    t: int  # pieces read so far

    def select(self, rows: torch.Tensor) -> DecoderCache:
        """The cache of the sequences ``rows`` (n,) only, in that order (a row may repeat: beams)."""
        pick = [[x[rows] for x in xs] for xs in (self.self_k, self.self_v, self.cross_k, self.cross_v)]
        return DecoderCache(*pick, self.src_keep[rows], self.t)


def _heads(x: torch.Tensor, H: int) -> torch.Tensor:
    """(B,N,D) -> (B,H,N,Dh)."""
    B, N, D = x.shape
    return x.view(B, N, H, D // H).transpose(1, 2)


def start_cache(model: Transformer, memory: torch.Tensor, src_pad: torch.Tensor) -> DecoderCache:
    """An empty cache for the sources encoded as ``memory`` (B,S,D): the cross-attention keys and values
    of every decoder layer, from the source once, and no piece read yet."""
    H, D = model.config.heads, model.config.d_model
    cross_k, cross_v = [], []
    for layer in model.decoder.layers:
        W, b = layer.multihead_attn.in_proj_weight, layer.multihead_attn.in_proj_bias  # (3D,D), (3D,)
        cross_k.append(_heads(F.linear(memory, W[D:2 * D], b[D:2 * D]), H))  # (B,S,D) -> (B,H,S,Dh)
        cross_v.append(_heads(F.linear(memory, W[2 * D:], b[2 * D:]), H))
    empty = memory.new_zeros(memory.shape[0], H, 0, D // H)  # (B,H,0,Dh)
    n = len(cross_k)
    return DecoderCache([empty] * n, [empty] * n, cross_k, cross_v, ~src_pad[:, None, None, :], 0)


def _self_attention(layer: nn.Module, x: torch.Tensor, cache: DecoderCache, i: int) -> torch.Tensor:
    """Layer i's self-attention for the newest piece x (B,1,D) over the pieces so far, its key and
    value appended to the cache: no mask is needed, the cache holds only the past."""
    attn, H = layer.self_attn, cache.cross_k[i].shape[1]
    q, k, v = (_heads(z, H) for z in F.linear(x, attn.in_proj_weight, attn.in_proj_bias).chunk(3, -1))
    cache.self_k[i] = torch.cat([cache.self_k[i], k], dim=2)  # (B,H,t,Dh) -> (B,H,t+1,Dh)
    cache.self_v[i] = torch.cat([cache.self_v[i], v], dim=2)
    out = F.scaled_dot_product_attention(q, cache.self_k[i], cache.self_v[i])  # (B,H,1,Dh)
    return attn.out_proj(out.transpose(1, 2).flatten(2))  # (B,H,1,Dh) -> (B,1,D)


def _cross_attention(layer: nn.Module, x: torch.Tensor, cache: DecoderCache, i: int) -> torch.Tensor:
    """Layer i's attention from the newest piece x (B,1,D) over the source's cached keys and values."""
    attn, H, D = layer.multihead_attn, cache.cross_k[i].shape[1], x.shape[-1]
    q = _heads(F.linear(x, attn.in_proj_weight[:D], attn.in_proj_bias[:D]), H)  # (B,H,1,Dh)
    out = F.scaled_dot_product_attention(q, cache.cross_k[i], cache.cross_v[i], attn_mask=cache.src_keep)
    return attn.out_proj(out.transpose(1, 2).flatten(2))  # (B,H,1,Dh) -> (B,1,D)


def cached_step(model: Transformer, cache: DecoderCache, last: torch.Tensor) -> torch.Tensor:
    """Logits (B,V) of the piece after ``last`` (B,), the newest piece of each row, with ``cache``
    holding the rows' earlier pieces (updated in place): the decoder in evaluation mode, one position."""
    c = model.config
    x = model.embed(last[:, None]) * math.sqrt(c.d_model) + model.positions(cache.t + 1)[cache.t]  # (B,1,D)
    for i, layer in enumerate(model.decoder.layers):
        ff = (lambda z, m=layer: m.linear2(m.activation(m.linear1(z))))  # (B,1,D) -> (B,1,F) -> (B,1,D)
        if c.norm_first:
            x = x + _self_attention(layer, layer.norm1(x), cache, i)
            x = x + _cross_attention(layer, layer.norm2(x), cache, i)
            x = x + ff(layer.norm3(x))
        else:
            x = layer.norm1(x + _self_attention(layer, x, cache, i))
            x = layer.norm2(x + _cross_attention(layer, x, cache, i))
            x = layer.norm3(x + ff(x))
    if model.decoder.norm is not None:
        x = model.decoder.norm(x)
    cache.t += 1
    return (x @ model.embed.weight.T)[:, 0]  # (B,1,D) x (D,V) -> (B,V)


@torch.no_grad()
def greedy_decode(model: Transformer, src: torch.Tensor, max_len: int, cache: bool = True) -> Decoded:
    """The most probable next piece at each step, for a batch; a sequence stops at its own <eos>. Only the
    sequences still open are decoded (padding is masked, so each row is its source alone). With ``cache``
    each step reads the newest piece only (``cached_step``); without, the decoder re-reads the prefix."""
    model.eval()
    c, B = model.config, src.shape[0]
    memory, src_pad = model.encode(src)
    kv = start_cache(model, memory, src_pad) if cache else None
    y = torch.full((B, 1), c.bos_id, dtype=torch.long, device=src.device)  # (B,1)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    logp = torch.zeros(B, device=src.device)
    open_ = torch.arange(B, device=src.device)  # the rows still decoding (and the cache's rows)
    for _ in range(max_len):
        if kv is not None:
            logits = cached_step(model, kv, y[open_, -1])[:, None]  # (b,1,V)
        else:
            logits = model.decode(memory[open_], src_pad[open_], y[open_])  # (b,t,V)
        lp = next_log_probs(model, logits)  # (b,V)
        nxt = torch.full((B,), c.pad_id, dtype=torch.long, device=src.device)  # (B,): padding once done
        nxt[open_] = lp.argmax(-1)
        logp[open_] += lp.gather(1, nxt[open_, None]).squeeze(1)
        y = torch.cat([y, nxt[:, None]], dim=1)  # (B,t+1)
        done |= nxt == c.eos_id
        if bool(done.all()):
            break
        still = ~done[open_]  # (b,) among the rows just decoded
        open_ = open_[still]
        kv = kv.select(still.nonzero().squeeze(1)) if kv is not None else None
    rows = y[:, 1:].tolist()
    ids = [row[:row.index(c.eos_id) + 1] if c.eos_id in row else row for row in rows]
    return Decoded(ids, [None] * B, logp.tolist())


@torch.no_grad()
def beam_decode(model: Transformer, src: torch.Tensor, max_len: int, beam: int = 5, alpha: float = 1.0,
                cache: bool = True) -> Decoded:
    """Beam search for each source of the batch, as the seq2seq chapter's: a hypothesis followed by <eos>
    is finished and leaves the beam, the ``beam`` best other extensions stay open; finished ones are
    ranked by log P(y | x) / |y|^alpha; a source's search stops at ``max_len`` or when none of its open
    hypotheses can still beat its best finished one. At step t every open hypothesis of every source has
    t pieces, so one decoder call serves them all; with ``cache``, on their newest piece only (the cache's
    rows follow the hypotheses: a kept extension takes its parent's row)."""
    if beam < 1 or max_len < 1 or alpha < 0:
        raise ConfigError(f"beam_decode: beam and max_len must be >= 1 and alpha >= 0, got {beam}, {max_len}, "
                          f"{alpha}")
    model.eval()
    c = model.config
    memory, src_pad = model.encode(src)  # (B,S,D): padding is masked, so each row is its source alone
    kv = start_cache(model, memory, src_pad) if cache else None  # one row per open hypothesis
    beams = [_Beam(torch.full((1, 1), c.bos_id, dtype=torch.long, device=src.device)) for _ in range(src.shape[0])]
    active = list(range(len(beams)))
    for t in range(1, max_len + 1):
        sizes = [len(beams[b].logps) for b in active]
        rows = torch.cat([beams[b].prefixes for b in active])  # (N,t) every open hypothesis
        if kv is not None:
            logits = cached_step(model, kv, rows[:, -1])[:, None]  # (N,1,V)
        else:
            owner = torch.cat([torch.full((n,), b, device=src.device) for b, n in zip(active, sizes)])  # (N,)
            logits = model.decode(memory[owner], src_pad[owner], rows)  # (N,t,V)
        lp = next_log_probs(model, logits)  # (N,V)
        for b, part in zip(active, lp.split(sizes)):
            beams[b].advance(part, t, beam, max_len, alpha, c.eos_id)
        starts = [sum(sizes[:j]) for j in range(len(active))]  # each beam's first row
        keep = [(b, start) for b, start in zip(active, starts) if not beams[b].done]
        if not keep:
            break
        if kv is not None:
            kv = kv.select(torch.cat([start + beams[b].parents for b, start in keep]))
        active = [b for b, _ in keep]
    return Decoded([h.finished[0][1] for h in beams], [None] * len(beams), [h.finished[0][0] for h in beams])


class _Beam:
    """One source's search: its open hypotheses (<bos> + pieces, all of one length) and finished ones."""

    def __init__(self, start: torch.Tensor):
        self.prefixes = start  # (k,t)
        self.logps = torch.zeros(1, device=start.device)  # (k,) log P of each open hypothesis
        self.finished: list[tuple[float, list[int]]] = []  # (normalised score, pieces with <eos>), best first
        self.done = False

    def advance(self, lp: torch.Tensor, t: int, K: int, max_len: int, alpha: float, eos: int) -> None:
        """One step from the next-piece log-probabilities ``lp`` (k,V) of the open hypotheses."""
        total = self.logps[:, None] + lp  # (k,1) + (k,V) -> (k,V)
        self.finished += [(float(total[i, eos]) / t ** alpha, self.prefixes[i, 1:].tolist() + [eos])
                          for i in range(total.shape[0])]
        self.finished.sort(key=lambda f: -f[0])
        total[:, eos] = float("-inf")
        best, flat = total.reshape(-1).topk(min(K, total.numel()))  # (k,V) -> the K best open extensions
        keep = [(float(v), divmod(int(f), total.shape[1])) for v, f in zip(best, flat) if math.isfinite(v)]
        if t == max_len or not keep or keep[0][0] / max_len ** alpha <= self.finished[0][0]:
            self.done = True  # log P only falls as pieces are added: no open hypothesis can win any more
            return
        self.parents = torch.tensor([i for _, (i, _) in keep], device=lp.device)  # (k',) rows they extend
        pieces = torch.tensor([[tok] for _, (_, tok) in keep], device=lp.device)
        self.prefixes = torch.cat([self.prefixes[self.parents], pieces], dim=1)  # (k,t) -> (k',t+1)
        self.logps = torch.tensor([v for v, _ in keep], device=lp.device)

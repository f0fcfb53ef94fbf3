"""An RNN encoder-decoder, with or without attention (chapter "Sequence to sequence with attention",
``benchmarks/seq2seq.py``).

Shapes: B batch, S source length, T target length, E embedding dim, H hidden units, A the additive score's
dim, V target vocabulary, K beam size, L stacked GRU layers.

    src      (B,S)     source ids, <eos> last, padded with <pad>
    memory   (B,S,H)   the encoder's (top layer's) states: a bidirectional GRU, H/2 units each way, concatenated
    summary  (B,H)     the source in one vector: the last forward state and the first backward state,
                       concatenated (``summary="last"``), or the mean of memory over the real positions ("mean")
    y_in     (B,T)     <bos> y_1 .. y_{T-1}: the decoder reads the reference (teacher forcing) ...
    out      (B,T,H)   ... through a GRU (L layers) started at tanh(W_init summary), one (B,H) slice per layer
    context  (B,T,H)   attention: a softmax-weighted sum of memory per target step (Luong et al., 2015, eq. 7,
                       the score computed from the decoder's current state); without attention, the summary
    h_tilde  (B,T,H)   tanh(W_c [context; out]): Luong's attentional hidden state (eq. 5)
    logits   (B,T,V)   W_out h_tilde + b_out: P(y_t | y_<t, x) after a softmax (eq. 6)

The scores (Luong et al., 2015, eq. 8; Bahdanau et al., 2015): ``dot`` q.k, ``general`` q W k and
``additive`` v^T tanh(W_q q + W_k k). Padded source positions get -inf before the softmax, so weight 0.
Without attention the network is the same but for the context, which is the fixed summary at every step:
the whole source has to pass through one vector of H numbers.

The decoder reads its previous output, not its previous attentional state (no "input feeding"), so that
training runs the decoder GRU over all T steps in one call (cuDNN on CUDA) and attends for all steps at once.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..data.batching import bucket_batches, pad_batch
from ..errors import ConfigError, NumericalError
from ..train import Budget

SCORES = ("none", "dot", "general", "additive")
SUMMARIES = ("last", "mean")


@dataclass
class Seq2SeqConfig:
    """Everything needed to rebuild a :class:`Seq2Seq` (saved in its checkpoint)."""

    src_vocab: int  # source vocabulary size, specials included
    tgt_vocab: int  # V: target vocabulary size, specials included
    embed_dim: int = 128  # E: both embedding tables
    hidden_dim: int = 256  # H: decoder units; the encoder has H/2 per direction
    attention: str = "general"  # "none" (the fixed summary), "dot", "general" or "additive"
    attn_dim: int = 128  # A: the additive score's hidden size
    dropout: float = 0.2  # on embeddings and on the attentional state (and between stacked layers)
    pad_id: int = 0  # the Vocab's specials: <pad> <unk> <bos> <eos>
    bos_id: int = 2
    eos_id: int = 3
    summary: str = "last"  # "last": the final forward and backward states; "mean": memory averaged over the source
    layers: int = 1  # L: GRU layers in the encoder and in the decoder (stacked, as Sutskever et al.'s four)

    def __post_init__(self) -> None:
        checks = [
            (min(self.src_vocab, self.tgt_vocab) > 4, f"vocabularies must hold more than the 4 specials, got "
                                                      f"{self.src_vocab} and {self.tgt_vocab}"),
            (self.attention in SCORES, f"attention must be one of {SCORES}, got {self.attention!r}"),
            (self.hidden_dim >= 2 and self.hidden_dim % 2 == 0, f"hidden_dim must be even, got {self.hidden_dim}"),
            (self.embed_dim >= 1 and self.attn_dim >= 1, "embed_dim and attn_dim must be >= 1"),
            (0.0 <= self.dropout < 1.0, f"dropout must be in [0, 1), got {self.dropout}"),
            (self.summary in SUMMARIES, f"summary must be one of {SUMMARIES}, got {self.summary!r}"),
            (isinstance(self.layers, int) and self.layers >= 1, f"layers must be an int >= 1, got {self.layers!r}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(f"Seq2SeqConfig: {message}")


class Attention(nn.Module):
    """Masked soft lookup: each query's weights over the source positions, and the weighted sum of values."""

    def __init__(self, score: str, H: int, A: int):
        super().__init__()
        self.score = score
        if score == "general":
            self.W = nn.Linear(H, H, bias=False)
        elif score == "additive":
            self.W_q, self.W_k = nn.Linear(H, A, bias=False), nn.Linear(H, A)
            self.v = nn.Linear(A, 1, bias=False)

    def scores(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """Raw scores (B,T,S) of queries q (B,T,H) against keys k (B,S,H)."""
        if self.score == "dot":
            return q @ k.transpose(1, 2)  # (B,T,H) x (B,H,S) -> (B,T,S)
        if self.score == "general":
            return q @ self.W(k).transpose(1, 2)  # (B,T,H) x (B,H,S) -> (B,T,S)
        hidden = torch.tanh(self.W_q(q).unsqueeze(2) + self.W_k(k).unsqueeze(1))  # (B,T,1,A) + (B,1,S,A)
        return self.v(hidden).squeeze(-1)  # (B,T,S,A) x (A,1) -> (B,T,S)

    def forward(self, q: torch.Tensor, k: torch.Tensor, src_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(context (B,T,H), weights (B,T,S)); ``src_mask`` (B,S) is True at real source tokens."""
        s = self.scores(q, k).masked_fill(~src_mask[:, None, :], float("-inf"))  # (B,T,S)
        weights = torch.softmax(s, dim=-1)  # over S: each row sums to 1, padding gets 0
        return weights @ k, weights  # (B,T,S) x (B,S,H) -> (B,T,H)


@dataclass
class Encoded:
    """What the decoder needs of a source batch."""

    memory: torch.Tensor  # (B,S,H)
    mask: torch.Tensor  # (B,S) True at real tokens
    summary: torch.Tensor  # (B,H)

    def select(self, index: torch.Tensor) -> Encoded:
        """The rows ``index`` (e.g. one source repeated K times for a beam)."""
        return Encoded(self.memory[index], self.mask[index], self.summary[index])


class Seq2Seq(nn.Module):
    """Encoder-decoder P(y | x) = prod_t P(y_t | y_<t, x), with attention or with the fixed summary."""

    def __init__(self, config: Seq2SeqConfig):
        super().__init__()
        c = self.config = config
        H = c.hidden_dim
        self.src_embed = nn.Embedding(c.src_vocab, c.embed_dim, padding_idx=c.pad_id)
        self.tgt_embed = nn.Embedding(c.tgt_vocab, c.embed_dim, padding_idx=c.pad_id)
        between = c.dropout if c.layers > 1 else 0.0  # dropout on the outputs of every layer but the top one
        self.encoder = nn.GRU(c.embed_dim, H // 2, c.layers, batch_first=True, bidirectional=True, dropout=between)
        self.W_init = nn.Linear(H, c.layers * H)  # one first state per decoder layer
        self.decoder = nn.GRU(c.embed_dim, H, c.layers, batch_first=True, dropout=between)
        self.attn = Attention(c.attention, H, c.attn_dim) if c.attention != "none" else None
        self.W_c = nn.Linear(2 * H, H, bias=False)
        self.out = nn.Linear(H, c.tgt_vocab)
        self.drop = nn.Dropout(c.dropout)

    def encode(self, src: torch.Tensor) -> Encoded:
        """Run the bidirectional encoder over ``src`` (B,S); padding is packed away, so it changes nothing."""
        mask = src != self.config.pad_id  # (B,S)
        lengths = mask.sum(1).cpu()
        e = self.drop(self.src_embed(src))  # (B,S) -> (B,S,E)
        packed = pack_padded_sequence(e, lengths, batch_first=True, enforce_sorted=False)
        out, h_n = self.encoder(packed)  # h_n (2L,B,H/2): each layer's last forward and last backward state
        memory, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])  # (B,S,H)
        if self.config.summary == "mean":  # padding is zero in memory: sum over S, divide by the real length
            summary = memory.sum(1) / mask.sum(1, keepdim=True)  # (B,S,H) -> (B,H)
        else:
            summary = torch.cat([h_n[-2], h_n[-1]], dim=-1)  # the top layer's: (B,H/2) ++ (B,H/2) -> (B,H)
        return Encoded(memory, mask, summary)

    def init_state(self, enc: Encoded) -> torch.Tensor:
        """The decoder's first state (L,B,H)."""
        B, L = enc.summary.shape[0], self.config.layers
        first = torch.tanh(self.W_init(enc.summary))  # (B,H) x (H,L*H) -> (B,L*H)
        return first.view(B, L, -1).transpose(0, 1).contiguous()  # (B,L*H) -> (B,L,H) -> (L,B,H)

    def decode(self, enc: Encoded, y_in: torch.Tensor, state: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(logits (B,T,V), the state after y_in (L,B,H), attention weights (B,T,S) or None) for the
        decoder inputs ``y_in`` (B,T), starting from ``state``."""
        e = self.drop(self.tgt_embed(y_in))  # (B,T) -> (B,T,E)
        out, state = self.decoder(e, state)  # (B,T,E) -> (B,T,H)
        if self.attn is None:
            context, weights = enc.summary.unsqueeze(1).expand_as(out), None  # (B,1,H) -> (B,T,H)
        else:
            context, weights = self.attn(out, enc.memory, enc.mask)  # (B,T,H), (B,T,S)
        h_tilde = torch.tanh(self.W_c(torch.cat([context, out], dim=-1)))  # (B,T,2H) x (2H,H) -> (B,T,H)
        return self.out(self.drop(h_tilde)), state, weights  # (B,T,H) x (H,V) -> (B,T,V)

    def forward(self, src: torch.Tensor, y_in: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits (B,T,V) of the next target token at every position of ``y_in``."""
        enc = self.encode(src)
        logits, _, _ = self.decode(enc, y_in, self.init_state(enc))
        return logits


def build_seq2seq(config: Seq2SeqConfig, seed: int = 0, device: torch.device | str = "cpu") -> Seq2Seq:
    """A freshly initialised model (PyTorch's default initialisation, drawn with ``seed``)."""
    torch.manual_seed(seed)
    return Seq2Seq(config).to(device)


def seq2seq_from_config(config: dict) -> Seq2Seq:
    """A model from a checkpoint's config dict."""
    return Seq2Seq(Seq2SeqConfig(**config))


def teacher_forced_loss(model: Seq2Seq, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy per target token of ``tgt`` (B,T+1) = <bos> y <eos> <pad>..; padding ignored."""
    logits = model(src, tgt[:, :-1])  # reads <bos> y_1 .. : (B,T,V)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt[:, 1:].reshape(-1),  # (B*T,V) vs (B*T,)
                           ignore_index=model.config.pad_id)


# ------------------------------------------------------------------ training


@dataclass
class Seq2SeqTrainConfig:
    """Adam on teacher-forced cross-entropy, length-bucketed batches, global-norm clipping."""

    batch_size: int = 64  # B: pairs per step
    epochs: int = 20  # passes over the training pairs (stops earlier at a budget)
    lr: float = 2e-3  # Adam's step size; halved after an epoch whose validation loss did not improve
    clip: float = 1.0  # max global L2 norm of the gradient
    max_cpu_seconds: float | None = None  # stop after this much CPU time of the process (all its threads)
    max_seconds: float | None = None  # stop after this many seconds of wall time
    seed: int = 0  # batch order and dropout


@dataclass
class Seq2SeqHistory:
    """What :func:`fit_seq2seq` saw."""

    train_loss: list[float] = field(default_factory=list)  # mean per-token loss of each epoch (nats)
    valid_loss: list[float] = field(default_factory=list)  # teacher-forced, after each epoch
    epochs: float = 0.0  # epochs done (a fraction when a budget cut the last one)
    seconds: float = 0.0  # wall time of training (validation included)
    cpu_seconds: float = 0.0  # CPU time of the process (all threads) in the same span

    def to_dict(self) -> dict:
        return asdict(self)


def pair_batch(model: nn.Module, src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]], index: list[int]
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """The pairs ``index`` as padded (B,S) source and (B,T+1) target tensors on the model's device (any model
    whose ``config`` has a ``pad_id``: this one and the Transformer)."""
    device, pad = next(model.parameters()).device, model.config.pad_id
    return (pad_batch([src[i] for i in index], pad).tokens.to(device),
            pad_batch([tgt[i] for i in index], pad).tokens.to(device))


@torch.no_grad()
def corpus_loss(model: nn.Module, src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]],
                batch_size: int = 128, loss: Callable = teacher_forced_loss) -> float:
    """Teacher-forced cross-entropy per target token over a whole part (nats); ``loss(model, src, tgt)`` is
    the mean over a batch's real target tokens."""
    model.eval()
    total, count = 0.0, 0
    for index in bucket_batches([len(t) for t in tgt], batch_size, shuffle=False):
        s, t = pair_batch(model, src, tgt, index)
        n = int((t[:, 1:] != model.config.pad_id).sum())
        total, count = total + float(loss(model, s, t)) * n, count + n
    return total / count


def fit_seq2seq(model: Seq2Seq, train: tuple[Sequence, Sequence], valid: tuple[Sequence, Sequence],
                cfg: Seq2SeqTrainConfig) -> Seq2SeqHistory:
    """Train on ``train`` = (source ids, target ids) until ``cfg.epochs`` or a budget; validate each epoch."""
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    hist, budget = Seq2SeqHistory(), Budget(cfg.max_seconds, cfg.max_cpu_seconds)
    torch.manual_seed(cfg.seed)
    for epoch in range(cfg.epochs):
        batches = bucket_batches([len(t) for t in train[1]], cfg.batch_size, seed=cfg.seed + epoch)
        done, total = 0, 0.0
        model.train()
        for index in batches:
            total += _train_step(model, opt, *pair_batch(model, *train, index), cfg.clip)
            done += 1
            if budget.spent():
                break
        hist.train_loss.append(total / done)
        hist.epochs += done / len(batches)
        _end_epoch(model, opt, valid, hist)
        if budget.spent():
            break
    hist.seconds, hist.cpu_seconds = budget.seconds, budget.cpu_seconds
    return hist


def _train_step(model: Seq2Seq, opt: torch.optim.Optimizer, src: torch.Tensor, tgt: torch.Tensor,
                clip: float) -> float:
    loss = teacher_forced_loss(model, src, tgt)
    if not math.isfinite(loss.item()):
        raise NumericalError(f"fit_seq2seq: the loss became {loss.item()} (lower lr or clip)")
    opt.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()
    return loss.item()


def _end_epoch(model: Seq2Seq, opt: torch.optim.Optimizer, valid: tuple[Sequence, Sequence],
               hist: Seq2SeqHistory) -> None:
    loss = corpus_loss(model, *valid)
    if hist.valid_loss and loss >= min(hist.valid_loss):
        for group in opt.param_groups:
            group["lr"] /= 2
    hist.valid_loss.append(loss)


# ------------------------------------------------------------------ decoding


@dataclass
class Decoded:
    """Translations of a batch: token ids without <bos>, up to and including <eos> when one was produced."""

    ids: list[list[int]]  # one list per source
    attention: list[torch.Tensor | None]  # (T_i,S_i) weights of each output token, or None without attention
    scores: list[float]  # log-probability of each output (beam: the length-normalised score)


def next_log_probs(model: Seq2Seq, logits: torch.Tensor) -> torch.Tensor:
    """log P(next token) (B,V) from the last step of ``logits`` (B,T,V); <pad> and <bos> are never
    produced (-inf), the other values are the model's log-probabilities."""
    lp = torch.log_softmax(logits[:, -1], dim=-1)  # (B,V)
    lp[:, [model.config.pad_id, model.config.bos_id]] = float("-inf")
    return lp


@torch.no_grad()
def greedy_decode(model: Seq2Seq, src: torch.Tensor, max_len: int) -> Decoded:
    """The most probable next token at each step, for a batch; a sequence stops at its own <eos>."""
    model.eval()
    c, B = model.config, src.shape[0]
    enc = model.encode(src)
    state = model.init_state(enc)
    y = torch.full((B, 1), c.bos_id, dtype=torch.long, device=src.device)  # (B,1)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    steps, weights, logp = [], [], torch.zeros(B, device=src.device)
    for _ in range(max_len):
        logits, state, w = model.decode(enc, y, state)  # (B,1,V)
        lp = next_log_probs(model, logits)  # (B,V)
        y = lp.argmax(-1, keepdim=True)  # (B,1)
        logp += torch.where(done, 0.0, lp.gather(1, y).squeeze(1))
        steps.append(y.squeeze(1))
        weights.append(w)
        done |= y.squeeze(1) == c.eos_id
        if bool(done.all()):
            break
    out = torch.stack(steps, dim=1).tolist()  # (B,T)
    attn = torch.cat(weights, dim=1) if weights[0] is not None else None  # (B,T,S)
    ids = [row[:row.index(c.eos_id) + 1] if c.eos_id in row else row for row in out]
    lengths = enc.mask.sum(1).tolist()
    return Decoded(ids, [None if attn is None else attn[b, :len(ids[b]), :lengths[b]] for b in range(B)],
                   logp.tolist())


@torch.no_grad()
def beam_decode(model: Seq2Seq, src: torch.Tensor, max_len: int, beam: int = 5, alpha: float = 1.0) -> Decoded:
    """Beam search for each source of the batch. At every step each open hypothesis followed by <eos>
    becomes a finished one (it leaves the beam and never grows again), and the ``beam`` best extensions by
    another token stay open. Finished hypotheses are ranked by log P(y | x) / |y|^alpha (|y| counts <eos>;
    alpha 0: the raw log-probability, which favours short outputs). A source's search stops after
    ``max_len`` tokens, or as soon as no open hypothesis can still beat its best finished one; with a beam as
    wide as every prefix it is exhaustive search. Each source searches alone; one decoder step serves the
    open hypotheses of every source (padding is packed away and masked, so each row is its source alone)."""
    if beam < 1 or max_len < 1 or alpha < 0:
        raise ConfigError(f"beam_decode: beam and max_len must be >= 1 and alpha >= 0, got {beam}, {max_len}, "
                          f"{alpha}")
    model.eval()
    enc = model.encode(src)
    first = model.init_state(enc)  # (L,B,H)
    lengths = enc.mask.sum(1).tolist()
    searches = [_Search(first[:, b:b + 1], lengths[b]) for b in range(src.shape[0])]
    for t in range(1, max_len + 1):
        active = [b for b, s in enumerate(searches) if not s.done]
        if not active:
            break
        sizes = [len(searches[b].beam) for b in active]
        owner = torch.tensor([b for b, k in zip(active, sizes) for _ in range(k)], device=src.device)  # (N,)
        y = torch.tensor([[h.tokens[-1] if h.tokens else model.config.bos_id] for b in active
                          for h in searches[b].beam], device=src.device)  # (N,1)
        state = torch.cat([searches[b].state for b in active], dim=1)  # (L,N,H)
        logits, state, w = model.decode(enc.select(owner), y, state)  # (N,1,V), (L,N,H), (N,1,S)
        lp = next_log_probs(model, logits)  # (N,V)
        ws = w.split(sizes) if w is not None else [None] * len(sizes)  # (k,1,S) each
        for b, lp_b, state_b, w_b in zip(active, lp.split(sizes), state.split(sizes, dim=1), ws):
            searches[b].advance(lp_b, state_b, w_b, t, beam, max_len, alpha, model.config.eos_id)
    best = [s.finished[0] for s in searches]
    return Decoded([h.tokens for _, h in best], [torch.stack(h.attention) if h.attention else None for _, h in best],
                   [score for score, _ in best])


@dataclass
class _Hypothesis:
    tokens: list[int]  # produced so far (no <bos>)
    attention: list[torch.Tensor]  # one (S,) row per token; empty without attention
    logp: float  # log P(tokens | x)


class _Search:
    """One source's beam: its open hypotheses with their decoder states, and the finished ones."""

    def __init__(self, state: torch.Tensor, length: int):
        self.beam, self.state = [_Hypothesis([], [], 0.0)], state  # state (L,k,H): one per open hypothesis
        self.finished: list[tuple[float, _Hypothesis]] = []  # (normalised score, hypothesis), best first
        self.length, self.done = length, False  # the source's length (its attention rows'), finished or not

    def advance(self, lp: torch.Tensor, state: torch.Tensor, w: torch.Tensor | None, t: int, K: int,
                max_len: int, alpha: float, eos: int) -> None:
        """One step from the next-token log-probabilities ``lp`` (k,V) of the open hypotheses, the states
        ``state`` (L,k,H) after their last token and their attention ``w`` (k,1,S)."""
        w = w[:, :, :self.length] if w is not None else None  # the source's own positions
        total = torch.tensor([h.logp for h in self.beam], device=lp.device)[:, None] + lp  # (k,1) + (k,V)
        for i, h in enumerate(self.beam):  # every hypothesis may end here
            score = float(total[i, eos])
            self.finished.append((score / t ** alpha, _extend(h, eos, w, i, score)))
        self.finished.sort(key=lambda f: -f[0])
        total[:, eos] = float("-inf")
        best, flat = total.reshape(-1).topk(min(K, total.numel()))  # (k,V) -> the K best open extensions
        keep = [(float(v), divmod(int(f), total.shape[1])) for v, f in zip(best, flat) if math.isfinite(v)]
        if t == max_len or not keep or _cannot_win(self.finished[0][0], keep[0][0], max_len, alpha):
            self.done = True
            return
        self.beam = [_extend(self.beam[i], tok, w, i, v) for v, (i, tok) in keep]
        self.state = state[:, torch.tensor([i for _, (i, _) in keep], device=lp.device)]  # (L,k,H): the parents'


def _extend(h: _Hypothesis, token: int, w: torch.Tensor | None, row: int, logp: float) -> _Hypothesis:
    return _Hypothesis(h.tokens + [token], h.attention + ([w[row, 0]] if w is not None else []), logp)


def _cannot_win(best_finished: float, best_open: float, max_len: int, alpha: float) -> bool:
    """True when no open hypothesis can overtake the best finished one: log-probabilities only fall as
    tokens are added, so the best an open one can reach is its log-probability now divided by the largest
    length it may still reach (all lengths the same when alpha = 0)."""
    return best_open / max_len ** alpha <= best_finished

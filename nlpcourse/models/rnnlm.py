"""Recurrent language models: Elman RNN, GRU and LSTM over one token stream (chapter "RNN language models",
``scripts/train_rnnlm.py``, ``benchmarks/rnnlm.py``).

Shapes: B batch (parallel streams), T time (a BPTT window), E embedding dim, H hidden units, L layers,
V vocabulary.

    x       (B,T)     token ids of a window; the targets are the same stream shifted by one
    e       (B,T,E)   embeddings, dropout while training
    out     (B,T,H)   the top layer's hidden states (PyTorch's ``nn.RNN``/``nn.GRU``/``nn.LSTM``: cuDNN on CUDA)
    logits  (B,T,V)   out W_out^T + b_out; with ``tie_weights`` W_out is the embedding table (E = H needed);
                      with ``word_classes`` the class-based softmax's log-probabilities instead (normalised
                      logits: a softmax of them is the same distribution); tied, word w's embedding is then
                      its row in its class's output block
    state             (L,B,H) for Elman and GRU; a pair ((L,B,H), (L,B,H)) = (h, c) for the LSTM

Training is truncated backpropagation through time (:func:`fit_lm`): the streams are cut into windows of
``bptt`` tokens; the state at the end of one window starts the next, detached, so that the gradient stops
at the window's start while the forward pass still sees the whole past.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call
from torch.optim.swa_utils import AveragedModel

from ..data.batching import lm_batches
from ..errors import ConfigError, NumericalError
from ..train import Budget, EarlyStopping
from .softmax import ClassSoftmax

CELLS = ("elman", "gru", "lstm")
State = torch.Tensor | tuple[torch.Tensor, torch.Tensor]


@dataclass
class RNNLMConfig:
    """Everything needed to rebuild an :class:`RNNLM` (saved in its checkpoint)."""

    vocab_size: int  # V: <unk> and the corpus's words (or characters)
    cell: str = "lstm"  # "elman" (tanh RNN), "gru" or "lstm"
    embed_dim: int = 256  # E: size of a token's vector
    hidden_dim: int = 256  # H: units per layer (= E when the weights are tied)
    layers: int = 2  # L: stacked recurrent layers; layer l+1 reads layer l's hidden states
    dropout: float = 0.3  # on the embeddings, between layers and on the top layer's output (Zaremba et al.)
    tie_weights: bool = True  # the output layer reuses the embedding table (Press & Wolf; Inan et al.); with
    # word_classes, word w's input vector is its output row in its class's block
    word_classes: list[int] | None = None  # c(w) of each of the V words: a class-based softmax over them
    # (softmax.ClassSoftmax: Goodman 2001; Mikolov et al. 2011) instead of the full one; None: the full softmax
    weight_drop: float = 0.0  # while training, DropConnect on each recurrent matrix W_hh, one mask per window
    # (Merity et al., 2018's weight-dropped LSTM): the recurrence is regularised without touching the state

    def __post_init__(self) -> None:
        checks = [
            (self.vocab_size >= 2, f"vocab_size must be >= 2, got {self.vocab_size}"),
            (self.cell in CELLS, f"cell must be one of {CELLS}, got {self.cell!r}"),
            (self.embed_dim >= 1 and self.hidden_dim >= 1,
             f"embed_dim and hidden_dim must be >= 1, got {self.embed_dim}, {self.hidden_dim}"),
            (self.layers >= 1, f"layers must be >= 1, got {self.layers}"),
            (0.0 <= self.dropout < 1.0, f"dropout must be in [0, 1), got {self.dropout}"),
            (0.0 <= self.weight_drop < 1.0, f"weight_drop must be in [0, 1), got {self.weight_drop}"),
            (not self.tie_weights or self.embed_dim == self.hidden_dim,
             f"tie_weights needs embed_dim == hidden_dim, got {self.embed_dim} and {self.hidden_dim}"),
            (self.word_classes is None or len(self.word_classes) == self.vocab_size,
             f"word_classes needs one class per word ({self.vocab_size}), got "
             f"{len(self.word_classes or [])}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(f"RNNLMConfig: {message}")


class RNNLM(nn.Module):
    """Embedding, L recurrent layers, a softmax over V (full, or class-based with ``word_classes``):
    P(x_{t+1} | x_1..x_t) for every t of a window."""

    def __init__(self, config: RNNLMConfig):
        super().__init__()
        self.config = config
        c = config
        tied_rows = c.word_classes is not None and c.tie_weights
        if not tied_rows:  # drawn first, as before the tied class rows existed: the same weights for a seed
            self.embed = nn.Embedding(c.vocab_size, c.embed_dim)
        rnn_class = {"elman": nn.RNN, "gru": nn.GRU, "lstm": nn.LSTM}[c.cell]
        self.rnn = rnn_class(c.embed_dim, c.hidden_dim, c.layers, batch_first=True,
                             dropout=c.dropout if c.layers > 1 else 0.0)
        self.drop = nn.Dropout(c.dropout)
        self.head = None if c.word_classes is None else ClassSoftmax(c.hidden_dim, torch.tensor(c.word_classes))
        if tied_rows:
            self.embed = ClassRowEmbedding(self.head)
        if self.head is None:
            self.out = nn.Linear(c.hidden_dim, c.vocab_size)
            if c.tie_weights:
                self.out.weight = self.embed.weight
        self._init_weights()

    def _init_weights(self) -> None:
        if isinstance(self.embed, ClassRowEmbedding):
            for block in self.head.word_out:  # the rows are the embeddings: their scale, not nn.Linear's
                nn.init.uniform_(block.weight, -0.1, 0.1)
        else:
            nn.init.uniform_(self.embed.weight, -0.1, 0.1)
        if self.head is None:
            nn.init.zeros_(self.out.bias)
        if self.config.cell in ("lstm", "gru"):  # remember by default (Jozefowicz et al., 2015): the LSTM's
            # forget gate f and the GRU's update gate z (h' = (1 - z) n + z h in PyTorch) start near 0.73
            for name, p in self.rnn.named_parameters():
                if name.startswith("bias_ih"):
                    H = self.config.hidden_dim
                    with torch.no_grad():
                        p[H:2 * H].fill_(1.0)  # gate order i, f, g, o (LSTM); r, z, n (GRU)

    def init_state(self, batch_size: int, device: torch.device | str | None = None) -> State:
        """The zero state for ``batch_size`` streams."""
        c = self.config
        h = torch.zeros(c.layers, batch_size, c.hidden_dim, device=device or self.rnn.weight_ih_l0.device)
        return (h, h.clone()) if c.cell == "lstm" else h

    def hidden(self, x: torch.Tensor, state: State | None = None) -> tuple[torch.Tensor, State]:
        """The top layer's states (B,T,H) at every position of ``x`` (B,T), after dropout, and the state."""
        if state is None:
            state = self.init_state(x.shape[0], x.device)
        e = self.drop(self.embed(x))  # (B,T) -> (B,T,E)
        out, state = self._recur(e, state)  # (B,T,E) -> (B,T,H)
        return self.drop(out), state

    def _recur(self, e: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        """The recurrent layers; while training with ``weight_drop`` they run on dropped copies of their W_hh
        (the same mask at every step of the window), the parameters themselves untouched."""
        p = self.config.weight_drop
        if not (self.training and p > 0):
            return self.rnn(e, state)
        weights = {name: F.dropout(w, p) if name.startswith("weight_hh") else w
                   for name, w in self.rnn.named_parameters()}
        return functional_call(self.rnn, weights, (e, state))

    def forward(self, x: torch.Tensor, state: State | None = None) -> tuple[torch.Tensor, State]:
        """Logits (B,T,V) of the next token at every position of ``x`` (B,T), and the state after it (with
        ``word_classes``: the full distribution's log-probabilities)."""
        out, state = self.hidden(x, state)  # (B,T,H)
        return self.scores(out), state

    def scores(self, h: torch.Tensor) -> torch.Tensor:
        """The next-token scores (...,V) of top-layer states ``h`` (...,H), whose softmax is the distribution:
        the logits of the full softmax, the log-probabilities of the class-based one."""
        if self.head is not None:
            return self.head.log_prob(h)  # (...,H) -> (...,V), class by class
        return self.out(h)  # (...,H) x (H,V) -> (...,V)

    def loss(self, x: torch.Tensor, y: torch.Tensor, state: State | None = None) -> tuple[torch.Tensor, State]:
        """Mean cross-entropy of the next tokens ``y`` (B,T) after ``x`` (B,T), and the state: the training
        loss (the class-based softmax scores each target's class only, never all V words)."""
        out, state = self.hidden(x, state)  # (B,T,H)
        if self.head is not None:
            return self.head.loss(out, y), state
        logits = self.out(out)  # (B,T,H) x (H,V) -> (B,T,V)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)), state  # (B*T,V), (B*T,)


class ClassRowEmbedding(nn.Module):
    """The input embedding tied to a class-based softmax: word w's vector is its row in its class's output
    block (``ClassSoftmax.word_out``), so one table of V x H serves input and output, as Press & Wolf's tying
    does for the full softmax. The head's parameters stay registered once, under the model's ``head``."""

    def __init__(self, head: ClassSoftmax):
        super().__init__()
        self._head = [head]  # a list: not a submodule, so the rows are not a second time in the state dict

    @property
    def weight(self) -> torch.Tensor:
        """(V,E) rows by word id, gathered from the class blocks (E = H)."""
        return self._head[0].word_weights()[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.embedding(x, self.weight)  # (B,T) -> (B,T,E)


def detach_state(state: State) -> State:
    """The same values, cut from the graph: the gradient of the next window stops here."""
    return tuple(s.detach() for s in state) if isinstance(state, tuple) else state.detach()


def build_rnnlm(config: RNNLMConfig, seed: int = 0, device: torch.device | str = "cpu") -> RNNLM:
    """A freshly initialised model, the same for a given ``seed`` on every device (drawn on the CPU)."""
    torch.manual_seed(seed)
    return RNNLM(config).to(device)


def rnnlm_from_config(config: dict) -> RNNLM:
    """The model a checkpoint's config describes (``load_checkpoint(path, build=rnnlm_from_config)``)."""
    return RNNLM(RNNLMConfig(**config))


def config_summary(config: dict) -> dict:
    """A config for a report (JSON beside a checkpoint, benchmark results): ``word_classes``, one class per
    word, given as the number of classes (None stays None: the full softmax)."""
    classes = config.get("word_classes")
    return config | {"word_classes": None if classes is None else len(set(classes))}


# ------------------------------------------------------------------ evaluation


@torch.no_grad()
def stream_log_probs(model: nn.Module, ids: torch.Tensor, context: torch.Tensor | None = None,
                     chunk: int = 512) -> torch.Tensor:
    """Natural-log probability of every token of ``ids`` (N,) given everything before it: the stream
    ``context + ids`` is read ``chunk`` tokens at a time with the state carried (one stream, B = 1), so
    each token is predicted with the full preceding context. Without context the first token has
    nothing to be predicted from and gets the uniform 1/V. Returns (N,) float64 on the CPU."""
    model.eval()
    device = next(model.parameters()).device
    context = ids.new_zeros(0) if context is None else context
    stream = torch.cat([context, ids]).to(device)  # (L,)
    start = len(context)  # stream position of ids[0]
    state, out = None, []
    for i in range(0, len(stream) - 1, chunk):
        x = stream[i:i + chunk]  # (T,)
        logits, state = model(x[None], state)  # (1,T) -> (1,T,V); row j predicts stream[i+j+1]
        targets = stream[i + 1:i + 1 + len(x)]  # (T,) or T-1 at the end
        lp = F.log_softmax(logits[0, :len(targets)].double(), -1).gather(1, targets[:, None])[:, 0]
        out.append(lp[max(0, start - i - 1):].cpu())  # keep the targets at stream positions >= start
    lps = torch.cat(out) if out else torch.zeros(0, dtype=torch.float64)
    if start == 0:
        V = model.config.vocab_size if isinstance(model, RNNLM) else getattr(getattr(model, "out", None),
                                                                             "out_features", None)
        if V is None:
            raise ConfigError("stream_log_probs: without context the model needs an `out` layer to know V")
        lps = torch.cat([torch.tensor([-math.log(V)], dtype=torch.float64), lps])
    return lps


def perplexity_of(log_probs: torch.Tensor) -> float:
    """exp of the average negative log-likelihood of a stream's tokens (inf when one has probability 0)."""
    nll = -log_probs.double().mean().item()
    return math.inf if nll == math.inf else math.exp(nll)


def lm_perplexity(model: nn.Module, ids: torch.Tensor, context: torch.Tensor | None = None) -> float:
    """Perplexity of ``model`` on the stream ``ids``, every token with its full preceding context."""
    return perplexity_of(stream_log_probs(model, ids, context))


# ------------------------------------------------------------------ training


@dataclass
class LMTrainConfig:
    """Truncated BPTT with Adam (or SGD), global-norm clipping and a learning rate halved on a bad epoch."""

    batch_size: int = 32  # B: parallel streams
    bptt: int = 35  # T: tokens per window; the gradient reaches back at most this far
    epochs: int = 1  # passes over the training stream (stops earlier at ``max_seconds``)
    lr: float = 2e-3  # Adam's step size (SGD: e.g. 20)
    optimizer: str = "adam"  # "adam" or "sgd"
    clip: float = 0.25  # max global L2 norm of the gradient (None: no clipping)
    weight_decay: float = 0.0  # L2 penalty (Adam's, not decoupled)
    max_seconds: float | None = None  # stop after this many seconds of training (checked every window)
    max_cpu_seconds: float | None = None  # stop after this much CPU time of the process (all its threads):
    # a budget that other work on the machine cannot shrink (2 cores x 10 minutes = 1200)
    max_steps: int | None = None  # stop after this many windows
    eval_tokens: int | None = 20_000  # validation tokens scored after each epoch (None: all)
    seed: int = 0  # order of nothing random but dropout: the streams are read in order
    log_every: int = 200  # windows between two entries of the training curve
    keep_best: bool = False  # end with the weights of the best validation evaluation (early stopping)
    average: bool = False  # validate and end with the running mean of the weights over every window so far
    # (averaged SGD: Polyak & Juditsky, 1992; Merity et al., 2018), not the last iterate


@dataclass
class LMHistory:
    """What :func:`fit_lm` saw: the training curve and the validation perplexity after each epoch."""

    steps: list[int] = field(default_factory=list)  # window counts at which the loss was logged
    train_loss: list[float] = field(default_factory=list)  # mean cross-entropy (nats) since the last log
    valid_ppl: list[float] = field(default_factory=list)  # after each epoch
    tokens: int = 0  # training tokens seen
    seconds: float = 0.0  # wall time of training (evaluation included)
    cpu_seconds: float = 0.0  # CPU time of the process (all threads) in the same span
    best_epoch: int | None = None  # 0-based epoch of the lowest validation perplexity

    def to_dict(self) -> dict:
        return asdict(self)


def _train_window(model: RNNLM, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor, state: State,
                  clip: float | None) -> tuple[float, State]:
    loss, state = model.loss(x, y, state)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if clip is not None:
        nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()
    return loss.item(), detach_state(state)


def _make_optimizer(model: nn.Module, cfg: LMTrainConfig) -> torch.optim.Optimizer:
    if cfg.optimizer == "adam":
        return torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    raise ConfigError(f"LMTrainConfig: optimizer must be 'adam' or 'sgd', got {cfg.optimizer!r}")


def fit_lm(model: RNNLM, train: torch.Tensor, valid: torch.Tensor, cfg: LMTrainConfig,
           valid_context: torch.Tensor | None = None,
           on_log: Callable[[LMHistory], None] | None = None) -> LMHistory:
    """Train ``model`` on the stream ``train`` by truncated BPTT; evaluate on ``valid`` after each epoch and
    halve the learning rate when validation perplexity did not improve."""
    device = next(model.parameters()).device
    opt, hist, budget = _make_optimizer(model, cfg), LMHistory(), Budget(cfg.max_seconds, cfg.max_cpu_seconds)
    best = EarlyStopping("min", keep_best_state=cfg.keep_best)
    mean = AveragedModel(model, use_buffers=False) if cfg.average else None
    scored = model if mean is None else mean.module  # the weights validation scores
    torch.manual_seed(cfg.seed)
    step, since, total = 0, 0, 0.0
    for _ in range(cfg.epochs):
        model.train()
        state = model.init_state(cfg.batch_size, device)
        for x, y in lm_batches(train, cfg.batch_size, cfg.bptt):
            loss, state = _train_window(model, opt, x.to(device), y.to(device), state, cfg.clip)
            if mean is not None:
                mean.update_parameters(model)
            if not math.isfinite(loss):
                raise NumericalError(f"fit_lm: the loss became {loss} at window {step} (lower lr or clip)")
            step, since, total, hist.tokens = step + 1, since + 1, total + loss, hist.tokens + x.numel()
            if step % cfg.log_every == 0:
                hist.steps.append(step)
                hist.train_loss.append(total / since)
                since, total = 0, 0.0
                if on_log is not None:
                    on_log(hist)
            if _out_of_budget(cfg, step, budget):
                break
        _end_epoch(scored, opt, valid, valid_context, cfg, hist)
        best.update(hist.valid_ppl[-1], scored)
        if _out_of_budget(cfg, step, budget):
            break
    hist.seconds, hist.cpu_seconds = budget.seconds, budget.cpu_seconds
    if mean is not None:
        model.load_state_dict(mean.module.state_dict())
    restore_best(model, best, hist)
    return hist


def restore_best(model: nn.Module, best: EarlyStopping, hist: LMHistory) -> None:
    """Load the weights of the best validation evaluation, if ``best`` kept them, and note its epoch."""
    hist.best_epoch = best.best_epoch
    if best.best_state is not None:
        model.load_state_dict(best.best_state)


def _out_of_budget(cfg: LMTrainConfig, step: int, budget: Budget) -> bool:
    return (cfg.max_steps is not None and step >= cfg.max_steps) or budget.spent()


def _end_epoch(model: RNNLM, opt: torch.optim.Optimizer, valid: torch.Tensor, context: torch.Tensor | None,
               cfg: LMTrainConfig, hist: LMHistory) -> None:
    part = valid if cfg.eval_tokens is None else valid[:cfg.eval_tokens]
    ppl = lm_perplexity(model, part, context)
    if hist.valid_ppl and ppl >= min(hist.valid_ppl):
        for group in opt.param_groups:
            group["lr"] /= 2
    hist.valid_ppl.append(ppl)


# ------------------------------------------------------------------ sampling


@torch.no_grad()
def generate(model: RNNLM, prompt: torch.Tensor, n: int, temperature: float = 1.0, top_k: int | None = None,
             generator: torch.Generator | None = None, banned: tuple[int, ...] = ()) -> torch.Tensor:
    """``n`` ids sampled after ``prompt`` (P,) from softmax(logits / temperature), restricted to the ``top_k``
    most likely ids when given; ``banned`` ids (e.g. ``<unk>``) are never drawn. Returns (n,) long on the CPU."""
    if temperature <= 0:
        raise ConfigError(f"generate: temperature must be > 0, got {temperature}")
    if top_k is not None and top_k < 1:
        raise ConfigError(f"generate: top_k must be >= 1 or None, got {top_k}")
    if len(prompt) == 0:
        raise ConfigError("generate: the prompt is empty (give at least one token)")
    model.eval()
    device = next(model.parameters()).device
    logits, state = model(prompt.to(device)[None])  # (1,P,V)
    last, out = logits[0, -1], []
    for _ in range(n):
        nxt = _draw(last.float().cpu(), temperature, top_k, generator, banned)
        out.append(nxt)
        logits, state = model(torch.tensor([[nxt]], device=device), state)
        last = logits[0, -1]
    return torch.tensor(out, dtype=torch.long)


def _draw(logits: torch.Tensor, temperature: float, top_k: int | None, generator: torch.Generator | None,
          banned: tuple[int, ...]) -> int:
    scores = logits / temperature  # (V,)
    if banned:
        scores[list(banned)] = -math.inf
    if top_k is not None and top_k < len(scores):
        kth = torch.topk(scores, top_k).values[-1]
        scores = scores.masked_fill(scores < kth, -math.inf)
    return int(torch.multinomial(F.softmax(scores, -1), 1, generator=generator))

"""word2vec: skip-gram and CBOW with negative sampling (Mikolov et al., 2013a,b), batched in PyTorch.

Shapes: V vocabulary, D vector size, n centre positions in a step, C context slots of a centre (skip-gram:
2 * r for the centres of radius r, which a step updates together; CBOW: 2 * window, the slots beyond a
centre's own radius empty; a slot past a sentence end is empty too), K negatives per centre.

Two matrices are learned: ``W_in`` (V, D), the *input* vectors (the word vectors we keep), and
``W_out`` (V, D), the *output* vectors that score a word as the target of a prediction.

* **Skip-gram** predicts the centre word from each context word: for a context word ``o`` around
  centre ``c`` with noise words ``n_1..n_K`` the loss is
  ``-log σ(W_out[c]·W_in[o]) - Σ_k log σ(-W_out[n_k]·W_in[o])`` (Mikolov et al. 2013b, eq. 4; the
  roles of centre and context are those of the original C tool and of gensim).
* **CBOW** predicts the centre word from the *mean* of its context vectors ``h``:
  ``-log σ(W_out[c]·h) - Σ_k log σ(-W_out[n_k]·h)``. With ``dh`` the loss's gradient with respect to
  ``h``, the true gradient with respect to each of the ``C`` context vectors is ``dh / C``. The C tool
  and gensim (``cbow_mean=1``) add the full ``dh`` to every context vector instead: the gradient each
  would get if ``h`` were their sum, computed at the mean; the exact step with a learning rate ``C``
  times larger for the context vectors than for the output vectors. That is the default
  (``cbow_update="tool"``), with the C tool's initial learning rate for CBOW, 0.05 (0.025 for
  skip-gram); ``cbow_update="exact"`` takes the true gradient, whose context vectors learn slower.

The trainer updates both matrices by plain SGD, with the steps written out by hand (no autograd: it is
three matrix products per batch; for CBOW, by default, the C tool's step above rather than the
gradient), a learning rate that decays linearly to ``min_lr``, subsampling of frequent words and a
dynamic window, as in the C tool. Two things differ, because a batch of ``n``
centres is updated at once rather than one pair at a time:

* the K noise words are drawn once per centre and shared by all its context words (Ji et al., 2016),
  which turns the scoring into a small matrix product per centre;
* a block of consecutive centres is updated in a few steps, each on a subset of it: skip-gram groups
  the centres by radius (a centre of radius r gets 2r slots); CBOW takes every (2 * window + 1)-th
  centre per step, so that no two centres of a step share a context word's position. Consecutive
  centres share most of their context words, and updated at once they would all push those words
  from the same stale position (measured on the benchmark's corpus: 12.1% on the analogies with a
  block of 8192 consecutive centres in one step, 13.8% interleaved as here, seed 0);
* a row that a batch uses more than ``max_row_repeats`` times (a frequent word drawn as noise again
  and again) gets its summed update scaled down to that many uses. One pair at a time, each of those
  updates would see the row already moved by the previous ones; summed, they would all push from the
  same stale position and overshoot.

Reproducibility: what a seed promises.

* **CPU**: the same config (its ``seed`` included) and corpus give bitwise-identical vectors and loss
  curve, run after run (with the same PyTorch build: another version or CPU may round differently).
  Every operation of the trainer is deterministic there: ``index_add_`` adds a row's updates one
  after another in a fixed order. The book's numbers and the committed checkpoint rely on this.
* **CUDA**: bitwise-identical run after run too, on the same GPU model with the same PyTorch and
  CUDA versions, and the same whether ``torch.use_deterministic_algorithms`` is on or off (none of
  the trainer's operations is one it warns about, beyond its usual demand of ``CUBLAS_WORKSPACE_CONFIG``
  for matrix products). ``index_add_`` would add a row's updates with atomics, in an order that
  changes from run to run (the last digits drift apart over a run), so on CUDA the updates go through
  ``index_put_(..., accumulate=True)`` instead: it sorts the rows (a stable sort) and sums each row's
  updates in that fixed order, the algorithm ``torch.use_deterministic_algorithms`` itself gives
  ``index_add_``, for the price of one sort of the batch's row ids per update. The damping counts
  are sums of whole numbers, exact in any order, and counted the same way.
* **Not promised**: equal results on different devices. CUDA draws its random numbers (subsampling,
  windows, noise words) from another generator than the CPU (Philox rather than the Mersenne twister),
  so a CUDA run is another sample of the same training: vectors of the same quality, other numbers.
  Only the initial vectors are shared (they are drawn on the CPU). Nor across GPU models or
  PyTorch/CUDA versions, whose random streams and matrix products may differ. Other devices (MPS):
  no promise.

This module holds the course's reference trainer. The assignment asks students to write the pieces
(pairs, noise, losses) themselves, one function at a time.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..data.word_corpus import WordCorpus
from ..device import get_device
from ..errors import ConfigError, NumericalError
from ..history import History
from ..vectors import WordVectors

ARCHITECTURES = ("skipgram", "cbow")
CBOW_UPDATES = ("tool", "exact")
#: The initial learning rate of each architecture when the config leaves ``lr`` unset: the C tool's.
DEFAULT_LR = {"skipgram": 0.025, "cbow": 0.05}
LOSS_EVERY = 8  # the training curve: the loss of one batch in 8


@dataclass
class Word2VecConfig:
    """Everything that decides a training run (defaults: those of the C tool and of gensim).

    With the same config and corpus, a run is bitwise repeatable on the CPU, and on CUDA on the same
    GPU model and software; a CPU run and a CUDA run differ (another random stream). See the module
    docstring. A bad value raises :class:`~nlpcourse.errors.ConfigError` naming the field."""

    architecture: str = "skipgram"  # "skipgram" (predict the centre from each context word) or "cbow" (from their mean)
    # CBOW's update of the context vectors: "tool": the full dh (gradient wrt the mean h) to every context word, as the
    # C tool and gensim (cbow_mean=1); "exact": dh / (number of context words), the true gradient of the mean
    cbow_update: str = "tool"
    dim: int = 100  # D: size of each word vector
    window: int = 5  # largest context radius; each centre draws its radius uniformly from 1..window
    negatives: int = 5  # K: noise words per centre
    noise_power: float = 0.75  # noise distribution: unigram counts to this power, normalised
    sample: float = 1e-3  # subsampling threshold t: frequent words are dropped at random (0: keep all)
    epochs: int = 5  # passes over the corpus
    # initial learning rate, decayed linearly to min_lr over the whole run; None: the C tool's default for the
    # architecture, 0.025 for skip-gram and 0.05 for CBOW (DEFAULT_LR; the value used is ``initial_lr``)
    lr: float | None = None
    min_lr: float = 1e-4  # final learning rate
    # consecutive centre positions per block; skip-gram updates a block in one step per radius, CBOW in 2 * window + 1
    # interleaved steps whose centres' windows do not overlap
    batch_size: int = 8192
    max_row_repeats: int = 64  # a row used more often than this in one batch has its update scaled to this many uses
    seed: int = 0  # seeds the initialisation, subsampling, windows and noise draws: same seed, same run (per device)
    noise_table_size: int = 10_000_000  # entries of the table the noise words are drawn from (as in the C tool)

    def __post_init__(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise ConfigError(f"Word2VecConfig.architecture must be one of {ARCHITECTURES}, got {self.architecture!r}")
        for name in ("dim", "window", "negatives", "epochs", "batch_size", "max_row_repeats", "noise_table_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"Word2VecConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.cbow_update not in CBOW_UPDATES:
            raise ConfigError(f"Word2VecConfig.cbow_update must be one of {CBOW_UPDATES}, got {self.cbow_update!r}")
        if not 0 <= self.min_lr <= self.initial_lr:
            raise ConfigError(f"Word2VecConfig: need 0 <= min_lr <= lr, got min_lr={self.min_lr}, "
                              f"lr={self.initial_lr}")
        if self.sample < 0:
            raise ConfigError(f"Word2VecConfig.sample must be >= 0, got {self.sample}")

    @property
    def initial_lr(self) -> float:
        """The learning rate the run starts from: ``lr``, or the architecture's default when it is None
        (resolved here rather than stored, so that ``dataclasses.replace(cfg, architecture=...)`` of a
        config with ``lr=None`` gets the default of the new architecture)."""
        return DEFAULT_LR[self.architecture] if self.lr is None else self.lr


def keep_probability(counts: torch.Tensor, sample: float) -> torch.Tensor:
    """(V,) probability of keeping each occurrence of a word, the C tool's (and gensim's) rule
    ``(sqrt(f/t) + 1) * t/f`` with ``f`` the word's share of the corpus and ``t = sample`` (the paper,
    Mikolov et al. 2013b, gives the simpler ``sqrt(t/f)``). ``sample = 0`` keeps everything."""
    if sample <= 0:
        return torch.ones(len(counts), dtype=torch.float64)
    ratio = counts.double() / (sample * counts.sum().double())  # f / t
    return ((ratio.sqrt() + 1) / ratio).clamp(max=1.0).nan_to_num(1.0)


def interleave(block: torch.Tensor, stride: int) -> tuple[torch.Tensor, list[int]]:
    """``block`` (n,) reordered step by step, step ``j`` taking every ``stride``-th entry from the ``j``-th:
    ``(order (n,), ends)``, step ``j`` being ``order[ends[j]:ends[j + 1]]``."""
    steps = [block[j::stride] for j in range(min(stride, len(block)))]
    if not steps:  # an empty block: no step
        return block, [0]
    return torch.cat(steps), [0] + torch.tensor([len(step) for step in steps]).cumsum(0).tolist()


def _offsets(radius: int, device: str | torch.device) -> torch.Tensor:
    """(2 * radius,) the offsets of a window's slots from its centre: -radius..-1, then 1..radius."""
    return torch.cat([torch.arange(-radius, 0), torch.arange(1, radius + 1)]).to(device)


class Word2Vec:
    """A word2vec model on ``device``: its two matrices and the training loop.

    ``device``: ``"cpu"``, ``"cuda"``... or None for :func:`nlpcourse.device.get_device` (a GPU when there
    is one). The random generator of the run lives on that device, so a seed gives one run per device.

    >>> model = Word2Vec(Word2VecConfig(epochs=1), corpus)   # doctest: +SKIP
    >>> history = model.fit(corpus)                           # doctest: +SKIP
    >>> vectors = model.vectors()                             # the input vectors, as WordVectors
    """

    def __init__(self, config: Word2VecConfig, corpus: WordCorpus, device: str | torch.device | None = None):
        self.config = config
        self.device = device if isinstance(device, torch.device) else get_device(device)
        self.words = list(corpus.words)
        self.counts = corpus.counts.clone()
        V, D = len(self.words), config.dim
        self.generator = torch.Generator(device=self.device).manual_seed(config.seed)
        init = torch.Generator().manual_seed(config.seed)
        # as gensim: input vectors uniform in (-1/D, 1/D), output vectors zero
        # one extra row, always zero, where the empty context slots point: gathering and scattering them
        # then touches one row that stays in cache rather than random rows of the matrix
        uniform = (torch.rand(V, D, generator=init) * 2 - 1) / D  # (V,D)
        self.W_in = torch.cat([uniform, torch.zeros(1, D)]).to(self.device)  # (V+1,D)
        self.W_out = torch.zeros(V, D, device=self.device)  # (V,D)
        noise = self.counts.double() ** config.noise_power
        # the C tool's unigram table: word w fills a share noise[w] / sum(noise) of its entries, so that a
        # uniformly drawn entry is a draw from the noise distribution
        bounds = ((noise / noise.sum()).cumsum(0) * config.noise_table_size).round().long()  # (V,)
        sizes = torch.diff(bounds, prepend=torch.zeros(1, dtype=torch.long))
        self.noise_table = torch.repeat_interleave(torch.arange(V, dtype=torch.int32), sizes).to(self.device)
        self.keep = keep_probability(self.counts, config.sample).float().to(self.device)  # (V,)

    # ------------------------------------------------------------------ one batch

    def _contexts(self, ids: torch.Tensor, sent: torch.Tensor, centres: torch.Tensor, radius: int,
                  radii: torch.Tensor | None = None):
        """The ``C = 2 * radius`` context slots of each of ``centres`` (positions into ``ids``):
        ``(context ids (n,C), valid (n,C) bool)``, the slots at offsets ``-radius..-1, 1..radius``. A slot
        past either end of the corpus or of the centre's sentence is empty, and so is one farther than
        the centre's own radius ``radii`` (n,) when given: it holds the zero row ``V`` of ``W_in``."""
        offsets = _offsets(radius, ids.device)  # (C,)
        pos = centres[:, None] + offsets  # (n,1) + (C,) -> (n,C)
        inside = (pos >= 0) & (pos < len(ids))
        if radii is not None:
            inside &= offsets.abs() <= radii[:, None]  # (C,) vs (n,1) -> (n,C)
        pos = pos.clamp(0, len(ids) - 1)
        valid = inside & (sent[pos] == sent[centres, None])  # (n,C)
        return torch.where(valid, ids[pos], len(self.words)), valid

    def _damping(self, rows: torch.Tensor, uses: torch.Tensor) -> torch.Tensor:
        """Scale for the update of each entry of ``rows``: 1, or ``max_row_repeats / uses`` for a word
        whose ``uses`` in this batch add up to more than ``max_row_repeats``."""
        return self._word_damping(rows, uses)[rows]  # shaped like rows

    def _word_damping(self, rows: torch.Tensor, uses: torch.Tensor) -> torch.Tensor:
        """(V+1,) the scale of :meth:`_damping` for each word (and the zero row)."""
        m, flat, weights = float(self.config.max_row_repeats), rows.reshape(-1), uses.reshape(-1).float()
        if rows.device.type == "cuda":  # the same whole numbers: bincount with weights would warn (or fail)
            # under torch.use_deterministic_algorithms, for its atomic adds of floats
            count = torch.zeros(len(self.words) + 1, device=rows.device).index_put_((flat,), weights, accumulate=True)
        else:
            count = torch.bincount(flat, weights=weights, minlength=len(self.words) + 1)  # (V+1,)
        return m / count.clamp(min=m)

    @staticmethod
    def _scatter_add(W: torch.Tensor, rows: torch.Tensor, updates: torch.Tensor) -> None:
        """``W[rows[i]] += updates[i]`` for every ``i``, the updates of a repeated row summed. On the CPU
        ``index_add_`` adds them one after another in order; on CUDA ``index_add_`` uses atomic adds that
        land in another order every run, while ``index_put_(accumulate=True)`` sorts the rows and sums
        each row's updates in a fixed order: deterministic (see the module docstring)."""
        if W.device.type == "cuda":
            W.index_put_((rows,), updates, accumulate=True)
        else:
            W.index_add_(0, rows, updates)

    def _targets(self, centre: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The true word and ``K`` noise words of each centre: ``targets`` (n,1+K), column 0 the true word;
        ``use`` (n,1+K) bool, False for a noise word that happens to be the true word (skipped, as in
        the C tool); ``sign`` (1,1+K), +1 for the true word and -1 for noise: the loss of a score is
        ``-log σ(sign * score)``."""
        n, K = len(centre), self.config.negatives
        # drawn where the generator lives (the model's device), as every draw of the run
        draw = torch.randint(len(self.noise_table), (n * K,), generator=self.generator, device=self.device)
        negatives = self.noise_table[draw].long().view(n, K)  # (n,K)
        targets = torch.cat([centre[:, None], negatives], dim=1)  # (n,1+K)
        use = torch.cat([torch.ones_like(centre[:, None], dtype=torch.bool), negatives != centre[:, None]], 1)
        sign = torch.full((1, K + 1), -1.0, device=centre.device)
        sign[0, 0] = 1.0
        return targets, use, sign

    def _step(self, context: torch.Tensor, valid: torch.Tensor, centre: torch.Tensor, lr: float,
              with_loss: bool = True) -> torch.Tensor | None:
        """One SGD step on a batch of centres ``centre`` (n,) with their context slots ``context``, ``valid``
        (n,C) (as from :meth:`_contexts`): draws their noise words, then takes the step of the
        architecture. Returns the batch's summed loss (a 0-d tensor), if ``with_loss``."""
        targets, use, sign = self._targets(centre)
        step = self._skipgram_step if self.config.architecture == "skipgram" else self._cbow_step
        return step(context, valid, targets, use, sign, lr, with_loss)

    def _skipgram_step(self, context: torch.Tensor, valid: torch.Tensor, targets: torch.Tensor, use: torch.Tensor,
                       sign: torch.Tensor, lr: float, with_loss: bool = True) -> torch.Tensor | None:
        """One skip-gram SGD step (the arguments: as for :meth:`_cbow_step`); returns the summed loss (a 0-d
        tensor), if ``with_loss``."""
        (n, C), K, D = context.shape, self.config.negatives, self.config.dim
        # gathers by index_select: the same copy as W_out[targets], three times faster on the CPU
        U = self.W_out.index_select(0, targets.reshape(-1)).view(n, K + 1, D)  # (n,1+K,D)
        X = self.W_in.index_select(0, context.reshape(-1)).view(n, C, D)  # (n,C,D): one input vector per slot
        scores = torch.bmm(X, U.transpose(1, 2))  # (n,C,D) x (n,D,1+K) -> (n,C,1+K)
        weight = (valid[:, :, None] & use[:, None, :]).float()  # (n,C,1+K)
        signed = scores * sign
        loss = -(torch.nn.functional.logsigmoid(signed) * weight).sum() if with_loss else None
        # minus the gradient of the loss wrt the scores, times lr: sign * σ(-sign * score)
        G = torch.sigmoid(-signed) * sign * weight * lr  # (n,C,1+K)
        s_in = self._damping(context, valid * use.sum(1, keepdim=True))  # (n,C)
        s_out = self._damping(targets, weight.sum(1))  # (n,1+K)
        dX = torch.bmm(G * s_in[:, :, None], U)  # (n,C,1+K) x (n,1+K,D) -> (n,C,D)
        dU = torch.bmm((G * s_out[:, None, :]).transpose(1, 2), X)  # (n,1+K,C) x (n,C,D) -> (n,1+K,D)
        self._scatter_add(self.W_in, context.reshape(-1), dX.reshape(-1, D))
        self._scatter_add(self.W_out, targets.reshape(-1), dU.reshape(-1, D))
        return loss

    def _cbow_step(self, context: torch.Tensor, valid: torch.Tensor, targets: torch.Tensor, use: torch.Tensor,
                   sign: torch.Tensor, lr: float, with_loss: bool = True) -> torch.Tensor | None:
        """One CBOW SGD step on n centres: their context slots ``context``, ``valid`` (n,C) (as from
        :meth:`_contexts`) and their true and noise words ``targets``, ``use`` (n,1+K), ``sign`` (as from
        :meth:`_targets`); returns the step's summed loss (a 0-d tensor), if ``with_loss``."""
        n, K, D = len(context), self.config.negatives, self.config.dim
        size = valid.sum(1, keepdim=True).clamp(min=1)  # (n,1) context words per centre
        # (n,D): mean of the context vectors, the empty slots pointing to the zero row; embedding_bag sums
        # each row's vectors without building the (n,C,D) tensor of them, one bag at a time (deterministic)
        h = torch.nn.functional.embedding_bag(context, self.W_in, mode="sum") / size
        U = self.W_out.index_select(0, targets.reshape(-1)).view(n, K + 1, D)  # (n,1+K,D)
        scores = torch.bmm(U, h[:, :, None]).squeeze(2)  # (n,1+K,D) x (n,D,1) -> (n,1+K)
        weight = (use & valid.any(1, keepdim=True)).float()  # (n,1+K)
        signed = scores * sign
        loss = -(torch.nn.functional.logsigmoid(signed) * weight).sum() if with_loss else None
        G = torch.sigmoid(-signed) * sign * weight * lr  # (n,1+K)
        dh = torch.bmm(G[:, None, :], U).squeeze(1)  # (n,1,1+K) x (n,1+K,D) -> (n,D)
        # the filled slots only: the centre of each, its word, and the word's share of dh
        centre_of, slot_of = valid.nonzero(as_tuple=True)  # (P,), (P,)
        rows = context[centre_of, slot_of]  # (P,)
        share = self._damping(rows, torch.ones_like(rows, dtype=torch.float))  # (P,)
        if self.config.cbow_update == "exact":  # the gradient of the mean: dh / size
            share = share / size[centre_of, 0]
        # else the C tool's, gensim's: the full dh to every context word
        self._scatter_add(self.W_in, rows, dh.index_select(0, centre_of) * share[:, None])  # (P,D) * (P,1)
        dU = (G * self._damping(targets, weight))[:, :, None] * h[:, None, :]  # (n,1+K,1) * (n,1,D) -> (n,1+K,D)
        self._scatter_add(self.W_out, targets.reshape(-1), dU.reshape(-1, D))
        return loss

    def _block(self, ids: torch.Tensor, sent: torch.Tensor, radius: torch.Tensor, lo: int, hi: int, lr: float,
               with_loss: bool) -> tuple[float, int]:
        """Train on the centres ``lo..hi-1`` of ``ids``; returns their summed loss (0.0 unless ``with_loss``)
        and their number of predictions. CBOW: interleaved steps (:meth:`_cbow_block`). Skip-gram: one
        step per radius, the block's centres grouped by radius, so that a centre of radius r gets 2r
        context slots rather than 2 * window (most of them empty): sorted, each group is a slice."""
        block = torch.arange(lo, hi, device=self.device)  # (n,) centre positions
        if self.config.architecture == "cbow":
            return self._cbow_block(ids, sent, radius, block, lr, with_loss)
        r_block = radius[block]
        by_radius = block[torch.argsort(r_block, stable=True)]
        ends = torch.bincount(r_block, minlength=self.config.window + 1).cumsum(0).tolist()
        loss_sum, predictions = 0.0, 0
        for r in range(1, self.config.window + 1):
            centres = by_radius[ends[r - 1]:ends[r]]
            if len(centres) == 0:
                continue
            context, valid = self._contexts(ids, sent, centres, r)
            loss = self._step(context, valid, ids[centres], lr, with_loss=with_loss)
            if with_loss:
                loss_sum += float(loss)
                predictions += int(valid.sum()) * (1 + self.config.negatives)
        return loss_sum, predictions

    def _cbow_block(self, ids: torch.Tensor, sent: torch.Tensor, radius: torch.Tensor, block: torch.Tensor,
                    lr: float, with_loss: bool) -> tuple[float, int]:
        """CBOW on the consecutive centres ``block``, in ``2 * window + 1`` steps: step ``j`` takes every
        ``(2 * window + 1)``-th centre from the ``j``-th, so that the windows of a step's centres never
        overlap. Consecutive centres share most of their context words; updated in one step, each would
        push those words from the same stale position (one centre at a time, as in the C tool, each
        sees the update of the one before). The block's windows and noise words are drawn at once, the
        centres ordered by step, so that each step is a slice."""
        w = self.config.window
        order, ends = interleave(block, 2 * w + 1)  # (n,) step by step
        context, valid = self._contexts(ids, sent, order, w, radii=radius[order])  # (n,C), C = 2w
        targets, use, sign = self._targets(ids[order])  # (n,1+K)
        loss_sum = 0.0
        for a, b in zip(ends[:-1], ends[1:]):  # every step has a centre
            loss = self._cbow_step(context[a:b], valid[a:b], targets[a:b], use[a:b], sign, lr, with_loss)
            loss_sum += float(loss) if with_loss else 0.0
        return loss_sum, int(valid.any(1).sum()) * (1 + self.config.negatives)

    # ------------------------------------------------------------------ training

    def fit(self, corpus: WordCorpus, progress: bool | None = None, reports: int = 50,
            on_report: Callable[[dict], None] | None = None) -> History:
        """Train on ``corpus`` for ``config.epochs`` epochs; returns a History with ``reports`` entries
        of ``loss`` (mean loss per prediction since the previous report, over one batch in
        ``LOSS_EVERY``: the loss costs time, the gradients do not need it; and of the block that ends an
        interval none was sampled in, so that a report is never a made-up 0), ``lr`` and ``words``.

        Deterministic: the same config (seed included) and corpus give bitwise-identical vectors and
        history on the CPU, and on CUDA on the same GPU model and software; a CUDA run is not the CPU
        run (another random stream). A corpus with another vocabulary, or no tokens, is a
        :class:`~nlpcourse.errors.ConfigError`."""
        if corpus.words != self.words:
            raise ConfigError(f"fit: the corpus has another vocabulary ({len(corpus.words)} words) than the one this "
                              f"model was built for ({len(self.words)} words): build the model from this corpus")
        if len(corpus) == 0:
            raise ConfigError(f"fit: the corpus has no tokens (its vocabulary has {len(corpus.words)} words)")
        from tqdm.auto import tqdm

        from ..train import _progress_default

        cfg = self.config
        lr0 = cfg.initial_lr
        ids, sent = corpus.ids.to(self.device), corpus.sentence.to(self.device)
        total = len(ids) * cfg.epochs  # learning-rate schedule: by raw tokens, as the C tool
        every = max(1, total // max(1, reports))
        history = History()
        done, next_report, loss_sum, pairs = 0, every, 0.0, 0
        bar = tqdm(total=total, unit="word", unit_scale=True, disable=not _progress_default(progress),
                   desc=f"word2vec {cfg.architecture}")
        for epoch in range(cfg.epochs):
            kept = torch.rand(len(ids), generator=self.generator, device=self.device) < self.keep[ids]
            e_ids, e_sent = ids[kept], sent[kept]  # subsampled tokens: their windows reach further
            N = len(e_ids)
            radius = torch.randint(1, cfg.window + 1, (N,), generator=self.generator, device=self.device)
            for s in range(0, N, cfg.batch_size):
                progress_words = done + s / N * len(ids)
                lr = max(cfg.min_lr, lr0 - (lr0 - cfg.min_lr) * progress_words / total)
                words_now = done + min(s + cfg.batch_size, N) / N * len(ids)
                last = epoch == cfg.epochs - 1 and s + cfg.batch_size >= N
                due = words_now >= next_report or last  # a report after this block
                # the loss of one block in LOSS_EVERY, and of a block that ends an interval none was sampled in
                sampled = (s // cfg.batch_size) % LOSS_EVERY == 0 or (due and pairs == 0)
                loss, predictions = self._block(e_ids, e_sent, radius, s, min(s + cfg.batch_size, N), lr, sampled)
                if sampled:
                    loss_sum, pairs = loss_sum + loss, pairs + predictions
                bar.update(int(words_now) - bar.n)
                if due and pairs:  # (a block without a single prediction: the report waits for one)
                    row = {"loss": loss_sum / pairs, "lr": lr, "words": int(words_now), "epoch": epoch}
                    history.log(**row)
                    if on_report is not None:
                        on_report(row)
                    loss_sum, pairs = 0.0, 0
                    next_report += every
            done += len(ids)
        bar.close()
        if not bool(torch.isfinite(self.W_in).all()):  # (the zero row too: a NaN gradient would reach it)
            raise NumericalError(f"word2vec diverged (non-finite vectors) with lr={self.config.initial_lr}, "
                                 f"batch_size={self.config.batch_size}: lower one of them")
        return history

    def vectors(self) -> WordVectors:
        """The input vectors ``W_in`` (the word vectors word2vec keeps), on the CPU."""
        return WordVectors(self.words, self.W_in[:-1].detach().cpu().clone())


def full_softmax_flops(vocab_size: int, dim: int) -> int:
    """Multiply-adds to score one (centre, context) pair with a full softmax: every output vector."""
    return vocab_size * dim


def negative_sampling_flops(negatives: int, dim: int) -> int:
    """Multiply-adds to score one pair with negative sampling: the true word and K noise words."""
    return (1 + negatives) * dim


__all__ = ["ARCHITECTURES", "CBOW_UPDATES", "DEFAULT_LR", "Word2VecConfig", "Word2Vec", "keep_probability",
           "full_softmax_flops", "negative_sampling_flops"]

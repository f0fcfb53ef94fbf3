"""Cheaper output layers for a language model over a large vocabulary (chapter "RNN language models",
``scripts/softmax_measure.py``).

The full softmax scores every one of the V words for every token: (N,H) x (H,V), forward and backward.
At V = 10,001 and H = 256 that product costs more than the LSTM under it. Two ways around it:

* **Class-based softmax** (Goodman 2001, "Classes for fast maximum entropy training"; Mikolov et al.
  2011, "Extensions of recurrent neural network language model"): every word w belongs to one class
  c(w), and

      log p(w | h) = log p(c(w) | h) + log p(w | c(w), h),

  a softmax over the C classes plus a softmax over the words of one class. Training touches the class
  layer (H x C) and the rows of the target's class only; the full distribution (for evaluation) is the
  product of the two and sums to 1 exactly. :func:`frequency_classes` makes the classes by frequency.
* **Sampled softmax** (Bengio & Senecal 2008, "Adaptive importance sampling to accelerate training of a
  neural probabilistic language model"; Jean et al. 2015, "On using very large target vocabulary for
  neural machine translation"): the normaliser Z = sum_w exp(s_w) is estimated from the target and k
  words drawn from a proposal Q (:func:`sampled_softmax_loss`). Only training is approximate; a model
  trained so is evaluated with the full softmax.

Shapes: N tokens (B*T flattened), H hidden units, V vocabulary, C classes, S_c words of class c, k
negatives.

    h        (N,H)     the LM's top hidden states (any leading shape (...,H) is flattened)
    targets  (N,)      the next tokens' ids
    classes  (V,)      c(w), in [0, C)
    log_q    (V,)      log Q(w), the proposal of the sampled softmax (the caller's: e.g. the unigram
                       distribution raised to 0.75, every word drawable)
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import ConfigError, ShapeError

# ------------------------------------------------------------------ word classes


def _check_counts(counts: torch.Tensor, who: str) -> None:
    if counts.dim() != 1 or len(counts) < 1:
        raise ShapeError(f"{who}: counts must be a (V,) tensor with V >= 1, got shape {tuple(counts.shape)}")
    if bool((counts < 0).any()):
        raise ConfigError(f"{who}: counts must be >= 0, got a minimum of {counts.min().item()}")


def frequency_classes(counts: torch.Tensor, n_classes: int | None = None, power: float = 0.5) -> torch.Tensor:
    """Frequency binning (Mikolov et al. 2011): the words sorted by count, most frequent first, cut into
    ``n_classes`` runs of about equal total ``count ** power``. ``power=0.5`` (the default) is what
    Mikolov's RNNLM toolkit does (classes of equal sqrt-of-frequency mass: the rare words' classes get
    smaller, so the average class of a token is smaller); ``power=1`` is the paper's equal unigram mass.

    A word that weighs more than a class's share gets a class of its own, and the class index rises by
    at most one per word, so every class is a contiguous run of the sorted words; there are exactly
    ``n_classes`` of them, none empty (the first j words hold at least j/V of the mass). ``n_classes``
    defaults to round(sqrt(V)). Returns (V,) long class ids; frequent words get low ids.
    """
    _check_counts(counts, "frequency_classes")
    if not counts.sum() > 0:
        raise ConfigError("frequency_classes: the counts are all 0, so there is no frequency to bin by")
    V = len(counts)
    C = round(math.sqrt(V)) if n_classes is None else n_classes
    if not 1 <= C <= V:
        raise ConfigError(f"frequency_classes: n_classes must be in [1, V={V}], got {C}")
    if not power > 0:
        raise ConfigError(f"frequency_classes: power must be > 0, got {power}")
    order = torch.argsort(counts, descending=True, stable=True)  # (V,) ids, most frequent first; ties by id
    w = counts[order].double() ** power  # (V,)
    total = w.sum()  # > 0
    before = torch.cumsum(w, 0) - w  # (V,) mass of the more frequent words
    ideal = torch.floor(before * C / total + 1e-9).long().clamp(max=C - 1)  # (V,) the bin each word starts in
    rank = torch.arange(V)
    sorted_class = rank + torch.cummin(ideal - rank, 0).values  # min(ideal_i, class_{i-1} + 1), unrolled
    classes = torch.empty(V, dtype=torch.long)
    classes[order] = sorted_class
    return classes


def expected_rows(classes: torch.Tensor, counts: torch.Tensor) -> float:
    """Output rows a class-based softmax computes per token, on average over the unigram distribution
    ``counts``: C class scores + the size of the target's class (the full softmax: V)."""
    sizes = torch.bincount(classes)  # (C,)
    p = counts.double() / counts.sum()  # (V,)
    return len(sizes) + float((p * sizes[classes].double()).sum())


# ------------------------------------------------------------------ the class-factored softmax


class ClassSoftmax(nn.Module):
    """log p(w|h) = log p(c(w)|h) + log p(w|c(w),h) (Goodman 2001; Mikolov et al. 2011).

    The class layer is a Linear (H -> C). The words of class c have their own Linear (H -> S_c), a
    parameter of its own: training computes only the target's class's block, and the gradient of a
    block no token needed is never formed (slicing one (V,H) table per class would make autograd build a
    zero (V,H) gradient for every slice). ``order`` lists the words class by class; ``rank`` is its
    inverse (where word w sits in ``order``).
    """

    def __init__(self, hidden_dim: int, classes: torch.Tensor):
        super().__init__()
        if classes.dim() != 1 or len(classes) < 1 or classes.dtype != torch.long:
            raise ShapeError(f"ClassSoftmax: classes must be (V,) long, got {tuple(classes.shape)} {classes.dtype}")
        sizes = torch.bincount(classes) if classes.min() >= 0 else None
        if sizes is None or bool((sizes == 0).any()):
            raise ConfigError("ClassSoftmax: classes must number the classes 0..C-1 with none empty, got "
                              f"{classes.unique().tolist()[:20]}")
        if hidden_dim < 1:
            raise ConfigError(f"ClassSoftmax: hidden_dim must be >= 1, got {hidden_dim}")
        self.hidden_dim, self.vocab_size, self.n_classes = hidden_dim, len(classes), len(sizes)
        order = torch.argsort(classes, stable=True)  # (V,) words class by class
        offsets = torch.cumsum(sizes, 0) - sizes  # (C,) where each class starts in order
        rank = torch.empty_like(order)
        rank[order] = torch.arange(len(order))
        self.register_buffer("classes", classes.clone())
        self.register_buffer("rank", rank)
        self.register_buffer("within", rank - offsets[classes])  # (V,) a word's index inside its class
        self.sizes = sizes.tolist()
        self.class_out = nn.Linear(hidden_dim, self.n_classes)  # (H,C)
        self.word_out = nn.ModuleList(nn.Linear(hidden_dim, s) for s in self.sizes)  # C blocks (H,S_c)

    def _flatten(self, h: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        if h.dim() < 1 or h.shape[-1] != self.hidden_dim:
            raise ShapeError(f"ClassSoftmax: h must be (...,H={self.hidden_dim}), got {tuple(h.shape)}")
        if targets is not None:
            if targets.shape != h.shape[:-1]:
                raise ShapeError(f"ClassSoftmax: targets must have h's leading shape {tuple(h.shape[:-1])}, "
                                 f"got {tuple(targets.shape)}")
            if targets.numel() and not 0 <= int(targets.min()) <= int(targets.max()) < self.vocab_size:
                raise ConfigError(f"ClassSoftmax: targets must be ids in [0, V={self.vocab_size}), got "
                                  f"[{int(targets.min())}, {int(targets.max())}]")
        return h.reshape(-1, self.hidden_dim)  # (N,H)

    def forward(self, h: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """-log p(target | h) for every token, shape of ``targets``: the class layer and, for each class
        some target is in, one (n_c,H) x (H,S_c) product for the n_c tokens of that class."""
        x = self._flatten(h, targets)  # (N,H)
        y = targets.reshape(-1)  # (N,)
        c = self.classes[y]  # (N,)
        class_nll = F.cross_entropy(self.class_out(x), c, reduction="none")  # (N,H) x (H,C) -> (N,C) -> (N,)
        perm = torch.argsort(c)  # (N,) the tokens grouped by class
        counts = torch.bincount(c, minlength=self.n_classes).tolist()
        parts = zip(torch.split(x[perm], counts), torch.split(self.within[y][perm], counts))
        word_nll = [F.cross_entropy(self.word_out[k](xc), wc, reduction="none")  # (n_c,H) x (H,S_c) -> (n_c,)
                    for k, (xc, wc) in enumerate(parts) if counts[k]]
        unperm = torch.argsort(perm)  # (N,) back to the tokens' order
        word = torch.cat(word_nll) if word_nll else class_nll  # (N,); N = 0: both empty
        return (class_nll + word[unperm]).reshape(targets.shape)

    def loss(self, h: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean negative log-likelihood of ``targets`` (a scalar): the training loss."""
        return self(h, targets).mean()

    def log_prob(self, h: torch.Tensor) -> torch.Tensor:
        """The full distribution log p(w | h) over all V words (evaluation): (...,H) -> (...,V)."""
        x = self._flatten(h)  # (N,H)
        class_lp = F.log_softmax(self.class_out(x), -1)  # (N,H) x (H,C) -> (N,C)
        blocks = [F.log_softmax(out(x), -1) + class_lp[:, k:k + 1]  # (N,H) x (H,S_c) -> (N,S_c)
                  for k, out in enumerate(self.word_out)]
        lp = torch.cat(blocks, -1)[:, self.rank]  # (N,V) words class by class -> (N,V) by word id
        return lp.reshape(*h.shape[:-1], self.vocab_size)

    def word_weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The word blocks as one (V,H) weight and (V,) bias, rows by word id (for tests and inspection)."""
        W = torch.cat([out.weight for out in self.word_out])[self.rank]  # (V,H)
        b = torch.cat([out.bias for out in self.word_out])[self.rank]  # (V,)
        return W, b


# ------------------------------------------------------------------ sampled softmax


def _check_proposal(log_q: torch.Tensor, V: int) -> None:
    if log_q.shape != (V,):
        raise ShapeError(f"sampled softmax: log_q must be (V={V},), got {tuple(log_q.shape)}")
    total = torch.logsumexp(log_q.double(), 0).item()
    if not abs(total) < 1e-4:
        raise ConfigError(f"sampled softmax: exp(log_q) must sum to 1, it sums to {math.exp(total):.6g}")


def _check_sampled(h: torch.Tensor, W: torch.Tensor, b: torch.Tensor | None, targets: torch.Tensor) -> None:
    if W.dim() != 2 or h.shape[-1] != W.shape[1]:
        raise ShapeError(f"sampled_softmax_loss: W must be (V,H) with H = h's last dim {h.shape[-1]}, "
                         f"got {tuple(W.shape)}")
    if b is not None and b.shape != (W.shape[0],):
        raise ShapeError(f"sampled_softmax_loss: b must be (V={W.shape[0]},), got {tuple(b.shape)}")
    if targets.shape != h.shape[:-1]:
        raise ShapeError(f"sampled_softmax_loss: targets must have h's leading shape {tuple(h.shape[:-1])}, "
                         f"got {tuple(targets.shape)}")


def sampled_softmax_loss(h: torch.Tensor, W: torch.Tensor, b: torch.Tensor | None, targets: torch.Tensor,
                         k: int, log_q: torch.Tensor, generator: torch.Generator | None = None,
                         negatives: torch.Tensor | None = None) -> torch.Tensor:
    """Sampled softmax (Bengio & Senecal 2008; Jean et al. 2015): the mean over tokens of

        -s_y + log Zhat,   Zhat = exp(s_y) + (1/k) sum_j [w_j != y] exp(s_{w_j}) / Q(w_j),

    with s = h W^T + b the scores, y the target and w_1..w_k negatives drawn from Q once for the whole
    batch (``negatives``, or drawn here). The sum is an unbiased estimate of sum_{w != y} exp(s_w), so Zhat
    estimates Z and the loss the full cross-entropy (a little below it on average: log is concave); as
    a logit correction, each negative's score is lowered by log(k Q(w_j)) and a negative equal to the
    target (an "accidental hit") is dropped. With k = V, negatives = every word once and Q uniform, the
    correction is 0 and the loss is the full cross-entropy exactly. Cost: (N,H) x (H,k) instead of (H,V).
    """
    _check_sampled(h, W, b, targets)
    _check_proposal(log_q, W.shape[0])
    if k < 1:
        raise ConfigError(f"sampled_softmax_loss: k must be >= 1, got {k}")
    if negatives is None:  # k ids drawn from Q independently (with replacement)
        negatives = torch.multinomial(log_q.exp(), k, replacement=True, generator=generator)
    if negatives.shape != (k,):
        raise ShapeError(f"sampled_softmax_loss: negatives must be (k={k},), got {tuple(negatives.shape)}")
    x, y = h.reshape(-1, h.shape[-1]), targets.reshape(-1)  # (N,H), (N,)
    s_y = (x * W[y]).sum(-1)  # (N,H) . (N,H) -> (N,)
    s_neg = x @ W[negatives].T  # (N,H) x (H,k) -> (N,k)
    if b is not None:
        s_y, s_neg = s_y + b[y], s_neg + b[negatives]
    s_neg = s_neg - (math.log(k) + log_q[negatives])  # (N,k) - (k,): exp(s) / (k Q)
    s_neg = s_neg.masked_fill(negatives[None, :] == y[:, None], -math.inf)  # (N,k) accidental hits
    log_z = torch.logsumexp(torch.cat([s_y[:, None], s_neg], 1), 1)  # (N,1+k) -> (N,)
    return (log_z - s_y).mean()


# ------------------------------------------------------------------ heads with one interface


class FullSoftmax(nn.Module):
    """The usual output layer: a Linear (H -> V) and the cross-entropy over all V words."""

    def __init__(self, hidden_dim: int, vocab_size: int):
        super().__init__()
        self.out = nn.Linear(hidden_dim, vocab_size)

    def loss(self, h: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of ``targets``: (N,H) x (H,V) -> (N,V) scores."""
        logits = self.out(h)  # (...,H) x (H,V) -> (...,V)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    def log_prob(self, h: torch.Tensor) -> torch.Tensor:
        """log p(w | h) for all V words: (...,H) -> (...,V)."""
        return F.log_softmax(self.out(h), -1)


class SampledSoftmax(FullSoftmax):
    """A full softmax layer trained with :func:`sampled_softmax_loss` (``k`` negatives from Q given as
    ``log_q``) and evaluated in full: ``loss`` samples in training mode only; ``log_prob`` is exact."""

    def __init__(self, hidden_dim: int, log_q: torch.Tensor, k: int, generator: torch.Generator | None = None):
        super().__init__(hidden_dim, len(log_q))
        _check_proposal(log_q, len(log_q))
        if k < 1:
            raise ConfigError(f"SampledSoftmax: k must be >= 1, got {k}")
        self.register_buffer("log_q", log_q.clone())
        self.k, self.generator = k, generator

    def loss(self, h: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The sampled estimate while training; the exact cross-entropy in eval mode."""
        if not self.training:
            return super().loss(h, targets)
        return sampled_softmax_loss(h, self.out.weight, self.out.bias, targets, self.k, self.log_q, self.generator)

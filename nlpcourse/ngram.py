r"""N-gram language models: maximum likelihood, add-one (Laplace) and interpolated Kneser-Ney.

An n-gram model of order n predicts a token from the n-1 tokens before it, its *context* h:
P(w | everything before) ~ P(w | h). The corpus is one stream of ids (no sentence boundaries, no <s>
or </s>): c(g) is the number of times the k-gram g occurs in the training stream, c(h) = sum_w c(h w)
the number of times the context h is *followed* by a token, V the vocabulary size.

* Maximum likelihood (:class:`MLE`): P(w | h) = c(h w) / c(h). An unseen n-gram gets 0; an unseen
  context (c(h) = 0) gets 0 for *every* word: the MLE is 0/0 there, undefined, and inventing a
  distribution would not be maximum likelihood. Its perplexity is then inf, and
  ``distribution(h)`` is all zeros.
* Add-one, or Laplace (:class:`AddOne`): P(w | h) = (c(h w) + 1) / (c(h) + V). An unseen context
  gets the uniform 1/V.
* Interpolated Kneser-Ney (:class:`KneserNey`; Kneser & Ney 1995, Chen & Goodman 1998). Order k mixes
  a discounted estimate with order k-1 (h' is h without its oldest token):

      P_k(w | h) = max(a(h w) - D(a(h w)), 0) / T(h)  +  gamma(h) P_{k-1}(w | h')
      T(h)     = sum_v a(h v)
      gamma(h) = sum_{v: a(h v) > 0} D(a(h v)) / T(h)        (the mass the discounts took)
      P_0(w)   = 1 / V

  The count a is the raw count c at the highest order n, and the *continuation count*
  N1+(. g) = |{x : c(x g) > 0}| at every lower order: how many different tokens g follows, not how
  often it occurs ("Francisco" is frequent but only ever follows "San", so it gets a small unigram
  probability). The discount D(a) is either one fixed D in (0, 1) for every order (``discount=0.1``:
  the variant NLTK implements) or *modified* (``discount="modified"``): three discounts per order,
  D(1) = D1, D(2) = D2, D(a >= 3) = D3+, from the count-of-counts n_r (the number of k-grams whose count
  a is r) of that order:

      Y = n1 / (n1 + 2 n2),   D1 = 1 - 2 Y n2 / n1,   D2 = 2 - 3 Y n3 / n2,   D3+ = 3 - 4 Y n4 / n3

  A discount these formulas leave undefined or <= 0 (a tiny corpus, some n_r = 0) is
  ``FALLBACK_DISCOUNT`` instead. A context with T(h) = 0 (never seen, or seen only at the very end
  of the stream) backs off entirely: gamma(h) = 1, P_k = P_{k-1}. Every P_k sums to 1 over the
  vocabulary and, every discount being > 0, every word gets a probability > 0.

At the start of a stream a context shorter than n-1 tokens is used as it is: the model of that shorter
order (the counts of the shorter n-grams for MLE and add-one, P_k for Kneser-Ney).

Implementation: the distinct k-grams of the training stream form a trie of dense ids. The k-gram
ending at position i is the key ``id(k-1-gram ending at i-1) * V + w_i``; its id is its index among the
sorted distinct keys of order k (``np.unique`` to count them, ``np.searchsorted`` to look them up), so
every k-gram knows its context (key // V) and its lower-order suffix (the (k-1)-gram ending at i).

Shapes: N tokens of a stream, M queries (a context and a word each), G distinct k-grams of one order,
H distinct contexts of one order (the (k-1)-grams; 1 for k = 1: the empty context).
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .errors import ArgumentTypeError, ConfigError, ShapeError

Ids = Sequence[int] | torch.Tensor | np.ndarray
FALLBACK_DISCOUNT = 0.5  # a modified-KN discount the count-of-counts cannot estimate


@dataclass
class _Order:
    """The distinct k-grams of the training stream for one order k (one level of the trie)."""

    keys: np.ndarray  # (G,) int64, sorted: context id * V + last word; a k-gram's id is its index here
    counts: np.ndarray  # (G,) int64: c(g), how often each k-gram occurs
    context: np.ndarray  # (G,) int64: id of its first k-1 tokens among the (k-1)-grams (0 for k = 1)
    suffix: np.ndarray  # (G,) int64: id of its last k-1 tokens among the (k-1)-grams (0 for k = 1)
    n_contexts: int  # H: how many (k-1)-grams there are (1 for k = 1)


def _shift(prev: np.ndarray, k: int) -> np.ndarray:
    """(N,) id of the context of the k-gram ending at each position: the (k-1)-gram ending one token
    earlier; the empty context (0) for k = 1; -1 where the k-gram would start before the stream."""
    out = np.empty_like(prev)
    out[:1] = 0 if k == 1 else -1
    out[1:] = prev[:-1]
    return out


def _gather(values: np.ndarray, idx: np.ndarray, default: float) -> np.ndarray:
    """values[idx] where idx >= 0, ``default`` where idx is -1 (unseen). (M,) float64."""
    out = np.full(idx.shape, default, dtype=np.float64)
    found = idx >= 0
    out[found] = values[idx[found]]
    return out


def _build_trie(stream: np.ndarray, order: int, V: int) -> list[_Order]:
    """Count every k-gram of ``stream`` (N,), k = 1..order, as a trie of dense ids."""
    orders = []
    prev = np.zeros(len(stream), dtype=np.int64)  # (N,) id of the (k-1)-gram ending at each position
    for k in range(1, order + 1):
        ctx = _shift(prev, k)  # (N,)
        ok = ctx >= 0
        keys, inverse, counts = np.unique(ctx[ok] * V + stream[ok], return_inverse=True, return_counts=True)
        suffix = np.zeros(len(keys), dtype=np.int64)
        suffix[inverse] = prev[ok]  # the k-gram ending at i drops its first token: the (k-1)-gram ending at i
        orders.append(_Order(keys, counts, keys // V, suffix, n_contexts=len(orders[-1].keys) if orders else 1))
        prev = np.full(len(stream), -1, dtype=np.int64)
        prev[ok] = inverse
    return orders


def _as_ids(ids: object, what: str, V: int | None = None) -> np.ndarray:
    """``ids`` (a sequence of ints, a 1-D integer tensor or array) as a (N,) int64 array, each in [0, V)."""
    if isinstance(ids, str | bytes):
        raise ArgumentTypeError(f"{what} must be a sequence of integer ids, got the string {ids[:40]!r}")
    if isinstance(ids, torch.Tensor):
        ids = ids.detach().cpu().numpy()
    try:
        arr = np.asarray(ids if isinstance(ids, np.ndarray) else list(ids))
    except (TypeError, ValueError):  # not iterable, or ragged
        raise ArgumentTypeError(f"{what} must be a sequence of integer ids, got {type(ids).__name__}") from None
    if arr.size == 0:
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise ArgumentTypeError(f"{what} must hold integer ids, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ShapeError(f"{what} must be 1-D, got shape {arr.shape}")
    arr = arr.astype(np.int64)
    if V is not None and arr.size and (arr.min() < 0 or arr.max() >= V):
        bad = int(arr[(arr < 0) | (arr >= V)][0])
        raise ConfigError(f"{what}: id {bad} is outside the vocabulary [0, {V})")
    return arr


class NGramLM(ABC):
    """An n-gram language model over a stream of ids in [0, V). Subclasses say how counts become
    probabilities (:meth:`_prepare` after counting, :meth:`_probs` to score)."""

    def __init__(self, order: int) -> None:
        if isinstance(order, bool) or not isinstance(order, int | np.integer) or order < 1:
            raise ConfigError(f"{type(self).__name__}: order must be an integer >= 1, got {order!r}")
        self.order = int(order)
        self.vocab_size = 0  # V, set by fit
        self._orders: list[_Order] | None = None  # _orders[k-1]: the k-grams

    def __repr__(self) -> str:
        return f"{type(self).__name__}(order={self.order})"

    def fit(self, ids: Ids, vocab_size: int) -> NGramLM:
        """Count the n-grams of the training stream ``ids`` (N,) over a vocabulary of ``vocab_size`` ids."""
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int | np.integer) or vocab_size < 1:
            raise ConfigError(f"{type(self).__name__}.fit: vocab_size must be an integer >= 1, got {vocab_size!r}")
        stream = _as_ids(ids, f"{type(self).__name__}.fit: ids", int(vocab_size))
        if (len(stream) + 1) * int(vocab_size) >= 2**62:
            raise ConfigError(f"{type(self).__name__}.fit: {len(stream)} tokens x V = {vocab_size} overflow int64 keys")
        self.vocab_size = int(vocab_size)
        self._orders = _build_trie(stream, self.order, self.vocab_size)
        self._prepare()
        return self

    # -- scoring -----------------------------------------------------------------------------------
    def prob(self, context: Ids, word: int) -> float:
        """P(word | the last order-1 ids of ``context``)."""
        self._check_fitted("prob")
        if isinstance(word, torch.Tensor) and word.numel() == 1:
            word = word.item()
        if isinstance(word, bool) or not isinstance(word, int | np.integer):
            raise ArgumentTypeError(f"{type(self).__name__}.prob: word must be an integer id, got {word!r}")
        if not 0 <= word < self.vocab_size:
            raise ConfigError(f"{type(self).__name__}.prob: word id {word} is outside [0, {self.vocab_size})")
        return float(self.log_probs([int(word)], context).exp()[0])

    def log_probs(self, ids: Ids, context: Ids = ()) -> torch.Tensor:
        """(N,) float64: the natural log of P(ids[i] | context, ids[:i]) for each i (-inf for probability 0)."""
        self._check_fitted("log_probs")
        name = type(self).__name__
        ids = _as_ids(ids, f"{name}.log_probs: ids", self.vocab_size)
        context = self._tail(_as_ids(context, f"{name}.log_probs: context", self.vocab_size))
        stream = np.concatenate([context, ids])  # (C+N,) only the last order-1 context ids matter
        ctx = self._context_ids(stream)[:, len(context):]  # (order, N)
        width = np.minimum(np.arange(len(context), len(stream)), self.order - 1)  # (N,) context length available
        with np.errstate(divide="ignore"):
            return torch.from_numpy(np.log(self._probs(ctx, ids, width)))

    def perplexity(self, ids: Ids, context: Ids = ()) -> float:
        """exp(-mean log P) over the tokens of ``ids``; inf when one of them has probability 0."""
        lp = self.log_probs(ids, context)
        if lp.numel() == 0:
            raise ConfigError(f"{type(self).__name__}.perplexity: the text to score is empty")
        nll = -lp.mean().item()
        return math.exp(nll) if nll < 700 else math.inf

    def distribution(self, context: Ids) -> torch.Tensor:
        """(V,) float64: P(w | the last order-1 ids of ``context``) for every id w."""
        self._check_fitted("distribution")
        stream = _as_ids(context, f"{type(self).__name__}.distribution: context", self.vocab_size)
        stream = self._tail(stream)
        V = self.vocab_size
        ctx = self._context_ids(np.append(stream, 0))[:, -1:].repeat(V, axis=1)  # (order, V) same context
        width = np.full(V, len(stream))
        return torch.from_numpy(self._probs(ctx, np.arange(V), width))

    # -- the trie ----------------------------------------------------------------------------------
    def _check_fitted(self, what: str) -> None:
        if self._orders is None:
            raise ConfigError(f"{type(self).__name__}.{what}: the model is not fitted; call fit(ids, vocab_size) first")

    def _tail(self, context: np.ndarray) -> np.ndarray:
        """The last order-1 ids of ``context``: all a prediction looks at."""
        return context[max(0, len(context) - self.order + 1):]

    def _find(self, k: int, ctx: np.ndarray, words: np.ndarray) -> np.ndarray:
        """(M,) id of the k-gram (context ``ctx``, word) among the training k-grams, -1 if unseen."""
        keys = self._orders[k - 1].keys
        out = np.full(len(words), -1, dtype=np.int64)
        if len(keys) == 0:
            return out
        ok = ctx >= 0
        query = ctx[ok] * self.vocab_size + words[ok]
        pos = np.minimum(np.searchsorted(keys, query), len(keys) - 1)
        out[ok] = np.where(keys[pos] == query, pos, -1)
        return out

    def _context_ids(self, stream: np.ndarray) -> np.ndarray:
        """(order, N): row k-1 holds the id of the context of order k (the k-1 tokens before each position)
        among the training (k-1)-grams, -1 where it is unseen or would start before the stream."""
        ctx = np.empty((self.order, len(stream)), dtype=np.int64)
        prev = np.zeros(len(stream), dtype=np.int64)
        for k in range(1, self.order + 1):
            ctx[k - 1] = _shift(prev, k)
            if k < self.order:
                prev = self._find(k, ctx[k - 1], stream)  # the k-gram ending at each position
        return ctx

    # -- what subclasses define ----------------------------------------------------------------------
    def _prepare(self) -> None:  # noqa: B027 - optional hook: not every model needs statistics
        """Statistics computed once after counting (nothing by default)."""

    @abstractmethod
    def _probs(self, ctx: np.ndarray, words: np.ndarray, width: np.ndarray) -> np.ndarray:
        """(M,) float64 P(word | context): ``ctx`` (order, M) the context ids of every order (see
        :meth:`_context_ids`), ``words`` (M,), ``width`` (M,) the context length available (<= order-1)."""


class _CountModel(NGramLM):
    """A model computed from c(h w) and c(h) of the longest context available (MLE, add-one)."""

    def _prepare(self) -> None:
        self._totals = [np.bincount(o.context, weights=o.counts, minlength=o.n_contexts)  # (H,) c(h)
                        for o in self._orders]

    def _counts(self, ctx: np.ndarray, words: np.ndarray, width: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(M,) c(h w) and (M,) c(h), each query at its own order width+1."""
        c_hw, c_h = np.zeros(len(words)), np.zeros(len(words))
        for k in range(1, self.order + 1):
            at = width == k - 1  # (M,) the queries scored at order k
            h = ctx[k - 1, at]
            c_hw[at] = _gather(self._orders[k - 1].counts, self._find(k, h, words[at]), 0.0)
            c_h[at] = _gather(self._totals[k - 1], h, 0.0)
        return c_hw, c_h


class MLE(_CountModel):
    """Maximum likelihood: P(w | h) = c(h w) / c(h); 0 for every word after an unseen context."""

    def _probs(self, ctx: np.ndarray, words: np.ndarray, width: np.ndarray) -> np.ndarray:
        c_hw, c_h = self._counts(ctx, words, width)
        return np.divide(c_hw, c_h, out=np.zeros_like(c_hw), where=c_h > 0)


class AddOne(_CountModel):
    """Add-one (Laplace) smoothing: P(w | h) = (c(h w) + 1) / (c(h) + V)."""

    def _probs(self, ctx: np.ndarray, words: np.ndarray, width: np.ndarray) -> np.ndarray:
        c_hw, c_h = self._counts(ctx, words, width)
        return (c_hw + 1) / (c_h + self.vocab_size)


class KneserNey(NGramLM):
    """Interpolated Kneser-Ney: ``discount="modified"`` (Chen & Goodman's three discounts per order,
    estimated from the count-of-counts) or one fixed discount in (0, 1) for every order.

    After ``fit``, ``discounts`` is an (order, 3) float64 tensor: row k-1 holds D1, D2, D3+ of order k.
    """

    def __init__(self, order: int, discount: str | float = "modified") -> None:
        super().__init__(order)
        if discount != "modified" and (isinstance(discount, bool) or not isinstance(discount, int | float)
                                       or not 0 < discount < 1):
            raise ConfigError(f"KneserNey: discount must be 'modified' or a number in (0, 1), got {discount!r}")
        self.discount = discount
        self.discounts: torch.Tensor | None = None

    def __repr__(self) -> str:
        return f"KneserNey(order={self.order}, discount={self.discount!r})"

    def _prepare(self) -> None:
        self._alpha, self._gamma, discounts = [], [], []
        for k, o in enumerate(self._orders, start=1):
            a = o.counts if k == self.order else self._continuation_counts(k)  # (G,)
            D = self._discounts(k, a)  # (3,) D1, D2, D3+
            alpha, gamma = self._interpolation_weights(o, a, D)
            self._alpha.append(alpha)
            self._gamma.append(gamma)
            discounts.append(D)
        self.discounts = torch.from_numpy(np.stack(discounts))  # (order, 3)

    def _continuation_counts(self, k: int) -> np.ndarray:
        """(G,) N1+(. g) for every k-gram g: how many distinct (k+1)-grams end with g."""
        return np.bincount(self._orders[k].suffix, minlength=len(self._orders[k - 1].keys))

    def _discounts(self, k: int, a: np.ndarray) -> np.ndarray:
        """(3,) the discounts D1, D2, D3+ of order k, whose k-grams have the counts ``a`` (G,)."""
        if self.discount != "modified":
            return np.full(3, float(self.discount))
        n1, n2, n3, n4 = np.bincount(np.minimum(a, 5), minlength=6)[1:5].astype(np.float64)  # count-of-counts
        with np.errstate(divide="ignore", invalid="ignore"):
            Y = n1 / (n1 + 2 * n2)
            D = np.array([1 - 2 * Y * n2 / n1, 2 - 3 * Y * n3 / n2, 3 - 4 * Y * n4 / n3])
        return np.where(np.isfinite(D) & (D > 0), D, FALLBACK_DISCOUNT)

    @staticmethod
    def _interpolation_weights(o: _Order, a: np.ndarray, D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(G,) alpha(h w) = (a(h w) - D(a)) / T(h) of every k-gram and (H,) gamma(h) of every context."""
        d = np.concatenate([[0.0], D])[np.minimum(a, 3)]  # (G,) D(a), 0 where a = 0
        T = np.bincount(o.context, weights=a, minlength=o.n_contexts)  # (H,)
        gamma = np.divide(np.bincount(o.context, weights=d, minlength=o.n_contexts), T,
                          out=np.ones(o.n_contexts), where=T > 0)  # 1: an empty context backs off entirely
        T_g = T[o.context]  # (G,)
        alpha = np.divide(a - d, T_g, out=np.zeros(len(a)), where=T_g > 0)
        return alpha, gamma

    def _probs(self, ctx: np.ndarray, words: np.ndarray, width: np.ndarray) -> np.ndarray:
        p = np.full(len(words), 1.0 / self.vocab_size)  # (M,) P_0 = uniform
        for k in range(1, self.order + 1):  # contexts beyond ``width`` are -1: gamma 1, alpha 0
            h = ctx[k - 1]
            p = _gather(self._alpha[k - 1], self._find(k, h, words), 0.0) + _gather(self._gamma[k - 1], h, 1.0) * p
        return p

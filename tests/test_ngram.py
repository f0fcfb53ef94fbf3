"""nlpcourse.ngram: MLE, add-one and Kneser-Ney on hand-computed examples, against a dict-based
transcription of the formulas, and (the fixed-discount Kneser-Ney) against NLTK's ``KneserNeyInterpolated``."""
import math
import random
import time
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.lm import KneserNeyInterpolated
from nltk.util import everygrams

from nlpcourse.data.lm_corpus import lm_corpus
from nlpcourse.errors import ArgumentTypeError, ConfigError, CourseError, ShapeError
from nlpcourse.ngram import FALLBACK_DISCOUNT, MLE, AddOne, KneserNey

V5 = 5
streams = st.lists(st.integers(0, V5 - 1), max_size=30)
contexts = st.lists(st.integers(0, V5 - 1), max_size=4)


# -- a transcription of the Kneser-Ney formulas with Counters, for small streams ------------------------------
def reference_kn(stream: list[int], order: int, V: int, discount) -> Callable[[list[int], int], float]:
    """P(w | context) of interpolated Kneser-Ney, computed the slow, obvious way."""
    grams = {k: Counter(tuple(stream[i:i + k]) for i in range(len(stream) - k + 1)) for k in range(1, order + 1)}
    a = {k: grams[k] if k == order else Counter(g[1:] for g in grams[k + 1]) for k in range(1, order + 1)}

    def discounts(k):
        if discount != "modified":
            return [discount] * 3
        n = [sum(1 for c in a[k].values() if c == r) for r in range(5)]
        out = []
        for r in (1, 2, 3):
            try:
                Y = n[1] / (n[1] + 2 * n[2])
                D = r - (r + 1) * Y * n[r + 1] / n[r]
            except ZeroDivisionError:
                D = FALLBACK_DISCOUNT
            out.append(D if D > 0 else FALLBACK_DISCOUNT)
        return out

    D = {k: discounts(k) for k in a}

    def p(k, h, w):
        if k == 0:
            return 1 / V
        in_h = {g[-1]: c for g, c in a[k].items() if g[:-1] == h and c > 0}
        T = sum(in_h.values())
        if T == 0:
            return p(k - 1, h[1:], w)
        d = {v: D[k][min(c, 3) - 1] for v, c in in_h.items()}
        return (in_h.get(w, 0) - d.get(w, 0)) / T + sum(d.values()) / T * p(k - 1, h[1:], w)

    def prob(context, w):
        h = tuple(context[len(context) - order + 1:]) if order > 1 else ()
        return p(len(h) + 1, h, w)

    return prob


@settings(max_examples=80, deadline=None)
@given(streams, st.integers(1, 4), contexts, st.sampled_from(["modified", 0.1, 0.75]))
def test_kneser_ney_matches_the_formulas(stream, order, context, discount):
    model = KneserNey(order, discount).fit(stream, V5)
    ref = reference_kn(stream, order, V5, discount)
    dist = model.distribution(context)
    assert dist.sum().item() == pytest.approx(1, abs=1e-9)
    assert (dist > 0).all()
    np.testing.assert_allclose(dist.numpy(), [ref(context, w) for w in range(V5)], rtol=1e-10, atol=0)


@settings(max_examples=60, deadline=None)
@given(streams, st.integers(1, 4), st.lists(st.integers(0, V5 - 1), min_size=1, max_size=8), contexts,
       st.sampled_from([MLE, AddOne, lambda n: KneserNey(n, 0.3), KneserNey]))
def test_log_probs_prob_and_distribution_agree(stream, order, text, context, make):
    model = make(order).fit(stream, V5)
    lp = model.log_probs(text, context)
    assert lp.shape == (len(text),) and lp.dtype == torch.float64
    for i, w in enumerate(text):
        p = model.prob(context + text[:i], w)
        assert model.distribution(context + text[:i])[w].item() == pytest.approx(p, rel=1e-12, abs=0)
        assert math.exp(lp[i].item()) == pytest.approx(p, rel=1e-12, abs=0)


@settings(max_examples=60, deadline=None)
@given(streams, st.integers(1, 4), contexts)
def test_add_one_distribution_sums_to_one(stream, order, context):
    dist = AddOne(order).fit(stream, V5).distribution(context)
    assert dist.sum().item() == pytest.approx(1, abs=1e-9) and (dist > 0).all()


# -- hand-computed examples ----------------------------------------------------------------------------------
A, B, C = 0, 1, 2
ABACAB = [A, B, A, C, A, B]  # bigrams: ab x2, ba, ac, ca; "a" is followed by a token 3 times, "b" once (at the end: 0)


def test_mle_bigrams_are_count_ratios_and_unseen_bigrams_give_inf():
    m = MLE(2).fit(ABACAB, 3)
    assert m.prob([A], B) == pytest.approx(2 / 3) and m.prob([A], C) == pytest.approx(1 / 3)
    assert m.prob([B], A) == 1.0 and m.prob([C], A) == 1.0 and m.prob([A], A) == 0.0
    assert m.prob([], A) == pytest.approx(3 / 6)  # the stream's first token: no context, the unigram MLE
    assert m.perplexity([B, A, C], context=[A]) == pytest.approx((2 / 3 * 1 * 1 / 3) ** (-1 / 3))
    assert m.perplexity([B, B], context=[A]) == math.inf  # "b b" was never seen


def test_mle_gives_zero_to_every_word_after_an_unseen_context():
    m = MLE(2).fit([A, B], 3)  # "b" is never followed by anything
    assert m.distribution([B]).tolist() == [0.0, 0.0, 0.0]
    assert m.distribution([A]).tolist() == [0.0, 1.0, 0.0]
    assert m.perplexity([A], context=[B]) == math.inf


def test_add_one_by_hand():
    m = AddOne(2).fit(ABACAB, 4)  # V = 4: id 3 is never seen
    assert m.prob([A], B) == pytest.approx((2 + 1) / (3 + 4))
    assert m.prob([A], 3) == pytest.approx(1 / 7)
    assert m.prob([B], B) == pytest.approx(1 / 5)  # "b" is followed once (by "a")
    assert m.prob([3], A) == pytest.approx(1 / 4)  # unseen context: uniform
    assert m.prob([], A) == pytest.approx((3 + 1) / (6 + 4))
    assert m.distribution([A]).sum().item() == pytest.approx(1)


@pytest.mark.parametrize("model", [AddOne(1), AddOne(3), KneserNey(3), KneserNey(2, 0.5)])
def test_a_model_fitted_on_nothing_is_uniform_with_perplexity_v(model):
    model.fit([], 7)
    assert model.perplexity([0, 6, 3, 3, 1]) == pytest.approx(7, rel=1e-12)
    assert model.distribution([2, 2]).tolist() == pytest.approx([1 / 7] * 7, rel=1e-12)


@pytest.mark.parametrize("order", [1, 3])
def test_a_certain_model_has_perplexity_one(order):
    m = MLE(order).fit([4] * 20, 5)
    assert m.perplexity([4] * 10, context=[4, 4]) == 1.0
    assert m.perplexity([4] * 10) == 1.0  # the first token with no context: the unigram P(4) = 1


def test_modified_discounts_from_count_of_counts():
    # unigram counts: four words once, two twice, one 3 times, one 4 times: n1, n2, n3, n4 = 4, 2, 1, 1
    stream = [0, 1, 2, 3, 4, 4, 5, 5, 6, 6, 6, 7, 7, 7, 7]
    m = KneserNey(1).fit(stream, 9)  # order 1: the raw counts are discounted
    Y = 4 / (4 + 2 * 2)
    D = [1 - 2 * Y * 2 / 4, 2 - 3 * Y * 1 / 2, 3 - 4 * Y * 1 / 1]  # 0.5, 1.25, 1.0
    assert m.discounts.tolist() == [pytest.approx(D)]
    gamma = (4 * D[0] + 2 * D[1] + 2 * D[2]) / 15
    assert m.prob([], 0) == pytest.approx((1 - D[0]) / 15 + gamma / 9)
    assert m.prob([], 5) == pytest.approx((2 - D[1]) / 15 + gamma / 9)
    assert m.prob([], 7) == pytest.approx((4 - D[2]) / 15 + gamma / 9)
    assert m.prob([], 8) == pytest.approx(gamma / 9)  # never seen


def test_modified_discounts_fall_back_where_count_of_counts_are_missing():
    m = KneserNey(1).fit([0, 1, 1], 3)  # n1 = n2 = 1, n3 = n4 = 0: D3+ = 3 - 0/0
    Y = 1 / 3
    assert m.discounts.tolist() == [pytest.approx([1 - 2 * Y, 2 - 0, FALLBACK_DISCOUNT])]
    assert (m.distribution([]) > 0).all()


def test_continuation_counts_of_the_lower_order():
    # "y" occurs 3 times but only ever after "a": its unigram count is N1+(. y) = 1, less than "x"'s 2
    a, b, x, y = 0, 1, 2, 3
    m = KneserNey(2, 0.5).fit([a, x, b, x, a, y, a, y, a, y], 5)
    unigram = m.distribution([4])  # the context 4 is unseen: back off to the unigram level entirely
    # bigram types: ax xb bx xa ay ya (T = 6); N1+(. w) for a, b, x, y: 2 (xa, ya), 1 (xb), 2 (ax, bx), 1 (ay)
    gamma = 0.5 * 4 / 6  # four unigrams with a count > 0, each discounted by 0.5
    assert unigram.tolist() == pytest.approx([(c - 0.5) / 6 + gamma / 5 for c in (2, 1, 2, 1)] + [gamma / 5])


def test_kneser_ney_is_finite_on_unknown_contexts_and_words():
    m = KneserNey(3).fit([1, 2, 3, 1, 2, 4, 1, 2, 3], 50)
    lp = m.log_probs([40, 41, 1, 2, 49, 0, 3], context=[30, 31])
    assert torch.isfinite(lp).all() and math.isfinite(m.perplexity([40, 41, 1, 2, 49, 0, 3], [30, 31]))
    assert (m.distribution([7, 8]) > 0).all() and m.distribution([7, 8]).sum().item() == pytest.approx(1, abs=1e-12)


def test_only_the_last_order_minus_one_context_ids_matter():
    m = KneserNey(3).fit(ABACAB * 3, 3)
    assert m.prob([C, C, C, A, B], A) == m.prob([A, B], A)
    assert torch.equal(m.log_probs([A, C], [B, B, C, A]), m.log_probs([A, C], [C, A]))
    assert torch.equal(m.log_probs(torch.tensor([A, C]), torch.tensor([C, A])), m.log_probs([A, C], (C, A)))


# -- errors --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("make, error, words", [
    (lambda: MLE(0), ConfigError, "order"),
    (lambda: KneserNey(2, discount=1.0), ConfigError, "discount"),
    (lambda: KneserNey(2, discount=0), ConfigError, "discount"),
    (lambda: KneserNey(2, discount="absolute"), ConfigError, "discount"),
    (lambda: AddOne(2).fit([0, 1, 5], 5), ConfigError, "id 5"),
    (lambda: AddOne(2).fit([0, -1], 5), ConfigError, "id -1"),
    (lambda: AddOne(2).fit([0, 1], 0), ConfigError, "vocab_size"),
    (lambda: AddOne(2).fit("the cat", 5), ArgumentTypeError, "string"),
    (lambda: AddOne(2).fit([0.5, 1.0], 5), ArgumentTypeError, "integer"),
    (lambda: AddOne(2).fit(torch.zeros(2, 3, dtype=torch.long), 5), ShapeError, "1-D"),
    (lambda: KneserNey(2).perplexity([0, 1]), ConfigError, "fit"),
    (lambda: MLE(2).distribution([0]), ConfigError, "fit"),
    (lambda: KneserNey(2).fit([0, 1], 3).prob([0], 3), ConfigError, "id 3"),
    (lambda: KneserNey(2).fit([0, 1], 3).prob([0], "a"), ArgumentTypeError, "word"),
    (lambda: KneserNey(2).fit([0, 1], 3).log_probs([0], context=[7]), ConfigError, "context"),
    (lambda: KneserNey(2).fit([0, 1], 3).perplexity([]), ConfigError, "empty"),
])
def test_bad_input_raises_a_course_error_naming_it(make, error, words):
    with pytest.raises(error, match=words) as info:
        make()
    assert isinstance(info.value, CourseError)


# -- NLTK --------------------------------------------------------------------------------------------------
class NLTKLowestOrder(KneserNey):
    """The library's Kneser-Ney with NLTK's lowest order: undiscounted, N1+(. w) / N1+(. .), no uniform."""

    def _discounts(self, k, a):
        return np.zeros(3) if k == 1 else super()._discounts(k, a)


def nltk_kn(ids: list[int], order: int, discount: float) -> KneserNeyInterpolated:
    """NLTK's interpolated KN on the one stream ``ids`` (as strings): every n-gram up to ``order``, no padding."""
    words = [str(i) for i in ids]
    model = KneserNeyInterpolated(order, discount=discount)
    model.fit([list(everygrams(words, max_len=order))], vocabulary_text=words)
    return model


def comparison_text(order: int, repeat_start: bool = True) -> list[int]:
    """400 tokens of Austen (ids), and its first order-1 tokens again at the end (see the NLTK test)."""
    ids = lm_corpus("austen").train[1000:1400].tolist()
    return ids + ids[:order - 1] if repeat_start else ids


def queries(ids: list[int], order: int, n: int = 300) -> list[tuple[list[int], int]]:
    """(context, word) pairs: contexts of the text (short ones at its start included) and random ones
    (mostly unseen); words that follow them, seen words, and ids the text does not have."""
    rng = random.Random(order)
    seen = sorted(set(ids))
    unseen = [w for w in (0, 1, 5000, 10_000) if w not in seen]
    out = [(ids[:i], w) for i in range(order - 1) for w in (ids[i], seen[0], unseen[0])]  # the stream's start
    for _ in range(n):
        i = rng.randrange(len(ids))
        ctx = ids[max(0, i - order + 1):i]
        if rng.random() < 0.4:  # a random context, now and then with an id the text does not have
            ctx = [rng.choice(seen) if rng.random() < 0.8 else rng.choice(unseen) for _ in range(order - 1)]
        w = rng.choices([ids[i], rng.choice(seen), rng.choice(unseen)], weights=[0.5, 0.3, 0.2])[0]
        out.append((ctx, w))
    return out


def nltk_probs(model: KneserNeyInterpolated, pairs) -> np.ndarray:
    return np.array([model.score(str(w), [str(x) for x in ctx]) for ctx, w in pairs])


@pytest.mark.parametrize("order", [2, 3, 4])
def test_fixed_discount_kneser_ney_matches_nltk(order):
    """The library's ``KneserNey(order, 0.1)`` against NLTK 3.10.4's ``KneserNeyInterpolated(order, 0.1)``,
    both fitted on the same unpadded stream (NLTK: ``everygrams`` of the stream, no <s>/</s>). Their
    higher orders are the same formulas (the raw counts at the highest order, continuation counts below;
    gamma = D N1+(h .) / T(h); an unseen context backs off). Two real differences in NLTK's definition:

    1. NLTK's lowest order is N1+(. w) / N1+(. .): not discounted and not interpolated with a uniform
       1/V (NLTK's vocabulary and its "<UNK>" play no part in the probabilities). So a word with no
       left neighbour in training (unseen, or only the stream's first token) gets probability 0 in
       every context, and a text with one has infinite perplexity. Chen & Goodman's definition, the
       library's, discounts the lowest order too and mixes it with 1/V. Compared here: the library's
       model with its lowest order's discounts set to 0 (``NLTKLowestOrder``), which is then exactly
       NLTK's; the unmodified library differs (checked below).
    2. At the lower orders NLTK's gamma(h) counts N1+(h .) with the raw counts c(h w) where the
       numerator uses continuation counts: an n-gram that occurs only at the very start of the stream
       (no left neighbour, continuation count 0) still adds D to gamma(h), so NLTK's distribution after
       such a context sums to more than 1 (and a context seen only at the stream's start divides by 0).
       The library counts continuation types in both. The comparison text repeats its first order-1
       tokens at its end, so that every n-gram at its start also has a left neighbour and the two
       definitions coincide; ``test_nltk_differences`` shows the difference on the text without that.
    """
    ids = comparison_text(order)
    V = lm_corpus("austen").vocab_size
    pairs = queries(ids, order)
    lib = NLTKLowestOrder(order, 0.1).fit(ids, V)
    ours = np.array([lib.prob(ctx, w) for ctx, w in pairs])
    theirs = nltk_probs(nltk_kn(ids, order, 0.1), pairs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=0)
    # the pairs cover unseen contexts, words of probability 0 (no left neighbour) and the stream's start
    contexts = {tuple(ids[i:i + order - 1]) for i in range(len(ids))}
    assert sum(len(c) == order - 1 and tuple(c) not in contexts for c, _ in pairs) > 15
    assert (theirs == 0).sum() > 10 and (theirs > 0).sum() > 200
    assert any(len(c) < order - 1 for c, _ in pairs)


def test_the_nltk_comparison_can_fail():
    order, V = 3, lm_corpus("austen").vocab_size
    ids = comparison_text(order)
    pairs = queries(ids, order, n=100)
    theirs = nltk_probs(nltk_kn(ids, order, 0.1), pairs)
    for other in (NLTKLowestOrder(order, 0.2), KneserNey(order, 0.1), NLTKLowestOrder(order - 1, 0.1)):
        other.fit(ids, V)
        ours = np.array([other.prob(ctx, w) for ctx, w in pairs])
        assert not np.allclose(ours, theirs, rtol=1e-6, atol=0), other


def test_nltk_differences():
    """The two differences of ``test_fixed_discount_kneser_ney_matches_nltk``'s docstring, shown."""
    order, V = 3, lm_corpus("austen").vocab_size
    ids = comparison_text(order, repeat_start=False)
    assert Counter(zip(ids, ids[1:]))[ids[0], ids[1]] == 1  # the first bigram occurs only at the start
    nltk = nltk_kn(ids, order, 0.1)
    after_first = sum(nltk.score(w, [str(ids[0])]) for w in nltk.vocab)
    assert after_first > 1 + 1e-6  # 2. NLTK gives more than 1 in all
    assert KneserNey(order, 0.1).fit(ids, V).distribution([ids[0]]).sum().item() == pytest.approx(1, abs=1e-12)
    unseen = next(w for w in range(V) if w not in ids)
    assert nltk.score(str(unseen), [str(ids[5])]) == 0  # 1. NLTK: probability 0 for a word never seen
    assert KneserNey(order, 0.1).fit(ids, V).prob([ids[5]], unseen) > 0


# -- the Austen protocol ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_austen_perplexities_and_speed():
    corpus = lm_corpus("austen")
    V = corpus.vocab_size
    ppl = {}
    for name, model in [("unigram", MLE(1)), ("add-one 2", AddOne(2)), ("KN3", KneserNey(3)), ("KN5", KneserNey(5))]:
        start = time.perf_counter()
        model.fit(corpus.train, V)
        ppl[name] = model.perplexity(corpus.test, corpus.context_before("test", model.order - 1))
        assert time.perf_counter() - start < 30, name
    assert 400 < ppl["unigram"] < 700 and 800 < ppl["add-one 2"] < 1200
    assert 150 < ppl["KN5"] < ppl["KN3"] < 220
    assert MLE(2).fit(corpus.train, V).perplexity(corpus.test, corpus.context_before("test", 1)) == math.inf

"""``nlpcourse.models.softmax``: frequency classes, the class-based softmax, the sampled softmax, and the
measurement script ``scripts/softmax_measure.py``. Tiny shapes, one thread, float64 where exactness is tested.
"""
from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from nlpcourse.errors import ConfigError, CourseError, ShapeError
from nlpcourse.models.softmax import (
    ClassSoftmax,
    FullSoftmax,
    SampledSoftmax,
    expected_rows,
    frequency_classes,
    sampled_softmax_loss,
)

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def class_head(V: int, C: int, H: int, seed: int = 0) -> ClassSoftmax:
    g = torch.Generator().manual_seed(seed)
    counts = torch.randint(1, 50, (V,), generator=g)
    torch.manual_seed(seed)
    head = ClassSoftmax(H, frequency_classes(counts, C)).double()
    for p in head.parameters():  # larger than the default init: distributions far from uniform
        torch.nn.init.normal_(p, 0.0, 1.0)
    return head


# ------------------------------------------------------------------ frequency classes


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 1000), min_size=1, max_size=60).filter(any), st.integers(1, 60),
       st.sampled_from([0.5, 1.0]))
def test_frequency_classes_cover_every_word_contiguously_and_follow_frequency(counts, C, power):
    counts = torch.tensor(counts)
    C = min(C, len(counts))
    classes = frequency_classes(counts, C, power)
    assert classes.shape == counts.shape and classes.dtype == torch.long
    used = classes.unique()
    assert used.tolist() == list(range(C))  # classes 0..C-1, none empty
    more = counts[:, None] > counts[None, :]  # (V,V): word a strictly more frequent than word b
    assert bool((classes[:, None] <= classes[None, :])[more].all())  # frequent words, low classes
    order = torch.argsort(counts, descending=True, stable=True)
    assert bool((classes[order].diff() >= 0).all()) and bool((classes[order].diff() <= 1).all())


def test_frequency_classes_equal_counts_make_equal_classes_and_a_heavy_word_its_own_class():
    assert torch.bincount(frequency_classes(torch.full((12,), 7), 4, power=1.0)).tolist() == [3, 3, 3, 3]
    assert torch.bincount(frequency_classes(torch.full((12,), 7), 4, power=0.5)).tolist() == [3, 3, 3, 3]
    classes = frequency_classes(torch.tensor([1, 1, 1, 1, 1, 1, 100]), 3, power=1.0)
    assert classes[6] == 0 and bool((classes[:6] > 0).all())  # the heavy word alone in class 0
    assert len(classes.unique()) == 3  # the classes it spans are not lost: the others still get 2


def test_frequency_classes_default_sqrt_v_and_the_expected_cost():
    counts = torch.arange(400, 0, -1)  # V = 400: 20 classes
    classes = frequency_classes(counts)
    assert int(classes.max()) + 1 == 20
    rows = expected_rows(classes, counts)
    assert 20 < rows < 400  # the class layer plus one class: far below V
    assert expected_rows(torch.zeros(400, dtype=torch.long), counts) == 1 + 400  # one class: the full softmax


@pytest.mark.parametrize("args", [(torch.tensor([3, -1, 2]), 2), (torch.tensor([3, 1, 2]), 0),
                                  (torch.tensor([3, 1, 2]), 4), (torch.ones(2, 2), 1),
                                  (torch.zeros(3), 1)])
def test_frequency_classes_bad_input_raises(args):
    with pytest.raises(CourseError):
        frequency_classes(*args)


# ------------------------------------------------------------------ the class-based softmax


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 40), st.integers(1, 40), st.integers(1, 6), st.integers(0, 12), st.integers(0, 2**16))
def test_class_softmax_rows_sum_to_one_and_the_loss_is_minus_log_prob(V, C, H, N, seed):
    head = class_head(V, min(C, V), H, seed)
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(N, H, generator=g, dtype=torch.float64)
    lp = head.log_prob(h)  # (N,V)
    assert lp.shape == (N, V)
    assert torch.allclose(torch.logsumexp(lp, -1), torch.zeros(N, dtype=torch.float64), atol=1e-12)
    y = torch.randint(0, V, (N,), generator=g)
    assert torch.allclose(head(h, y), -lp.gather(1, y[:, None])[:, 0], atol=1e-12)


def test_class_softmax_with_one_class_is_the_full_softmax_and_keeps_leading_shapes():
    head = class_head(V=9, C=1, H=4)
    W, b = head.word_weights()  # (V,H), (V,) by word id
    h = torch.randn(2, 3, 4, dtype=torch.float64)
    assert torch.allclose(head.log_prob(h), F.log_softmax(h @ W.T + b, -1), atol=1e-12)
    y = torch.randint(0, 9, (2, 3))
    assert head(h, y).shape == (2, 3)
    assert torch.allclose(head.loss(h, y), F.cross_entropy((h @ W.T + b).reshape(-1, 9), y.reshape(-1)))


def test_class_softmax_factorises_by_hand():
    """log p(w|h) = log p(c(w)|h) + log p(w|c(w),h), computed here from the weights by word id."""
    head = class_head(V=11, C=3, H=5, seed=3)
    W, b = head.word_weights()
    h = torch.randn(4, 5, dtype=torch.float64)
    class_lp = F.log_softmax(head.class_out(h), -1)  # (N,C)
    scores = h @ W.T + b  # (N,V)
    for w in range(11):
        same = head.classes == head.classes[w]  # (V,) the words of w's class
        within = scores[:, w] - torch.logsumexp(scores[:, same], -1)
        assert torch.allclose(head.log_prob(h)[:, w], class_lp[:, head.classes[w]] + within, atol=1e-12)


def test_class_softmax_gradient_matches_the_dense_path_and_gradcheck():
    head = class_head(V=13, C=4, H=3, seed=1)
    h = torch.randn(7, 3, dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0, 12, 5, 5, 3, 8, 1])
    grads = []
    for loss in (lambda: head(h, y).sum(), lambda: -head.log_prob(h).gather(1, y[:, None]).sum()):
        head.zero_grad(set_to_none=True)
        h.grad = None
        loss().backward()
        grads.append([h.grad.clone()] + [p.grad.clone() if p.grad is not None else torch.zeros_like(p)
                                         for p in head.parameters()])
    for a, b in zip(*grads):
        assert torch.allclose(a, b, atol=1e-12)
    assert torch.autograd.gradcheck(lambda x: head(x, y), (h,))


def test_class_softmax_training_skips_the_blocks_no_target_needs():
    head = class_head(V=20, C=5, H=3)
    y = torch.nonzero(head.classes == 0)[:, 0][:2]  # targets from class 0 only
    head.loss(torch.randn(2, 3, dtype=torch.float64), y).backward()
    got_grad = [out.weight.grad is not None for out in head.word_out]
    assert got_grad == [True] + [False] * (head.n_classes - 1)


def test_class_softmax_bad_input_raises():
    head = class_head(V=10, C=3, H=4)
    with pytest.raises(ShapeError, match="H=4"):
        head.log_prob(torch.randn(2, 5, dtype=torch.float64))
    with pytest.raises(ShapeError, match="leading shape"):
        head(torch.randn(2, 4, dtype=torch.float64), torch.tensor([1, 2, 3]))
    with pytest.raises(ConfigError, match="V=10"):
        head(torch.randn(2, 4, dtype=torch.float64), torch.tensor([1, 10]))
    with pytest.raises(ConfigError, match="none empty"):
        ClassSoftmax(4, torch.tensor([0, 2, 2]))  # class 1 is empty
    with pytest.raises(ShapeError):
        ClassSoftmax(4, torch.tensor([[0, 1]]))


# ------------------------------------------------------------------ the sampled softmax


def scores_setup(N: int = 5, V: int = 7, H: int = 3, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(N, H, generator=g, dtype=torch.float64)
    W = torch.randn(V, H, generator=g, dtype=torch.float64)
    b = torch.randn(V, generator=g, dtype=torch.float64)
    y = torch.randint(0, V, (N,), generator=g)
    return h, W, b, y


def test_sampled_softmax_with_every_word_once_and_a_uniform_q_is_the_full_cross_entropy():
    h, W, b, y = scores_setup()
    V = len(W)
    h.requires_grad_(True)
    W.requires_grad_(True)
    uniform = torch.full((V,), -math.log(V), dtype=torch.float64)
    sampled = sampled_softmax_loss(h, W, b, y, V, uniform, negatives=torch.randperm(V))
    full = F.cross_entropy(h @ W.T + b, y)
    assert torch.allclose(sampled, full, atol=1e-12)
    g_sampled = torch.autograd.grad(sampled, (h, W))
    g_full = torch.autograd.grad(full, (h, W))
    for a, c in zip(g_sampled, g_full):  # the same gradient too
        assert torch.allclose(a, c, atol=1e-12)


def test_sampled_softmax_estimate_of_z_is_unbiased_exactly():
    """E[Zhat] = Z: the average of Zhat = exp(loss + s_y) over every sequence of k draws, weighted by its
    probability under Q, is the true normaliser (it fails if the log(k Q) correction is wrong)."""
    h, W, b, y = scores_setup(N=1, V=5, seed=2)
    log_q = torch.log_softmax(torch.tensor([2.0, 0.1, -1.0, 0.5, 0.0], dtype=torch.float64), 0)
    s = (h @ W.T + b)[0]  # (V,)
    k, expected = 3, 0.0
    for seq in itertools.product(range(5), repeat=k):
        negatives = torch.tensor(seq)
        loss = sampled_softmax_loss(h, W, b, y, k, log_q, negatives=negatives)
        expected += log_q[negatives].sum().exp() * torch.exp(loss + s[y[0]])
    assert torch.allclose(expected, torch.logsumexp(s, 0).exp(), rtol=1e-10)


def log_unigram(counts: torch.Tensor, power: float = 0.75) -> torch.Tensor:
    """log Q for Q proportional to count ** power (every count > 0)."""
    q = counts.double() ** power
    return (q / q.sum()).log().float()


def test_sampled_softmax_approaches_the_full_loss_with_many_negatives():
    h, W, b, y = scores_setup(N=8, V=50, H=4, seed=5)
    log_q = log_unigram(torch.arange(50, 0, -1))
    g = torch.Generator().manual_seed(0)
    full = F.cross_entropy(h @ W.T + b, y).item()
    few = [sampled_softmax_loss(h, W, b, y, 2, log_q, g).item() for _ in range(200)]
    many = [sampled_softmax_loss(h, W, b, y, 4000, log_q, g).item() for _ in range(20)]
    assert abs(sum(many) / len(many) - full) < 0.02  # consistent: Zhat -> Z as k grows
    assert sum(few) / len(few) < full  # and biased low with few (log is concave)


def test_sampled_negatives_follow_the_generator():
    h, W, b, y = scores_setup(N=8, V=50, H=4, seed=5)
    log_q = log_unigram(torch.arange(50, 0, -1))
    a, c = (sampled_softmax_loss(h, W, b, y, 5, log_q, torch.Generator().manual_seed(s)) for s in (1, 1))
    assert torch.equal(a, c)


def test_sampled_softmax_head_samples_in_training_and_is_exact_in_eval():
    log_q = log_unigram(torch.arange(30, 0, -1))
    head = SampledSoftmax(4, log_q, k=5, generator=torch.Generator().manual_seed(0))
    full = FullSoftmax(4, 30)
    full.load_state_dict({k: v for k, v in head.state_dict().items() if k != "log_q"})
    h, y = torch.randn(6, 4), torch.randint(0, 30, (6,))
    head.eval()
    assert torch.allclose(head.loss(h, y), full.loss(h, y))
    assert torch.allclose(head.log_prob(h), full.log_prob(h))
    head.train()
    assert not torch.allclose(head.loss(h, y), full.loss(h, y))


def test_sampled_softmax_bad_input_raises():
    h, W, b, y = scores_setup()
    log_q = torch.full((7,), -math.log(7), dtype=torch.float64)
    cases = [
        (ConfigError, lambda: sampled_softmax_loss(h, W, b, y, 0, log_q)),  # k = 0
        (ConfigError, lambda: sampled_softmax_loss(h, W, b, y, 3, log_q + 1)),  # Q does not sum to 1
        (ShapeError, lambda: sampled_softmax_loss(h, W[:, :2], b, y, 3, log_q)),  # H differs
        (ShapeError, lambda: sampled_softmax_loss(h, W, b[:3], y, 3, log_q)),
        (ShapeError, lambda: sampled_softmax_loss(h, W, b, y[:2], 3, log_q)),
        (ShapeError, lambda: sampled_softmax_loss(h, W, b, y, 3, log_q[:5])),
        (ShapeError, lambda: sampled_softmax_loss(h, W, b, y, 3, log_q, negatives=torch.arange(4))),
    ]
    for error, call in cases:
        with pytest.raises(error):
            call()


# ------------------------------------------------------------------ the measurement script


@pytest.mark.slow
def test_measure_script_tiny_writes_every_measurement(tmp_path):
    out = tmp_path / "softmax.json"
    proc = subprocess.run([sys.executable, "scripts/softmax_measure.py", "--tiny", "--json", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"})
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    heads = {"full", "class", "sampled_8", "sampled_32"}
    assert set(report["output_layer"]) == heads and set(report["lm"]) == heads
    for r in report["output_layer"].values():
        assert r["train_us_per_token"] > 0 and r["log_prob_us_per_token"] > 0
    assert report["output_layer"]["full"]["train_speedup"] == 1.0
    V = report["setup"]["vocab_size"]
    for r in report["lm"].values():
        assert 1 < r["test_ppl"] < 3 * V and r["train_tokens"] == 5 * 8 * 10
        assert r["seeds"] == len(r["runs"]) == 2 and [x["seed"] for x in r["runs"]] == [0, 1]
        assert r["test_ppl"] == pytest.approx((r["runs"][0]["test_ppl"] + r["runs"][1]["test_ppl"]) / 2)
        assert r["runs"][0]["test_ppl"] != r["runs"][1]["test_ppl"] and r["test_ppl_std"] > 0
    assert report["setup"]["tiny"] is True

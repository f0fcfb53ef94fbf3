"""``nlpcourse.finetune`` (ULMFiT's discriminative rates, slanted triangular schedule and gradual unfreezing)
and ``nlpcourse.models.bert.BertClassifier`` fine-tuned with them on a toy task."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nlpcourse.errors import ConfigError
from nlpcourse.finetune import (
    FineTuneConfig,
    accuracy,
    discriminative_groups,
    fine_tune_classifier,
    slanted_triangular,
    unfreeze_top,
)
from nlpcourse.models.bert import BertClassifier, BertConfig, build_bert

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def classifier(seed: int = 0) -> BertClassifier:
    bert = build_bert(BertConfig(vocab=20, d_model=16, heads=2, layers=2, d_ff=32, max_len=10, dropout=0.0), seed)
    return BertClassifier(bert, classes=2)


def test_discriminative_rates_fall_by_the_factor_per_group_and_cover_every_weight_once():
    model = classifier()
    groups = discriminative_groups(model.layer_groups(), lr=1e-3, decay=2.6)
    assert [g["lr"] for g in groups] == pytest.approx([1e-3 / 2.6 ** k for k in (3, 2, 1, 0)])
    ids = [id(p) for g in groups for p in g["params"]]
    assert len(ids) == len(set(ids)) and set(ids) >= {id(p) for p in model.parameters() if p.requires_grad} - \
        {id(p) for p in model.bert.mlm_dense.parameters()} - {id(p) for p in model.bert.mlm_norm.parameters()} - \
        {id(model.bert.mlm_bias)} - {id(p) for p in model.bert.nsp.parameters()}
    torch.optim.AdamW(groups)  # a valid optimiser
    with pytest.raises(ConfigError):
        discriminative_groups([], 1e-3)
    with pytest.raises(ConfigError):
        discriminative_groups(model.layer_groups(), 1e-3, decay=0.5)


@given(total=st.integers(2, 5000), cut_frac=st.floats(0.01, 0.9), ratio=st.floats(1.0, 100.0))
def test_slanted_triangular_rises_to_the_peak_then_falls_to_one_over_ratio(total, cut_frac, ratio):
    f = slanted_triangular(total, cut_frac, ratio)
    cut = max(1, math.floor(total * cut_frac))
    values = [f(t) for t in range(total + 1)]
    assert values[0] == pytest.approx(1 / ratio) and values[cut] == pytest.approx(1.0)
    assert all(a <= b + 1e-12 for a, b in zip(values[:cut], values[1:cut + 1])), "rises"
    assert all(a >= b - 1e-12 for a, b in zip(values[cut:], values[cut + 1:])), "falls"
    assert min(values) >= 1 / ratio - 1e-9 and max(values) <= 1 + 1e-9


def test_slanted_triangular_is_ulmfits_example_and_refuses_bad_settings():
    f = slanted_triangular(1000, 0.1, 32)  # the paper's defaults: peak at step 100, 1/32 at both ends
    paper = [(1 + (t / 100 if t < 100 else 1 - (t - 100) / (100 * (1 / 0.1 - 1))) * 31) / 32 for t in range(1001)]
    assert [f(t) for t in range(1001)] == pytest.approx(paper)
    assert f(0) == pytest.approx(1 / 32) and f(100) == 1.0 and f(1000) == pytest.approx(1 / 32)
    assert f(50) == pytest.approx((1 + 0.5 * 31) / 32) and f(550) == pytest.approx((1 + 0.5 * 31) / 32)
    for bad in ((1, 0.1, 32), (100, 0.0, 32), (100, 1.0, 32), (100, 0.1, 0.5)):
        with pytest.raises(ConfigError):
            slanted_triangular(*bad)


def test_gradual_unfreezing_trains_the_top_groups_only():
    model = classifier()
    groups = model.layer_groups()
    for n in range(1, len(groups) + 1):
        unfreeze_top(groups, n)
        trains = [all(p.requires_grad for p in g) for g in groups]
        assert trains == [k >= len(groups) - n for k in range(len(groups))]
        assert not any(any(p.requires_grad for p in g) for g in groups[:len(groups) - n])
    with pytest.raises(ConfigError):
        unfreeze_top(groups, 0)


def toy_task(n: int, seed: int) -> tuple[list[list[int]], torch.Tensor]:
    """Label 1 when piece 7 occurs: the [CLS] position must gather it through attention."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(8, 20, (n, 8), generator=g)
    ids[:, 0] = 2
    labels = torch.randint(0, 2, (n,), generator=g)
    ids[labels == 1, torch.randint(1, 8, (int(labels.sum()),), generator=g)] = 7
    return ids.tolist(), labels


def test_classifier_fine_tuned_ulmfits_way_learns_a_toy_task_and_keeps_its_best_epoch():
    model = classifier()
    config = FineTuneConfig(epochs=12, batch=32, lr=1e-2, decay=2.6, unfreeze_every=20, seed=0)
    result = fine_tune_classifier(model, toy_task(512, 0), toy_task(256, 1), config)
    assert len(result.valid) == 12 and result.valid[result.best_epoch] == max(result.valid)
    assert accuracy(model, *toy_task(256, 1)) == max(result.valid) > 0.9, result.valid
    assert all(p.requires_grad for g in model.layer_groups() for p in g)  # every group thawed at the end
    with pytest.raises(ConfigError):
        BertClassifier(model.bert, classes=1)
    with pytest.raises(ConfigError):
        accuracy(model, [[2, 8]], torch.tensor([0, 1]))


def test_fine_tuning_is_reproducible():
    runs = [fine_tune_classifier(m, toy_task(128, 0), toy_task(64, 1), FineTuneConfig(epochs=2, lr=1e-2, seed=3))
            for m in (classifier(), classifier())]
    assert runs[0].valid == runs[1].valid


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 4))
def test_mean_pooling_reads_every_real_position_and_ignores_padding(seed, extra):
    torch.manual_seed(seed)
    model = BertClassifier(classifier().bert, classes=2, pooling="mean").eval()
    ids = torch.randint(4, 20, (3, 5))
    padded = torch.cat([ids, torch.zeros(3, extra, dtype=torch.long)], 1)  # [PAD] is id 0
    torch.testing.assert_close(model(padded), model(ids), atol=1e-5, rtol=1e-5)
    h = model.bert(ids)  # (B,T,D)
    torch.testing.assert_close(model(ids), model.out(h.mean(1)))
    with pytest.raises(ConfigError):
        BertClassifier(model.bert, pooling="max")

"""``nlpcourse.models.elmo``: the bidirectional LM's two directions read only their own side of a position,
padding changes nothing, the scalar mix is a softmax-weighted, scaled sum, and the biLM learns; a tagger that
mixes a frozen biLM's layers into its input (``nlpcourse.models.tagger``, ``benchmarks/elmo_tagger.py``)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from causal_support import redrawn
from hypothesis import given, settings
from hypothesis import strategies as st

from nlpcourse.data.batching import pad_batch
from nlpcourse.data.tagging import TaggingSplit
from nlpcourse.data.vocab import Vocab
from nlpcourse.errors import ConfigError, ShapeError
from nlpcourse.models.elmo import BiLM, BiLMConfig, ScalarMix, bilm_from_config
from nlpcourse.models.tagger import BiLSTMTagger, TaggerConfig, TaggerFeatures, fit_tagger
from nlpcourse.train import load_checkpoint

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py
H = 6


def bilm(seed: int = 0) -> BiLM:
    torch.manual_seed(seed)
    return BiLM(BiLMConfig(vocab=12, hidden=H, layers=2, dropout=0.0)).eval()


@settings(max_examples=20, deadline=None)
@given(cut=st.integers(1, 6), seed=st.integers(0, 100))
def test_forward_states_never_see_the_future_nor_backward_states_the_past(cut, seed):
    model = bilm(seed)
    ids, later = redrawn((2, 8), 4, 12, cut, seed, "after")
    _, earlier = redrawn((2, 8), 4, 12, cut, seed + 1, "before")
    earlier[:, cut:] = ids[:, cut:]
    with torch.no_grad():
        a, b, c = model.layers(ids), model.layers(later), model.layers(earlier)
    for la, lb, lc in zip(a[1:], b[1:], c[1:]):
        assert torch.allclose(la[:, :cut, :H], lb[:, :cut, :H], atol=1e-6), "forward: positions before the change"
        assert torch.allclose(la[:, cut:, H:], lc[:, cut:, H:], atol=1e-6), "backward: positions after the change"


def test_padding_changes_nothing_and_the_token_layer_is_doubled():
    model = bilm()
    ids = torch.tensor([[2, 5, 6, 7, 3], [2, 8, 3, 0, 0]])
    with torch.no_grad():
        layers = model.layers(ids)
        alone = model.layers(ids[1:, :3])
    assert len(layers) == 3 and all(h.shape == (2, 5, 2 * H) for h in layers)
    assert torch.equal(layers[0][..., :H], layers[0][..., H:])
    for h, k in zip(layers, alone):
        assert torch.allclose(h[1, :3], k[0], atol=1e-6), "the padded sentence's states are its states alone"
    with pytest.raises(ShapeError):
        model.layers(ids[0])


def test_scalar_mix_is_a_scaled_softmax_weighted_sum():
    layers = [torch.randn(2, 3, 4) for _ in range(3)]
    mix = ScalarMix(3)
    assert torch.allclose(mix(layers), sum(layers) / 3, atol=1e-6), "equal weights to start: the mean"
    with torch.no_grad():
        mix.w.copy_(torch.tensor([0.0, 1.0, 2.0]))
        mix.gamma.fill_(2.0)
    s = torch.softmax(torch.tensor([0.0, 1.0, 2.0]), 0)
    assert torch.allclose(mix(layers), 2 * (s[0] * layers[0] + s[1] * layers[1] + s[2] * layers[2]), atol=1e-6)
    with pytest.raises(ShapeError):
        mix(layers[:2])
    with pytest.raises(ConfigError):
        ScalarMix(0)


def test_bilm_learns_a_repeating_pattern_both_ways():
    torch.manual_seed(0)
    model = BiLM(BiLMConfig(vocab=12, hidden=16, layers=1, dropout=0.0))
    ids = torch.tensor([[2] + [4, 5, 6, 7] * 4 + [3]] * 8)
    opt = torch.optim.Adam(model.parameters(), lr=0.03)
    first = float(model.loss(ids).detach())
    for _ in range(60):
        loss = model.loss(ids)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(model.loss(ids).detach()) < 0.2 < first
    with pytest.raises(ConfigError):
        BiLMConfig(vocab=4)


def test_training_script_writes_a_checkpoint_that_loads(tmp_path):
    """``scripts/train_elmo.py --tiny``: a biLM of seconds on Brown, saved with its vocabulary, loaded back."""
    out = tmp_path / "elmo.pt"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "train_elmo.py"), "--tiny", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, env=os.environ | {"NLPCOURSE_PROGRESS": "0"})
    assert proc.returncode == 0 and "nats per word" in proc.stdout, proc.stderr[-2000:]
    ck = load_checkpoint(out, build=bilm_from_config)
    assert ck.model.config.vocab == len(ck.vocab) == 204  # 200 words and the 4 specials
    assert 0 < ck.extra["val_loss"] < 6 and ck.extra["seconds"] > 0


# ------------------------------------------------------------------ ELMo in the part-of-speech tagger


def _tagging(lm_hidden: int = H):
    """A toy tagging split, a biLM over its words, and the features that encode for both."""
    train = [[("The", "at"), ("dog", "nn"), ("runs", "vbz")], [("a", "at"), ("run", "nn"), ("dog", "nn")],
             [("The", "at"), ("run", "vb"), ("run", "nn")], [("big", "jj"), ("zebra", "nn"), ("lion", "nn")]]
    words = Vocab.build([[w.lower() for w, _ in s] for s in train])
    split = TaggingSplit(train, train[:1], train[:1], words, ["nn", "at", "vbz", "vb", "jj"])
    torch.manual_seed(1)
    lm = BiLM(BiLMConfig(vocab=len(words), hidden=lm_hidden, layers=2, dropout=0.5))
    return split, lm, TaggerFeatures.fit(split, bilm_words=words)


def _elmo_tagger(lm: BiLM, feats: TaggerFeatures, dropout: float = 0.0) -> BiLSTMTagger:
    torch.manual_seed(0)
    config = TaggerConfig(len(feats.words), len(feats.suffixes), 5, 6, 3, 4, dropout, elmo_layers=3, elmo_dim=2 * H)
    return BiLSTMTagger(config, lm)


def test_elmo_tagger_padding_changes_nothing_and_each_token_reads_its_own_position():
    split, lm, feats = _tagging()
    model = _elmo_tagger(lm, feats).eval()
    cols = feats.encode(split.train[0])
    assert len(cols) == 4 and cols[3][0] == feats.bilm_words.bos_id and cols[3][-1] == feats.bilm_words.eos_id
    alone = model(*(torch.tensor([c]) for c in cols))  # (1,3,C)
    short = feats.encode([("big", "jj")])
    batched = model(*(pad_batch([c, s]).tokens for c, s in zip(cols, short)))  # beside a 1-word sentence
    torch.testing.assert_close(batched[0], alone[0])
    mixed = model.elmo(torch.tensor([cols[3]]), 3)  # (1,3,2H): the words' positions, <bos> and <eos> dropped
    layers = lm.layers(torch.tensor([cols[3]]))
    s = torch.softmax(model.mix.w, 0)
    torch.testing.assert_close(mixed, model.mix.gamma * sum(w * h[:, 1:4] for w, h in zip(s, layers)))


def test_elmo_tagger_trains_its_mix_and_leaves_the_bilm_frozen():
    split, lm, feats = _tagging()
    model = _elmo_tagger(lm, feats, dropout=0.3)
    before = {k: v.clone() for k, v in lm.state_dict().items()}
    fit_tagger(model, feats, split, epochs=3, batch_size=2)
    assert not lm.training and model.train().bilm.training is False  # no dropout in the frozen biLM
    assert all(torch.equal(v, lm.state_dict()[k]) for k, v in before.items())
    assert not torch.equal(model.mix.w.detach(), torch.zeros(3)) and model.mix.gamma.item() != 1.0


def test_elmo_tagger_refuses_what_does_not_fit():
    split, lm, feats = _tagging()
    model = _elmo_tagger(lm, feats)
    cols = [torch.tensor([c]) for c in feats.encode(split.train[0])]
    with pytest.raises(ShapeError, match="bilm_ids of shape"):
        model(*cols[:3])
    with pytest.raises(ShapeError, match=r"\(B, 5\)"):
        model(*cols[:3], cols[3][:, :-1])
    base = dict(n_words=len(feats.words), n_suffixes=len(feats.suffixes), n_tags=5)
    with pytest.raises(ConfigError, match="both be 0"):
        TaggerConfig(**base, elmo_layers=3)
    with pytest.raises(ConfigError, match="the biLM given"):
        BiLSTMTagger(TaggerConfig(**base, elmo_layers=2, elmo_dim=2 * H), lm)  # the biLM has 3 layers to mix
    with pytest.raises(ConfigError, match="the biLM given"):
        BiLSTMTagger(TaggerConfig(**base, elmo_layers=3, elmo_dim=2 * H))
    with pytest.raises(ConfigError, match="elmo_layers=0"):
        BiLSTMTagger(TaggerConfig(**base), lm)


@pytest.mark.slow
def test_benchmark_tiny_pairs_elmo_and_plain_on_the_same_subsets(tmp_path):
    """``benchmarks/elmo_tagger.py --tiny``: both systems on each subset, the interval of their paired difference."""
    out = tmp_path / "elmo_tagger.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "elmo_tagger.py"), "--tiny", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (point,) = json.loads(out.read_text())["curve"]
    assert point["labels"] == 20 and len(point["elmo"]) == len(point["plain"]) == len(point["most_frequent"]) == 2
    assert all(0 < a < 1 for a in point["elmo"] + point["plain"] + point["most_frequent"])
    diffs = [a - b for a, b in zip(point["elmo"], point["plain"])]
    assert point["diff_mean"] == pytest.approx(sum(diffs) / 2)
    assert point["diff_ci95"][0] <= point["diff_mean"] <= point["diff_ci95"][1]

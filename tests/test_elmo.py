"""``nlpcourse.models.elmo``: the bidirectional LM's two directions read only their own side of a position,
padding changes nothing, the scalar mix is a softmax-weighted, scaled sum, and the biLM learns."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from causal_support import redrawn
from hypothesis import given, settings
from hypothesis import strategies as st

from nlpcourse.errors import ConfigError, ShapeError
from nlpcourse.models.elmo import BiLM, BiLMConfig, ScalarMix, bilm_from_config
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

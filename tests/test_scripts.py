"""Training scripts, the models they share with the chapters, and the chapters' widgets.

``scripts/train_bow_mlp.py --tiny`` runs end to end in seconds and writes a checkpoint that loads and
predicts; the committed checkpoint loads with the current model class; ``nlpcourse.models.bow_mlp``
has the shapes its docstring promises; ``nlpcourse.widgets`` builds widgets that redraw when a
control changes.
"""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import nlpcourse
from nlpcourse.errors import CourseError, ShapeError
from nlpcourse.models.bow_mlp import BowMLP, BowMLPConfig, bag_of_words, build_bow_mlp

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "train_bow_mlp.py"
COMMITTED = ROOT / "data" / "checkpoints" / "bow_mlp.pt"
MAX_CHECKPOINT_BYTES = 3 * 2**20


def run_tiny(out: Path, *extra: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--tiny", "--out", str(out), *extra],
        capture_output=True, text=True, timeout=300, cwd=out.parent,  # not the repository root
    )
    assert proc.returncode == 0, f"train_bow_mlp.py --tiny failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


# ---------------------------------------------------------------- scripts/train_bow_mlp.py


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ckpt") / "x.pt"
    run_tiny(out)
    return out


def test_tiny_run_writes_a_checkpoint_that_loads_and_predicts(tiny_checkpoint):
    ckpt = nlpcourse.load_checkpoint(tiny_checkpoint, build=build_bow_mlp)
    assert ckpt.vocab is not None and ckpt.model is not None
    V = len(ckpt.vocab)
    assert ckpt.config["vocab_size"] == V
    assert not ckpt.model.training  # load_checkpoint puts the model in eval mode
    docs = [ckpt.vocab.encode(["a", "great", "film", "."]), ckpt.vocab.encode(["dull"]), ckpt.vocab.encode([])]
    x = bag_of_words(docs, V)  # (B,V)
    with torch.no_grad():
        logits = ckpt.model(x)
    assert logits.shape == (3, 2)
    assert torch.isfinite(logits).all()
    probs = ckpt.model.predict_proba(x)
    assert torch.allclose(probs.sum(-1), torch.ones(3))


def test_tiny_checkpoint_holds_history_sweep_and_metrics(tiny_checkpoint):
    extra = nlpcourse.load_checkpoint(tiny_checkpoint).extra
    assert 0.0 <= extra["test_acc"] <= 1.0
    hist = nlpcourse.History.from_dict(extra["history"])
    assert {"train_loss", "val_loss", "val_acc"} <= set(hist.metrics)
    assert hist.best_epoch is not None
    sweep = extra["sweep"]
    assert [run["dropout"] for run in sweep] == list(extra["train_config"]["dropouts"])
    for run in sweep:
        assert 0.0 <= run["val_acc"] <= 1.0 and run["epochs_run"] >= 1
    assert tiny_checkpoint.stat().st_size < MAX_CHECKPOINT_BYTES


def test_tiny_run_is_deterministic(tiny_checkpoint, tmp_path):
    again = tmp_path / "again.pt"
    run_tiny(again)
    a, b = nlpcourse.load_checkpoint(tiny_checkpoint), nlpcourse.load_checkpoint(again)
    assert a.extra["test_acc"] == b.extra["test_acc"]
    assert a.vocab == b.vocab
    for k in a.state_dict:
        assert torch.equal(a.state_dict[k], b.state_dict[k]), k


def test_script_rejects_unknown_options(tmp_path):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--no-such-option"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode != 0
    assert "--no-such-option" in proc.stderr


def test_committed_checkpoint_loads_with_the_current_model_class():
    assert COMMITTED.is_file(), f"{COMMITTED} is missing: run python scripts/train_bow_mlp.py"
    assert COMMITTED.stat().st_size < MAX_CHECKPOINT_BYTES
    ckpt = nlpcourse.load_checkpoint(COMMITTED, build=build_bow_mlp)
    V = len(ckpt.vocab)
    with torch.no_grad():
        assert ckpt.model(bag_of_words([ckpt.vocab.encode(["good"])], V)).shape == (1, 2)
    assert {"history", "test_acc", "sweep", "train_config"} <= set(ckpt.extra)


# ---------------------------------------------------------------- nlpcourse.models.bow_mlp


@pytest.mark.parametrize("hidden", [0, 1, 16])
@pytest.mark.parametrize("activation", ["relu", "tanh", "gelu", "sigmoid"])
def test_bow_mlp_shapes(hidden, activation):
    torch.manual_seed(0)
    B, V, K = 5, 30, 3
    model = BowMLP(BowMLPConfig(vocab_size=V, hidden=hidden, n_classes=K, activation=activation))
    x = torch.rand(B, V)
    assert model(x).shape == (B, K)
    assert model.features(x).shape == (B, hidden or V)
    n_params = sum(p.numel() for p in model.parameters())
    assert n_params == (V * K + K if hidden == 0 else V * hidden + hidden + hidden * K + K)


def test_bow_mlp_gradients_reach_every_parameter():
    torch.manual_seed(0)
    model = BowMLP(BowMLPConfig(vocab_size=20, hidden=8))
    x, y = torch.rand(6, 20), torch.tensor([0, 1, 0, 1, 1, 0])
    torch.nn.functional.cross_entropy(model(x), y).backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_bow_mlp_dropout_only_in_training_and_predict_proba_restores_mode():
    torch.manual_seed(0)
    model = BowMLP(BowMLPConfig(vocab_size=40, hidden=64, dropout=0.5))
    x = torch.rand(4, 40)
    model.eval()
    assert torch.equal(model(x), model(x))
    model.train()
    assert not torch.equal(model.features(x), model.features(x))
    probs = model.predict_proba(x)
    assert model.training
    assert probs.shape == (4, 2) and torch.allclose(probs.sum(-1), torch.ones(4))


def test_bow_mlp_rejects_wrong_input_shape_and_bad_config():
    model = BowMLP(BowMLPConfig(vocab_size=10, hidden=4))
    with pytest.raises(ShapeError, match="BowMLP input"):
        model(torch.rand(3, 11))
    with pytest.raises(ShapeError):
        model(torch.rand(10))
    for bad in ({"vocab_size": 0}, {"vocab_size": 5, "hidden": -1}, {"vocab_size": 5, "n_classes": 1},
                {"vocab_size": 5, "dropout": 1.0}, {"vocab_size": 5, "activation": "swish"}):
        with pytest.raises(CourseError):
            BowMLPConfig(**bad)


def test_build_bow_mlp_from_dict_and_config():
    model = build_bow_mlp({"vocab_size": 12, "hidden": 3, "n_classes": 2, "dropout": 0.1, "activation": "tanh"})
    assert isinstance(model, BowMLP) and model.hidden.weight.shape == (3, 12)
    assert build_bow_mlp(BowMLPConfig(vocab_size=12)).config.hidden == 64
    with pytest.raises(CourseError, match="unknown config keys"):
        build_bow_mlp({"vocab_size": 12, "layers": 2})


def test_bag_of_words_presence_and_counts():
    docs = [[4, 5, 4], [], [6]]
    x = bag_of_words(docs, 8)
    assert x.shape == (3, 8) and x.dtype == torch.float32
    assert x[0].tolist() == [0, 0, 0, 0, 1, 1, 0, 0]
    assert x[1].sum() == 0
    counts = bag_of_words(docs, 8, binary=False)
    assert counts[0, 4] == 2 and counts[2, 6] == 1
    with pytest.raises(CourseError, match="document 0"):
        bag_of_words([[8]], 8)


# ---------------------------------------------------------------- nlpcourse.widgets


def test_importing_widgets_module_has_no_side_effects():
    code = ("import sys, nlpcourse.widgets; "
            "print('ipywidgets' in sys.modules, 'matplotlib.pyplot' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False"]


def test_activation_explorer_builds_and_redraws_on_change(capsys):
    from nlpcourse.widgets import activation_explorer

    w = activation_explorer("tanh", sigma=1.0)
    assert capsys.readouterr().out == ""  # building it prints nothing
    assert w.dropdown.value == "tanh" and w.slider.value == pytest.approx(1.0)
    assert w.html in w.children
    first = w.html.value
    assert first.startswith('<img src="data:image/png;base64,') and "σ = 1.00" in first

    w.dropdown.value = "relu"
    after_dropdown = w.html.value
    assert after_dropdown != first and 'alt="relu' in after_dropdown
    assert "saturated units" in first and "units off" in after_dropdown  # ReLU: off, not saturated

    w.slider.value = 5.0
    assert w.html.value != after_dropdown and "σ = 5.00" in w.html.value
    assert repr(w) == "ActivationExplorer(activation='relu', sigma=5.00)"
    assert capsys.readouterr().out == ""


def test_activation_explorer_rejects_bad_arguments():
    from nlpcourse.widgets import activation_explorer

    with pytest.raises(ValueError, match="unknown activation"):
        activation_explorer("swish")
    with pytest.raises(ValueError, match="sigma"):
        activation_explorer("tanh", sigma=0.0)


def test_saturation_statistics():
    from nlpcourse.widgets import saturation

    tanh = [saturation("tanh", s) for s in (0.1, 1.0, 10.0)]
    assert tanh[0]["saturated"] < tanh[1]["saturated"] < tanh[2]["saturated"]
    assert tanh[0]["mean_grad"] > tanh[1]["mean_grad"] > tanh[2]["mean_grad"]
    assert saturation("sigmoid", 0.1)["mean_grad"] == pytest.approx(0.25, abs=1e-3)
    assert saturation("relu", 3.0)["mean_grad"] == pytest.approx(0.5, abs=1e-2)
    assert saturation("relu", 3.0)["out_std"] > saturation("relu", 1.0)["out_std"]
    with pytest.raises(ValueError):
        saturation("tanh", -1.0)


def test_saturation_counts_squashing_tails_as_saturated_and_rectifier_zero_side_as_off():
    from nlpcourse.widgets import flat_tails, saturation

    # the flat tails, where |f'| < 5 % of its maximum: sigmoid' = 0.0125, tanh' = 0.05
    s_edge = (1 + math.sqrt(1 - 0.05)) / 2  # sigmoid(z) where sigmoid'(z) = s (1 - s) = 0.25 * 0.05
    z_sigmoid, z_tanh = math.log(s_edge / (1 - s_edge)), math.atanh(math.sqrt(0.95))
    assert flat_tails("sigmoid") == pytest.approx((-z_sigmoid, z_sigmoid), abs=2e-3)
    assert flat_tails("tanh") == pytest.approx((-z_tanh, z_tanh), abs=2e-3)
    assert flat_tails("relu") == (0.0, math.inf)
    lo, hi = flat_tails("gelu")  # GELU' also crosses 0 near z = -0.75, which is no tail
    assert -2.5 < lo < -2 and hi == math.inf
    for sigma in (0.1, 1.0, 10.0):
        relu = saturation("relu", sigma)
        assert relu["saturated"] == 0 and relu["off"] == pytest.approx(0.5, abs=1e-9)  # every scale
        for name in ("sigmoid", "tanh"):
            assert saturation(name, sigma)["off"] == 0
        assert saturation("gelu", sigma)["saturated"] == 0
        assert saturation("gelu", sigma)["mean_grad"] == pytest.approx(0.5, abs=1e-3)
    # P(|z| > z_tanh) for z ~ N(0, 10^2)
    assert saturation("tanh", 10.0)["saturated"] == pytest.approx(math.erfc(z_tanh / 10 / math.sqrt(2)), abs=1e-3)
    gelu = [saturation("gelu", s)["off"] for s in (0.1, 1.0, 3.0, 10.0)]
    assert gelu[0] < 1e-6 and gelu == sorted(gelu) and gelu[-1] < 0.5

import dataclasses
from typing import NamedTuple

import pytest
import torch
from torch import nn

import nlpcourse
from nlpcourse import (
    ConfigError,
    CourseError,
    NumericalError,
    fit,
    get_device,
    load_checkpoint,
    save_checkpoint,
    seed_everything,
    to_device,
)
from nlpcourse.checking import copy_to
from nlpcourse.data import Vocab
from nlpcourse.device import available_devices
from nlpcourse.train import Budget, EarlyStopping, evaluate_epoch, train_epoch


def toy_problem(n=256, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    y = (x[:, 0] + x[:, 1] > 0).long()
    return [(x[i:i + 32], y[i:i + 32]) for i in range(0, n, 32)]


def ce(model, batch):
    x, y = batch
    return nn.functional.cross_entropy(model(x), y)


def test_fit_learns_and_records_history():
    seed_everything(0)
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    data = toy_problem()
    hist = fit(model, data, ce, opt, epochs=5, device="cpu", progress=False,
               evaluate=lambda m: {"val_loss": sum(ce(m, b).item() for b in data) / len(data)})
    assert hist.epochs == 5 and hist["train_loss"][-1] < hist["train_loss"][0]
    assert set(hist.metrics) == {"train_loss", "val_loss"}


def test_fit_is_deterministic():
    def run():
        seed_everything(1)
        model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.3), nn.ReLU(), nn.Linear(8, 2))
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        fit(model, toy_problem(), ce, opt, epochs=2, device="cpu", progress=False)
        return torch.cat([p.flatten() for p in model.parameters()])

    assert torch.equal(run(), run())


def test_gradient_accumulation_equals_a_bigger_batch():
    data = toy_problem(64)
    big = [(torch.cat([x for x, _ in data[:2]]), torch.cat([y for _, y in data[:2]]))]
    small = data[:2]
    results = []
    for batches, acc in ((big, 1), (small, 2)):
        seed_everything(0)
        model = nn.Linear(4, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        fit(model, batches, ce, opt, epochs=1, accumulate=acc, device="cpu", progress=False)
        results.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    assert torch.allclose(results[0], results[1], atol=1e-6)


def test_early_stopping_restores_best_weights():
    seed_everything(0)
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scores = iter([3.0, 1.0, 2.0, 2.5, 2.6, 2.7, 2.8])
    snapshots = []

    def evaluate(m):
        snapshots.append(m.weight.detach().clone())
        return {"val_loss": next(scores)}

    hist = fit(model, toy_problem(), ce, opt, epochs=7, evaluate=evaluate, monitor="val_loss",
               patience=2, device="cpu", progress=False)
    assert hist.stopped_early and hist.epochs == 4 and hist.best_epoch == 1
    assert torch.equal(model.weight, snapshots[1])


def test_gradient_clipping_bounds_the_update():
    model = nn.Linear(4, 2)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    huge = [(torch.full((8, 4), 1e4), torch.zeros(8, dtype=torch.long))]
    fit(model, huge, ce, opt, epochs=1, clip_norm=0.5, device="cpu", progress=False)
    step = torch.cat([model.weight.detach().flatten(), model.bias.detach()])
    assert step.norm().item() == pytest.approx(0.5, rel=1e-4)


@pytest.mark.parametrize("kwargs, message", [
    ({"epochs": 0}, "epochs must be >= 1"),
    ({"epochs": 1, "accumulate": 0}, "accumulate"),
    ({"epochs": 1, "mode": "up"}, "mode"),
    ({"epochs": 1, "patience": 2}, "needs a metric to monitor"),
    ({"epochs": 1, "monitor": "val_acc"}, "needs an evaluate function"),
])
def test_fit_bad_arguments(kwargs, message):
    model = nn.Linear(4, 2)
    with pytest.raises(CourseError, match=message):
        fit(model, toy_problem(), ce, torch.optim.SGD(model.parameters(), lr=0.1), device="cpu", **kwargs)


def test_fit_stops_on_non_finite_loss_and_empty_data():
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    nan_batch = [(torch.full((2, 4), float("nan")), torch.zeros(2, dtype=torch.long))]
    with pytest.raises(CourseError, match="loss became nan at epoch 1, batch 0"):
        fit(model, nan_batch, ce, opt, epochs=1, device="cpu", progress=False)
    with pytest.raises(CourseError, match="gave no batches"):
        fit(model, [], ce, opt, epochs=1, device="cpu", progress=False)


@dataclasses.dataclass
class TinyConfig:
    d_in: int = 4  # input features
    n_classes: int = 2  # output classes


def test_checkpoint_round_trip(tmp_path):
    cfg = TinyConfig()
    model = nn.Linear(cfg.d_in, cfg.n_classes)
    vocab = Vocab.build([["a", "b", "a"]])
    path = save_checkpoint(tmp_path / "ck" / "m.pt", model, cfg, vocab, extra={"test_acc": 0.75})
    ck = load_checkpoint(path, build=lambda c: nn.Linear(c["d_in"], c["n_classes"]))
    assert ck.config == {"d_in": 4, "n_classes": 2} and ck.vocab == vocab and ck.extra["test_acc"] == 0.75
    assert torch.equal(ck.model.weight, model.weight) and not ck.model.training
    assert not list((tmp_path / "ck").glob("*.tmp"))


def test_checkpoint_errors(tmp_path):
    with pytest.raises(CourseError, match="no checkpoint at"):
        load_checkpoint(tmp_path / "none.pt")
    (tmp_path / "bad.pt").write_bytes(b"garbage")
    with pytest.raises(CourseError, match="not a readable checkpoint"):
        load_checkpoint(tmp_path / "bad.pt")
    torch.save({"weights": 1}, tmp_path / "other.pt")
    with pytest.raises(CourseError, match="not written by save_checkpoint"):
        load_checkpoint(tmp_path / "other.pt")
    with pytest.raises(CourseError, match="config must be a dataclass or a dict"):
        save_checkpoint(tmp_path / "x.pt", nn.Linear(1, 1), config=[1, 2])


def test_device_choice(monkeypatch):
    monkeypatch.delenv("NLPCOURSE_DEVICE", raising=False)
    expected = "cuda" if torch.cuda.is_available() else None
    dev = get_device()
    if expected:
        assert dev.type == expected
    monkeypatch.setenv("NLPCOURSE_DEVICE", "cpu")
    assert get_device() == torch.device("cpu")
    monkeypatch.setenv("NLPCOURSE_DEVICE", "toaster")
    with pytest.raises(CourseError, match="'toaster' is not a device name"):
        get_device()
    assert available_devices()[0] == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error where CUDA is missing")
def test_asking_for_missing_cuda_is_a_clear_error():
    with pytest.raises(CourseError, match="CUDA is not available"):
        get_device("cuda")


@pytest.mark.gpu
def test_fit_on_cuda_matches_cpu():
    results = []
    for device in ("cpu", "cuda"):
        seed_everything(0)
        model = nn.Linear(4, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        fit(model, toy_problem(), ce, opt, epochs=2, device=device, progress=False)
        results.append(torch.cat([p.detach().cpu().flatten() for p in model.parameters()]))
    assert torch.allclose(results[0], results[1], atol=1e-5)


# ---------------------------------------------------------------- the steps of fit, one by one


def test_train_epoch_returns_the_mean_loss_and_steps_once_per_accumulated_group():
    seed_everything(0)
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = toy_problem(5 * 32)  # 5 batches: steps after batches 2 and 4, and after the last one
    with torch.no_grad():
        expected = sum(ce(model, b).item() for b in data[:2]) / 2  # the weights change only after batch 2
    steps = []
    opt.register_step_post_hook(lambda *_: steps.append(1))
    model.eval()
    mean = train_epoch(model, data[:2], ce, opt, "cpu", accumulate=2)
    assert model.training and mean == pytest.approx(expected) and len(steps) == 1
    train_epoch(model, data, ce, opt, "cpu", accumulate=2)
    assert len(steps) == 1 + 3 and all(p.grad is None for p in model.parameters())
    with pytest.raises(NumericalError, match="loss became inf at epoch 3, batch 0"):
        train_epoch(model, data, lambda m, b: torch.tensor(float("inf")), opt, "cpu", epoch=2)


def test_evaluate_epoch_runs_in_eval_mode_without_gradients():
    model = nn.Sequential(nn.Linear(4, 2), nn.Dropout(0.5))
    seen = {}

    def evaluate(m):
        seen.update(training=m.training, grad=torch.is_grad_enabled())
        return {"val_loss": torch.tensor(0.25), "val_acc": 1}

    metrics = evaluate_epoch(model, evaluate)
    assert metrics == {"val_loss": 0.25, "val_acc": 1.0} and all(type(v) is float for v in metrics.values())
    assert seen == {"training": False, "grad": False}


def test_early_stopping_tracks_the_best_value_and_says_when_to_stop():
    model = nn.Linear(1, 1)
    stopper = EarlyStopping(mode="max", patience=2)
    with torch.no_grad():
        model.weight.fill_(1.0)
    assert stopper.update(0.5, model) is False and stopper.best == 0.5 and stopper.best_epoch == 0
    with torch.no_grad():
        model.weight.fill_(2.0)
    assert stopper.update(0.4, model) is False and stopper.bad_epochs == 1
    assert stopper.update(0.5, model) is True  # equal is no improvement: a second bad epoch
    assert stopper.best_epoch == 0 and torch.equal(stopper.best_state["weight"], torch.ones(1, 1))
    never = EarlyStopping(mode="min", keep_best_state=False)
    assert not any(never.update(v, model) for v in (3.0, 2.0, 4.0, 5.0, 6.0))
    assert never.best == 2.0 and never.best_epoch == 1 and never.bad_epochs == 3 and never.best_state is None
    with pytest.raises(ConfigError, match="'up'"):
        EarlyStopping(mode="up")


class Pair(NamedTuple):
    x: torch.Tensor
    y: torch.Tensor


def test_to_device_moves_and_copy_to_copies():
    from nlpcourse import checking, device

    assert nlpcourse.to_device is device.to_device and not hasattr(checking, "to_device")
    x = torch.ones(2, requires_grad=True)
    batch = {"pair": Pair(x, torch.zeros(2)), "list": [x, 3], "tuple": (x,), "name": "b"}
    moved = to_device(batch, "cpu")
    assert type(moved["pair"]) is Pair and moved["pair"].x is x and moved["list"][0] is x and moved["tuple"][0] is x
    assert moved["list"][1] == 3 and moved["name"] == "b"
    assert to_device(nn.Linear(1, 1), "cpu").weight.device.type == "cpu"
    copied = copy_to(batch, "cpu")
    c = copied["list"][0]
    assert c is not x and torch.equal(c, x) and not c.requires_grad and c.data_ptr() != x.data_ptr()


def test_budget_is_spent_at_either_limit_and_never_without_one():
    assert not Budget().spent() and not Budget(max_seconds=3600, max_cpu_seconds=3600).spent()
    assert Budget(max_cpu_seconds=0.0).spent() and Budget(max_seconds=0.0).spent()
    b = Budget()
    sum(i * i for i in range(200_000))  # some CPU time
    assert b.cpu_seconds > 0 and b.seconds > 0

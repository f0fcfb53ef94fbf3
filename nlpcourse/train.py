"""A small, explicit training loop: progress bar, gradient clipping, gradient accumulation,
early stopping on a validation metric, and checkpoints that hold weights + config + vocab.
"""
from __future__ import annotations

import copy
import dataclasses
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .data.vocab import Vocab
from .device import get_device, to_device
from .errors import (
    ArgumentTypeError,
    ConfigError,
    DataError,
    FormatError,
    NumericalError,
    UnknownNameError,
)
from .history import History

PROGRESS_ENV = "NLPCOURSE_PROGRESS"  # set to 0 to hide progress bars (the book build does)

#: What ``fit`` trains on: an iterable of batches, or a function ``epoch -> iterable of batches``.
TrainData = Iterable[Any] | Callable[[int], Iterable[Any]]
#: ``loss_fn(model, batch)`` -> the scalar loss of one batch.
LossFn = Callable[[nn.Module, Any], torch.Tensor]
#: ``evaluate(model)`` -> validation metrics such as ``{"val_loss": ..., "val_acc": ...}``.
EvaluateFn = Callable[[nn.Module], Mapping[str, float]]


class Budget:
    """Wall and CPU time (the process's, all threads) since it was made; :meth:`spent` once either limit
    is reached. A CPU budget is one that other work on the machine cannot shrink."""

    def __init__(self, max_seconds: float | None = None, max_cpu_seconds: float | None = None):
        self.max_seconds, self.max_cpu_seconds = max_seconds, max_cpu_seconds
        self._start = (time.perf_counter(), time.process_time())

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self._start[0]

    @property
    def cpu_seconds(self) -> float:
        return time.process_time() - self._start[1]

    def spent(self) -> bool:
        return ((self.max_seconds is not None and self.seconds >= self.max_seconds)
                or (self.max_cpu_seconds is not None and self.cpu_seconds >= self.max_cpu_seconds))


@torch.no_grad()
def mean_sequence_loss(loss_fn: Callable[[torch.Tensor], torch.Tensor], seqs: Sequence[Sequence[int]],
                       batch_size: int = 256, pad_id: int = 0) -> float:
    """A language model's mean loss over ``seqs``: ``loss_fn(ids)`` (the mean over one padded (B,T) batch)
    weighted by the batch's predicted positions, those of ``ids[:, 1:]`` that are not padding."""
    from .data.batching import pad_batch

    total = count = 0.0
    for k in range(0, len(seqs), batch_size):
        ids = pad_batch(seqs[k:k + batch_size], pad_id).tokens
        n = int((ids[:, 1:] != pad_id).sum())
        total, count = total + float(loss_fn(ids)) * n, count + n
    if not count:
        raise DataError("mean_sequence_loss: no position to predict")
    return total / count


def _progress_default(progress: bool | None) -> bool:
    """Show progress bars? ``progress`` if given, else yes unless ``$NLPCOURSE_PROGRESS`` is 0."""
    if progress is not None:
        return progress
    return os.environ.get(PROGRESS_ENV, "1") != "0"


def fit(
    model: nn.Module,
    train_data: TrainData,
    loss_fn: LossFn,
    optimizer: torch.optim.Optimizer,
    epochs: int,
    *,
    evaluate: EvaluateFn | None = None,
    monitor: str | None = None,
    mode: str = "min",
    patience: int | None = None,
    clip_norm: float | None = None,
    accumulate: int = 1,
    scheduler: Any = None,
    device: torch.device | str | None = None,
    progress: bool | None = None,
    restore_best: bool = True,
) -> History:
    """Train ``model`` for up to ``epochs`` epochs and return its :class:`History`.

    ``train_data`` is an iterable of batches, or a function ``epoch -> iterable`` (to reshuffle each
    epoch). ``loss_fn(model, batch)`` returns the scalar loss of one batch. After every epoch
    ``evaluate(model)`` (run in eval mode without gradients) returns validation metrics such as
    ``{"val_loss": ..., "val_acc": ...}``. Early stopping watches ``monitor`` (``mode`` "min" or "max")
    and stops after ``patience`` epochs without improvement; with ``restore_best`` the best weights are
    put back. ``clip_norm`` clips the global gradient norm (Pascanu et al., 2013); ``accumulate`` sums
    gradients over that many batches before each optimizer step.

    Each epoch is :func:`train_epoch`, then ``scheduler.step()``, then :func:`evaluate_epoch`, then
    :class:`EarlyStopping` on the monitored metric.
    """
    _check_fit_arguments(epochs, accumulate, mode, patience, monitor, evaluate)
    device = torch.device(device) if device is not None else get_device()
    model.to(device)
    show = _progress_default(progress)
    history = History()
    stopper = EarlyStopping(mode, patience, keep_best_state=restore_best)
    for epoch in range(epochs):
        model.train()  # already before train_data(epoch) is called: it may look at the model
        batches = _epoch_batches(train_data, epoch, epochs, show)
        metrics = {"train_loss": train_epoch(model, batches, loss_fn, optimizer, device, accumulate, clip_norm, epoch)}
        if scheduler is not None:
            scheduler.step()
        if evaluate is not None:
            metrics.update(evaluate_epoch(model, evaluate))
        history.log(**metrics)
        if monitor is not None:
            stop = stopper.update(_monitored(metrics, monitor), model)
            history.best_epoch = stopper.best_epoch
            if stop:
                history.stopped_early = True
                break
    if restore_best and stopper.best_state is not None:
        model.load_state_dict(stopper.best_state)
    return history


def _check_fit_arguments(epochs: int, accumulate: int, mode: str, patience: int | None, monitor: str | None,
                         evaluate: EvaluateFn | None) -> None:
    """Raise :class:`ConfigError` for arguments of :func:`fit` that cannot work together."""
    if epochs < 1:
        raise ConfigError(f"fit: epochs must be >= 1, got {epochs}")
    if accumulate < 1:
        raise ConfigError(f"fit: accumulate must be >= 1, got {accumulate}")
    if mode not in ("min", "max"):
        raise ConfigError(f"fit: mode must be 'min' or 'max', got {mode!r}")
    if patience is not None and monitor is None:
        raise ConfigError("fit: early stopping (patience) needs a metric to monitor (monitor='val_loss', say)")
    if monitor is not None and evaluate is None and not monitor.startswith("train_"):
        raise ConfigError(f"fit: monitor={monitor!r} needs an evaluate function that returns it")


def _epoch_batches(train_data: TrainData, epoch: int, epochs: int, show: bool) -> Iterable[Any]:
    """The batches of epoch ``epoch`` (0-based), behind a progress bar when ``show``."""
    batches = train_data(epoch) if callable(train_data) else train_data
    if not show:
        return batches
    from tqdm.auto import tqdm

    return tqdm(batches, desc=f"epoch {epoch + 1}/{epochs}", leave=False)


def train_epoch(
    model: nn.Module,
    batches: Iterable[Any],
    loss_fn: LossFn,
    optimizer: torch.optim.Optimizer,
    device: torch.device | str,
    accumulate: int = 1,
    clip_norm: float | None = None,
    epoch: int = 0,
) -> float:
    """One pass over ``batches`` in train mode; returns the mean loss of the batches.

    Each batch is moved to ``device`` and its loss, divided by ``accumulate``, back-propagated; the
    optimizer steps every ``accumulate`` batches and after the last one (gradients clipped to a global
    norm of ``clip_norm`` first). ``epoch`` (0-based) only serves the error messages. Raises
    :class:`NumericalError` for a loss that is not finite, :class:`ConfigError` when there is no batch.
    """
    model.train()
    total, n = 0.0, 0
    optimizer.zero_grad(set_to_none=True)
    for i, batch in enumerate(batches):
        loss = loss_fn(model, to_device(batch, device))
        if not torch.isfinite(loss):
            raise NumericalError(f"fit: loss became {loss.item()} at epoch {epoch + 1}, batch {i}")
        (loss / accumulate).backward()
        if (i + 1) % accumulate == 0:
            _step(model, optimizer, clip_norm)
        total += loss.item()
        n += 1
    if n == 0:
        raise ConfigError(f"fit: train_data gave no batches at epoch {epoch + 1}")
    if n % accumulate:
        _step(model, optimizer, clip_norm)
    return total / n


def _step(model: nn.Module, optimizer: torch.optim.Optimizer, clip_norm: float | None) -> None:
    """Clip the gradients (if ``clip_norm``), take an optimizer step, clear the gradients."""
    if clip_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def evaluate_epoch(model: nn.Module, evaluate: EvaluateFn) -> dict[str, float]:
    """``evaluate(model)`` in eval mode without gradients, its values as floats."""
    model.eval()
    with torch.no_grad():
        return {k: float(v) for k, v in evaluate(model).items()}


def _monitored(metrics: Mapping[str, float], monitor: str) -> float:
    """The value of the monitored metric; an error that lists the metrics there are if it is missing."""
    if monitor not in metrics:
        raise UnknownNameError(f"fit: monitored metric {monitor!r} not among {sorted(metrics)}")
    return metrics[monitor]


@dataclass
class EarlyStopping:
    """Early stopping on one metric: feed it the metric after every epoch with :meth:`update`.

    It keeps the best value so far and (with ``keep_best_state``) a copy of the weights that reached it,
    and says to stop once ``patience`` epochs in a row have not improved on it (never if ``patience`` is
    None). "Improved" means strictly lower with ``mode="min"``, strictly higher with ``mode="max"``.
    """

    mode: str = "min"  # "min" for a loss, "max" for an accuracy
    patience: int | None = None  # epochs without improvement before stopping; None: never stop
    keep_best_state: bool = True  # copy the model's state_dict at every new best
    best: float = field(init=False)  # best value so far (inf or -inf before the first update)
    best_epoch: int | None = field(default=None, init=False)  # 0-based update that gave ``best``
    bad_epochs: int = field(default=0, init=False)  # updates since the last improvement
    best_state: dict[str, Any] | None = field(default=None, init=False, repr=False)  # weights at ``best``
    epochs_seen: int = field(default=0, init=False)  # number of updates so far

    def __post_init__(self) -> None:
        if self.mode not in ("min", "max"):
            raise ConfigError(f"EarlyStopping: mode must be 'min' or 'max', got {self.mode!r}")
        self.best = math.inf if self.mode == "min" else -math.inf

    def update(self, value: float, model: nn.Module) -> bool:
        """Record this epoch's ``value`` of the metric (and ``model``'s weights if it is a new best);
        return True when training should stop."""
        epoch, self.epochs_seen = self.epochs_seen, self.epochs_seen + 1
        if (value < self.best) if self.mode == "min" else (value > self.best):
            self.best, self.best_epoch, self.bad_epochs = value, epoch, 0
            if self.keep_best_state:
                self.best_state = copy.deepcopy(model.state_dict())
            return False
        self.bad_epochs += 1
        return self.patience is not None and self.bad_epochs >= self.patience


# ---------------------------------------------------------------- checkpoints

CHECKPOINT_VERSION = 1


@dataclass
class Checkpoint:
    """What :func:`load_checkpoint` returns."""

    state_dict: dict[str, torch.Tensor]  # model weights
    config: dict[str, Any]  # the model's config as a plain dict
    vocab: Vocab | None  # the vocabulary the model was trained with, if any
    extra: dict[str, Any]  # anything else saved (history, metrics, ...)
    model: nn.Module | None = None  # the rebuilt model when a ``build`` function was given


def _config_dict(config: Any) -> dict[str, Any]:
    if config is None:
        return {}
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return dataclasses.asdict(config)
    if isinstance(config, Mapping):
        return dict(config)
    raise ArgumentTypeError(f"save_checkpoint: config must be a dataclass or a dict, got {type(config).__name__}")


def save_checkpoint(
    path: str | Path,
    model: nn.Module,
    config: Any = None,
    vocab: Vocab | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Save weights, config (dataclass or dict), vocab and extras to ``path``; written atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format_version": CHECKPOINT_VERSION,
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "config": _config_dict(config),
        "vocab": vocab.to_dict() if vocab is not None else None,
        "extra": dict(extra or {}),
    }
    tmp = path.with_name(path.name + ".tmp")
    torch.save(payload, tmp)
    tmp.replace(path)
    return path


def load_checkpoint(
    path: str | Path,
    build: Callable[[dict[str, Any]], nn.Module] | None = None,
    device: torch.device | str = "cpu",
) -> Checkpoint:
    """Load a checkpoint written by :func:`save_checkpoint`. With ``build(config) -> model`` the model is
    rebuilt, given the weights, moved to ``device`` and put in eval mode."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"load_checkpoint: no checkpoint at {path}")
    try:
        payload = torch.load(path, map_location=device, weights_only=True)
    except Exception as exc:  # torch raises several types for a damaged file
        raise DataError(f"load_checkpoint: {path} is not a readable checkpoint: {exc}") from exc
    if not isinstance(payload, dict) or payload.get("format_version") != CHECKPOINT_VERSION:
        raise FormatError(f"load_checkpoint: {path} was not written by save_checkpoint (format version mismatch)")
    ckpt = Checkpoint(
        state_dict=payload["state_dict"],
        config=payload["config"],
        vocab=Vocab.from_dict(payload["vocab"]) if payload["vocab"] else None,
        extra=payload["extra"],
    )
    if build is not None:
        model = build(ckpt.config)
        model.load_state_dict(ckpt.state_dict)
        ckpt.model = model.to(device).eval()
    return ckpt

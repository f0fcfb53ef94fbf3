"""A small, explicit training loop: progress bar, gradient clipping, gradient accumulation,
early stopping on a validation metric, and checkpoints that hold weights + config + vocab.
"""
from __future__ import annotations

import copy
import dataclasses
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import torch
from torch import nn

from .data.vocab import Vocab
from .device import get_device
from .errors import CourseError
from .history import History

PROGRESS_ENV = "NLPCOURSE_PROGRESS"  # set to 0 to hide progress bars (the book build does)


def to_device(obj: Any, device: torch.device | str) -> Any:
    """Move tensors (also inside tuples, lists, dicts and objects with ``.to``) to ``device``."""
    if isinstance(obj, torch.Tensor) or hasattr(obj, "to") and not isinstance(obj, type):
        return obj.to(device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # NamedTuple
        return type(obj)(*(to_device(x, device) for x in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_device(x, device) for x in obj)
    if isinstance(obj, Mapping):
        return {k: to_device(v, device) for k, v in obj.items()}
    return obj


def _progress_default(progress: bool | None) -> bool:
    if progress is not None:
        return progress
    return os.environ.get(PROGRESS_ENV, "1") != "0"


def fit(
    model: nn.Module,
    train_data: Iterable[Any] | Callable[[int], Iterable[Any]],
    loss_fn: Callable[[nn.Module, Any], torch.Tensor],
    optimizer: torch.optim.Optimizer,
    epochs: int,
    *,
    evaluate: Callable[[nn.Module], Mapping[str, float]] | None = None,
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
    """
    if epochs < 1:
        raise CourseError(f"fit: epochs must be >= 1, got {epochs}")
    if accumulate < 1:
        raise CourseError(f"fit: accumulate must be >= 1, got {accumulate}")
    if mode not in ("min", "max"):
        raise CourseError(f"fit: mode must be 'min' or 'max', got {mode!r}")
    if patience is not None and monitor is None:
        raise CourseError("fit: early stopping (patience) needs a metric to monitor (monitor='val_loss', say)")
    if monitor is not None and evaluate is None and not monitor.startswith("train_"):
        raise CourseError(f"fit: monitor={monitor!r} needs an evaluate function that returns it")
    device = torch.device(device) if device is not None else get_device()
    model.to(device)
    show = _progress_default(progress)
    if show:
        from tqdm.auto import tqdm
    history = History()
    best, best_state, bad_epochs = math.inf if mode == "min" else -math.inf, None, 0
    for epoch in range(epochs):
        model.train()
        batches = train_data(epoch) if callable(train_data) else train_data
        if show:
            batches = tqdm(batches, desc=f"epoch {epoch + 1}/{epochs}", leave=False)
        total, n = 0.0, 0
        optimizer.zero_grad(set_to_none=True)
        for i, batch in enumerate(batches):
            loss = loss_fn(model, to_device(batch, device))
            if not torch.isfinite(loss):
                raise CourseError(f"fit: loss became {loss.item()} at epoch {epoch + 1}, batch {i}")
            (loss / accumulate).backward()
            if (i + 1) % accumulate == 0:
                _step(model, optimizer, clip_norm)
            total += loss.item()
            n += 1
        if n == 0:
            raise CourseError(f"fit: train_data gave no batches at epoch {epoch + 1}")
        if n % accumulate:
            _step(model, optimizer, clip_norm)
        if scheduler is not None:
            scheduler.step()
        metrics = {"train_loss": total / n}
        if evaluate is not None:
            model.eval()
            with torch.no_grad():
                metrics.update({k: float(v) for k, v in evaluate(model).items()})
        history.log(**metrics)
        if monitor is not None:
            if monitor not in metrics:
                raise CourseError(f"fit: monitored metric {monitor!r} not among {sorted(metrics)}")
            value = metrics[monitor]
            if (value < best) if mode == "min" else (value > best):
                best, bad_epochs, history.best_epoch = value, 0, epoch
                if restore_best:
                    best_state = copy.deepcopy(model.state_dict())
            else:
                bad_epochs += 1
                if patience is not None and bad_epochs >= patience:
                    history.stopped_early = True
                    break
    if restore_best and best_state is not None:
        model.load_state_dict(best_state)
    return history


def _step(model: nn.Module, optimizer: torch.optim.Optimizer, clip_norm: float | None) -> None:
    if clip_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


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
    raise CourseError(f"save_checkpoint: config must be a dataclass or a dict, got {type(config).__name__}")


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
        raise CourseError(f"load_checkpoint: no checkpoint at {path}")
    try:
        payload = torch.load(path, map_location=device, weights_only=True)
    except Exception as exc:  # torch raises several types for a damaged file
        raise CourseError(f"load_checkpoint: {path} is not a readable checkpoint: {exc}") from exc
    if not isinstance(payload, dict) or payload.get("format_version") != CHECKPOINT_VERSION:
        raise CourseError(f"load_checkpoint: {path} was not written by save_checkpoint (format version mismatch)")
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

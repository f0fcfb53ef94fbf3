"""Devices: which one to use (CUDA, then Apple's MPS, then CPU; ``$NLPCOURSE_DEVICE`` overrides), and
moving tensors there (:func:`to_device`)."""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import Any

import torch

from .errors import ConfigError

DEVICE_ENV = "NLPCOURSE_DEVICE"


def get_device(prefer: str | None = None) -> torch.device:
    """The device to train on: ``prefer`` if given, else ``$NLPCOURSE_DEVICE``, else the best available."""
    name = prefer or os.environ.get(DEVICE_ENV)
    if name:
        try:
            dev = torch.device(name)
        except RuntimeError as exc:
            raise ConfigError(f"get_device: {name!r} is not a device name (try cpu, cuda, cuda:0, mps)") from exc
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise ConfigError(f"get_device: {name!r} was asked for but CUDA is not available")
        if dev.type == "mps" and not torch.backends.mps.is_available():
            raise ConfigError(f"get_device: {name!r} was asked for but MPS is not available")
        return dev
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def available_devices() -> list[torch.device]:
    """CPU always, then CUDA when present: the devices tests and graders compare on."""
    devs = [torch.device("cpu")]
    if torch.cuda.is_available():
        devs.append(torch.device("cuda"))
    return devs


def to_device(obj: Any, device: torch.device | str) -> Any:
    """Move ``obj`` to ``device``: a tensor, or anything with a ``.to`` method (a module, a batch), or
    tuples, lists, NamedTuples and dicts of these, rebuilt around the moved values; anything else is
    returned as it is. Like ``Tensor.to``, a tensor already on ``device`` is returned itself, not copied
    (for fresh copies see :func:`nlpcourse.checking.copy_to`)."""
    if isinstance(obj, torch.Tensor) or hasattr(obj, "to") and not isinstance(obj, type):
        return obj.to(device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # NamedTuple
        return type(obj)(*(to_device(x, device) for x in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_device(x, device) for x in obj)
    if isinstance(obj, Mapping):
        return {k: to_device(v, device) for k, v in obj.items()}
    return obj


@contextlib.contextmanager
def full_float32() -> Iterator[None]:
    """TF32 off for the block, then as it was. On CUDA, cuDNN's convolutions and RNNs round float32 products
    to a 10-bit mantissa by default (TF32): far coarser than float32, which a comparison with the CPU or a
    reference kernel at float32 tolerances needs (the grader's judges and the CUDA tests use this)."""
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved

"""Device choice: CUDA, then Apple's MPS, then CPU; ``$NLPCOURSE_DEVICE`` overrides."""
from __future__ import annotations

import os

import torch

from .errors import CourseError

DEVICE_ENV = "NLPCOURSE_DEVICE"


def get_device(prefer: str | None = None) -> torch.device:
    """The device to train on: ``prefer`` if given, else ``$NLPCOURSE_DEVICE``, else the best available."""
    name = prefer or os.environ.get(DEVICE_ENV)
    if name:
        try:
            dev = torch.device(name)
        except RuntimeError as exc:
            raise CourseError(f"get_device: {name!r} is not a device name (try cpu, cuda, cuda:0, mps)") from exc
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise CourseError(f"get_device: {name!r} was asked for but CUDA is not available")
        if dev.type == "mps" and not torch.backends.mps.is_available():
            raise CourseError(f"get_device: {name!r} was asked for but MPS is not available")
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

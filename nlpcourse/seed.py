"""Seeding: one call makes Python, NumPy and PyTorch (CPU and CUDA) repeatable."""
from __future__ import annotations

import os
import random

import numpy as np
import torch


def seed_everything(seed: int = 0, deterministic: bool = True) -> torch.Generator:
    """Seed every random number generator the course uses and return a fresh seeded ``torch.Generator``.

    With ``deterministic`` PyTorch is asked for deterministic kernels where they exist (a warning,
    not an error, where one does not), so that the book's numbers do not change between builds.
    """
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    if deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.benchmark = False
    g = torch.Generator()
    g.manual_seed(seed)
    return g

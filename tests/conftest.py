import os

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("NLPCOURSE_PROGRESS", "0")


def pytest_collection_modifyitems(config, items):
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA, none available")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)

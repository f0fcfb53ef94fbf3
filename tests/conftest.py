import os

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("NLPCOURSE_PROGRESS", "0")


@pytest.fixture
def one_thread():
    """Torch on one thread for the test (tiny models: threads cost more than they give, and two pytest
    workers share the cores); the module's ``pytestmark = pytest.mark.usefixtures("one_thread")`` asks for it."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def pytest_collection_modifyitems(config, items):
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA, none available")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)

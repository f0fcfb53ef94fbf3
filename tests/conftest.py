import os

import pytest

import nlpcourse  # noqa: F401 - first, before any test module imports torch: the thread policy (nlpcourse/threads.py)
from nlpcourse.device import full_float32
from nlpcourse.threads import use_threads

os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("NLPCOURSE_PROGRESS", "0")


@pytest.fixture
def one_thread():
    """Torch on the tests' threads (one: tiny models, where threads cost more than they give, and two pytest
    workers share the cores); the module's ``pytestmark = pytest.mark.usefixtures("one_thread")`` asks for it."""
    import torch

    before = torch.get_num_threads()
    use_threads("test")
    yield
    torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def cuda_tests_in_full_float32(request):
    """A CUDA test compares with the CPU and with PyTorch's own kernels at float32 tolerances, so TF32 (on by
    default in cuDNN's convolutions and RNNs: a 10-bit mantissa) is off while it runs, and restored after."""
    if request.node.get_closest_marker("gpu") is None:
        yield
        return
    with full_float32():
        yield


#: The test files that take longest, first: ``--dist loadfile`` hands whole files to the two workers in the
#: order they were collected, and a long file handed out last keeps one worker busy while the other idles.
#: The grading queue of every assignment goes first (one worker grades it from the start, the other takes
#: everything else beside it), then the hostile batch, the browser tests and the tiny benchmark runs.
SLOWEST_FIRST = ("test_grading_assignments.py", "test_grading_hostile.py", "test_site.py", "test_pretraining.py",
                 "test_word2vec.py", "test_bert.py", "test_cnn.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA, none available")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)

import os
from pathlib import Path

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
SLOWEST_FIRST = ("test_grading_assignments.py", "test_grading_hostile.py", "test_regrade_parts.py", "test_site.py",
                 "test_pretraining.py", "test_word2vec.py", "test_bert.py", "test_cnn.py")


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


CHROMIUM = Path(os.environ.get("NLPCOURSE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium through Playwright, one per test process: Playwright's sync API keeps its event loop
    running while it is open, so a second ``sync_playwright()`` in the same process fails. Without Chromium or
    the playwright package the browser tests skip, unless CI is set (then they fail); Playwright's own
    browser download is never used."""
    in_ci = os.environ.get("CI", "").strip() not in ("", "0", "false", "no")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if in_ci:
            pytest.fail("the playwright package is not installed (pip install -e '.[test]')")
        pytest.skip("the playwright package is not installed")
    if not CHROMIUM.is_file():
        message = f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium)"
        if in_ci:
            pytest.fail(message + "; CI requires it")
        pytest.skip(message)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()

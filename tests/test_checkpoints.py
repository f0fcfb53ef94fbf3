"""The trained models and benchmark results wherever the package is installed (nlpcourse.data.checkpoints):
in a checkout they are the repository's files; in a student's install they are fetched from a mirror or the
repository's raw files on first use, checked against data/registry.json, and cached."""
from __future__ import annotations

import functools
import http.server
import re
import shutil
import threading
from pathlib import Path

import pytest
from module_support import load_module, load_script

from nlpcourse import CourseError, DataError
from nlpcourse.data import benchmark_results, checkpoint_path, checkpoint_registry
from nlpcourse.data import checkpoints as ck
from nlpcourse.data import registry as registry_mod

ROOT = Path(__file__).resolve().parents[1]
SMALL = "cnn.json"  # a registered file small enough to copy around in tests


def test_the_registry_lists_every_checkpoint_as_committed():
    listed = {name: {"sha256": i.sha256, "bytes": i.bytes} for name, i in checkpoint_registry().items()}
    assert listed == load_script("register_checkpoints").listing(), "run python scripts/register_checkpoints.py"
    assert {"bert.pt", "word2vec_sg.bin", "transformer_preln.pt"} <= set(listed)


def test_every_checkpoint_the_course_loads_is_registered():
    used = set()
    for path in [*ROOT.glob("book/*.md"), *ROOT.glob("solutions/*/*.ipynb"), *ROOT.glob("nlpcourse/**/*.py")]:
        for name in re.findall(r'checkpoint_path\(\\?"([^"\\{]+)\\?"\)', path.read_text()):
            used.add(name)
    assert len(used) >= 10, used  # and f-strings: seq2seq_{name}.pt, bert_{name}.pt
    assert not used - set(checkpoint_registry()), used - set(checkpoint_registry())


def test_in_a_checkout_the_repository_file_is_used():
    assert checkpoint_path("bert.pt") == ROOT / "data" / "checkpoints" / "bert.pt"
    assert benchmark_results("cnn") == __import__("json").loads((ROOT / "benchmarks/results/cnn.json").read_text())


def test_unknown_names_list_the_known_ones():
    with pytest.raises(DataError, match=r"unknown checkpoint 'gpt2\.pt'.*bert\.pt"):
        checkpoint_path("gpt2.pt")
    with pytest.raises(DataError, match=r"no benchmark results 'glue'.*cnn"):
        benchmark_results("glue")


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """The package as a student's install sees it: corpora without checkpoints/, no repository, an empty
    cache; the mirror folder holds a copy of one checkpoint."""
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(ROOT / "data" / "registry.json", data)
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    shutil.copy(ROOT / "data" / "checkpoints" / SMALL, mirror)
    monkeypatch.setenv(registry_mod.DATA_ENV, str(data))
    monkeypatch.setenv("NLPCOURSE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(ck.CHECKPOINT_URL_ENV, raising=False)
    monkeypatch.setattr(ck, "repository_root", lambda: None)
    monkeypatch.setattr(ck, "origin", lambda: {})
    return mirror


def test_a_mirror_folder_serves_the_checkpoint_once_then_the_cache(installed, tmp_path, monkeypatch):
    monkeypatch.setenv(ck.CHECKPOINT_URL_ENV, installed.as_uri() + "/")
    path = checkpoint_path(SMALL)
    assert path == tmp_path / "cache" / "checkpoints" / SMALL
    assert path.read_bytes() == (ROOT / "data" / "checkpoints" / SMALL).read_bytes()
    (installed / SMALL).unlink()  # the mirror goes away: the cached, checked copy is enough
    assert checkpoint_path(SMALL) == path


def test_a_loopback_server_serves_the_checkpoint(installed, monkeypatch):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(installed))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv(ck.CHECKPOINT_URL_ENV, f"http://127.0.0.1:{server.server_port}/")
        assert checkpoint_path(SMALL).read_bytes() == (installed / SMALL).read_bytes()
    finally:
        server.shutdown()
        server.server_close()


def test_an_unreachable_mirror_names_the_file_the_url_and_the_settings(installed, tmp_path, monkeypatch):
    url = (tmp_path / "nowhere").as_uri() + "/"
    monkeypatch.setenv(ck.CHECKPOINT_URL_ENV, url)
    with pytest.raises(CourseError) as err:
        checkpoint_path(SMALL)
    message = str(err.value)
    assert SMALL in message and url + SMALL in message
    assert ck.CHECKPOINT_URL_ENV in message and registry_mod.DATA_ENV in message
    assert not list((tmp_path / "cache" / "checkpoints").iterdir())  # nothing half-written


def test_a_file_that_is_not_the_registered_one_is_refused(installed, tmp_path, monkeypatch):
    (installed / SMALL).write_text('{"not": "the course model"}')
    monkeypatch.setenv(ck.CHECKPOINT_URL_ENV, installed.as_uri())
    with pytest.raises(DataError, match=r"checksum mismatch for checkpoint cnn\.json"):
        checkpoint_path(SMALL)
    assert not list((tmp_path / "cache" / "checkpoints").iterdir())


def test_without_any_address_the_error_says_what_to_set(installed):
    with pytest.raises(DataError, match=rf"checkpoint {SMALL} is not in .*no URL is known.*{ck.CHECKPOINT_URL_ENV}"):
        checkpoint_path(SMALL)


def test_a_copy_of_the_data_folder_with_checkpoints_needs_no_download(installed, monkeypatch):
    folder = Path(registry_mod.data_dir()) / "checkpoints"
    folder.mkdir()
    shutil.copy(installed / SMALL, folder)
    assert checkpoint_path(SMALL) == folder / SMALL


def test_the_default_address_is_the_raw_file_at_the_commit_built(installed, monkeypatch):
    monkeypatch.setattr(ck, "origin", lambda: {"repository": "https://github.com/org/course", "revision": "abc123"})
    asked = []

    def opener(url, timeout):
        asked.append(url)
        raise OSError("offline")

    with pytest.raises(DataError, match="offline"):
        checkpoint_path(SMALL, opener=opener)
    assert asked == [f"https://raw.githubusercontent.com/org/course/abc123/data/checkpoints/{SMALL}"]
    assert ck.raw_file_url("https://gitlab.com/org/course", "abc", "x") is None


@pytest.mark.parametrize("remote, address", [
    ("git@github.com:org/course.git", "https://github.com/org/course"),
    ("https://github.com/org/course.git", "https://github.com/org/course"),
    ("https://x-access-token:secret@github.com/org/course", "https://github.com/org/course"),
    ("ssh://git@github.com/org/course.git", "https://github.com/org/course"),
    ("/home/me/course", ""),
])
def test_the_wheel_records_the_repository_as_a_web_address(remote, address):
    assert load_module("course_setup", ROOT / "setup.py").web_address(remote) == address

"""Tests of nlpcourse.data.download, with a fake opener: no network."""
from __future__ import annotations

import hashlib
import importlib
import io
import re
import urllib.error
from pathlib import Path

import pytest

from nlpcourse.errors import DataError

# The package re-exports the function download(), which shadows the module's name there.
dl = importlib.import_module("nlpcourse.data.download")

HEX64 = re.compile(r"[0-9a-f]{64}")
PAYLOADS = {"https://example.org/a.txt": b"alpha\n" * 1000, "https://example.org/b.txt": b"beta\n"}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_set(name: str = "toy", digests: dict[str, str | None] | None = None) -> dl.StandardSet:
    digests = digests or {url: sha(data) for url, data in PAYLOADS.items()}
    files = tuple(dl.RemoteFile(url, url.rsplit("/", 1)[1], digests[url]) for url in PAYLOADS)
    return dl.StandardSet(name, "a toy set", files, "CC0", "nobody (2024)", "austen")


class FakeOpener:
    """Serves PAYLOADS and records every call."""

    def __init__(self, error: BaseException | None = None):
        self.error = error
        self.calls: list[tuple[str, float]] = []

    def __call__(self, url: str, timeout: float):
        self.calls.append((url, timeout))
        if self.error is not None:
            raise self.error
        return io.BytesIO(PAYLOADS[url])


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_download_writes_verified_files_and_returns_folder(tmp_path):
    opener = FakeOpener()
    folder = dl.download(make_set(), cache=tmp_path, timeout=5.0, opener=opener)
    assert folder == tmp_path / "toy"
    assert (folder / "a.txt").read_bytes() == PAYLOADS["https://example.org/a.txt"]
    assert (folder / "b.txt").read_bytes() == PAYLOADS["https://example.org/b.txt"]
    assert leftovers(folder) == ["a.txt", "b.txt"]  # no temporary file left
    assert [t for _, t in opener.calls] == [5.0, 5.0]


def test_second_call_uses_the_cache(tmp_path):
    dl.download(make_set(), cache=tmp_path, opener=FakeOpener())
    again = FakeOpener()
    dl.download(make_set(), cache=tmp_path, opener=again)
    assert again.calls == []


def test_corrupt_cached_file_is_downloaded_again(tmp_path):
    folder = dl.download(make_set(), cache=tmp_path, opener=FakeOpener())
    (folder / "a.txt").write_bytes(b"tampered")
    again = FakeOpener()
    dl.download(make_set(), cache=tmp_path, opener=again)
    assert [u for u, _ in again.calls] == ["https://example.org/a.txt"]
    assert (folder / "a.txt").read_bytes() == PAYLOADS["https://example.org/a.txt"]


def test_checksum_mismatch_names_file_and_both_digests_and_leaves_nothing(tmp_path):
    wrong = "0" * 64
    digests = {url: sha(data) for url, data in PAYLOADS.items()}
    digests["https://example.org/b.txt"] = wrong
    with pytest.raises(DataError) as err:
        dl.download(make_set(digests=digests), cache=tmp_path, opener=FakeOpener())
    msg = str(err.value)
    assert "b.txt" in msg and wrong in msg and sha(PAYLOADS["https://example.org/b.txt"]) in msg
    assert leftovers(tmp_path / "toy") == ["a.txt"]  # b.txt never appears, nor its .part file


@pytest.mark.parametrize(
    "error",
    [urllib.error.URLError("Temporary failure in name resolution"), TimeoutError("timed out"),
     ConnectionRefusedError("refused")],
)
def test_offline_points_to_the_bundled_corpus(tmp_path, error):
    with pytest.raises(DataError) as err:
        dl.download(make_set(), cache=tmp_path, opener=FakeOpener(error))
    msg = str(err.value)
    assert "offline" in msg and "toy (a.txt)" in msg and "https://example.org/a.txt" in msg
    assert "load_text('austen')" in msg and str(tmp_path / "toy") in msg
    assert leftovers(tmp_path / "toy") == []


def test_http_error_is_not_reported_as_offline(tmp_path):
    error = urllib.error.HTTPError("https://example.org/a.txt", 404, "Not Found", {}, None)
    with pytest.raises(DataError, match="HTTP 404") as err:
        dl.download(make_set(), cache=tmp_path, opener=FakeOpener(error))
    assert "offline" not in str(err.value)


def test_transfer_cut_midway_leaves_no_partial_file(tmp_path):
    class Broken(io.BytesIO):
        def read(self, size=-1):
            raise ConnectionResetError("reset by peer")

    with pytest.raises(DataError, match="offline"):
        dl.download(make_set(), cache=tmp_path, opener=lambda url, timeout: Broken())
    assert leftovers(tmp_path / "toy") == []


def test_fallback_names_the_right_loader(tmp_path):
    sst = dl.StandardSet("sst", "d", make_set().files, "l", "c", "rotten_tomatoes")
    with pytest.raises(DataError, match=r"load_reviews\('rotten_tomatoes'\)"):
        dl.download(sst, cache=tmp_path, opener=FakeOpener(urllib.error.URLError("down")))


def test_unknown_name_lists_known_sets(tmp_path):
    with pytest.raises(DataError) as err:
        dl.download("imagenet", cache=tmp_path, opener=FakeOpener())
    for name in dl.STANDARD_SETS:
        assert name in str(err.value)


def test_unpinned_set_is_refused_before_any_download(tmp_path):
    digests = {url: None for url in PAYLOADS}
    opener = FakeOpener()
    with pytest.raises(DataError, match="no SHA-256 is pinned"):
        dl.download(make_set(digests=digests), cache=tmp_path, opener=opener)
    assert opener.calls == []


def test_cache_env_override(tmp_path, monkeypatch):
    monkeypatch.setenv("NLPCOURSE_CACHE", str(tmp_path / "elsewhere"))
    assert dl.cache_dir() == tmp_path / "elsewhere"
    folder = dl.download(make_set(), opener=FakeOpener())
    assert folder == tmp_path / "elsewhere" / "toy"
    monkeypatch.delenv("NLPCOURSE_CACHE")
    assert dl.cache_dir() == Path.home() / ".cache" / "nlpcourse"


def test_registered_name_is_looked_up(tmp_path, monkeypatch):
    monkeypatch.setitem(dl.STANDARD_SETS, "toy", make_set())
    assert dl.download("toy", cache=tmp_path, opener=FakeOpener()) == tmp_path / "toy"


def test_standard_sets_are_complete_and_pinned():
    assert set(dl.STANDARD_SETS) == {"ptb", "wikitext2", "sst2", "multi30k", "text8"}
    fallbacks = {"ptb": "austen", "wikitext2": "austen", "text8": "austen",
                 "sst2": "rotten_tomatoes", "multi30k": "kjv_en_es"}
    for key, spec in dl.STANDARD_SETS.items():
        assert spec.name == key and spec.description and spec.licence and spec.citation
        assert spec.offline_fallback == fallbacks[key]
        assert spec.files
        names = [f.filename for f in spec.files]
        assert len(set(names)) == len(names)
        for remote in spec.files:
            assert remote.url.startswith(("https://", "http://"))
            assert remote.filename == Path(remote.filename).name
            assert remote.sha256 is None or HEX64.fullmatch(remote.sha256), remote
    assert len(dl.STANDARD_SETS["ptb"].files) == 3
    assert len(dl.STANDARD_SETS["multi30k"].files) == 3


def test_fallback_corpora_exist_in_the_bundled_registry():
    from nlpcourse.data.registry import registry

    bundled = registry()
    for spec in dl.STANDARD_SETS.values():
        assert spec.offline_fallback in bundled

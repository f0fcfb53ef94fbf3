"""The course's trained models and benchmark results, wherever the package is installed.

A repository checkout holds the trained models in ``data/checkpoints/`` (79 MB). A student's ``pip install``
holds only the corpora (about 10 MB, package data): each model is fetched the first time a chapter asks for it,
checked against the SHA-256 that ``data/registry.json`` lists under ``"checkpoints"``, and cached. Where from:

1. ``$NLPCOURSE_DATA_DIR/checkpoints/`` or the repository's ``data/checkpoints/``, when the file is there;
2. the cache, ``$NLPCOURSE_CACHE/checkpoints/`` (default ``~/.cache/nlpcourse/checkpoints/``);
3. ``$NLPCOURSE_CHECKPOINT_URL`` + the file's name: a mirror for an offline classroom (``file:///srv/course/``
   or ``http://server/course/``);
4. otherwise the raw file in the repository the package was built from, at the commit it was built from
   (``nlpcourse/_origin.json``, written when the wheel is built).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import DataError
from .download import CACHE_ENV, Opener, cache_dir, fetch_verified
from .registry import (
    CHECKPOINTS_KEY,
    DATA_ENV,
    data_dir,
    package_data_dir,
    raw_registry,
    repository_root,
    verify,
)

#: Environment variable naming a mirror of ``data/checkpoints/`` (a URL ending in ``/``).
CHECKPOINT_URL_ENV = "NLPCOURSE_CHECKPOINT_URL"


@dataclass(frozen=True)
class CheckpointInfo:
    """One trained model file as ``registry.json`` lists it."""

    file: str  # plain file name in data/checkpoints/, e.g. "bert.pt"
    sha256: str  # hex digest of the file as committed
    bytes: int  # its size, to say how much a first use downloads


def checkpoint_registry(folder: Path | None = None) -> dict[str, CheckpointInfo]:
    """Every trained model that ``registry.json`` lists, by file name."""
    listed = raw_registry(folder).get(CHECKPOINTS_KEY, {})
    return {name: CheckpointInfo(file=name, **fields) for name, fields in listed.items()}


def checkpoint_info(file: str) -> CheckpointInfo:
    """The registry's entry for ``file``; a clear error lists the known files otherwise."""
    known = checkpoint_registry()
    if file not in known:
        raise DataError(f"unknown checkpoint {file!r}; the course's checkpoints are: {', '.join(sorted(known))}")
    return known[file]


@lru_cache(maxsize=1)
def origin() -> dict[str, str]:
    """``{"repository": URL, "revision": commit}`` of the source a wheel was built from; empty in a checkout."""
    path = package_data_dir().parent / "_origin.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def raw_file_url(repository: str, revision: str, path: str) -> str | None:
    """The URL serving ``path`` of a GitHub repository at ``revision``; None for another host."""
    parts = urlsplit(repository)
    if parts.netloc.lower() != "github.com" or parts.path.strip("/").count("/") != 1 or not revision:
        return None
    return f"https://raw.githubusercontent.com/{parts.path.strip('/')}/{revision}/{path}"


def checkpoint_url(file: str) -> str | None:
    """Where ``file`` is downloaded from: the mirror of ``$NLPCOURSE_CHECKPOINT_URL``, else the package's
    own repository at its commit; None when neither is known."""
    mirror = os.environ.get(CHECKPOINT_URL_ENV, "").strip()
    if mirror:
        return mirror.rstrip("/") + "/" + file
    where = origin()
    return raw_file_url(where.get("repository", ""), where.get("revision", ""), f"data/checkpoints/{file}")


def _settings() -> str:
    return (f"set {CHECKPOINT_URL_ENV} to a mirror of data/checkpoints/ (file:///folder/ or http://server/path/), "
            f"or {DATA_ENV} to a copy of the course's data/ folder with its checkpoints/ inside")


def checkpoint_path(file: str, timeout: float = 60.0, opener: Opener | None = None) -> Path:
    """The local path of the trained model ``file`` (``"bert.pt"``), fetched and checked on first use.

    Raises :class:`DataError` naming the file, the URL and the settings to change when the file is neither
    here nor reachable, or when what arrives is not the registered file."""
    info = checkpoint_info(file)
    local = data_dir() / "checkpoints" / file
    if local.is_file():
        return _verified(local, info)
    cached = cache_dir() / "checkpoints" / file
    url = checkpoint_url(file)
    if url is None:
        if cached.is_file():
            return _verified(cached, info)
        raise DataError(f"checkpoint {file} is not in {local.parent} nor in {cached.parent}, and no URL is known "
                        f"to fetch it from (a package built without its repository's address): {_settings()}")
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot create the cache folder {cached.parent}: {exc}; set {CACHE_ENV} to a writable "
                        "folder") from exc
    megabytes = f"{info.bytes / 1e6:.1f} MB"
    return fetch_verified(url, cached, info.sha256, f"checkpoint {file} ({megabytes}) from {url}",
                          _settings(), timeout, opener)


def _verified(path: Path, info: CheckpointInfo) -> Path:
    try:
        return verify(path, info.sha256, f"checkpoint {info.file}")
    except DataError as exc:
        if repository_root() is None:
            raise
        raise DataError(f"{exc}; after training it again, register the new file with "
                        "python scripts/register_checkpoints.py") from exc


def benchmark_results(name: str) -> dict:
    """The measured results of ``benchmarks/<name>.py`` (``benchmarks/results/<name>.json``), which the
    chapters quote: the repository's file in a checkout, the copy inside the package otherwise."""
    beside = Path(__file__).resolve().parents[2] / "benchmarks" / "results"  # a checkout's
    folder = beside if beside.is_dir() else package_data_dir() / "results"
    path = folder / f"{name}.json"
    if not path.is_file():
        known = sorted(p.stem for p in folder.glob("*.json"))
        raise DataError(f"no benchmark results {name!r} in {folder}; there are: {', '.join(known) or 'none'}")
    return json.loads(path.read_text(encoding="utf-8"))

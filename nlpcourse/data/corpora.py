"""Readers for the bundled corpora. Each returns plain Python data; tokenising is a separate step."""
from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Iterator
from typing import NamedTuple

from ..errors import DataError
from .registry import dataset_info, dataset_path


def _read(name: str, expected_format: str | tuple[str, ...]) -> str:
    info = dataset_info(name)
    formats = (expected_format,) if isinstance(expected_format, str) else expected_format
    if info.format not in formats:
        raise DataError(f"dataset {name!r} has format {info.format!r}, this reader needs {' or '.join(formats)}")
    path = dataset_path(name)
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise DataError(f"dataset {name!r}: cannot read {path}: {exc}") from exc
    if not text.strip():
        raise DataError(f"dataset {name!r}: {path} is empty")
    return text


def load_text(name: str) -> str:
    """The whole corpus as one string (any text-like corpus: austen, shakespeare, kjv)."""
    return _read(name, ("text", "lines"))


def load_lines(name: str) -> list[str]:
    """Non-empty lines of a corpus (for ``kjv``: one verse per line)."""
    return [line for line in _read(name, ("text", "lines")).splitlines() if line.strip()]


class Review(NamedTuple):
    """One movie-review snippet of the Pang & Lee (2005) sentence polarity data."""

    text: str  # the snippet
    label: int  # 1 = fresh (positive), 0 = rotten (negative)
    movie: str  # movie identifier; use it to split so that no movie is in two splits


def load_reviews(name: str = "rotten_tomatoes") -> list[Review]:
    """The labelled movie-review snippets."""
    rows = csv.DictReader(io.StringIO(_read(name, "csv")))
    out = []
    for i, row in enumerate(rows):
        if row.get("label") not in ("fresh", "rotten") or not row.get("text"):
            raise DataError(f"dataset {name!r}: row {i + 2} has no valid label/text: {row!r}")
        out.append(Review(row["text"], 1 if row["label"] == "fresh" else 0, row.get("movie", "")))
    return out


def load_parallel(name: str = "kjv_en_es") -> list[tuple[str, str]]:
    """Sentence pairs (source, target) of a TAB-separated parallel corpus."""
    pairs = []
    for i, line in enumerate(_read(name, "tsv").splitlines()):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2:
            raise DataError(f"dataset {name!r}: line {i + 1} has {len(parts)} TAB-separated fields, expected 2")
        pairs.append((parts[0], parts[1]))
    return pairs


def _brown_rows(name: str) -> Iterator[tuple[str, list[str]]]:
    """(file id, the sentence's word/TAG items) of each line of a Brown file; lines without them skipped."""
    for line in _read(name, "brown").splitlines():
        parts = line.split("\t")
        if len(parts) >= 3:
            yield parts[0], parts[2].split()


def load_brown_documents(name: str = "brown_tagged") -> list[tuple[str, list[tuple[str, str]]]]:
    """Tagged sentences of the Brown corpus, each with the document it comes from: (file id, [(word, tag)])."""
    return [(doc, [(word, tag) for word, _, tag in (item.rpartition("/") for item in items)])
            for doc, items in _brown_rows(name)]


def load_brown_words(name: str = "brown_tagged", lengths: range | None = None) -> list[tuple[str, list[str]]]:
    """The Brown corpus's sentences without their tags, each with its document: (file id, [word]); with
    ``lengths``, only the sentences whose number of words is in it (the others are not parsed)."""
    return [(doc, [item.rpartition("/")[0] for item in items]) for doc, items in _brown_rows(name)
            if lengths is None or len(items) in lengths]


def load_brown(name: str = "brown_tagged") -> list[list[tuple[str, str]]]:
    """Tagged sentences of the Brown corpus as lists of (word, tag)."""
    return [sent for _, sent in load_brown_documents(name)]

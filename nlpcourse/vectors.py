"""Word vectors: storage in the word2vec format, nearest neighbours, and the standard evaluations.

The evaluations use gensim's implementations and gensim's copies of the standard sets, so that the
numbers mean what they mean in the literature:

* analogies (Mikolov et al., 2013a): ``questions-words.txt``, 19,544 questions "a is to b as c is to ?"
  in 14 sections; a question counts only if its four words are in the vocabulary (the *coverage*);
  3CosAdd (``KeyedVectors.evaluate_word_analogies``) and 3CosMul (Levy & Goldberg, 2014;
  ``KeyedVectors.most_similar_cosmul``);
* word similarity: WordSim-353 (Finkelstein et al., 2002) and SimLex-999 (Hill et al., 2015), the
  Spearman correlation between human ratings and cosine similarities on the pairs covered.
"""
from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np
import torch

from .errors import ConfigError, DataError, FormatError, ShapeError, UnknownNameError

#: The evaluation sets gensim ships (in ``gensim/test/test_data``), by the names used here.
EVALUATION_FILES = {
    "analogies": "questions-words.txt",
    "wordsim353": "wordsim353.tsv",
    "simlex999": "simlex999.txt",
}


def evaluation_path(name: str) -> Path:
    """Path of a standard evaluation set shipped with gensim: ``analogies``, ``wordsim353``, ``simlex999``."""
    if name not in EVALUATION_FILES:
        raise UnknownNameError(f"unknown evaluation set {name!r}; choose one of {sorted(EVALUATION_FILES)}")
    from gensim.test.utils import datapath

    path = Path(datapath(EVALUATION_FILES[name]))
    if not path.is_file():
        raise DataError(f"{path} is missing: reinstall gensim (it ships the evaluation sets)")
    return path


@dataclass
class WordVectors:
    """One vector per word: ``vectors[i]`` is the vector of ``words[i]``."""

    words: list[str]  # V words, in the order of the rows
    vectors: torch.Tensor  # (V,D) float32
    index: dict[str, int] = field(init=False, repr=False)  # word -> row

    def __post_init__(self) -> None:
        if self.vectors.dim() != 2 or self.vectors.shape[0] != len(self.words):
            raise ShapeError(f"WordVectors: {len(self.words)} words but vectors of shape {tuple(self.vectors.shape)}")
        self.vectors = self.vectors.detach().float().cpu()
        self.index = {w: i for i, w in enumerate(self.words)}
        if len(self.index) != len(self.words):
            dup = next(w for i, w in enumerate(self.words) if self.index[w] != i)
            raise ConfigError(f"WordVectors: the word {dup!r} occurs twice")

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.index

    def __getitem__(self, word: str) -> torch.Tensor:
        if word not in self.index:
            raise UnknownNameError(f"{word!r} is not in the vocabulary ({len(self)} words)")
        return self.vectors[self.index[word]]

    @property
    def dim(self) -> int:
        return self.vectors.shape[1]

    def unit(self) -> torch.Tensor:
        """(V,D) the vectors scaled to length 1 (a zero vector stays zero)."""
        return self.vectors / self.vectors.norm(dim=1, keepdim=True).clamp_min(1e-12)

    def first(self, n: int) -> WordVectors:
        """The first ``n`` words (the most frequent ones, for vectors saved in frequency order)."""
        return WordVectors(self.words[:n], self.vectors[:n].clone())

    # ------------------------------------------------------------------ gensim

    def to_gensim(self):
        """The same vectors as a gensim ``KeyedVectors`` (a zero vector, which has no direction, gets a
        tiny length so that gensim's cosines stay finite)."""
        from gensim.models import KeyedVectors

        kv = KeyedVectors(self.dim)
        vecs = self.vectors.clone()
        vecs[vecs.norm(dim=1) == 0, 0] = 1e-12
        kv.add_vectors(self.words, vecs.numpy())
        return kv

    @classmethod
    def from_gensim(cls, kv) -> WordVectors:
        return cls(list(kv.index_to_key), torch.from_numpy(np.asarray(kv.vectors, dtype=np.float32)).clone())

    def nearest(self, word: str, k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` words with the highest cosine similarity to ``word`` (itself excluded)."""
        self[word]  # a clear KeyError for an unknown word
        return [(w, float(s)) for w, s in self.to_gensim().most_similar(word, topn=k)]

    # ------------------------------------------------------------------ the word2vec file format

    def save(self, path: str | Path, binary: bool = True) -> Path:
        """Write the word2vec format (``binary``: float32 rows; else text), gzipped if ``path`` ends in
        ``.gz``; gensim reads it with ``KeyedVectors.load_word2vec_format(path, binary=...)``. The file
        is written next to ``path`` first and renamed, so a reader never sees half a file."""
        path = Path(path)
        for w in self.words:
            if not w or any(ch.isspace() for ch in w):
                raise FormatError(f"the word2vec format cannot store the word {w!r} (empty or with white space)")
        tmp = path.with_name(path.name + ".tmp")
        opener = gzip.open if path.suffix == ".gz" else open
        V, D = self.vectors.shape
        with opener(tmp, "wb") as fh:
            fh.write(f"{V} {D}\n".encode())
            rows = self.vectors.numpy().astype("<f4")
            for w, row in zip(self.words, rows):
                if binary:
                    fh.write(w.encode("utf-8") + b" " + row.tobytes() + b"\n")
                else:
                    fh.write((w + " " + " ".join(f"{x:.6g}" for x in row) + "\n").encode("utf-8"))
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: str | Path, binary: bool | None = None, limit: int | None = None) -> WordVectors:
        """Read the word2vec format (binary or text; ``binary=None`` tells them apart; ``.gz`` is fine);
        ``limit``: only the first ``limit`` words."""
        path = Path(path)
        if not path.is_file():
            raise DataError(f"no word-vector file at {path}")
        opener = gzip.open if path.suffix == ".gz" else open
        try:
            with opener(path, "rb") as fh:
                return cls._read(fh, path, binary, limit)
        except (OSError, EOFError, UnicodeDecodeError, ValueError) as exc:
            raise DataError(f"{path} is not a readable word2vec file: {exc}") from exc

    @classmethod
    def _read(cls, fh: IO[bytes], path: Path, binary: bool | None, limit: int | None) -> WordVectors:
        first = fh.readline()
        header = first.split()
        if len(header) != 2:
            raise FormatError(f"the first line should be '<number of words> <dimension>', got {first[:80]!r}")
        V, D = int(header[0]), int(header[1])
        n = V if limit is None else min(V, limit)
        rest = fh.read()
        if binary is None:
            binary = not _looks_like_text(rest[: 4 * (D + 40)], D)
        words, rows = [], np.empty((n, D), dtype=np.float32)
        if binary:
            pos = 0
            for i in range(n):
                while rest[pos:pos + 1] in (b"\n", b" "):
                    pos += 1
                end = rest.index(b" ", pos)
                words.append(rest[pos:end].decode("utf-8"))
                start = end + 1
                if start + 4 * D > len(rest):
                    raise FormatError(f"the file ends inside the vector of word {i + 1} of {V}")
                rows[i] = np.frombuffer(rest, dtype="<f4", count=D, offset=start)
                pos = start + 4 * D
        else:
            lines = rest.decode("utf-8").splitlines()
            if len(lines) < n:
                raise FormatError(f"the header announces {V} words but there are {len(lines)} lines")
            for i, line in enumerate(lines[:n]):
                parts = line.rstrip().split(" ")
                if len(parts) != D + 1:
                    raise FormatError(f"line {i + 2} has {len(parts) - 1} numbers, expected {D}")
                words.append(parts[0])
                rows[i] = np.asarray(parts[1:], dtype=np.float32)
        return cls(words, torch.from_numpy(rows))


def _looks_like_text(head: bytes, dim: int) -> bool:
    try:
        first = head.decode("utf-8").split("\n", 1)[0]
    except UnicodeDecodeError:
        return False
    parts = first.split(" ")
    if len(parts) != dim + 1:
        return False
    try:
        [float(x) for x in parts[1:]]
    except ValueError:
        return False
    return True


# ------------------------------------------------------------------ evaluation


@dataclass
class AnalogyResult:
    """Accuracy on the analogy questions whose four words are in the vocabulary."""

    method: str  # "3CosAdd" or "3CosMul"
    accuracy: float  # correct / covered
    correct: int
    covered: int  # questions with all four words in the vocabulary
    total: int  # questions in the file
    sections: dict[str, tuple[int, int]]  # section -> (correct, covered)

    @property
    def coverage(self) -> float:
        return self.covered / self.total if self.total else 0.0


def read_analogies(path: str | Path | None = None) -> list[tuple[str, tuple[str, str, str, str]]]:
    """(section, (a, b, c, d)) for every question of ``questions-words.txt``, lower-cased."""
    path = Path(path) if path is not None else evaluation_path("analogies")
    out, section = [], ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith(":"):
            section = line[1:].strip()
        elif line.strip():
            a, b, c, d = line.lower().split()
            out.append((section, (a, b, c, d)))
    return out


def evaluate_analogies(wv: WordVectors, method: str = "3CosAdd", path: str | Path | None = None,
                       restrict: int | None = None) -> AnalogyResult:
    """Analogy accuracy with gensim: a question counts if its four words are among the first
    ``restrict`` words (all, by default); the answer is the best word other than a, b and c."""
    questions = read_analogies(path)
    kv = wv.to_gensim()
    limit = restrict or len(wv)
    known = set(wv.words[:limit])
    sections: dict[str, list[int]] = {}
    if method == "3CosAdd":
        src = path if path is not None else evaluation_path("analogies")
        _, per_section = kv.evaluate_word_analogies(str(src), restrict_vocab=limit, case_insensitive=True)
        for sec in per_section:
            if sec["section"] != "Total accuracy":
                sections[sec["section"]] = [len(sec["correct"]), len(sec["correct"]) + len(sec["incorrect"])]
    elif method == "3CosMul":
        for section, (a, b, c, d) in questions:
            tally = sections.setdefault(section, [0, 0])
            if not {a, b, c, d} <= known:
                continue
            best = kv.most_similar_cosmul(positive=[b, c], negative=[a], topn=1, restrict_vocab=limit)
            tally[0] += int(best[0][0] == d)
            tally[1] += 1
    else:
        raise ConfigError(f"evaluate_analogies: method must be '3CosAdd' or '3CosMul', got {method!r}")
    correct = sum(c for c, _ in sections.values())
    covered = sum(n for _, n in sections.values())
    return AnalogyResult(method, correct / covered if covered else 0.0, correct, covered, len(questions),
                         {k: (v[0], v[1]) for k, v in sections.items()})


@dataclass
class SimilarityResult:
    """Spearman (and Pearson) correlation of cosine similarities with human ratings."""

    dataset: str
    spearman: float
    pearson: float
    covered: int  # pairs with both words in the vocabulary
    total: int


def evaluate_similarity(wv: WordVectors, dataset: str = "wordsim353") -> SimilarityResult:
    """Correlation with human similarity ratings on ``wordsim353`` or ``simlex999`` (gensim's
    ``evaluate_word_pairs``: pairs with an unknown word are left out, and counted)."""
    import logging

    path = evaluation_path(dataset)
    kv = wv.to_gensim()
    logging.getLogger("gensim.models.keyedvectors").setLevel(logging.WARNING)
    pearson, spearman, oov = kv.evaluate_word_pairs(str(path), case_insensitive=True)
    total = sum(1 for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip() and not line.startswith("#"))
    covered = round(total * (1 - oov / 100.0))
    return SimilarityResult(dataset, float(spearman.statistic if hasattr(spearman, "statistic") else spearman[0]),
                            float(pearson.statistic if hasattr(pearson, "statistic") else pearson[0]), covered, total)


def evaluate_all(wv: WordVectors) -> dict[str, float]:
    """The four headline numbers of the chapter and the benchmark."""
    add = evaluate_analogies(wv, "3CosAdd")
    ws, sl = evaluate_similarity(wv, "wordsim353"), evaluate_similarity(wv, "simlex999")
    return {"analogy_accuracy": add.accuracy, "analogy_covered": add.covered, "analogy_total": add.total,
            "ws353_spearman": ws.spearman, "simlex_spearman": sl.spearman}

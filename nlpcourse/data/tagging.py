"""Part-of-speech tagging data: the bundled Brown corpus, split by document.

Tags are Brown's, with the markers that say where a word stands rather than what it is taken off:
``-tl`` (in a title), ``-hl`` (in a headline), ``-nc`` (cited) and ``fw-`` (a foreign word keeps the tag of
its role), so that ``nn-tl`` counts as ``nn``. Contractions keep their compound tags (``ppss+md``).
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from ..errors import ConfigError
from .corpora import load_brown_documents
from .splits import split_indices
from .vocab import Vocab

_MARKERS = re.compile(r"(-tl|-hl|-nc)+$")
Sentence = list[tuple[str, str]]  # (word, tag) pairs


def simple_tag(tag: str) -> str:
    """Brown's tag without the position markers: ``nn-tl`` -> ``nn``, ``fw-in`` -> ``in``."""
    tag = _MARKERS.sub("", tag.lower())
    tag = tag[3:] if tag.startswith("fw-") else tag
    return "+".join(_MARKERS.sub("", t) for t in tag.split("+")) or tag


@lru_cache(maxsize=1)
def brown_documents() -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    """Each sentence of the Brown corpus with the document it comes from: (file id, ((word, tag), ..))."""
    return tuple((doc, tuple((w, simple_tag(t)) for w, t in sent if w))
                 for doc, sent in load_brown_documents() if any(w for w, _ in sent))


@dataclass
class TaggingSplit:
    """Brown sentences split by document, with a word vocabulary and the tag set of the training part."""

    train: list[Sentence]
    valid: list[Sentence]
    test: list[Sentence]
    words: Vocab  # lower-cased training words seen min_freq times or more
    tags: list[str]  # the training part's tags, most frequent first

    def tag_ids(self, sentences: Sequence[Sentence]) -> list[list[int]]:
        """Tag ids of each sentence; a tag never seen in training is -1 (always counted wrong)."""
        index = {t: i for i, t in enumerate(self.tags)}
        return [[index.get(t, -1) for _, t in s] for s in sentences]


def tagging_split(fractions: Sequence[float] = (0.8, 0.1, 0.1), seed: int = 0, min_freq: int = 2) -> TaggingSplit:
    """The Brown corpus's 500 documents shuffled with ``seed`` and dealt to train/valid/test."""
    docs = brown_documents()
    parts = split_indices(len(docs), fractions, seed, groups=[d for d, _ in docs])
    if len(parts) != 3:
        raise ConfigError(f"tagging_split: fractions must give train, valid and test, got {tuple(fractions)}")
    train, valid, test = ([list(docs[i][1]) for i in idx] for idx in parts)
    words = Vocab.build(([w.lower() for w, _ in s] for s in train), min_freq=min_freq)
    tags = [t for t, _ in sorted(Counter(t for s in train for _, t in s).items(), key=lambda x: (-x[1], x[0]))]
    return TaggingSplit(train, valid, test, words, tags)

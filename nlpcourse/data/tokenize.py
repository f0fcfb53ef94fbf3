"""Word and character tokenizers. Simple, deterministic and the same everywhere in the course."""
from __future__ import annotations

import re

from ..errors import ArgumentTypeError

# Words keep inner apostrophes and hyphens ("don't", "well-known"); numbers and punctuation are tokens.
_WORD = re.compile(r"[A-Za-z\u00C0-\u024F]+(?:['\u2019\-][A-Za-z\u00C0-\u024F]+)*|\d+(?:[.,]\d+)*|[^\w\s]")
_SENT_END = re.compile(r"(?<=[.!?])\s+(?=[\"'A-Z\u00C0-\u00DD])")


def word_tokenize(text: str, lower: bool = True) -> list[str]:
    """Split ``text`` into word and punctuation tokens.

    >>> word_tokenize("Don't panic, Mr. Darcy!")
    ["don't", 'panic', ',', 'mr', '.', 'darcy', '!']
    """
    if not isinstance(text, str):
        raise ArgumentTypeError(f"word_tokenize expects a str, got {type(text).__name__}: {text!r:.60}")
    tokens = _WORD.findall(text)
    return [t.lower() for t in tokens] if lower else tokens


def char_tokenize(text: str, lower: bool = False) -> list[str]:
    """Split ``text`` into characters; runs of white space become one space."""
    if not isinstance(text, str):
        raise ArgumentTypeError(f"char_tokenize expects a str, got {type(text).__name__}: {text!r:.60}")
    text = re.sub(r"\s+", " ", text)
    return list(text.lower() if lower else text)


def sentences(text: str) -> list[str]:
    """Split running text into sentences at ., ! or ? followed by a capital (a heuristic, good enough here)."""
    flat = re.sub(r"\s+", " ", text).strip()
    return [s for s in _SENT_END.split(flat) if s]

"""A corpus as one token stream for language modelling, split by position (the RNN LM chapter's protocol).

The protocol every perplexity of the chapter, the assignment and ``benchmarks/rnnlm.py`` follows:

* the corpus is one stream of tokens: lower-cased a-z words (``level="word"``) or characters with runs
  of white space made one space (``level="char"``);
* it is split by position: the first 80% train, the next 10% validation, the last 10% test, so
  that no sentence is in two parts and the test text comes after everything trained on;
* the vocabulary is ``<unk>`` (id 0) and then the ``max_vocab`` most frequent *training* tokens, most
  frequent first (ties in alphabetical order); every other token is ``<unk>``;
* perplexity is over all test tokens, ``<unk>`` included, each predicted with the full preceding
  context (which reaches back into the validation part for the first test tokens).

Shapes: N tokens of a part.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import torch

from ..errors import ConfigError, UnknownNameError
from .corpora import load_text
from .tokenize import char_tokenize

LM_UNK = "<unk>"  # id 0 of every LM vocabulary
LEVELS = ("word", "char")
_AZ_WORD = re.compile(r"[a-z]+")


def lm_tokens(text: str, level: str = "word") -> list[str]:
    """The tokens of ``text`` under the protocol: a-z words, lower-cased, or characters."""
    if level == "word":
        return _AZ_WORD.findall(text.lower())
    if level == "char":
        return char_tokenize(text)
    raise ConfigError(f"lm_tokens: level must be one of {LEVELS}, got {level!r}")


@dataclass(frozen=True)
class LMCorpus:
    """The three parts of a corpus as id streams, and the vocabulary they index."""

    itos: list[str]  # id -> token; id 0 is <unk>, then the training part's tokens, most frequent first
    train: torch.Tensor  # (N_train,) long
    valid: torch.Tensor  # (N_valid,) long, the text right after the training part
    test: torch.Tensor  # (N_test,) long, the text right after the validation part
    name: str = ""  # the bundled corpus it came from
    level: str = "word"  # "word" or "char"
    stoi: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "stoi", {t: i for i, t in enumerate(self.itos)})

    @property
    def vocab_size(self) -> int:
        """V: the number of ids, ``<unk>`` included (a uniform model has perplexity V)."""
        return len(self.itos)

    def encode(self, tokens: Sequence[str]) -> torch.Tensor:
        """Ids of ``tokens`` (a token outside the vocabulary is ``<unk>``): (N,) long."""
        if isinstance(tokens, str):
            tokens = lm_tokens(tokens, self.level)
        return torch.tensor([self.stoi.get(t, 0) for t in tokens], dtype=torch.long)

    def decode(self, ids: Sequence[int] | torch.Tensor) -> str:
        """The text of ``ids``: words joined by spaces, characters joined as they are."""
        sep = " " if self.level == "word" else ""
        out = []
        for i in torch.as_tensor(ids).flatten().tolist():
            if not 0 <= i < len(self.itos):
                raise UnknownNameError(f"LMCorpus.decode: id {i} is outside the vocabulary of {len(self.itos)}")
            out.append(self.itos[i])
        return sep.join(out)

    def context_before(self, part: str, n: int) -> torch.Tensor:
        """The last ``n`` tokens before ``part`` starts (empty for "train"): the context the first tokens of
        the part are predicted with. (n,) long, or shorter near the start of the corpus."""
        order = ("train", "valid", "test")
        if part not in order:
            raise UnknownNameError(f"LMCorpus.context_before: part must be one of {order}, got {part!r}")
        before = torch.cat([getattr(self, p) for p in order[:order.index(part)]] or [torch.zeros(0, dtype=torch.long)])
        return before[max(0, len(before) - n):]


def split_stream(tokens: Sequence[str], max_vocab: int | None = 10_000,
                 fractions: tuple[float, float, float] = (0.8, 0.1, 0.1), name: str = "",
                 level: str = "word") -> LMCorpus:
    """Split ``tokens`` by position and encode them with the training part's ``max_vocab`` most
    frequent tokens (all of them with ``None``) plus ``<unk>``."""
    if len(fractions) != 3 or any(f <= 0 for f in fractions) or abs(sum(fractions) - 1) > 1e-9:
        raise ConfigError(f"split_stream: fractions must be three positive numbers summing to 1, got {fractions}")
    if max_vocab is not None and max_vocab < 1:
        raise ConfigError(f"split_stream: max_vocab must be >= 1 or None, got {max_vocab}")
    n = len(tokens)
    a, b = int(n * fractions[0]), int(n * (fractions[0] + fractions[1]))
    if min(a, b - a, n - b) < 2:
        raise ConfigError(f"split_stream: {n} tokens are too few to split {fractions} with >= 2 tokens a part")
    counts = Counter(tokens[:a])
    counts.pop(LM_UNK, None)
    ranked = sorted(counts, key=lambda t: (-counts[t], t))[:max_vocab]
    itos = [LM_UNK, *ranked]
    stoi = {t: i for i, t in enumerate(itos)}
    ids = torch.tensor([stoi.get(t, 0) for t in tokens], dtype=torch.long)  # (N,)
    return LMCorpus(itos, ids[:a], ids[a:b], ids[b:], name=name, level=level)


@lru_cache(maxsize=4)
def lm_corpus(name: str = "austen", level: str = "word", max_vocab: int | None = 10_000,
              max_chars: int | None = None) -> LMCorpus:
    """A bundled corpus under the protocol: ``lm_corpus("austen")`` (word level, 10,000 words + ``<unk>``)
    or ``lm_corpus("shakespeare", "char", None)`` (every training character). ``max_chars`` keeps only
    the first characters of the text (a smaller corpus for quick demos). Cached: treat it as read-only."""
    if level not in LEVELS:
        raise ConfigError(f"lm_corpus: level must be one of {LEVELS}, got {level!r}")
    if max_chars is not None and max_chars < 1:
        raise ConfigError(f"lm_corpus: max_chars must be >= 1 or None, got {max_chars}")
    text = load_text(name)
    if max_chars is not None:
        text = text[:max_chars]
    return split_stream(lm_tokens(text, level), max_vocab, name=name, level=level)

"""A corpus as one long tensor of word ids, for word-vector training (word2vec, PPMI counts).

Sentences are concatenated; ``sentence[i]`` says which sentence token ``i`` belongs to, so that a
context window never reaches across a sentence boundary. Words seen fewer than ``min_count`` times
are dropped (not replaced by ``<unk>``): word2vec learns nothing useful from them, and dropping them
brings the remaining words closer together, as in the original tool.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import torch

from ..errors import ConfigError, DataError, UnknownNameError
from .corpora import load_lines, load_text
from .tokenize import sentences, word_tokenize

#: The corpora the word-vector chapter trains on: about 2.4 million words of running text.
WORD_VECTOR_CORPORA = ("austen", "shakespeare", "kjv")


@dataclass
class WordCorpus:
    """Token ids of a corpus and the vocabulary they index."""

    words: list[str]  # the vocabulary, most frequent first (ties in alphabetical order): id -> word
    counts: torch.Tensor  # (V,) int64: how often each word occurs in the corpus
    ids: torch.Tensor  # (N,) int64: every kept token as a word id, sentence after sentence
    sentence: torch.Tensor  # (N,) int64: the sentence number of each token (non-decreasing)
    raw_tokens: int  # tokens before the rare words were dropped
    index: dict[str, int] = field(init=False, repr=False)  # word -> id

    def __post_init__(self) -> None:
        self.index = {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def vocab_size(self) -> int:
        return len(self.words)

    def encode(self, words: Sequence[str]) -> torch.Tensor:
        """Ids of ``words``; an unknown word is an error that names it."""
        missing = [w for w in words if w not in self.index]
        if missing:
            raise UnknownNameError(f"WordCorpus.encode: not in the vocabulary: {', '.join(map(repr, missing[:5]))}")
        return torch.tensor([self.index[w] for w in words], dtype=torch.long)


def build_word_corpus(sents: Iterable[Sequence[str]], min_count: int = 5,
                      max_vocab: int | None = None) -> WordCorpus:
    """Count the words of ``sents`` (lists of tokens), keep those seen at least ``min_count`` times
    (at most ``max_vocab`` of them, the most frequent), and encode every sentence."""
    if min_count < 1:
        raise ConfigError(f"build_word_corpus: min_count must be >= 1, got {min_count}")
    sents = [list(s) for s in sents]
    flat = [w for s in sents for w in s]
    counter = Counter(flat)
    raw = len(flat)
    if raw == 0:
        raise DataError("build_word_corpus: the corpus is empty (no tokens in any sentence)")
    ranked = sorted(((w, c) for w, c in counter.items() if c >= min_count), key=lambda wc: (-wc[1], wc[0]))
    if max_vocab is not None:
        ranked = ranked[:max_vocab]
    if not ranked:
        raise DataError(f"build_word_corpus: no word occurs min_count={min_count} times "
                        f"({raw} tokens, {len(counter)} distinct words)")
    lookup = {w: i for i, (w, _) in enumerate(ranked)}.get
    every = torch.tensor([lookup(w, -1) for w in flat], dtype=torch.long)  # (raw,) -1 for a dropped word
    sentence_of = torch.repeat_interleave(torch.arange(len(sents)), torch.tensor([len(s) for s in sents]))
    kept = every >= 0
    ids, sent_of = every[kept], sentence_of[kept]
    return WordCorpus(words=[w for w, _ in ranked], counts=torch.tensor([c for _, c in ranked], dtype=torch.long),
                      ids=ids, sentence=sent_of,
                      raw_tokens=raw)


def words_only(tokens: Sequence[str]) -> list[str]:
    """Drop punctuation tokens: keep the tokens that start with a letter or a digit."""
    return [t for t in tokens if t[:1].isalnum()]


def bundled_sentences(names: Sequence[str] = WORD_VECTOR_CORPORA, max_tokens: int | None = None) -> list[list[str]]:
    """Lower-cased word tokens (no punctuation) of bundled corpora, one list per sentence (one per
    verse for the King James Bible), in the order of ``names``; at most ``max_tokens`` in all."""
    out: list[list[str]] = []
    total = 0
    for name in names:
        lines = load_lines(name) if name == "kjv" else sentences(load_text(name))
        for line in lines:
            toks = words_only(word_tokenize(line))
            if not toks:
                continue
            if max_tokens is not None and total + len(toks) > max_tokens:
                return out
            out.append(toks)
            total += len(toks)
    return out

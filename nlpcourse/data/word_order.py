"""Sentences with two neighbouring words swapped: the bigram-shift task of Conneau et al. (2018), as padded
id tensors split by document.

Half of the sentences of the Brown corpus (5 to 30 words, lower-cased) have two neighbouring, different
words swapped, at a position drawn at random; the label says which half a sentence is in (1: swapped). Both
classes are made of the same words, so a bag of words cannot beat chance: only a model that sees which word
follows which (an n-gram, a convolution wider than one word, a recurrent network) can learn the task. The
CNN assignment trains on it, against a CNN whose filters see one word at a time.
"""
from __future__ import annotations

from functools import lru_cache

import torch

from ..errors import ConfigError
from .batching import pad_batch
from .corpora import load_brown_words
from .review_split import LabelledSplit, PaddedSentences
from .splits import split_indices
from .vocab import Vocab

MIN_WORDS, MAX_WORDS = 5, 30  # the sentences kept, by their number of words (punctuation included)


def swap_neighbours(words: list[str], g: torch.Generator) -> list[str] | None:
    """A copy of ``words`` with the words at ``i`` and ``i + 1`` swapped, ``i`` drawn uniformly from the
    positions whose two words differ (so the copy always differs); None when there is no such position."""
    places = [i for i in range(len(words) - 1) if words[i] != words[i + 1]]
    if not places:
        return None
    i = places[int(torch.randint(len(places), (1,), generator=g))]
    return words[:i] + [words[i + 1], words[i]] + words[i + 2:]


@lru_cache(maxsize=1)
def _shifted_sentences(seed: int) -> tuple[list[list[str]], torch.Tensor, list[str]]:
    """(sentences, labels (N,), the document of each): every kept Brown sentence once, swapped or not."""
    g = torch.Generator().manual_seed(seed)
    sentences, labels, documents = [], [], []
    for document, words in load_brown_words(lengths=range(MIN_WORDS, MAX_WORDS + 1)):
        words = [w.lower() for w in words]
        label = int(torch.randint(2, (1,), generator=g))
        swapped = swap_neighbours(words, g) if label else words
        if swapped is None:
            continue
        sentences.append(swapped)
        labels.append(label)
        documents.append(document)
    return sentences, torch.tensor(labels), documents


@lru_cache(maxsize=2)
def word_order_split(seed: int = 0, min_count: int = 2) -> LabelledSplit:
    """The bigram-shift sentences split by document (80/10/10, ``seed``), as padded ids, with the training
    part's vocabulary (words seen at least ``min_count`` times; others are ``<unk>``, id 1); labels 1 for a
    sentence with two words swapped, 0 for one as written. The swaps are drawn with ``seed`` too."""
    if min_count < 1:
        raise ConfigError(f"word_order_split: min_count must be >= 1, got {min_count}")
    sentences, labels, documents = _shifted_sentences(seed)
    parts = split_indices(len(sentences), (0.8, 0.1, 0.1), seed=seed, groups=documents)
    vocab = Vocab.build((sentences[i] for i in parts[0]), min_freq=min_count)

    def encode(rows: list[int]) -> PaddedSentences:
        batch = pad_batch([vocab.encode(sentences[i]) for i in rows])
        return PaddedSentences(batch.tokens, batch.lengths, labels[torch.tensor(rows, dtype=torch.long)])

    return LabelledSplit(vocab, *(encode(rows) for rows in parts))

"""Sentences with two neighbouring words swapped: the bigram-shift task of Conneau et al. (2018), as padded
id tensors split by document.

Half of the sentences of the Brown corpus (5 to 30 words, lower-cased) have two neighbouring, different
words swapped, at a position drawn at random; the label says which half a sentence is in (1: swapped). Both
classes are made of the same words, so a bag of words cannot beat chance: only a model that sees which word
follows which (an n-gram, a convolution wider than one word, a recurrent network) can learn the task. The
CNN assignment trains on it, against a CNN whose filters see one word at a time.

The same task on the movie-review snippets in a WordPiece vocabulary (:func:`review_order_pieces`) is where
the pretraining chapter's benchmark (``benchmarks/pretraining.py --word-order``) fine-tunes the chapter's BERT
against the same network drawn at random: masked-LM pretraining on the reviews teaches which word follows
which, which a few thousand labels cannot teach a network drawn at random.
"""
from __future__ import annotations

from functools import lru_cache

import torch

from ..errors import ConfigError
from .batching import pad_batch
from .corpora import load_brown_words, load_reviews
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


PARTS = ("train", "valid", "test")


def _whole_words(wp, text: str, room: int) -> list[list[int]]:
    """The piece ids of ``text`` (a :class:`~nlpcourse.data.wordpiece.WordPieces`' pieces) grouped by word:
    the words that fit ``room`` pieces whole, from the start. Only the first ``room + 1`` runs of
    non-space characters are tokenised: every one holds at least one word of at least one piece."""
    encoding = wp.tokenizer.encode(" ".join(text.split()[:room + 1]))
    words: dict[int, list[int]] = {}
    for piece, word in zip(encoding.ids, encoding.word_ids):
        words.setdefault(word, []).append(piece)
    kept, used = [], 0
    for pieces in words.values():
        if used + len(pieces) > room:
            break
        kept.append(pieces)
        used += len(pieces)
    return kept


@lru_cache(maxsize=4)
def review_order_pieces(tokenizer_json: str, part: str, max_len: int = 32,
                        seed: int = 0) -> tuple[list[list[int]], torch.Tensor]:
    """The bigram-shift task on the review snippets in BERT's input, for one part ("train", "valid" or "test")
    of the review split by movie (80/10/10, ``seed``): (ids, labels (N,)). Each snippet is cut to the words
    whose WordPieces fit ``max_len`` ids with ``[CLS]`` and ``[SEP]`` (words kept whole), then
    ``[CLS] pieces [SEP]``. "train": every snippet once, half of them (drawn with ``seed``) with two
    neighbouring different words swapped, label 1, the others as written, label 0; "valid" and "test": every
    snippet twice, as written (0) then swapped (1), so that each pair differs only in its order. Snippets
    without two different words to swap are left out. Cached: do not modify what it returns."""
    from .wordpiece import CLS_ID, SEP_ID, WordPieces  # the tokenizers library: only where it is needed

    if part not in PARTS:
        raise ConfigError(f"review_order_pieces: part must be one of {PARTS}, got {part!r}")
    if max_len < 4:
        raise ConfigError(f"review_order_pieces: max_len must leave room for two words, got {max_len}")
    wp = WordPieces.from_json(tokenizer_json)
    reviews = load_reviews()
    rows = split_indices(len(reviews), (0.8, 0.1, 0.1), seed=seed, groups=[r.movie for r in reviews])
    g = torch.Generator().manual_seed(seed * len(PARTS) + PARTS.index(part))  # each part draws on its own
    ids, labels = [], []
    for i in rows[PARTS.index(part)]:
        words = _whole_words(wp, reviews[i].text, max_len - 2)
        swapped = swap_neighbours(words, g)
        if swapped is None:
            continue
        versions = [(words, 0), (swapped, 1)]
        if part == "train":
            versions = versions[int(torch.randint(2, (1,), generator=g))::2]  # one of the two
        for kept, label in versions:
            ids.append([CLS_ID, *(p for pieces in kept for p in pieces), SEP_ID])
            labels.append(label)
    return ids, torch.tensor(labels, dtype=torch.long)

"""The movie-review snippets as padded id tensors, split by movie: the data of the CNN chapter's
assignment (and of anything that wants the seeded 80/10/10 split without writing the padding again)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch

from .batching import pad_batch
from .corpora import load_reviews
from .splits import split_indices
from .tokenize import word_tokenize
from .vocab import Vocab


@dataclass(frozen=True)
class PaddedSentences:
    """One part of the split: every sentence padded to the part's longest (pad id 0)."""

    ids: torch.Tensor  # (N, T) long word ids, 0 after each sentence's end
    lengths: torch.Tensor  # (N,) long, each >= 1
    labels: torch.Tensor  # (N,) long class ids (reviews: 1 fresh, 0 rotten)

    def __len__(self) -> int:
        return len(self.labels)


@dataclass(frozen=True)
class LabelledSplit:
    """Labelled sentences split 80/10/10 (the reviews by movie, say), encoded with the training part's
    vocabulary."""

    vocab: Vocab  # the training part's words seen at least min_count times, after the 4 specials
    train: PaddedSentences
    valid: PaddedSentences
    test: PaddedSentences


ReviewSplit = LabelledSplit  # the movie-review snippets' split: review_split()


@lru_cache(maxsize=2)
def review_split(seed: int = 0, min_count: int = 2) -> ReviewSplit:
    """The seeded split by movie of the chapter and the benchmark (seed 0), as padded ids; a word of the
    validation or test part that the training part's vocabulary lacks is ``<unk>`` (id 1)."""
    reviews = load_reviews()
    tokens = [word_tokenize(r.text) for r in reviews]
    labels = torch.tensor([r.label for r in reviews])
    parts = split_indices(len(reviews), (0.8, 0.1, 0.1), seed=seed, groups=[r.movie for r in reviews])
    vocab = Vocab.build((tokens[i] for i in parts[0]), min_freq=min_count)

    def encode(rows: list[int]) -> PaddedSentences:
        batch = pad_batch([vocab.encode(tokens[i]) or [vocab.unk_id] for i in rows])
        return PaddedSentences(batch.tokens, batch.lengths, labels[torch.tensor(rows, dtype=torch.long)])

    return ReviewSplit(vocab, *(encode(rows) for rows in parts))


@lru_cache(maxsize=4)
def review_pieces(tokenizer_json: str, max_len: int = 32,
                  seed: int = 0) -> dict[str, tuple[list[list[int]], torch.Tensor]]:
    """The same seeded split by movie in BERT's input, for the pretraining assignment and its grader: for
    each part ("train", "valid", "test"), the snippets as ``[CLS] pieces [SEP]`` id lists of at most
    ``max_len`` ids in the WordPiece vocabulary saved as ``tokenizer_json``, and their (N,) labels."""
    from .wordpiece import WordPieces

    wp = WordPieces.from_json(tokenizer_json)
    reviews = load_reviews()
    parts = split_indices(len(reviews), (0.8, 0.1, 0.1), seed=seed, groups=[r.movie for r in reviews])
    return {name: ([wp.pair(reviews[i].text, max_len=max_len).ids for i in rows],
                   torch.tensor([reviews[i].label for i in rows], dtype=torch.long))
            for name, rows in zip(("train", "valid", "test"), parts)}

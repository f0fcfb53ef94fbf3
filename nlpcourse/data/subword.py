"""Subword tokens for translation: one byte-pair encoding (Sennrich et al., 2016) shared by English and
Spanish, learnt with Hugging Face ``tokenizers`` on the training part of a
:class:`~nlpcourse.data.translation.TranslationSplit` only (the Transformer chapter and benchmark).

Text is NFKC-normalised and lower-cased (BLEU is case-insensitive here, as for the word-level models);
spaces become ``▁`` at the start of the piece that follows them (SentencePiece's "metaspace"), so decoding
is exact: joining the pieces and turning ``▁`` back into spaces gives the normalised text, punctuation and
all. Ids 0-3 are ``<pad> <unk> <bos> <eos>``, as in every :class:`~nlpcourse.data.vocab.Vocab`.

BPE starts from single characters and merges, ``vocab_size - 4 - alphabet`` times, the most frequent pair
of adjacent symbols in the training text; a frequent word ends up as one piece, a rare one as several
("▁abr" "ah" "am"), and no word of the test part is out of vocabulary unless it has a character the
training part never showed (then that character is ``<unk>``).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from ..errors import ConfigError, FormatError
from .translation import TranslationSplit
from .vocab import SPECIALS

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3


def train_bpe(texts: Iterable[str], vocab_size: int = 4000, min_frequency: int = 2) -> Tokenizer:
    """A BPE tokenizer learnt on ``texts``: at most ``vocab_size`` pieces, the 4 specials first, merges of
    pairs seen at least ``min_frequency`` times."""
    if vocab_size <= len(SPECIALS):
        raise ConfigError(f"train_bpe: vocab_size must exceed the {len(SPECIALS)} specials, got {vocab_size}")
    tok = Tokenizer(models.BPE(unk_token=SPECIALS[1]))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                  special_tokens=list(SPECIALS), show_progress=False)
    tok.train_from_iterator(list(texts), trainer=trainer)
    return tok


@dataclass
class SubwordSplit:
    """A translation split in BPE pieces: one tokenizer and one vocabulary for both languages."""

    split: TranslationSplit  # the pairs and their references (what BLEU compares with)
    tokenizer: Tokenizer  # learnt on the training part, both sides

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.get_vocab_size()

    def encode(self, text: str, bos: bool = False) -> list[int]:
        """Piece ids of ``text`` followed by ``<eos>`` (after ``<bos>`` when ``bos``)."""
        return [BOS_ID] * bos + self.tokenizer.encode(text).ids + [EOS_ID]

    def source_ids(self, part: str) -> list[list[int]]:
        """Each English verse of ``part`` as pieces + ``<eos>``."""
        return [self.encode(p.src) for p in self.split.part(part)]

    def target_ids(self, part: str) -> list[list[int]]:
        """Each Spanish verse as ``<bos>`` + pieces + ``<eos>``: the decoder reads ``[:-1]`` and predicts
        ``[1:]``."""
        return [self.encode(p.tgt, bos=True) for p in self.split.part(part)]

    def decode(self, ids: Sequence[int]) -> str:
        """Target ids as text: up to the first ``<eos>``, specials dropped, pieces joined."""
        ids = list(ids)
        if EOS_ID in ids:
            ids = ids[:ids.index(EOS_ID)]
        return self.tokenizer.decode([i for i in ids if i >= len(SPECIALS)]).strip()

    def pieces(self, text: str) -> list[str]:
        """The pieces of ``text``, as strings (for showing how a sentence is cut)."""
        return self.tokenizer.encode(text).tokens

    def to_json(self) -> str:
        return self.tokenizer.to_str()


def subword_split(split: TranslationSplit, vocab_size: int = 4000, min_frequency: int = 2) -> SubwordSplit:
    """Learn one BPE on the English and Spanish sides of ``split``'s training part."""
    texts = [p.src for p in split.train] + [p.tgt for p in split.train]
    return SubwordSplit(split, train_bpe(texts, vocab_size, min_frequency))


def load_subword_split(split: TranslationSplit, tokenizer_json: str) -> SubwordSplit:
    """A :class:`SubwordSplit` with a tokenizer saved by :meth:`SubwordSplit.to_json` (in a checkpoint)."""
    return SubwordSplit(split, read_tokenizer(tokenizer_json, SPECIALS, "load_subword_split"))


def read_tokenizer(text: str, specials: Sequence[str], who: str) -> Tokenizer:
    """A Hugging Face tokenizer saved as JSON whose first ids are ``specials``; a clear error otherwise."""
    try:
        tok = Tokenizer.from_str(text)
    except Exception as exc:  # tokenizers raises its own exception type for a malformed file
        raise FormatError(f"{who}: not a saved tokenizer: {exc}") from exc
    if [tok.id_to_token(i) for i in range(len(specials))] != list(specials):
        raise FormatError(f"{who}: the tokenizer's first ids are not {tuple(specials)}")
    return tok

"""WordPiece tokens and BERT's input format (Devlin et al., 2019) for the pretraining chapter: a vocabulary
learnt with Hugging Face ``tokenizers`` on the course's own text, and the ``[CLS] a [SEP] b [SEP]`` pairs
with their segment ids.

WordPiece (Schuster & Nakajima, 2012; Wu et al., 2016) cuts a word into the longest pieces of its vocabulary
from the left, a piece inside a word marked ``##`` ("unbelievable" -> "un", "##bel", "##ievable"); the
vocabulary is learnt like BPE's, by merging frequent pairs. Text is cleaned, lower-cased and stripped of
accents, and split on spaces and punctuation first (BERT's "uncased" normaliser and pre-tokenizer).

Ids 0-4 are ``[PAD] [UNK] [CLS] [SEP] [MASK]``; every other id is a piece.

Learning is not exactly reproducible: the trainer breaks ties between pairs seen equally often in an
order that changes from run to run (Hugging Face ``tokenizers`` keeps its counts in hash maps), so two
learnings on the same text share all but a few pieces, the last ones merged, and number some pieces
differently. As BERT ships its vocabulary file, the course learns it once and saves it with the model
(:meth:`WordPieces.to_json` in the checkpoint); everything after loads that one.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from ..errors import ConfigError
from .subword import read_tokenizer

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
PAD_ID, UNK_ID, CLS_ID, SEP_ID, MASK_ID = range(len(SPECIALS))


def train_wordpiece(texts: Iterable[str], vocab_size: int = 8000, min_frequency: int = 2) -> Tokenizer:
    """A WordPiece tokenizer learnt on ``texts``: at most ``vocab_size`` pieces, the 5 specials first."""
    if vocab_size <= len(SPECIALS):
        raise ConfigError(f"train_wordpiece: vocab_size must exceed the {len(SPECIALS)} specials, got {vocab_size}")
    tok = Tokenizer(models.WordPiece(unk_token=SPECIALS[UNK_ID]))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, lowercase=True, strip_accents=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                        special_tokens=list(SPECIALS), show_progress=False)
    tok.train_from_iterator(list(texts), trainer=trainer)
    return tok


@dataclass
class BertInput:
    """One example in BERT's format."""

    ids: list[int]  # [CLS] a [SEP] or [CLS] a [SEP] b [SEP]
    segments: list[int]  # 0 over [CLS] a [SEP], 1 over b [SEP]


@dataclass
class WordPieces:
    """A learnt WordPiece vocabulary and BERT's input format."""

    tokenizer: Tokenizer

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.get_vocab_size()

    def pieces(self, text: str) -> list[str]:
        """The pieces of ``text`` as strings."""
        return self.tokenizer.encode(text).tokens

    def ids(self, text: str) -> list[int]:
        """The piece ids of ``text``, no specials."""
        return self.tokenizer.encode(text).ids

    def pair(self, a: str, b: str | None = None, max_len: int = 128) -> BertInput:
        """``[CLS] a [SEP]`` (``[CLS] a [SEP] b [SEP]`` with ``b``), at most ``max_len`` ids: the longer of
        the two texts loses its last pieces first."""
        first, second = self.ids(a), self.ids(b) if b is not None else []
        room = max_len - 2 - (b is not None)
        if room < 2:
            raise ConfigError(f"WordPieces.pair: max_len {max_len} leaves no room for the text")
        while len(first) + len(second) > room:
            longer = first if len(first) >= len(second) else second
            longer.pop()
        ids = [CLS_ID, *first, SEP_ID]
        segments = [0] * len(ids)
        if b is not None:
            ids += [*second, SEP_ID]
            segments += [1] * (len(second) + 1)
        return BertInput(ids, segments)

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ids, specials dropped, ``##`` pieces joined to the piece before."""
        return self.tokenizer.decode([int(i) for i in ids if int(i) >= len(SPECIALS)])

    def to_json(self) -> str:
        return self.tokenizer.to_str()

    @classmethod
    def from_json(cls, text: str) -> WordPieces:
        """A vocabulary saved by :meth:`to_json` (in a checkpoint)."""
        return cls(read_tokenizer(text, SPECIALS, "WordPieces.from_json"))

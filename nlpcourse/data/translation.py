"""The translation task of the course: English verses of the King James Bible (1611) and their Spanish
counterparts in the Reina-Valera (1909), split by chapter.

The bundled pairs carry no references, only their order; the KJV's versification (the number of verses
in each chapter, from ``pysword``'s canon tables) gives every verse of ``kjv_en`` its book and chapter,
and the pairs are matched to those verses by their English text (18 of the 31,102 verses have no
Spanish counterpart in the file). Whole chapters go to one part, so that a test verse never has its
neighbours, often the same sentence with one word changed, in the training data. Whole chapters are not
enough: some verses recur word for word across the books ("And the LORD spake unto Moses, saying," would
otherwise end in test 10 times), so a validation or test pair whose source, normalised (:func:`source_key`), occurs in
training is dropped, and the split says how many (``TranslationSplit.dropped``).

Tokens are lower-cased words and punctuation (:func:`~nlpcourse.data.tokenize.word_tokenize`); both
vocabularies are fit on the training part only. BLEU and chrF are computed by sacreBLEU on
detokenised text against the untouched Spanish verses, case-insensitively (the tokens are lower-case).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import sacrebleu
from pysword.canons import canons

from ..errors import ConfigError, DataError, UnknownNameError
from .corpora import load_lines, load_parallel
from .splits import split_indices
from .tokenize import word_tokenize
from .vocab import BOS, EOS, Vocab

PARTS = ("train", "valid", "test")


@dataclass(frozen=True)
class VersePair:
    """One English verse and its Spanish translation."""

    src: str  # the English verse (KJV), as bundled
    tgt: str  # the Spanish verse (Reina-Valera 1909), as bundled
    book: str  # e.g. "Genesis"
    chapter: int  # 1-based chapter number in the book


def kjv_references() -> list[tuple[str, int]]:
    """(book, chapter) of each of the KJV's 31,102 verses, in canonical order."""
    kjv = canons["kjv"]
    return [(book[0], c + 1) for book in kjv["ot"] + kjv["nt"] for c, n in enumerate(book[3]) for _ in range(n)]


@lru_cache(maxsize=1)
def verse_pairs() -> tuple[VersePair, ...]:
    """The bundled English -> Spanish verse pairs, each with its book and chapter."""
    verses, refs = load_lines("kjv"), kjv_references()
    if len(verses) != len(refs):
        raise DataError(f"kjv: {len(verses)} verses, the KJV versification has {len(refs)}")
    out, i = [], 0
    for k, (en, es) in enumerate(load_parallel("kjv_en_es")):
        while i < len(verses) and verses[i] != en:  # a verse with no Spanish counterpart: skip it
            i += 1
        if i == len(verses):
            raise DataError(f"kjv_en_es: pair {k + 1} ({en[:40]!r}) matches no KJV verse after the previous pair")
        out.append(VersePair(en, es, *refs[i]))
        i += 1
    return tuple(out)


def tokens(text: str) -> list[str]:
    """The course's translation tokens: lower-cased words and punctuation."""
    return word_tokenize(text, lower=True)


def source_key(text: str) -> str:
    """A source verse normalised for the leak check: its lower-cased word tokens, punctuation dropped, so
    that "saying," and "saying:" are the same verse."""
    return " ".join(t for t in tokens(text) if any(c.isalnum() for c in t))


_NO_SPACE_BEFORE = re.compile(r" ([,.;:!?)\]}»])")
_NO_SPACE_AFTER = re.compile(r"([(\[{¿¡«]) ")


def detokenize(toks: Sequence[str]) -> str:
    """Join tokens into text: a space between words, none before closing punctuation or after opening
    punctuation (``¿``, ``¡``, brackets). The inverse of :func:`tokens` up to case and spacing."""
    text = " ".join(toks)
    return _NO_SPACE_AFTER.sub(r"\1", _NO_SPACE_BEFORE.sub(r"\1", text))


@dataclass
class TranslationSplit:
    """Verse pairs of at most ``max_tokens`` tokens on each side, split by chapter, with vocabularies
    fit on the training part."""

    train: list[VersePair]
    valid: list[VersePair]
    test: list[VersePair]
    src_vocab: Vocab  # English; ids 0-3 are <pad> <unk> <bos> <eos>
    tgt_vocab: Vocab  # Spanish
    max_tokens: int  # the length limit each side obeys (punctuation counted)
    dropped: dict[str, int] = field(default_factory=dict)  # pairs left out of valid/test: source seen in training

    def part(self, name: str) -> list[VersePair]:
        if name not in PARTS:
            raise UnknownNameError(f"TranslationSplit: no part {name!r}; the parts are {', '.join(PARTS)}")
        return getattr(self, name)

    def source_ids(self, name: str) -> list[list[int]]:
        """Each source verse as token ids followed by ``<eos>`` (S = tokens + 1)."""
        return [self.src_vocab.encode(tokens(p.src), add_eos=True) for p in self.part(name)]

    def target_ids(self, name: str) -> list[list[int]]:
        """Each target verse as ``<bos>`` + token ids + ``<eos>`` (T = tokens + 2): the decoder reads
        ``[:-1]`` and predicts ``[1:]``."""
        return [self.tgt_vocab.encode(tokens(p.tgt), add_bos=True, add_eos=True) for p in self.part(name)]

    def references(self, name: str) -> list[str]:
        """The Spanish verses of a part, as bundled: what BLEU compares translations with."""
        return [p.tgt for p in self.part(name)]

    def decode(self, ids: Sequence[int]) -> str:
        """Target ids (a translation) as text: up to the first ``<eos>``, specials dropped, detokenised."""
        words = []
        for t in self.tgt_vocab.decode(ids):
            if t == EOS:
                break
            if t != BOS:
                words.append(t)
        return detokenize(words)


def translation_split(max_tokens: int = 20, min_freq: int = 2, fractions: Sequence[float] = (0.8, 0.1, 0.1),
                      seed: int = 0) -> TranslationSplit:
    """The course's translation data: pairs whose English and Spanish sides both have at most
    ``max_tokens`` tokens, chapters shuffled with ``seed`` and dealt to train/valid/test by
    ``fractions`` (of the pairs), then every validation and test pair whose source occurs in training
    (:func:`source_key`) dropped; vocabularies of the training tokens seen ``min_freq`` times or more."""
    if max_tokens < 1:
        raise ConfigError(f"translation_split: max_tokens must be >= 1, got {max_tokens}")
    pairs = [p for p in verse_pairs() if len(tokens(p.src)) <= max_tokens and len(tokens(p.tgt)) <= max_tokens]
    parts = [[pairs[i] for i in idx]
             for idx in split_indices(len(pairs), fractions, seed, groups=[(p.book, p.chapter) for p in pairs])]
    if len(parts) != 3:
        raise ConfigError(f"translation_split: fractions must give train, valid and test, got {tuple(fractions)}")
    train, valid, test = parts
    seen = {source_key(p.src) for p in train}
    valid, test = ([p for p in part if source_key(p.src) not in seen] for part in (parts[1], parts[2]))
    dropped = {"valid": len(parts[1]) - len(valid), "test": len(parts[2]) - len(test)}
    src_vocab = Vocab.build((tokens(p.src) for p in train), min_freq=min_freq)
    tgt_vocab = Vocab.build((tokens(p.tgt) for p in train), min_freq=min_freq)
    return TranslationSplit(train, valid, test, src_vocab, tgt_vocab, max_tokens, dropped)


@dataclass(frozen=True)
class MTScores:
    """Corpus-level scores of a set of translations, as sacreBLEU reports them."""

    bleu: float  # BLEU, 0-100
    chrf: float  # chrF, 0-100
    bleu_signature: str  # how it was computed (tokenizer, case, smoothing, version)
    chrf_signature: str


def mt_scores(hypotheses: Sequence[str], references: Sequence[str]) -> MTScores:
    """Case-insensitive corpus BLEU and chrF of detokenised ``hypotheses`` against ``references``."""
    if len(hypotheses) != len(references):
        raise ConfigError(f"mt_scores: {len(hypotheses)} translations for {len(references)} references")
    if not references:
        raise ConfigError("mt_scores: nothing to score (no references)")
    bleu = sacrebleu.BLEU(lowercase=True)
    chrf = sacrebleu.CHRF(lowercase=True)
    b = bleu.corpus_score(list(hypotheses), [list(references)])
    c = chrf.corpus_score(list(hypotheses), [list(references)])
    return MTScores(b.score, c.score, str(bleu.get_signature()), str(chrf.get_signature()))

"""A vocabulary: tokens <-> integer ids with the four special tokens the course uses."""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..errors import ArgumentTypeError, ConfigError, DataError, FormatError

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<bos>", "<eos>"
SPECIALS = (PAD, UNK, BOS, EOS)  # ids 0, 1, 2, 3 in every Vocab


class Vocab:
    """Map tokens to ids. Ids 0-3 are ``<pad> <unk> <bos> <eos>``; the rest are sorted by count, then token.

    Build one with :meth:`build`; unknown tokens encode to ``<unk>``.
    """

    def __init__(self, tokens: Sequence[str], counts: dict[str, int] | None = None):
        tokens = list(tokens)
        if tuple(tokens[:4]) != SPECIALS:
            raise ConfigError(f"Vocab: the first four tokens must be {SPECIALS}, got {tuple(tokens[:4])}")
        if len(set(tokens)) != len(tokens):
            dup = next(t for t, c in Counter(tokens).items() if c > 1)
            raise ConfigError(f"Vocab: token {dup!r} appears twice")
        self.itos: list[str] = tokens
        self.stoi: dict[str, int] = {t: i for i, t in enumerate(tokens)}
        self.counts: dict[str, int] = dict(counts or {})

    @classmethod
    def build(
        cls,
        corpus: Iterable[Sequence[str]],
        min_freq: int = 1,
        max_size: int | None = None,
    ) -> Vocab:
        """Build from tokenised sentences. Keep tokens seen ``min_freq`` times or more, at most ``max_size``
        of them (specials not counted), most frequent first, ties in alphabetical order."""
        if min_freq < 1:
            raise ConfigError(f"Vocab.build: min_freq must be >= 1, got {min_freq}")
        if max_size is not None and max_size < 0:
            raise ConfigError(f"Vocab.build: max_size must be >= 0 or None, got {max_size}")
        counts: Counter[str] = Counter()
        n_seqs = 0
        for seq in corpus:
            if isinstance(seq, str):
                raise ArgumentTypeError("Vocab.build: corpus must be a sequence of token lists, "
                                        f"got the str {seq!r:.40} (tokenise first)")
            counts.update(seq)
            n_seqs += 1
        if not counts:
            raise ConfigError(f"Vocab.build: the corpus is empty ({n_seqs} sequences, 0 tokens)")
        for s in SPECIALS:
            counts.pop(s, None)
        kept = sorted((t for t, c in counts.items() if c >= min_freq), key=lambda t: (-counts[t], t))
        if max_size is not None:
            kept = kept[:max_size]
        return cls(list(SPECIALS) + kept, {t: counts[t] for t in kept})

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: object) -> bool:
        return token in self.stoi

    def __getitem__(self, token: str) -> int:
        return self.stoi.get(token, self.unk_id)

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, first={self.itos[4:9]})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self.itos == other.itos

    pad_id, unk_id, bos_id, eos_id = 0, 1, 2, 3

    def encode(self, tokens: Sequence[str], add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """Ids of ``tokens``; unknown tokens become ``<unk>``."""
        if isinstance(tokens, str):
            raise ArgumentTypeError(f"Vocab.encode expects a list of tokens, got the str {tokens!r:.40} "
                                    "(tokenise first)")
        ids = [self.stoi.get(t, self.unk_id) for t in tokens]
        return ([self.bos_id] if add_bos else []) + ids + ([self.eos_id] if add_eos else [])

    def decode(self, ids: Iterable[int], skip_specials: bool = False) -> list[str]:
        """Tokens of ``ids``; with ``skip_specials`` the four special tokens are dropped."""
        out = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self.itos):
                raise ConfigError(f"Vocab.decode: id {i} is out of range for a vocabulary of {len(self)}")
            if skip_specials and i < len(SPECIALS):
                continue
            out.append(self.itos[i])
        return out

    def to_dict(self) -> dict:
        return {"itos": self.itos, "counts": self.counts}

    @classmethod
    def from_dict(cls, d: dict) -> Vocab:
        if "itos" not in d:
            raise FormatError("Vocab.from_dict: no 'itos' key")
        return cls(d["itos"], d.get("counts"))

    def save(self, path: str | Path) -> None:
        """Write the vocabulary as JSON (written to a temporary file first, so it is never half-written)."""
        path = Path(path)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def load(cls, path: str | Path) -> Vocab:
        path = Path(path)
        if not path.is_file():
            raise DataError(f"Vocab.load: no file {path}")
        try:
            return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except json.JSONDecodeError as exc:
            raise FormatError(f"Vocab.load: {path} is not a saved vocabulary: {exc}") from exc

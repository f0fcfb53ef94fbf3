"""One label per token: a bidirectional LSTM part-of-speech tagger, and the most-frequent-tag baseline
(chapter "Sequence to sequence with attention", ``benchmarks/seq2seq.py``).

Shapes: B batch, T tokens, E word embedding dim, F suffix embedding dim, H units per direction, C tags.

    words   (B,T)      lower-cased word ids (<unk> for words rare in training), <pad> after each sentence
    suffix  (B,T)      ids of each word's last three letters (how an unknown word is guessed: -ly, -ing, -ed)
    shape   (B,T)      0 lower, 1 Capitalised, 2 UPPER, 3 digits or other
    x       (B,T,E+F+4)  the three concatenated (the shape as one-hot)
    out     (B,T,2H)   a bidirectional LSTM: each token sees its whole sentence, left and right
    logits  (B,T,C)    a linear layer per token

With a frozen ELMo biLM (``nlpcourse.models.elmo``; Peters et al., 2018, section 3.3) the tagger reads one more
input per token, concatenated to x:

    bilm_ids  (B,T+2)   <bos> words <eos> in the biLM's own vocabulary, <pad> after
    elmo      (B,T,2H') the scalar mix of the biLM's L+1 layers at the words' positions (eq. 1), H' its units
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..data.batching import bucket_batches, pad_batch
from ..data.tagging import Sentence, TaggingSplit
from ..data.vocab import Vocab
from ..errors import ConfigError, ShapeError
from ..train import Budget
from .elmo import BiLM, ScalarMix

IGNORE = -100  # target of padding (and of tags unseen in training, during training)


@dataclass
class TaggerConfig:
    """Everything needed to rebuild a :class:`BiLSTMTagger`."""

    n_words: int  # word vocabulary size, specials included
    n_suffixes: int  # suffix vocabulary size, specials included
    n_tags: int  # C
    embed_dim: int = 100  # E
    suffix_dim: int = 32  # F
    hidden_dim: int = 128  # H, per direction
    dropout: float = 0.3  # on the input vectors and the LSTM's output
    elmo_layers: int = 0  # L+1 layers of a frozen biLM mixed into each token's input (ELMo); 0: no biLM
    elmo_dim: int = 0  # 2H' of that biLM's layers (with elmo_layers)

    def __post_init__(self) -> None:
        if min(self.n_words, self.n_suffixes, self.n_tags, self.embed_dim, self.suffix_dim, self.hidden_dim) < 1:
            raise ConfigError(f"TaggerConfig: sizes must be >= 1, got {self}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"TaggerConfig: dropout must be in [0, 1), got {self.dropout}")
        if self.elmo_layers < 0 or (self.elmo_layers > 0) != (self.elmo_dim > 0):
            raise ConfigError(f"TaggerConfig: elmo_layers and elmo_dim must both be 0 or both >= 1, got "
                              f"{self.elmo_layers} and {self.elmo_dim}")


def word_shape(word: str) -> int:
    """0 lower-case, 1 Capitalised, 2 UPPER-CASE, 3 anything else (numbers, punctuation)."""
    if word.isalpha():
        return 0 if word.islower() else 2 if word.isupper() and len(word) > 1 else 1 if word[0].isupper() else 3
    return 3


class TaggerFeatures:
    """Turns sentences into the (words, suffix, shape) id sequences the tagger reads."""

    def __init__(self, words: Vocab, suffixes: Vocab, bilm_words: Vocab | None = None):
        self.words, self.suffixes, self.bilm_words = words, suffixes, bilm_words

    @classmethod
    def fit(cls, split: TaggingSplit, bilm_words: Vocab | None = None) -> TaggerFeatures:
        """The split's word vocabulary and its training suffixes; with ``bilm_words`` (an ELMo biLM's
        vocabulary) each sentence is also encoded for the biLM."""
        sfx = Vocab.build(([w.lower()[-3:] for w, _ in s] for s in split.train), min_freq=2)
        return cls(split.words, sfx, bilm_words)

    def encode(self, sentence: Sentence | Sequence[str]) -> tuple[list[int], ...]:
        """(words, suffix, shape) ids of the sentence's T tokens, and its T+2 biLM ids if there is a biLM."""
        ws = [w if isinstance(w, str) else w[0] for w in sentence]
        lower = [w.lower() for w in ws]
        cols = (self.words.encode(lower), self.suffixes.encode([w[-3:] for w in lower]), [word_shape(w) for w in ws])
        if self.bilm_words is None:
            return cols
        return (*cols, [self.bilm_words.bos_id, *self.bilm_words.encode(lower), self.bilm_words.eos_id])


class BiLSTMTagger(nn.Module):
    """A tag distribution for every token, from a bidirectional LSTM over the sentence."""

    def __init__(self, config: TaggerConfig, bilm: BiLM | None = None):
        super().__init__()
        c = self.config = config
        self.word_embed = nn.Embedding(c.n_words, c.embed_dim, padding_idx=0)
        self.suffix_embed = nn.Embedding(c.n_suffixes, c.suffix_dim, padding_idx=0)
        self.bilm, self.mix = _frozen_bilm(c, bilm), ScalarMix(c.elmo_layers) if c.elmo_layers else None
        self.lstm = nn.LSTM(c.embed_dim + c.suffix_dim + 4 + c.elmo_dim, c.hidden_dim, batch_first=True,
                            bidirectional=True)
        self.drop = nn.Dropout(c.dropout)
        self.out = nn.Linear(2 * c.hidden_dim, c.n_tags)

    def train(self, mode: bool = True) -> BiLSTMTagger:
        """Training mode for the tagger; the biLM stays frozen, in evaluation mode (no dropout)."""
        super().train(mode)
        if self.bilm is not None:
            self.bilm.eval()
        return self

    def elmo(self, bilm_ids: torch.Tensor, T: int) -> torch.Tensor:
        """(B,T,2H') the scalar mix of the frozen biLM's layers at the T word positions of (B,T+2) ids."""
        if bilm_ids is None or bilm_ids.dim() != 2 or bilm_ids.shape[1] != T + 2:
            got = None if bilm_ids is None else tuple(bilm_ids.shape)
            raise ShapeError(f"BiLSTMTagger: a tagger with ELMo needs bilm_ids of shape (B, {T + 2}), got {got}")
        with torch.no_grad():
            layers = self.bilm.layers(bilm_ids)  # L+1 x (B,T+2,2H')
        return self.mix([h[:, 1:T + 1] for h in layers])  # <bos> and <eos> dropped -> (B,T,2H')

    def forward(self, words: torch.Tensor, suffix: torch.Tensor, shape: torch.Tensor,
                bilm_ids: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (B,T,C); padding (word id 0) is packed away and changes no real token's output."""
        lengths = (words != 0).sum(1).cpu()
        parts = [self.word_embed(words), self.suffix_embed(suffix), F.one_hot(shape, 4).float()]
        if self.mix is not None:
            parts.append(self.elmo(bilm_ids, words.shape[1]))
        x = torch.cat(parts, dim=-1)  # (B,T,E+F+4[+2H'])
        packed = pack_padded_sequence(self.drop(x), lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)  # (B,T,E+F+4) -> (B,T,2H)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=words.shape[1])
        return self.out(self.drop(out))  # (B,T,2H) x (2H,C) -> (B,T,C)


def _frozen_bilm(c: TaggerConfig, bilm: BiLM | None) -> BiLM | None:
    """The biLM a config with ELMo needs, its weights frozen; refused where the config does not match it."""
    if not c.elmo_layers:
        if bilm is not None:
            raise ConfigError("BiLSTMTagger: a biLM was given but the config has elmo_layers=0")
        return None
    if bilm is None or (bilm.config.layers + 1, 2 * bilm.config.hidden) != (c.elmo_layers, c.elmo_dim):
        got = None if bilm is None else (bilm.config.layers + 1, 2 * bilm.config.hidden)
        raise ConfigError(f"BiLSTMTagger: the config mixes {c.elmo_layers} layers of width {c.elmo_dim}; the "
                          f"biLM given has (layers + 1, 2 x hidden) = {got}")
    return bilm.requires_grad_(False).eval()


def _batches(feats: TaggerFeatures, sentences: Sequence[Sentence], tag_ids: Sequence[list[int]] | None,
             batch_size: int, shuffle: bool, seed: int, device: torch.device):
    encoded = [feats.encode(s) for s in sentences]
    for index in bucket_batches([len(s) for s in sentences], batch_size, shuffle=shuffle, seed=seed):
        cols = [pad_batch([encoded[i][k] for i in index]).tokens.to(device)  # 3 x (B,T) [+ (B,T+2)]
                for k in range(len(encoded[index[0]]))]
        tags = None
        if tag_ids is not None:
            tags = pad_batch([[t if t >= 0 else IGNORE for t in tag_ids[i]] for i in index], IGNORE).tokens
            tags = tags.to(device)  # (B,T)
        yield index, cols, tags


@dataclass
class TaggerHistory:
    train_loss: list[float] = field(default_factory=list)  # mean per-token loss of each epoch
    valid_accuracy: list[float] = field(default_factory=list)
    epochs: float = 0.0
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def fit_tagger(model: BiLSTMTagger, feats: TaggerFeatures, split: TaggingSplit, epochs: int = 5,
               batch_size: int = 32, lr: float = 2e-3, max_cpu_seconds: float | None = None,
               seed: int = 0) -> TaggerHistory:
    """Adam on per-token cross-entropy; validation accuracy after each epoch."""
    device = next(model.parameters()).device
    opt, hist = torch.optim.Adam(model.parameters(), lr=lr), TaggerHistory()
    budget, tags = Budget(max_cpu_seconds=max_cpu_seconds), split.tag_ids(split.train)
    torch.manual_seed(seed)
    n_batches = -(-len(split.train) // batch_size)
    for epoch in range(epochs):
        model.train()
        total, done = 0.0, 0
        for _, cols, y in _batches(feats, split.train, tags, batch_size, True, seed + epoch, device):
            logits = model(*cols)  # (B,T,C)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=IGNORE)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total, done = total + loss.item(), done + 1
            if budget.spent():
                break
        hist.train_loss.append(total / done)
        hist.epochs += done / n_batches
        hist.valid_accuracy.append(tag_accuracy(predict_tags(model, feats, split.valid), split.tag_ids(split.valid)))
        if budget.spent():
            break
    hist.seconds, hist.cpu_seconds = budget.seconds, budget.cpu_seconds
    return hist


@torch.no_grad()
def predict_tags(model: BiLSTMTagger, feats: TaggerFeatures, sentences: Sequence[Sentence],
                 batch_size: int = 256) -> list[list[int]]:
    """The most probable tag id of every token of each sentence."""
    model.eval()
    device = next(model.parameters()).device
    out: list[list[int]] = [[] for _ in sentences]
    for index, cols, _ in _batches(feats, sentences, None, batch_size, False, 0, device):
        best = model(*cols).argmax(-1).tolist()  # (B,T)
        for row, i in zip(best, index):
            out[i] = row[:len(sentences[i])]
    return out


def tag_accuracy(predicted: Sequence[Sequence[int]], gold: Sequence[Sequence[int]]) -> float:
    """Fraction of tokens whose predicted tag is the gold tag."""
    right = sum(p == g for ps, gs in zip(predicted, gold) for p, g in zip(ps, gs))
    return right / sum(len(g) for g in gold)


def per_tag_accuracy(predicted: Sequence[Sequence[int]], gold: Sequence[Sequence[int]], tags: Sequence[str]
                     ) -> dict[str, tuple[float, int]]:
    """Accuracy and token count of each gold tag seen in ``gold`` (tags unseen in training left out)."""
    right: Counter[int] = Counter()
    seen: Counter[int] = Counter()
    for ps, gs in zip(predicted, gold):
        for p, g in zip(ps, gs):
            if g >= 0:
                seen[g] += 1
                right[g] += p == g
    return {tags[g]: (right[g] / n, n) for g, n in seen.most_common()}


class MostFrequentTag:
    """The baseline: each training word's most frequent tag; an unknown word gets the most frequent tag
    of the words seen once in training (the open-class guess, almost always ``nn``)."""

    def __init__(self, split: TaggingSplit):
        counts: defaultdict[str, Counter[str]] = defaultdict(Counter)
        for s in split.train:
            for w, t in s:
                counts[w.lower()][t] += 1
        index = {t: i for i, t in enumerate(split.tags)}
        self.best = {w: index[c.most_common(1)[0][0]] for w, c in counts.items()}
        rare = Counter(c.most_common(1)[0][0] for c in counts.values() if sum(c.values()) == 1)
        self.unknown = index[rare.most_common(1)[0][0]]

    def predict(self, sentences: Sequence[Sentence]) -> list[list[int]]:
        return [[self.best.get(w.lower(), self.unknown) for w, _ in s] for s in sentences]

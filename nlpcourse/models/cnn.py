"""A convolutional sentence classifier after Kim (2014), "Convolutional Neural Networks for Sentence
Classification" (chapter "CNN text classifiers", ``scripts/train_cnn.py``, ``benchmarks/cnn.py``).

Shapes: B batch, T time (padded length of the batch), V vocabulary size, D embedding dim,
C embedding channels (1, or 2 for "multichannel"), W a filter width, M feature maps per width,
F = M x (number of widths) x k pooled features (k = 1 but for k-max pooling), K classes.

    tokens  (B,T)          word ids, padded after each sentence with ``pad_id``; lengths (B,) >= 1
    x       (B,T,C*D)      the embeddings (zero at padding); multichannel puts the two copies side by side
    conv_W  (B,M,T+W-1)    wide convolution of width W (W-1 zero vectors on each side): every window
                           overlaps at least one real token, so a sentence of 1 token works with W = 5
    pooled  (B,M)          max over the valid windows only (padding can never win), then ReLU;
                           or, with ``pooling="mean"``, the mean of ReLU over the valid windows;
                           or, with ``pooling="kmax"``, (B,M*k): the k largest valid values of each
                           map in sentence order, then ReLU (Kalchbrenner et al. 2014)
    h       (B,F)          the pooled features of all widths side by side, dropout while training
    logits  (B,K)          h W_out^T + b_out; the rows of W_out are kept at norm <= s by :func:`max_norm_`

Embedding variants (Kim's names): "rand" (random init, trained), "static" (pretrained, frozen),
"nonstatic" (pretrained, fine-tuned), "multichannel" (two copies of the pretrained vectors, one frozen,
one fine-tuned; each filter spans both, as in Kim's code, so its weights have 2 x D input channels).

Because ReLU is monotone, max-pooling the pre-activations and then applying ReLU equals max-pooling the
ReLU outputs; pooling first is cheaper, and :meth:`KimCNN.pooled_preactivations` exposes the pooled
values (which can be negative) to tests.
"""
from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..data.batching import Batch, bucket_batches, pad_batch
from ..data.vocab import SPECIALS, Vocab
from ..errors import ConfigError, ShapeError
from ..history import History
from ..train import fit
from ..vectors import WordVectors

VARIANTS = ("rand", "static", "nonstatic", "multichannel")
POOLINGS = ("max", "mean", "kmax")
RAND_INIT_SCALE = 0.25  # "rand" embeddings are uniform(-0.25, 0.25), as in Kim's code


@dataclass
class KimCNNConfig:
    """Everything needed to rebuild a :class:`KimCNN` (saved in its checkpoint)."""

    vocab_size: int  # V: rows of the embedding table (specials included)
    embed_dim: int = 100  # D: size of a word vector (Kim: 300 for word2vec's Google News vectors)
    widths: tuple[int, ...] = (3, 4, 5)  # W: filter widths in tokens, one bank of filters per width
    maps: int = 100  # M: feature maps (filters) per width
    dropout: float = 0.5  # probability of zeroing a pooled feature (the penultimate layer) while training
    max_norm: float | None = 3.0  # s: the rows of the output weights are kept at L2 norm <= s; None: no limit
    n_classes: int = 2  # K: output classes (0 rotten, 1 fresh)
    variant: str = "rand"  # embeddings: "rand" | "static" | "nonstatic" | "multichannel" (see the module doc)
    pooling: str = "max"  # over time: "max" (Kim), "mean" or "kmax" (for the comparisons in the chapter)
    k: int = 1  # values kept per map by "kmax" pooling, at most min(widths): every sentence has that many windows
    pad_id: int = 0  # the id that pads sentences (Vocab's <pad>); its embedding is never used

    def __post_init__(self) -> None:
        self.widths = tuple(int(w) for w in self.widths)
        checks = [
            (self.vocab_size >= 1, f"vocab_size must be >= 1, got {self.vocab_size}"),
            (self.embed_dim >= 1, f"embed_dim must be >= 1, got {self.embed_dim}"),
            (len(self.widths) >= 1 and all(w >= 1 for w in self.widths),
             f"widths must be a non-empty tuple of ints >= 1, got {self.widths}"),
            (self.maps >= 1, f"maps must be >= 1, got {self.maps}"),
            (0.0 <= self.dropout < 1.0, f"dropout must be in [0, 1), got {self.dropout}"),
            (self.max_norm is None or self.max_norm > 0, f"max_norm must be > 0 or None, got {self.max_norm}"),
            (self.n_classes >= 2, f"n_classes must be >= 2, got {self.n_classes}"),
            (self.variant in VARIANTS, f"variant must be one of {VARIANTS}, got {self.variant!r}"),
            (self.pooling in POOLINGS, f"pooling must be one of {POOLINGS}, got {self.pooling!r}"),
            (self.pooling == "kmax" or self.k == 1, f"k is for pooling='kmax' only, got k={self.k}"),
            (1 <= self.k <= min(self.widths, default=1),
             f"k must be in [1, min(widths)={min(self.widths, default=1)}], got {self.k}"),
            (0 <= self.pad_id < self.vocab_size, f"pad_id must be in [0, vocab_size={self.vocab_size}), "
                                                  f"got {self.pad_id}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(f"KimCNNConfig: {message}")

    @property
    def channels(self) -> int:
        """C: 2 embedding copies for "multichannel", else 1."""
        return 2 if self.variant == "multichannel" else 1

    @property
    def features(self) -> int:
        """F: pooled features fed to the output layer, M per width (M * k with k-max pooling)."""
        return self.maps * len(self.widths) * self.k


class KimCNN(nn.Module):
    """``tokens (B,T), lengths (B,) -> logits (B,K)``: embeddings, wide convolutions of several widths,
    masked pooling over time, dropout, a linear output layer.

    ``pretrained`` (V,D) initialises the embeddings of every variant but "rand", and is required for them
    (:func:`build_kim_cnn` passes zeros when the weights come from a checkpoint anyway).
    """

    def __init__(self, config: KimCNNConfig, pretrained: torch.Tensor | None = None):
        super().__init__()
        self.config = config
        V, D = config.vocab_size, config.embed_dim
        init = self._initial_embeddings(config, pretrained)  # (V,D)
        trainable = config.variant != "static"
        self.embed = nn.Embedding(V, D, padding_idx=config.pad_id)  # weight (V,D)
        self.embed.weight.data.copy_(init)
        self.embed.weight.requires_grad_(trainable)
        self.embed_static = None
        if config.variant == "multichannel":  # the frozen second copy
            self.embed_static = nn.Embedding.from_pretrained(init.clone(), freeze=True, padding_idx=config.pad_id)
        C, M = config.channels, config.maps
        self.convs = nn.ModuleList(nn.Conv1d(C * D, M, kernel_size=w, padding=w - 1) for w in config.widths)
        self.drop = nn.Dropout(config.dropout)
        self.out = nn.Linear(config.features, config.n_classes)  # weight W_out (K,F), bias (K,)

    @staticmethod
    def _initial_embeddings(config: KimCNNConfig, pretrained: torch.Tensor | None) -> torch.Tensor:
        V, D = config.vocab_size, config.embed_dim
        if pretrained is None:
            if config.variant != "rand":
                raise ConfigError(f"KimCNN: the variant {config.variant!r} needs pretrained embeddings (V,D)")
            return torch.empty(V, D).uniform_(-RAND_INIT_SCALE, RAND_INIT_SCALE)  # (V,D)
        if tuple(pretrained.shape) != (V, D):
            raise ShapeError(f"KimCNN: pretrained embeddings should be (V,D) = ({V},{D}), "
                             f"got {tuple(pretrained.shape)}")
        return pretrained.detach().float().cpu()

    def trainable_parameters(self) -> list[nn.Parameter]:
        """The parameters that learn (the frozen embeddings of "static"/"multichannel" left out)."""
        return [p for p in self.parameters() if p.requires_grad]

    def _check_input(self, tokens: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
        """Validate ``tokens`` (B,T) and ``lengths`` (B,); return the lengths (counted when None)."""
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.dtype != torch.long:
            shape = tuple(tokens.shape) if isinstance(tokens, torch.Tensor) else type(tokens).__name__
            raise ShapeError(f"KimCNN: tokens must be a (B,T) tensor of long ids, got {shape}")
        B, T = tokens.shape
        if B == 0 or T == 0:
            raise ShapeError(f"KimCNN: tokens (B,T) must not be empty, got shape {(B, T)}")
        if lengths is None:
            lengths = (tokens != self.config.pad_id).sum(dim=1)  # (B,)
        if tuple(lengths.shape) != (B,):
            raise ShapeError(f"KimCNN: lengths must be (B,) = ({B},), got {tuple(lengths.shape)}")
        if int(lengths.min()) < 1 or int(lengths.max()) > T:
            raise ShapeError(f"KimCNN: every length must be in [1, T={T}], got min {int(lengths.min())}, "
                             f"max {int(lengths.max())} (an empty sentence cannot be classified)")
        if int(tokens.min()) < 0 or int(tokens.max()) >= self.config.vocab_size:
            raise ConfigError(f"KimCNN: token ids must be in [0, {self.config.vocab_size}), "
                              f"got min {int(tokens.min())}, max {int(tokens.max())}")
        return lengths.to(tokens.device)

    def embed_tokens(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B,T) ids, (B,T) mask -> (B,C*D,T) embeddings, zero at padding, channels first for Conv1d."""
        x = self.embed(tokens)  # (B,T) -> (B,T,D)
        if self.embed_static is not None:
            x = torch.cat([x, self.embed_static(tokens)], dim=-1)  # (B,T,D) + (B,T,D) -> (B,T,2D)
        x = x * mask.unsqueeze(-1).to(x.dtype)  # (B,T,C*D) * (B,T,1): padding -> 0 vectors
        return x.transpose(1, 2)  # (B,T,C*D) -> (B,C*D,T)

    def pooled_preactivations(self, tokens: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """(B,F) the masked max over time of each map's pre-activation (before ReLU); only with max pooling."""
        if self.config.pooling != "max":
            raise ConfigError("KimCNN.pooled_preactivations: only defined for pooling='max'")
        return self._pooled(tokens, lengths, relu=False)

    def _pooled(self, tokens: torch.Tensor, lengths: torch.Tensor | None, relu: bool = True) -> torch.Tensor:
        lengths = self._check_input(tokens, lengths)
        T = tokens.shape[1]
        mask = torch.arange(T, device=tokens.device)[None, :] < lengths[:, None]  # (1,T) < (B,1) -> (B,T)
        x = self.embed_tokens(tokens, mask)  # (B,C*D,T)
        pooled = []
        for w, conv in zip(self.config.widths, self.convs):
            a = conv(x)  # (B,C*D,T) -> (B,M,T+w-1); window j spans tokens j-w+1 .. j
            valid = window_mask(lengths, T, w)  # (B,T+w-1): windows that overlap a real token
            if self.config.pooling == "max":
                p = masked_max(a, valid)  # (B,M)
                pooled.append(F.relu(p) if relu else p)
            elif self.config.pooling == "kmax":
                pooled.append(F.relu(masked_kmax(a, valid, self.config.k)).flatten(1))  # (B,M,k) -> (B,M*k)
            else:
                pooled.append(masked_mean(F.relu(a), valid))  # (B,M)
        return torch.cat(pooled, dim=1)  # n_widths x (B,M) -> (B,F)

    def features(self, tokens: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """h (B,F): the pooled features after ReLU, before dropout."""
        return self._pooled(tokens, lengths)

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (B,K). ``lengths`` (B,) defaults to the number of non-``pad_id`` tokens of each row;
        sentences must be padded after their last token."""
        return self.out(self.drop(self.features(tokens, lengths)))  # (B,F) x (F,K) -> (B,K)

    @torch.no_grad()
    def predict_proba(self, tokens: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """Class probabilities (B,K), in eval mode (no dropout); the mode is restored after."""
        was_training = self.training
        self.eval()
        try:
            return torch.softmax(self(tokens, lengths), dim=-1)  # (B,K)
        finally:
            self.train(was_training)

    @torch.no_grad()
    def apply_max_norm(self) -> None:
        """Project the output weights' rows back to norm <= ``config.max_norm`` (call after each step)."""
        if self.config.max_norm is not None:
            max_norm_(self.out.weight, self.config.max_norm)


def window_mask(lengths: torch.Tensor, T: int, width: int) -> torch.Tensor:
    """(B,) lengths -> (B,T+width-1) bool: True for the wide-convolution windows that overlap a real token.

    Window j covers positions j-width+1 .. j, so it overlaps the sentence (positions 0 .. L-1) iff
    j <= L+width-2; there are L+width-1 >= 1 such windows for every L >= 1.
    """
    j = torch.arange(T + width - 1, device=lengths.device)  # (T+W-1,)
    return j[None, :] < (lengths[:, None] + width - 1)  # (1,T+W-1) < (B,1) -> (B,T+W-1)


def masked_max(a: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """(B,M,T') values, (B,T') bool -> (B,M): the max over the valid positions; invalid ones are set to
    -inf first, so they never win, even when every valid value is negative. Each row needs one valid position."""
    if a.dim() != 3 or tuple(valid.shape) != (a.shape[0], a.shape[2]):
        raise ShapeError(f"masked_max: expected a (B,M,T) and valid (B,T), got {tuple(a.shape)} and "
                         f"{tuple(valid.shape)}")
    filled = a.masked_fill(~valid[:, None, :], float("-inf"))  # (B,M,T') with -inf at invalid positions
    return filled.amax(dim=2)  # (B,M,T') -> (B,M)


def masked_kmax(a: torch.Tensor, valid: torch.Tensor, k: int) -> torch.Tensor:
    """(B,M,T') values, (B,T') bool -> (B,M,k): the ``k`` largest valid values of each row, in the order of
    their positions (Kalchbrenner et al. 2014's k-max pooling); each row needs ``k`` valid positions."""
    if a.dim() != 3 or tuple(valid.shape) != (a.shape[0], a.shape[2]):
        raise ShapeError(f"masked_kmax: expected a (B,M,T) and valid (B,T), got {tuple(a.shape)} and "
                         f"{tuple(valid.shape)}")
    if int(valid.sum(dim=1).min()) < k:
        raise ShapeError(f"masked_kmax: every row needs at least k={k} valid positions")
    filled = a.masked_fill(~valid[:, None, :], float("-inf"))  # (B,M,T') with -inf at invalid positions
    where = filled.topk(k, dim=2).indices.sort(dim=2).values  # (B,M,k): positions of the k largest, in order
    return a.gather(2, where)  # (B,M,T') -> (B,M,k)


def masked_mean(a: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """(B,M,T') values, (B,T') bool -> (B,M): the mean over the valid positions."""
    if a.dim() != 3 or tuple(valid.shape) != (a.shape[0], a.shape[2]):
        raise ShapeError(f"masked_mean: expected a (B,M,T) and valid (B,T), got {tuple(a.shape)} and "
                         f"{tuple(valid.shape)}")
    v = valid[:, None, :].to(a.dtype)  # (B,1,T')
    return (a * v).sum(dim=2) / v.sum(dim=2).clamp_min(1.0)  # (B,M,T') -> (B,M)


@torch.no_grad()
def max_norm_(weight: torch.Tensor, s: float) -> torch.Tensor:
    """Rescale, in place, each row of ``weight`` (K,F) whose L2 norm exceeds ``s`` to norm ``s``; rows
    already within ``s`` are left as they are (Kim 2014: a projection after each gradient step)."""
    if s <= 0:
        raise ConfigError(f"max_norm_: s must be > 0, got {s}")
    if weight.dim() != 2:
        raise ShapeError(f"max_norm_: expected a (K,F) weight matrix, got shape {tuple(weight.shape)}")
    norms = weight.norm(dim=1, keepdim=True)  # (K,1)
    scale = torch.where(norms > s, s / norms.clamp_min(1e-12), torch.ones_like(norms))  # (K,1)
    weight.mul_(scale)  # (K,F) * (K,1)
    return weight


def build_kim_cnn(config: Mapping[str, Any] | KimCNNConfig) -> KimCNN:
    """Rebuild a model from its config (a :class:`KimCNNConfig` or the dict of a checkpoint), with
    placeholder embeddings that the checkpoint's weights replace; pass it as ``build=`` to
    :func:`nlpcourse.load_checkpoint`. Unknown keys are an error."""
    if not isinstance(config, KimCNNConfig):
        known = {f.name for f in dataclasses.fields(KimCNNConfig)}
        unknown = sorted(set(config) - known)
        if unknown:
            raise ConfigError(f"build_kim_cnn: unknown config keys {unknown}; expected some of {sorted(known)}")
        config = KimCNNConfig(**dict(config))
    placeholder = None if config.variant == "rand" else torch.zeros(config.vocab_size, config.embed_dim)
    return KimCNN(config, placeholder)


# ---------------------------------------------------------------- pretrained embeddings


@dataclass
class PretrainedEmbeddings:
    """What :func:`pretrained_embeddings` returns."""

    weight: torch.Tensor  # (V,D) one row per vocabulary id; <pad> is zero
    covered: int  # vocabulary words (specials not counted) that had a pretrained vector
    total: int  # vocabulary words, specials not counted
    init_scale: float  # a: the words without a vector were drawn from uniform(-a, a)

    @property
    def coverage(self) -> float:
        return self.covered / self.total if self.total else 0.0


def pretrained_embeddings(vocab: Vocab, wv: WordVectors, seed: int = 0) -> PretrainedEmbeddings:
    """The (V,D) embedding matrix for ``vocab`` from ``wv``: a word's pretrained vector where there is
    one; otherwise uniform(-a, a), with a = sqrt(3 var) so that its variance equals ``var``, the mean
    per-dimension variance of the pretrained vectors (as Kim did). <pad> is zero; the other specials
    are drawn like unknown words. Deterministic for a given ``seed``."""
    if len(wv) == 0:
        raise ConfigError("pretrained_embeddings: the word vectors are empty")
    D = wv.dim
    var = float(wv.vectors.var(dim=0).mean())
    a = math.sqrt(3.0 * var)
    g = torch.Generator().manual_seed(seed)
    weight = (torch.rand(len(vocab), D, generator=g) * 2 - 1) * a  # (V,D) uniform(-a, a)
    rows = [(i, wv.index[w]) for i, w in enumerate(vocab.itos) if i >= len(SPECIALS) and w in wv.index]
    if rows:
        ids = torch.tensor([i for i, _ in rows])
        src = torch.tensor([j for _, j in rows])
        weight[ids] = wv.vectors[src]  # (n,D)
    weight[vocab.pad_id] = 0.0
    return PretrainedEmbeddings(weight, len(rows), len(vocab) - len(SPECIALS), a)


def training_vocab(train_tokens: list[list[str]], wv: WordVectors | None = None, min_freq: int = 2) -> Vocab:
    """The words of the training sentences seen ``min_freq`` times or more, plus (with ``wv``) the rarer
    ones that have a pretrained vector: a word seen once learns little from random initialisation."""
    counts = Counter(t for toks in train_tokens for t in toks)
    keep = [t for t, c in counts.items() if c >= min_freq or (wv is not None and t in wv.index)]
    if not keep:
        raise ConfigError(f"training_vocab: no training word is seen {min_freq} times or has a vector")
    keep.sort(key=lambda t: (-counts[t], t))
    return Vocab(list(SPECIALS) + keep, {t: counts[t] for t in keep})


# ---------------------------------------------------------------- training recipe (script and benchmark)


@dataclass
class CNNTrainSettings:
    """How :func:`train_kim_cnn` trains (Kim: Adadelta, batches of 50, a fixed 25 epochs)."""

    optimizer: str = "adam"  # "adam" or "adadelta" (Kim's, rho 0.95)
    lr: float = 1e-3  # learning rate (Adadelta: 1.0)
    batch_size: int = 50  # sentences per mini-batch, bucketed by length
    epochs: int = 12  # at most this many epochs; early stopping usually ends sooner
    patience: int = 3  # stop after this many epochs without a higher validation accuracy
    seed: int = 0  # seeds the batch order (the model's initialisation is seeded by the caller)

    def __post_init__(self) -> None:
        if self.optimizer not in ("adam", "adadelta"):
            raise ConfigError(f"CNNTrainSettings: optimizer must be 'adam' or 'adadelta', got {self.optimizer!r}")
        if self.lr <= 0 or self.batch_size < 1 or self.epochs < 1 or self.patience < 1:
            raise ConfigError(f"CNNTrainSettings: lr > 0, batch_size, epochs, patience >= 1 needed, got {self}")


Example = tuple[Batch, torch.Tensor]  # a padded batch of sentences and its labels (B,)


def labelled_batches(ids: list[list[int]], labels: torch.Tensor, batch_size: int, shuffle: bool = True,
                     seed: int = 0) -> list[Example]:
    """Padded batches of similar-length sentences with their labels; deterministic for a ``seed``."""
    if len(ids) != len(labels):
        raise ShapeError(f"labelled_batches: {len(ids)} sentences but {len(labels)} labels")
    groups = bucket_batches([len(s) for s in ids], batch_size, shuffle=shuffle, seed=seed)
    return [(pad_batch([ids[i] for i in g]), labels[torch.tensor(g)]) for g in groups]


def cnn_loss(model: KimCNN, example: Example) -> torch.Tensor:
    """Mean cross-entropy of one batch (the ``loss_fn`` of :func:`nlpcourse.fit`)."""
    batch, y = example
    return F.cross_entropy(model(batch.tokens, batch.lengths), y)


@torch.no_grad()
def evaluate_cnn(model: KimCNN, batches: list[Example]) -> dict[str, float]:
    """Loss and accuracy over ``batches`` in eval mode (the mode is restored after)."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    loss, correct, n = 0.0, 0, 0
    for batch, y in batches:
        batch, y = batch.to(device), y.to(device)
        logits = model(batch.tokens, batch.lengths)  # (B,K)
        loss += F.cross_entropy(logits, y, reduction="sum").item()
        correct += int((logits.argmax(-1) == y).sum())
        n += len(y)
    model.train(was_training)
    return {"loss": loss / n, "acc": correct / n}


def make_optimizer(model: KimCNN, settings: CNNTrainSettings) -> torch.optim.Optimizer:
    """The optimiser over the trainable parameters, with the max-norm projection after every step."""
    params = model.trainable_parameters()
    if settings.optimizer == "adam":
        opt: torch.optim.Optimizer = torch.optim.Adam(params, lr=settings.lr)
    else:
        opt = torch.optim.Adadelta(params, lr=settings.lr, rho=0.95, eps=1e-6)
    opt.register_step_post_hook(lambda *_: model.apply_max_norm())
    return opt


def train_kim_cnn(model: KimCNN, train: tuple[list[list[int]], torch.Tensor],
                  val: tuple[list[list[int]], torch.Tensor], settings: CNNTrainSettings,
                  device: torch.device | str = "cpu") -> History:
    """Train on ``train`` = (id lists, labels), early-stopped on the accuracy on ``val``; the weights of
    the best validation epoch are restored. Returns the history (``val_acc``, ``val_loss`` per epoch)."""
    val_batches = labelled_batches(*val, batch_size=500, shuffle=False)

    def epoch_batches(epoch: int) -> list[Example]:
        return labelled_batches(*train, batch_size=settings.batch_size, seed=settings.seed * 1000 + epoch)

    def evaluate(m: nn.Module) -> dict[str, float]:
        r = evaluate_cnn(m, val_batches)  # type: ignore[arg-type]
        return {"val_loss": r["loss"], "val_acc": r["acc"]}

    return fit(model, epoch_batches, cnn_loss, make_optimizer(model, settings), settings.epochs,
               evaluate=evaluate, monitor="val_acc", mode="max", patience=settings.patience,
               device=device, progress=False)


def domain_vectors(train_tokens: list[list[str]], brown_tokens: int | None = None, epochs: int = 5, seed: int = 0,
                   device: str | torch.device = "cpu") -> WordVectors:
    """Skip-gram vectors from the course's word2vec trainer on the Brown corpus (its first ``brown_tokens``
    words; None: all) plus the training snippets ``train_tokens``: never validation or test text."""
    from ..data import load_brown
    from ..data.word_corpus import build_word_corpus, words_only
    from .word2vec import Word2Vec, Word2VecConfig

    brown, total = [], 0
    for sent in load_brown():
        toks = words_only([w.lower() for w, _ in sent])
        if brown_tokens is not None and total + len(toks) > brown_tokens:
            break
        if toks:
            brown.append(toks)
            total += len(toks)
    corpus = build_word_corpus(brown + [s for s in map(words_only, train_tokens) if s], min_count=2)
    model = Word2Vec(Word2VecConfig(epochs=epochs, seed=seed), corpus, device=device)
    model.fit(corpus, progress=False)
    return model.vectors()


# ---------------------------------------------------------------- what a trained model looks at


@dataclass
class NgramEvidence:
    """One pooled feature of one sentence: the window that won its max, and what it adds to the logits."""

    width: int  # the filter's width
    filter: int  # its index among the maps of that width
    start: int  # the window's first token (a wide window may start before the sentence: clipped to 0)
    stop: int  # one past its last token, clipped to the sentence
    activation: float  # h_f, the pooled feature after ReLU
    contribution: torch.Tensor  # (K,) h_f * W_out[:, f], what it adds to each logit


@torch.no_grad()
def window_preactivations(model: KimCNN, tokens: torch.Tensor, lengths: torch.Tensor | None = None
                          ) -> list[torch.Tensor]:
    """One tensor (B,M,T+w-1) per width: every window's pre-activation, -inf at windows that hold no
    real token (so that a max over time picks a window of the sentence). Max pooling only."""
    if model.config.pooling != "max":
        raise ConfigError("window_preactivations: only defined for pooling='max'")
    lengths = model._check_input(tokens, lengths)
    T = tokens.shape[1]
    mask = torch.arange(T, device=tokens.device)[None, :] < lengths[:, None]  # (B,T)
    x = model.embed_tokens(tokens, mask)  # (B,C*D,T)
    out = []
    for w, conv in zip(model.config.widths, model.convs):
        valid = window_mask(lengths, T, w)  # (B,T+w-1)
        out.append(conv(x).masked_fill(~valid[:, None, :], float("-inf")))  # (B,M,T+w-1)
    return out


def window_span(j: int, width: int, length: int) -> tuple[int, int]:
    """Tokens [start, stop) of window ``j`` of a wide convolution (it covers j-width+1 .. j)."""
    return max(0, j - width + 1), min(length, j + 1)


@torch.no_grad()
def decisive_ngrams(model: KimCNN, ids: list[int], k: int = 5) -> list[NgramEvidence]:
    """The ``k`` pooled features of one sentence (its ids) that push its logits most towards its predicted
    class c: largest h_f (W_out[c, f] - mean over the other classes of W_out[., f])."""
    if not ids:
        raise ShapeError("decisive_ngrams: the sentence is empty")
    device = next(model.parameters()).device
    tokens = torch.tensor([ids], device=device)  # (1,T)
    maps = window_preactivations(model, tokens)  # per width (1,M,T+w-1)
    h = torch.cat([F.relu(a.amax(dim=2)) for a in maps], dim=1)[0]  # (F,)
    W = model.out.weight  # (K,F)
    c = int(model.out(h).argmax())  # (F,) -> (K,): the predicted class
    others = torch.cat([W[:c], W[c + 1:]]).mean(dim=0)  # (F,)
    push = h * (W[c] - others)  # (F,)
    M = model.config.maps
    evidence = []
    for f in push.argsort(descending=True)[:k].tolist():
        wi, m = divmod(f, M)
        width = model.config.widths[wi]
        j = int(maps[wi][0, m].argmax())
        start, stop = window_span(j, width, len(ids))
        evidence.append(NgramEvidence(width, m, start, stop, float(h[f]), (h[f] * W[:, f]).cpu()))
    return evidence


@torch.no_grad()
def top_ngrams(model: KimCNN, sentences: list[list[int]], width_index: int, filters: list[int], k: int = 5,
               batch_size: int = 500) -> dict[int, list[tuple[float, int, int, int]]]:
    """For each filter of the width ``model.config.widths[width_index]``: the ``k`` windows of
    ``sentences`` (id lists) with the highest pre-activation, as (score, sentence, start, stop), best
    first; one window per sentence (its best) and per distinct n-gram, so that a phrase repeated
    across the sentences does not fill the list."""
    device = next(model.parameters()).device
    width = model.config.widths[width_index]
    found: dict[int, list[tuple[float, int, int, int]]] = {f: [] for f in filters}
    for lo in range(0, len(sentences), batch_size):
        chunk = sentences[lo:lo + batch_size]
        batch = pad_batch(chunk).to(device)
        a = window_preactivations(model, batch.tokens, batch.lengths)[width_index][:, filters]  # (B,n,T')
        best, where = a.max(dim=2)  # (B,n) each
        for n, f in enumerate(filters):
            for b in best[:, n].topk(min(4 * k, len(chunk))).indices.tolist():
                start, stop = window_span(int(where[b, n]), width, len(chunk[b]))
                found[f].append((float(best[b, n]), lo + b, start, stop))
    return {f: _distinct(sorted(v, reverse=True), sentences, k) for f, v in found.items()}


def _distinct(rows: list[tuple[float, int, int, int]], sentences: list[list[int]], k: int
              ) -> list[tuple[float, int, int, int]]:
    """The first ``k`` rows whose windows hold different ids."""
    seen, out = set(), []
    for row in rows:
        _, b, start, stop = row
        key = tuple(sentences[b][start:stop])
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out[:k]

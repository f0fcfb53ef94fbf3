"""Fine-tuning a pretrained network the ULMFiT way (Howard & Ruder, 2018, sec. 3.2-3.3), for the pretraining
chapter: discriminative learning rates (each lower layer group learns ``decay`` times slower than the one
above it), the slanted triangular schedule (a short linear rise, then a long linear fall), and gradual
unfreezing (the top group trains first, one more group joins at each stage).

These are tools for any ``torch.optim`` optimiser: :func:`discriminative_groups` makes its parameter groups,
:func:`slanted_triangular` a factor for ``torch.optim.lr_scheduler.LambdaLR``, :func:`unfreeze_top` sets
which groups train. :func:`fine_tune_classifier` puts them together for a classifier.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .data.batching import pad_batch
from .errors import ConfigError


def discriminative_groups(layer_groups: Sequence[nn.Module | Sequence[nn.Parameter]], lr: float,
                          decay: float = 2.6) -> list[dict]:
    """Optimiser parameter groups, bottom group first: the top group gets ``lr``, the one below it
    ``lr / decay``, and so on down (ULMFiT's eq. 2 with eta^{l-1} = eta^l / 2.6)."""
    if not layer_groups:
        raise ConfigError("discriminative_groups: no layer groups")
    if lr <= 0 or decay < 1 or not math.isfinite(lr * decay):
        raise ConfigError(f"discriminative_groups: lr must be > 0 and decay >= 1, got {lr} and {decay}")
    top = len(layer_groups) - 1
    groups = []
    for k, group in enumerate(layer_groups):
        params = list(group.parameters()) if isinstance(group, nn.Module) else list(group)
        groups.append({"params": params, "lr": lr / decay ** (top - k)})
    return groups


def slanted_triangular(total: int, cut_frac: float = 0.1, ratio: float = 32.0) -> Callable[[int], float]:
    """The factor of the peak rate at step t = 0 .. total (ULMFiT's eq. 3): it rises linearly from 1/ratio
    to 1 over the first ``cut_frac`` of the steps, then falls linearly back to 1/ratio at step ``total``.
    The fall is measured over the steps left after the peak, which is the paper's formula whenever
    ``total * cut_frac`` is a whole number (and stays in [1/ratio, 1] when it is not)."""
    if total < 2 or not 0.0 < cut_frac < 1.0 or ratio < 1:
        raise ConfigError(f"slanted_triangular: need total >= 2, 0 < cut_frac < 1, ratio >= 1; got {total}, "
                          f"{cut_frac}, {ratio}")
    cut = max(1, math.floor(total * cut_frac))

    def factor(t: int) -> float:
        p = t / cut if t < cut else max(0.0, 1 - (t - cut) / (total - cut))
        return (1 + p * (ratio - 1)) / ratio
    return factor


def unfreeze_top(layer_groups: Sequence[nn.Module | Sequence[nn.Parameter]], n: int) -> None:
    """Gradual unfreezing: the top ``n`` groups train (``requires_grad``), the others are frozen."""
    if not 1 <= n <= len(layer_groups):
        raise ConfigError(f"unfreeze_top: n must be in [1, {len(layer_groups)}], got {n}")
    for k, group in enumerate(layer_groups):
        params = group.parameters() if isinstance(group, nn.Module) else group
        for p in params:
            p.requires_grad_(k >= len(layer_groups) - n)


# ------------------------------------------------------------------ fine-tuning a classifier


@dataclass
class FineTuneConfig:
    """How :func:`fine_tune_classifier` trains; the defaults are plain fine-tuning (BERT's recipe), and
    ``decay`` > 1 with ``unfreeze_every`` > 0 make it ULMFiT's."""

    epochs: int = 3  # passes over the training examples; the epoch with the best validation accuracy is kept
    batch: int = 32  # examples per step
    lr: float = 1e-4  # the top group's peak rate (AdamW)
    decay: float = 1.0  # discriminative rates: each group below learns ``decay`` times slower (ULMFiT: 2.6)
    unfreeze_every: int = 0  # steps between unfreezing one more group from the top (0: all train at once)
    cut_frac: float = 0.1  # slanted triangular: the fraction of the steps spent rising
    ratio: float = 32.0  # slanted triangular: peak rate / lowest rate
    weight_decay: float = 0.01
    clip: float = 1.0  # global gradient-norm bound
    seed: int = 0  # the order of the examples (and dropout)


@dataclass
class FineTuneResult:
    valid: list[float]  # validation accuracy after each epoch
    best_epoch: int  # 0-based; the model holds the weights of that epoch
    seconds: float  # wall time of the training and validation


def fine_tune_classifier(model: nn.Module, train: tuple[list[list[int]], torch.Tensor],
                         valid: tuple[list[list[int]], torch.Tensor], config: FineTuneConfig,
                         device: torch.device | str = "cpu") -> FineTuneResult:
    """Fine-tune ``model`` (ids (B,T) -> logits (B,C), with ``layer_groups()`` bottom to top) on ``train``
    (id lists, labels (N,)) with the rates, schedule and unfreezing of ``config``; keep the epoch with the
    best accuracy on ``valid``. A model that leaves a loss in ``aux_loss`` as it computes the logits (GPT's
    auxiliary language-model loss) has it added to the classifier's."""
    start = time.perf_counter()
    groups = model.layer_groups()
    opt = torch.optim.AdamW(discriminative_groups(groups, config.lr, config.decay), weight_decay=config.weight_decay)
    per_epoch = math.ceil(len(train[0]) / config.batch)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, slanted_triangular(per_epoch * config.epochs, config.cut_frac,
                                                                      config.ratio))
    g = torch.Generator().manual_seed(config.seed)
    torch.manual_seed(config.seed)
    scores, best = [], None
    for _ in range(config.epochs):
        _fine_tune_epoch(model, groups, opt, sched, train, torch.randperm(len(train[0]), generator=g), config,
                         device)
        scores.append(accuracy(model, *valid, device=device))
        if best is None or scores[-1] > max(scores[:-1]):
            best = {k: v.detach().clone() for k, v in model.state_dict().items()}
    model.load_state_dict(best)
    unfreeze_top(groups, len(groups))
    return FineTuneResult(scores, scores.index(max(scores)), time.perf_counter() - start)


def _fine_tune_epoch(model, groups, opt, sched, train, order, config: FineTuneConfig, device) -> None:
    model.train()
    ids, labels = train
    for i in range(0, len(order), config.batch):
        if config.unfreeze_every:
            unfreeze_top(groups, min(len(groups), 1 + sched.last_epoch // config.unfreeze_every))
        idx = order[i:i + config.batch].tolist()
        x = pad_batch([ids[j] for j in idx]).tokens.to(device)  # (B,T)
        loss = F.cross_entropy(model(x), labels[idx].to(device))
        if getattr(model, "aux_loss", None) is not None:  # an auxiliary loss of the same pass (GPT's LM loss)
            loss = loss + model.aux_loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
        opt.step()
        sched.step()


@torch.no_grad()
def accuracy(model: nn.Module, ids: list[list[int]], labels: torch.Tensor, batch: int = 256,
             device: torch.device | str = "cpu") -> float:
    """The fraction of ``ids`` (id lists) whose argmax logit is the label; the model is left in eval mode."""
    if not ids or len(ids) != len(labels):
        raise ConfigError(f"accuracy: need as many labels as examples (at least one), got {len(ids)} and "
                          f"{len(labels)}")
    model.eval()
    hits = sum(int((model(pad_batch(ids[i:i + batch]).tokens.to(device)).argmax(-1).cpu()
                    == labels[i:i + batch]).sum()) for i in range(0, len(ids), batch))
    return hits / len(ids)

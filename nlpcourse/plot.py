"""Plots the chapters share: training curves, heatmaps (attention, confusion) and 2-D embedding maps."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from .errors import ShapeError
from .shapes import check_shape


def _axes(ax, figsize=(6, 4)):
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def plot_curves(
    curves: Mapping[str, Sequence[float]],
    ax=None,
    title: str | None = None,
    xlabel: str = "epoch",
    best_epoch: int | None = None,
    logy: bool = False,
):
    """One line per named curve against epoch (1-based); a dotted line marks ``best_epoch`` (0-based)."""
    ax = _axes(ax)
    for name, values in curves.items():
        ax.plot(range(1, len(values) + 1), list(values), marker="o", markersize=3, label=name)
    if best_epoch is not None:
        ax.axvline(best_epoch + 1, color="grey", linestyle=":", label="best epoch")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    if title:
        ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    return ax


def heatmap(
    matrix: torch.Tensor | np.ndarray,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    ax=None,
    title: str | None = None,
    cmap: str = "viridis",
    annotate: bool | None = None,
    fmt: str = "{:.2f}",
    xlabel: str | None = None,
    ylabel: str | None = None,
):
    """A labelled heatmap of a 2-D matrix (attention weights: rows = queries, columns = keys)."""
    m = torch.as_tensor(np.asarray(matrix), dtype=torch.float64)
    check_shape(m, ("R", "C"), "heatmap matrix")
    R, C = m.shape
    if row_labels is not None and len(row_labels) != R:
        raise ShapeError(f"heatmap: {len(row_labels)} row labels for {R} rows")
    if col_labels is not None and len(col_labels) != C:
        raise ShapeError(f"heatmap: {len(col_labels)} column labels for {C} columns")
    ax = _axes(ax, figsize=(max(3, 0.5 * C + 2), max(3, 0.4 * R + 1.5)))
    im = ax.imshow(m.numpy(), cmap=cmap, aspect="auto")
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    if row_labels is not None:
        ax.set_yticks(range(R), labels=list(row_labels))
    if col_labels is not None:
        ax.set_xticks(range(C), labels=list(col_labels), rotation=45, ha="right")
    if annotate is None:
        annotate = R * C <= 100
    if annotate:
        for i in range(R):
            for j in range(C):
                v = m[i, j].item()
                r, g, b, _ = im.cmap(im.norm(v))  # the cell's colour: dark cells get white text
                dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
                ax.text(j, i, fmt.format(v), ha="center", va="center", fontsize=8,
                        color="white" if dark else "black")
    if title:
        ax.set_title(title)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    return ax


def confusion_matrix(y_true: Sequence[int], y_pred: Sequence[int], n_classes: int | None = None) -> torch.Tensor:
    """Counts (K,K): row = true class, column = predicted class."""
    t = torch.as_tensor(y_true, dtype=torch.long).flatten()
    p = torch.as_tensor(y_pred, dtype=torch.long).flatten()
    if t.shape != p.shape:
        raise ShapeError(f"confusion_matrix: {t.numel()} true labels but {p.numel()} predictions")
    K = n_classes or int(max(t.max().item(), p.max().item())) + 1
    return torch.bincount(t * K + p, minlength=K * K).view(K, K)  # (K*K,) -> (K,K)


def plot_confusion(y_true, y_pred, labels: Sequence[str], ax=None, title: str | None = "confusion matrix"):
    """Heatmap of the confusion matrix with counts in the cells."""
    cm = confusion_matrix(y_true, y_pred, len(labels))
    return heatmap(cm, labels, labels, ax=ax, title=title, cmap="Blues", annotate=True, fmt="{:.0f}",
                   xlabel="predicted", ylabel="true")


def project_2d(vectors: torch.Tensor | np.ndarray) -> torch.Tensor:
    """Project (N,D) vectors onto their top two principal components: (N,D) -> (N,2)."""
    x = torch.as_tensor(np.asarray(vectors), dtype=torch.float64)
    check_shape(x, ("N", "D"), "vectors")
    if x.shape[0] < 2:
        raise ShapeError(f"project_2d: need at least 2 vectors, got {x.shape[0]}")
    x = x - x.mean(0, keepdim=True)
    _, _, Vh = torch.linalg.svd(x, full_matrices=False)  # Vh: (min(N,D),D)
    comps = Vh[:2]
    comps = comps * torch.sign(comps[:, :1] + 1e-12)  # fix the sign so plots are the same every build
    return x @ comps.T  # (N,D) x (D,2) -> (N,2)


def embedding_map(
    vectors: torch.Tensor | np.ndarray,
    labels: Sequence[str],
    ax=None,
    title: str | None = None,
    groups: Sequence[int] | None = None,
):
    """Scatter of (N,D) vectors projected to 2-D (PCA), each point labelled with its word."""
    xy = project_2d(vectors)
    if len(labels) != xy.shape[0]:
        raise ShapeError(f"embedding_map: {len(labels)} labels for {xy.shape[0]} vectors")
    ax = _axes(ax, figsize=(6, 5))
    if groups is None:
        ax.scatter(xy[:, 0].numpy(), xy[:, 1].numpy(), s=20)
    else:
        ax.scatter(xy[:, 0].numpy(), xy[:, 1].numpy(), c=list(groups), cmap="tab10", s=20)
    for (x, y), w in zip(xy.tolist(), labels):
        ax.annotate(w, (x, y), fontsize=9, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("PC 1")
    ax.set_ylabel("PC 2")
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    return ax

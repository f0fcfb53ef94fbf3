"""Concept figures of the chapter on convolutional text classifiers (book/cnn.md).

Each function returns a matplotlib ``Figure`` made without pyplot; the chapter passes in its own
words and numbers where a figure shows values.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from nlpcourse.figures import COLOURS, arrow, box, canvas, cells, label


def _fmt(v: float) -> str:
    """A number as short as it can be written: 2, -1, 0.5."""
    return f"{v:g}" if abs(v - round(v)) < 1e-9 else f"{v:.2f}"


def filter_over_sentence(words: Sequence[str], X: np.ndarray, W: np.ndarray, b: float,
                         scores: Sequence[float]) -> Figure:
    """The sentence matrix (words x dims), one filter of width h on its best window, every
    window's score and the max over time that keeps one number."""
    X, W = np.asarray(X, float), np.asarray(W, float)
    n, D = X.shape
    h = W.shape[0]
    s = 0.55
    best = int(np.argmax(scores))
    fig, ax = canvas(10.5, 0.9 + s * n + 1.2, scale=0.8)
    top = s * n + 1.2
    x0 = 1.3
    colours = ["highlight" if best <= i < best + h else "input" for i in range(n) for _ in range(D)]
    cells(ax, x0, top, X, size=s, colour=colours, fmt="{:g}", fontsize=10)
    for i, w in enumerate(words):
        label(ax, x0 - 0.12, top - (i + 0.5) * s, w, fontsize=10, ha="right")
    label(ax, x0 + D * s / 2, top + 0.3, f"sentence $X$: {n} words × {D} dims", fontsize=10)
    # the filter, drawn beside the window it is on
    xf = x0 + D * s + 1.3
    cells(ax, xf, top - best * s, W, size=s, colour="param", fmt="{:g}", fontsize=10)
    label(ax, xf + D * s / 2, top + 0.3, f"filter $\\mathbf{{w}}$: {h} × {D}, $b$ = {_fmt(b)}",
          fontsize=10)
    label(ax, xf - 0.65, top - (best + h / 2) * s, "⊙", fontsize=13)
    # window scores, each between the rows of its window
    xs = xf + D * s + 1.6
    label(ax, xs + 0.25, top + 0.3, "window scores $c_i$", fontsize=10)
    for i, c in enumerate(scores):
        y = top - (i + h / 2) * s
        box(ax, xs + 0.25, y, _fmt(c), w=0.7, h=0.42, colour="highlight" if i == best else "value",
            fontsize=10, rounded=False)
        label(ax, xs - 0.35, y, f"$c_{i + 1}$", fontsize=9)
    arrow(ax, (xf + D * s + 0.05, top - (best + h / 2) * s), (xs - 0.55, top - (best + h / 2) * s))
    # max over time
    xm = xs + 2.2
    ym = top - (n / 2) * s
    box(ax, xm, ym, _fmt(max(scores)), w=0.8, h=0.5, colour="highlight", fontsize=11, rounded=False)
    label(ax, xm, ym + 0.55, "max over time\n$\\hat c = \\max_i c_i$", fontsize=10)
    for i in range(len(scores)):
        arrow(ax, (xs + 0.62, top - (i + h / 2) * s), (xm - 0.42, ym), lw=0.8,
              colour="edge" if i == best else "#aaaaaa", shrink=2)
    window = " ⊕ ".join(f"$\\mathbf{{x}}_{{{best + 1 + k}}}$" for k in range(h))
    label(ax, 5.25, 0.45, f"$c_{{{best + 1}}} = \\mathbf{{w}} \\cdot ($" + window
          + f"$) + b = {_fmt(scores[best])}$: the window '{' '.join(words[best:best + h])}' "
          "wins; every window is scored by the same $\\mathbf{w}$", fontsize=10)
    return fig


def narrow_and_wide(words: Sequence[str], h: int = 3) -> Figure:
    """The windows of width h over a sentence: narrow (n-h+1 windows, no padding) above, wide
    (h-1 zero vectors on each side, n+h-1 windows) below."""
    n = len(words)
    bw, gap = 1.05, 0.08
    step = bw + gap
    width = (n + 2 * (h - 1)) * step + 1.0
    n_wide = n + h - 1
    height = 2.2 + 0.22 * (n - h + 1) + 0.22 * n_wide + 1.2
    fig, ax = canvas(width, height, scale=0.72)

    def row(y: float, padded: bool, title: str) -> None:
        toks = ["0"] * (h - 1) + list(words) + ["0"] * (h - 1) if padded else list(words)
        start = 0.5 if padded else 0.5 + (h - 1) * step
        label(ax, 0.5, y + 0.55, title, fontsize=10, ha="left")
        for k, t in enumerate(toks):
            pad = padded and (k < h - 1 or k >= h - 1 + n)
            box(ax, start + k * step + bw / 2, y, t, w=bw, h=0.45, colour="muted" if pad else "input",
                fontsize=9)
        count = len(toks) - h + 1
        for i in range(count):
            yb = y - 0.38 - 0.22 * i
            x1, x2 = start + i * step + 0.08, start + (i + h - 1) * step + bw - 0.08
            ax.plot([x1, x2], [yb, yb], color=COLOURS["edge"], lw=1.6)
            ax.plot([x1, x1], [yb, yb + 0.08], color=COLOURS["edge"], lw=1.0)
            ax.plot([x2, x2], [yb, yb + 0.08], color=COLOURS["edge"], lw=1.0)

    y_narrow = height - 0.9
    row(y_narrow, False, f"narrow: $n - h + 1$ = {n} − {h} + 1 = {n - h + 1} windows of width {h}")
    y_wide = y_narrow - 1.45 - 0.22 * (n - h + 1)
    row(y_wide, True, f"wide: {h - 1} zero vectors on each side, $n + h - 1$ = {n_wide} windows; "
        "each holds at least one word")
    return fig


def multichannel(words: Sequence[str], h: int = 2, start: int = 1, D: int = 4) -> Figure:
    """Two copies of the embeddings as two channels (static: frozen, non-static: tuned) and one
    filter whose window spans both; the gradient reaches only the tuned copy."""
    n = len(words)
    s = 0.45
    fig, ax = canvas(10.0, s * n + 2.3, scale=0.8)
    top = s * n + 1.2
    xs_, xn = 1.6, 4.4
    for x, name, col in ((xs_, "static copy\n(frozen)", "muted"), (xn, "non-static copy\n(tuned)", "input")):
        colours = ["highlight" if start <= i < start + h else col for i in range(n) for _ in range(D)]
        cells(ax, x, top, np.full((n, D), ""), size=s, colour=colours)
        label(ax, x + D * s / 2, top + 0.45, name, fontsize=10)
    for i, w in enumerate(words):
        label(ax, xs_ - 0.12, top - (i + 0.5) * s, w, fontsize=10, ha="right")
    y_win = top - (start + h / 2) * s
    # one filter: weights for both channels
    box(ax, 8.1, y_win, "", w=3.0, h=0.9, colour="value")
    label(ax, 8.1, y_win + 0.15, "one filter, one score:", fontsize=9)
    label(ax, 8.1, y_win - 0.2, r"$\mathbf{w}^{s}\cdot\mathbf{x}^{s}_{i:i+h-1}"
          r" + \mathbf{w}^{n}\cdot\mathbf{x}^{n}_{i:i+h-1} + b$", fontsize=9)
    ax.add_patch(Rectangle((xs_ - 0.08, top - (start + h) * s - 0.08), xn + D * s - xs_ + 0.16,
                           h * s + 0.16, fill=False, ls="--", lw=1.4, edgecolor=COLOURS["edge"]))
    label(ax, (xs_ + D * s + xn) / 2, y_win, "+", fontsize=14)
    arrow(ax, (xn + D * s + 0.1, y_win), (6.55, y_win))
    # gradient: only into the tuned copy
    yb = top - n * s - 0.35
    arrow(ax, (7.6, y_win - 0.5), (xn + D * s - 0.2, top - n * s - 0.05), colour="grad", curve=-0.2,
          text="gradient", text_offset=(0.4, -0.45))
    label(ax, xs_ + D * s / 2, yb - 0.1, "no gradient", fontsize=9, color=COLOURS["grad"])
    return fig


def kim_architecture(words: Sequence[str], widths: Sequence[int] = (3, 4, 5), maps: int = 2,
                     dropped: Sequence[int] = (1, 4)) -> Figure:
    """Kim's model: the sentence matrix, filters of several widths (wide convolution), one
    max per feature map, the pooled vector with dropout, and a softmax over the classes."""
    n = len(words)
    s = 0.3
    rows_h = max(n + max(widths) - 1, n) * s
    fig, ax = canvas(12.0, rows_h + 1.7, scale=0.75)
    top = rows_h + 1.0
    x0 = 1.6
    cells(ax, x0, top - (max(widths) - 1) * s / 2, np.full((n, 4), ""), size=s, colour="input")
    for i, w in enumerate(words):
        label(ax, x0 - 0.1, top - (max(widths) - 1) * s / 2 - (i + 0.5) * s, w, fontsize=9, ha="right")
    label(ax, x0 + 0.6, top + 0.35, "sentence\n$T \\times D$", fontsize=9)
    colours = ["#f4a582", "#92c5de", "#b8e186"]
    xm = 4.6
    pooled_y = []
    k = 0
    for g, (hw, col) in enumerate(zip(widths, colours)):
        for m in range(maps):
            x = xm + (g * maps + m) * 0.42
            length = n + hw - 1
            vals = np.random.default_rng(10 * g + m).normal(size=length)
            cc = [col] * length
            cc[int(np.argmax(vals))] = "highlight"
            cells(ax, x, top - (max(widths) - hw) * s / 2, np.full((length, 1), ""), size=s,
                  colour=cc)
            pooled_y.append((x + s / 2, k))
            k += 1
        label(ax, xm + (g * maps + maps / 2) * 0.42 - 0.05, top - rows_h - 0.25, f"width {hw}",
              fontsize=9)
    label(ax, xm + len(widths) * maps * 0.21, top + 0.35,
          "feature maps, $n + h - 1$ windows\n(one column per filter)", fontsize=9)
    arrow(ax, (x0 + 4 * s + 0.1, top - rows_h / 2), (xm - 0.1, top - rows_h / 2), text="convolve")
    # pooled vector
    xp = 8.3
    F_ = len(widths) * maps
    yp = top - rows_h / 2 + F_ * s / 2
    cc = ["muted" if j in dropped else colours[j // maps] for j in range(F_)]
    vals = ["×" if j in dropped else "" for j in range(F_)]
    cells(ax, xp, yp, np.array(vals, dtype=object).reshape(-1, 1), size=s, colour=cc)
    label(ax, xp + s / 2, yp + 0.55, "pooled $\\mathbf{z}$\n(dropout ×)", fontsize=9)
    arrow(ax, (xm + F_ * 0.42 + 0.05, top - rows_h / 2), (xp - 0.1, top - rows_h / 2),
          text="max", text_offset=(0.0, 0.1))
    # output
    xo = 10.6
    for j, c in enumerate(("rotten", "fresh")):
        box(ax, xo, top - rows_h / 2 + 0.35 - 0.7 * j, c, w=1.2, h=0.45, colour="value", fontsize=9)
    label(ax, xo, top - rows_h / 2 + 1.0, "softmax\n$W\\mathbf{z} + \\mathbf{b}$", fontsize=9)
    arrow(ax, (xp + s + 0.1, top - rows_h / 2), (xo - 0.65, top - rows_h / 2))
    return fig


def kmax_pooling(words: Sequence[str], scores: Sequence[float], h: int, k: int = 2) -> Figure:
    """One feature map over a sentence (wide windows), its max, and its k-max pooling, which keeps
    the k best scores in the order their windows come in the sentence."""
    scores = np.asarray(scores, float)
    L = len(scores)
    s = 0.72
    fig, ax = canvas(L * s + 3.6, 3.6, scale=0.9)
    x0 = 3.0
    top_k = sorted(np.argsort(-scores)[:k])
    best = int(np.argmax(scores))
    cc = ["highlight" if i in top_k else "value" for i in range(L)]
    cells(ax, x0, 3.2, [f"{v:.2f}" for v in scores], size=s, colour=cc, fontsize=9)
    label(ax, x0 - 0.15, 3.2 - s / 2, "window scores", fontsize=10, ha="right")
    pad = ["∅"] * (h - 1)
    toks = pad + list(words) + pad
    for i in top_k:
        span = " ".join(t for t in toks[i:i + h] if t != "∅")
        label(ax, x0 + (i + 0.5) * s, 3.2 + 0.22, span, fontsize=8, rotation=20, ha="left",
              va="bottom")
    y1 = 1.75
    label(ax, x0 - 0.15, y1 - s / 2, "max (1 number)", fontsize=10, ha="right")
    cells(ax, x0, y1, [f"{scores[best]:.2f}"], size=s, colour="highlight", fontsize=9)
    y2 = 0.8
    label(ax, x0 - 0.15, y2 - s / 2, f"{k}-max, in sentence order", fontsize=10, ha="right")
    cells(ax, x0, y2, [f"{scores[i]:.2f}" for i in top_k], size=s, colour="highlight", fontsize=9)
    for j, i in enumerate(top_k):
        arrow(ax, (x0 + (i + 0.5) * s, 3.2 - s), (x0 + (j + 0.5) * s, y2), lw=0.8, colour="#888888",
              shrink=2)
    order = "the best window comes last" if top_k[-1] == best else "the best window comes first"
    label(ax, x0 + k * s + 0.2, y2 - s / 2, f"({order}: order is kept)", fontsize=9, ha="left")
    return fig


def padding_mask(short: Sequence[str], long: Sequence[str], scores: Sequence[float], h: int = 3
                 ) -> Figure:
    """A batch of two sentences padded to the same length, the windows (wide, width h) of the short
    one that lie in padding, and why they get -inf: a filter whose real scores are all negative,
    pooled with and without ReLU."""
    T = len(long)
    n = len(short)
    total = T + h - 1
    s = 0.95
    fig, ax = canvas(total * s + 4.0, 5.9, scale=0.7)
    x0 = 3.2
    for r, sent in enumerate((long, list(short) + ["<pad>"] * (T - n))):
        y = 5.7 - r * s
        cc = ["muted" if t == "<pad>" else "input" for t in sent]
        cells(ax, x0, y, list(sent), size=s, colour=cc, fontsize=8)
        label(ax, x0 - 0.15, y - s / 2, "sentence 1" if r == 0 else "sentence 2", fontsize=10,
              ha="right")
    y = 5.7 - 2 * s - 0.35
    sc = list(scores) + [None] * (total - len(scores))
    cc = ["value" if v is not None else "muted" for v in sc]
    cells(ax, x0, y, [_fmt(v) if v is not None else "pad" for v in sc], size=s, colour=cc, fontsize=9)
    label(ax, x0 - 0.15, y - s / 2, f"sentence 2: one\nfilter's {total} windows", fontsize=10,
          ha="right")
    real = max(scores)
    rows = [("padding set to 0", 0.0), ("padding set to $-\\infty$", real)]
    yy = y - s - 0.45
    label(ax, x0 + 0.9, yy, "max", fontsize=10)
    label(ax, x0 + 2.5, yy, "ReLU(max)", fontsize=10)
    label(ax, x0 + 4.4, yy, "tanh(max)", fontsize=10)
    for j, (name, m) in enumerate(rows):
        yr = yy - 0.55 - 0.55 * j
        label(ax, x0 - 0.15, yr, name, fontsize=10, ha="right")
        wrong = j == 0
        col = COLOURS["grad"] if wrong else COLOURS["text"]
        label(ax, x0 + 0.9, yr, _fmt(m), fontsize=10, color=col)
        label(ax, x0 + 2.5, yr, _fmt(max(m, 0.0)), fontsize=10)
        label(ax, x0 + 4.4, yr, f"{np.tanh(m):.2f}", fontsize=10, color=col)
    label(ax, x0 + total * s / 2 - 1.0, 0.2, "with ReLU after the max both give 0; without it (or with tanh, "
          "or for k-max) the 0 of the padding wins", fontsize=9)
    return fig

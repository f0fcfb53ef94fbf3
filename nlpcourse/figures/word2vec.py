"""Concept figures of the chapter *Word vectors: word2vec* (book/word2vec.md).

Each function returns a matplotlib ``Figure`` made without pyplot; the chapter passes the real
values (a sentence of the corpus, word frequencies, noise probabilities) where the figure shows data.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from nlpcourse.errors import ConfigError
from nlpcourse.figures import COLOURS, arrow, box, canvas, cells, label


def skip_gram_window(words: Sequence[str], centre: int, window: int = 2) -> Figure:
    """A sentence as a row of boxes, the word at ``centre`` highlighted, the words within ``window``
    positions of it marked as context, and the (centre, context) pairs they make listed below."""
    n = len(words)
    width = max(9.0, 1.25 * n + 0.5)
    fig, ax = canvas(width, 4.2, scale=0.8)
    step = (width - 0.6) / n
    xs = [0.3 + step * (i + 0.5) for i in range(n)]
    lo, hi = max(0, centre - window), min(n - 1, centre + window)
    for i, (x, w) in enumerate(zip(xs, words)):
        colour = "highlight" if i == centre else "input" if lo <= i <= hi else "muted"
        box(ax, x, 3.3, w, w=step * 0.92, h=0.6, colour=colour, fontsize=10)
        label(ax, x, 2.82, f"{i - centre:+d}" if lo <= i <= hi and i != centre else "", fontsize=9)
    for i in range(lo, hi + 1):
        if i != centre:
            arrow(ax, (xs[centre], 3.62), (xs[i], 3.62), curve=-0.35 if i > centre else 0.35,
                  colour="edge", lw=0.9)
    label(ax, xs[centre], 2.82, "centre", fontsize=9, color=COLOURS["edge"])
    pairs = [(words[centre], words[i]) for i in range(lo, hi + 1) if i != centre]
    label(ax, 0.3, 2.2, f"window m = {window}: {len(pairs)} training pairs (centre, context)",
          fontsize=10, ha="left")
    per_row = 2
    for k, (c, o) in enumerate(pairs):
        x = 0.3 + (k % per_row) * width / 2
        y = 1.6 - 0.55 * (k // per_row)
        label(ax, x, y, f"({c}, {o})", fontsize=10, ha="left", family="monospace")
    bottom = 1.6 - 0.55 * ((len(pairs) - 1) // per_row) - 0.4
    ax.set_ylim(bottom, 4.2)  # no empty band under the last row of pairs
    fig.set_size_inches(width * 0.8, (4.2 - bottom) * 0.8)
    return fig


def skip_gram_and_cbow(context: Sequence[str] = ("the", "cat", "on", "the"),
                       centre: str = "sat") -> Figure:
    """The two word2vec architectures side by side: skip-gram predicts each context word from the
    centre's input vector; CBOW predicts the centre from the mean of the context input vectors."""
    fig, ax = canvas(10.0, 4.6, scale=0.8)
    ys = np.linspace(3.9, 0.7, len(context))
    # skip-gram: centre on the left, one prediction per context word on the right
    label(ax, 2.4, 4.45, "skip-gram: centre predicts each context word", fontsize=10)
    box(ax, 0.7, 2.3, centre, w=1.0, colour="highlight")
    box(ax, 2.2, 2.3, r"$\mathbf{v}_c$", w=0.8, colour="param")
    arrow(ax, (1.2, 2.3), (1.8, 2.3))
    for y, w in zip(ys, context):
        box(ax, 3.7, y, rf"$p(\mathrm{{{w}}}\mid c)$", w=1.5, h=0.55, colour="value", fontsize=9)
        arrow(ax, (2.6, 2.3), (2.95, y), lw=0.9)
    label(ax, 2.4, 0.15, r"$|C|$ predictions per centre, scores $\mathbf{u}_o\cdot\mathbf{v}_c$",
          fontsize=9)
    # CBOW: context on the left, averaged, one prediction of the centre
    label(ax, 7.5, 4.45, "CBOW: mean of the context predicts the centre", fontsize=10)
    for y, w in zip(ys, context):
        box(ax, 5.7, y, w, w=0.9, h=0.5, colour="input", fontsize=9)
        arrow(ax, (6.15, y), (7.05, 2.3), lw=0.9)
    box(ax, 7.5, 2.3, r"$\mathbf{h}=\frac{1}{|C|}\sum\mathbf{v}_c$", w=1.7, h=0.8, colour="param",
        fontsize=9)
    box(ax, 9.35, 2.3, rf"$p(\mathrm{{{centre}}}\mid C)$", w=1.2, h=0.55, colour="highlight",
        fontsize=9)
    arrow(ax, (8.35, 2.3), (8.75, 2.3))
    label(ax, 7.6, 0.15, r"one prediction per centre, score $\mathbf{u}_o\cdot\mathbf{h}$",
          fontsize=9)
    return fig


def ppmi_svd_pipeline(words: Sequence[str], counts: np.ndarray, ppmi: np.ndarray,
                      dim: int = 2) -> Figure:
    """Counts of a few words of a co-occurrence table, their PPMI (computed on the whole table),
    and the rank-``dim`` SVD vectors of these PPMI rows: the three steps of the count-based method."""
    counts = np.asarray(counts, dtype=float)
    M = np.asarray(ppmi, dtype=float)
    U, S, _ = np.linalg.svd(M)
    vec = U[:, :dim] * np.sqrt(S[:dim])
    n = len(words)
    size = 0.72
    top = 3.45  # the tables' top edge
    fig, ax = canvas(12.8, 3.8, scale=0.72)
    ax.set_ylim(top - n * size - 0.2, top + 0.9)
    fig.set_size_inches(12.8 * 0.72, (n * size + 1.1) * 0.72)
    x_vec = 11.2
    tables = [(1.1, counts.astype(int), "{}", r"counts $\#(w,c)$"),
              (6.3, M, "{:.2f}", r"PPMI $=\max(\mathrm{PMI},0)$")]
    for x0, values, fmt, title in tables:
        label(ax, x0 + n * size / 2, top + 0.7, title, fontsize=10)
        for j, w in enumerate(words):
            label(ax, x0 + (j + 0.5) * size, top + 0.25, w, fontsize=9)
            label(ax, x0 - 0.1, top - (j + 0.5) * size, w, fontsize=9, ha="right")
        cells(ax, x0, top, values, size=size, fmt=fmt, fontsize=9,
              colour="input" if fmt == "{}" else "value")
    mid = top - n * size / 2
    arrow(ax, (1.1 + n * size + 0.1, mid), (6.3 - 1.0, mid), text="reweight")
    arrow(ax, (6.3 + n * size + 0.1, mid), (x_vec - 1.0, mid), text=rf"SVD, $D={dim}$")
    label(ax, x_vec + dim * size / 2, top + 0.7, r"rows of $U_D\Sigma_D^{1/2}$", fontsize=10)
    for j, w in enumerate(words):
        label(ax, x_vec - 0.1, top - (j + 0.5) * size, w, fontsize=9, ha="right")
    cells(ax, x_vec, top, vec, size=size, fmt="{:.2f}", fontsize=9, colour="param")
    return fig


def negative_sampling(centre: str, context: str, noise: Sequence[tuple[str, float]]) -> Figure:
    """One training pair and its K noise words: left, the noise words with their probability under
    #(w)^0.75; right, the sigmoid of the score, the true pair pushed up, the noise pairs down."""
    fig = Figure(figsize=(9.0, 3.4), layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=[1.1, 1])
    words = [w for w, _ in noise]
    probs = [p for _, p in noise]
    ys = np.arange(len(words))[::-1]
    left.barh(ys, probs, color=COLOURS["param"], edgecolor=COLOURS["edge"])
    left.set_yticks(ys, [f"({centre}, {w})" for w in words], fontsize=9)
    left.set_xlabel(r"$P_n(w) \propto \#(w)^{0.75}$", fontsize=9)
    left.set_title(f"true pair ({centre}, {context}); K = {len(words)} noise words",
                   fontsize=10)
    for y, p in zip(ys, probs):
        left.text(p, y, f" {p:.4f}", va="center", fontsize=9)
    left.set_xlim(0, max(probs) * 1.45)
    left.spines[["top", "right"]].set_visible(False)
    s = np.linspace(-6, 6, 200)
    right.plot(s, 1 / (1 + np.exp(-s)), color=COLOURS["edge"])
    right.set_xlabel(r"score $\mathbf{u}\cdot\mathbf{v}_c$", fontsize=9)
    right.set_ylabel(r"$\sigma(\mathrm{score})$: is it a real pair?", fontsize=9)
    sig = lambda x: 1 / (1 + np.exp(-x))
    right.plot([0.5], [sig(0.5)], "o", color=COLOURS["highlight"], mec=COLOURS["edge"], ms=9)
    right.annotate("", xy=(3.5, sig(3.5)), xytext=(0.6, sig(0.6)),
                   arrowprops=dict(arrowstyle="-|>", color=COLOURS["grad"], lw=1.5))
    right.text(-5.8, 0.86, f"true: ({centre}, {context})\npushed up", fontsize=9,
               color=COLOURS["grad"])
    for x in np.linspace(-1.0, 1.2, len(words)):
        right.plot([x], [sig(x)], "o", color=COLOURS["param"], mec=COLOURS["edge"], ms=7)
    right.annotate("", xy=(-3.6, sig(-3.6)), xytext=(-1.1, sig(-1.1)),
                   arrowprops=dict(arrowstyle="-|>", color=COLOURS["grad"], lw=1.5))
    right.text(1.5, 0.12, "noise pairs:\npushed down", fontsize=9, color=COLOURS["grad"])
    right.set_ylim(-0.03, 1.03)
    right.grid(alpha=0.3)
    right.spines[["top", "right"]].set_visible(False)
    return fig


def subsampling_keep(words: Sequence[str], freqs: Sequence[float], t: float = 1e-3) -> Figure:
    """The probability of keeping an occurrence against the word's frequency f (the C tool's rule,
    (sqrt(f/t) + 1) t/f, capped at 1, and the paper's sqrt(t/f)), with real words marked."""
    fig = Figure(figsize=(8.0, 3.6), layout="constrained")
    ax = fig.add_subplot()
    f = np.logspace(-6, -1, 300)
    tool = np.minimum(1.0, (np.sqrt(f / t) + 1) * t / f)
    paper = np.minimum(1.0, np.sqrt(t / f))
    ax.semilogx(f, tool, color=COLOURS["edge"], label=r"C tool, gensim: $(\sqrt{f/t}+1)\,t/f$")
    ax.semilogx(f, paper, color=COLOURS["grad"], ls="--", label=r"paper: $\sqrt{t/f}$")
    ax.axvline(t, color="grey", lw=0.8, ls=":")
    ax.text(t, 0.03, f" t = {t:g}", fontsize=9, color="grey")
    for k, (w, fw) in enumerate(zip(words, freqs)):
        keep = min(1.0, (np.sqrt(fw / t) + 1) * t / fw)
        ax.plot([fw], [keep], "o", color=COLOURS["highlight"], mec=COLOURS["edge"], ms=7)
        ax.annotate(w, (fw, keep), xytext=(5, 6) if k % 2 == 0 else (-6, -14),
                    textcoords="offset points", fontsize=9, ha="left" if k % 2 == 0 else "right")
    ax.set_ylim(0, 1.08)
    ax.set_xlabel("frequency f(w): the word's share of the corpus", fontsize=9)
    ax.set_ylabel("probability of keeping\nan occurrence", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9, loc="lower left")
    return fig


def hierarchical_softmax(words: Sequence[str] = ("the", "and", "lord", "king", "love", "sword",
                                                   "heaven", "daughter"),
                         target: int = 5) -> Figure:
    """A balanced binary tree over a vocabulary of 8 words; the path from the root to
    ``words[target]`` highlighted, with the sigmoid (left or right) taken at each inner node."""
    n = len(words)
    depth = int(np.log2(n))
    if 2 ** depth != n:
        raise ConfigError(f"hierarchical_softmax: {n} words; draw a vocabulary of 2, 4, 8 or 16 words")
    fig, ax = canvas(10.0, 5.0, scale=0.8)
    leaf_x = np.linspace(0.8, 9.2, n)
    level_y = np.linspace(4.3, 0.6, depth + 1)
    bits = [(target >> (depth - 1 - d)) & 1 for d in range(depth)]
    nodes = {}
    for d in range(depth + 1):
        for k in range(2 ** d):
            span = n // 2 ** d
            nodes[d, k] = (float(np.mean(leaf_x[k * span:(k + 1) * span])), float(level_y[d]))
    on_path = {(d, target >> (depth - d)) for d in range(depth + 1)}
    for d in range(depth):
        for k in range(2 ** d):
            for side in (0, 1):
                child = (d + 1, 2 * k + side)
                hot = (d, k) in on_path and child in on_path
                arrow(ax, nodes[d, k], nodes[child], colour="grad" if hot else "edge",
                      style="-", lw=2.0 if hot else 0.8, shrink=10)
    for (d, k), (x, y) in nodes.items():
        if d < depth:
            hot = (d, k) in on_path
            box(ax, x, y, rf"$n_{{{d},{k}}}$", w=0.62, h=0.42,
                colour="highlight" if hot else "param", fontsize=9)
            if hot:
                sign = "-" if bits[d] else "+"
                side = "right" if bits[d] else "left"
                to_left = d > 0 and k % 2 == 0
                label(ax, x - 0.4 if to_left else x + 0.4, y + 0.32,
                      rf"$\sigma({sign}\mathbf{{u}}_{{n}}\cdot\mathbf{{v}}_c)$ ({side})",
                      fontsize=9, ha="right" if to_left else "left")
        else:
            box(ax, x, y, words[k], w=0.98, h=0.45, fontsize=9,
                colour="highlight" if k == target else "input")
    label(ax, 5.0, 0.05, rf"$p(\mathrm{{{words[target]}}}\mid c)$ = product of the {depth} "
          rf"sigmoids on the path: $\log_2 V = {depth}$ dot products instead of $V = {n}$",
          fontsize=9)
    return fig


def analogy_parallelogram() -> Figure:
    """The analogy man : woman :: king : ? in two dimensions: b - a + c lands near queen, while
    the query words themselves (king above all) lie close to it and must be excluded."""
    fig = Figure(figsize=(6.5, 4.2), layout="constrained")
    ax = fig.add_subplot()
    pts = {"man": (1.0, 1.0), "woman": (1.8, 2.1), "king": (3.6, 1.3), "queen": (4.55, 2.25)}
    guess = (pts["woman"][0] - pts["man"][0] + pts["king"][0],
             pts["woman"][1] - pts["man"][1] + pts["king"][1])
    for w, (x, y) in pts.items():
        ax.plot([x], [y], "o", color=COLOURS["param"], mec=COLOURS["edge"], ms=9)
        ax.annotate(w, (x, y), xytext=(-8, -16), textcoords="offset points", fontsize=10)
    for (a, b) in (("man", "woman"), ("king", "queen")):
        ax.annotate("", xy=pts[b], xytext=pts[a],
                    arrowprops=dict(arrowstyle="-|>", color=COLOURS["edge"], lw=1.2))
    ax.annotate("", xy=guess, xytext=pts["king"],
                arrowprops=dict(arrowstyle="-|>", color=COLOURS["grad"], lw=1.4, ls="--"))
    ax.plot([guess[0]], [guess[1]], "*", color=COLOURS["grad"], ms=14)
    ax.annotate(r"$\mathbf{b}-\mathbf{a}+\mathbf{c}$", guess, xytext=(8, 4),
                textcoords="offset points", fontsize=10, color=COLOURS["grad"])
    ax.text(1.3, 1.75, "woman - man", fontsize=9, rotation=50)
    ax.text(0.3, 3.25, "3CosAdd: the word nearest (in cosine) to b - a + c,\n"
            "a, b and c excluded: otherwise c (king) often wins", fontsize=9)
    ax.set_xlim(0, 5.8)
    ax.set_ylim(0.2, 3.7)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    return fig

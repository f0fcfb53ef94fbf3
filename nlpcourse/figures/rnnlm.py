"""Concept figures of the chapter on recurrent neural language models (book/rnnlm.md).

Each function returns a matplotlib ``Figure`` made without pyplot; the chapter passes in its own
toy corpus, distributions and measured norms where a figure shows values.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from nlpcourse.figures import COLOURS, arrow, box, canvas, label, new_figure


def bptt_unrolled(steps: int = 4) -> Figure:
    """The Elman network unrolled over ``steps`` steps: forward arrows in black, and the gradient
    of the last step's loss flowing back through every state, one Jacobian factor per step."""
    fig, ax = canvas(2.0 * steps + 2.6, 4.6, scale=0.9)
    xs = [1.0 + 2.0 * k for k in range(steps + 1)]
    for k, x in enumerate(xs):
        box(ax, x, 2.2, rf"$\mathbf{{h}}_{k}$", w=0.9, h=0.6, colour="value", fontsize=11)
        if k == 0:
            continue
        box(ax, x, 0.6, rf"$x_{k}$", w=0.8, h=0.5, colour="input", fontsize=10)
        arrow(ax, (x, 0.85), (x, 1.9))
        box(ax, x, 3.8, rf"$\mathcal{{L}}_{k}$", w=0.8, h=0.5,
            colour="highlight" if k == steps else "muted", fontsize=10)
        arrow(ax, (x, 2.5), (x, 3.55))
        arrow(ax, (xs[k - 1] + 0.45, 2.3), (x - 0.45, 2.3), r"$W_{hh}$", fontsize=9)
        # the gradient, backwards: from h_k to h_{k-1}
        arrow(ax, (x - 0.45, 2.0), (xs[k - 1] + 0.45, 2.0), colour="grad", curve=-0.35)
        label(ax, (x + xs[k - 1]) / 2, 1.35,
              rf"$\partial\mathbf{{h}}_{k}/\partial\mathbf{{h}}_{k - 1}$", fontsize=9,
              color=COLOURS["grad"])
    arrow(ax, (xs[-1] + 0.15, 3.55), (xs[-1] + 0.15, 2.5), colour="grad")
    label(ax, xs[-1] + 0.55, 3.05, r"$\partial\mathcal{L}_T/\partial\mathbf{h}_T$", fontsize=9,
          color=COLOURS["grad"], ha="left")
    label(ax, (xs[0] + xs[-1]) / 2, 0.05,
          r"$\partial\mathcal{L}_T/\partial\mathbf{h}_t$: one factor "
          r"$\mathrm{diag}(1-\mathbf{h}_k^2)\,W_{hh}$ per step back (red)",
          fontsize=10, color=COLOURS["grad"])
    return fig


def _gate(ax, x, y, name, colour="param"):
    box(ax, x, y, name, w=0.7, h=0.5, colour=colour, fontsize=10)


def _op(ax, x, y, sym):
    ax.add_patch(__import__("matplotlib.patches", fromlist=["Circle"]).Circle(
        (x, y), 0.22, facecolor="white", edgecolor=COLOURS["edge"], lw=1.0))
    label(ax, x, y, sym, fontsize=11)


def _state_path(ax, y: float, start: str, end: str, ops: list[tuple[float, str]]) -> None:
    """The state's path along the top of a cell, from x = 0.3 to 8.7 at height ``y``, through the
    operations ``ops`` [(x, symbol)], with the old state's label at the start and the new one's at the end."""
    label(ax, 0.3, y + 0.3, start, ha="left")
    x0 = 0.3
    for x, symbol in ops:
        arrow(ax, (x0, y), (x - 0.25, y))
        _op(ax, x, y, symbol)
        x0 = x + 0.25
    arrow(ax, (x0, y), (8.7, y))
    label(ax, 8.7, y + 0.3, end, ha="right")


def lstm_cell() -> Figure:
    """The standard LSTM cell: the cell state runs along the top, kept by the forget gate and
    written by addition (input gate times candidate); the output gate shows tanh of the cell."""
    fig, ax = canvas(9.0, 4.6, scale=0.85)
    _state_path(ax, 3.8, r"$\mathbf{c}_{t-1}$", r"$\mathbf{c}_t$", [(2.8, r"$\times$"), (5.2, r"$+$")])
    label(ax, 4.0, 4.3, "additive path: no squashing", fontsize=9, color=COLOURS["grad"])
    # input: h_{t-1}, x_t along the bottom
    ax.plot([0.3, 7.0], [0.5, 0.5], color=COLOURS["edge"], lw=1.2)
    label(ax, 0.3, 0.2, r"$[\mathbf{h}_{t-1}; \mathbf{x}_t]$", ha="left")
    gates = [(2.8, r"$\mathbf{f}_t\ \sigma$"), (4.2, r"$\mathbf{i}_t\ \sigma$"),
             (5.2, r"$\mathbf{g}_t\ \tanh$"), (6.6, r"$\mathbf{o}_t\ \sigma$")]
    for x, name in gates:
        arrow(ax, (x, 0.5), (x, 1.35), shrink=0)
        _gate(ax, x, 1.6, name)
    gx = 4.7
    arrow(ax, (2.8, 1.85), (2.8, 3.58), "forget", text_offset=(-0.45, 0))
    _op(ax, gx, 2.7, r"$\times$")
    arrow(ax, (4.2, 1.85), (gx - 0.18, 2.55))
    arrow(ax, (5.2, 1.85), (gx + 0.18, 2.55))
    arrow(ax, (gx, 2.92), (5.05, 3.6), "write", text_offset=(-0.5, -0.1))
    # output
    box(ax, 7.4, 3.0, r"$\tanh$", w=0.6, h=0.4, colour="value", fontsize=9)
    arrow(ax, (7.4, 3.8), (7.4, 3.2), shrink=0)
    _op(ax, 7.4, 2.2, r"$\times$")
    arrow(ax, (7.4, 2.8), (7.4, 2.42))
    arrow(ax, (6.6, 1.85), (7.2, 2.1))
    arrow(ax, (7.62, 2.2), (8.7, 2.2))
    label(ax, 8.7, 1.9, r"$\mathbf{h}_t$", ha="right")
    return fig


def gru_cell() -> Figure:
    """The GRU cell: two gates (reset r, update z) and a candidate; the new state is a convex
    mix of the old state and the candidate, an additive path like the LSTM's cell."""
    fig, ax = canvas(9.0, 4.4, scale=0.85)
    _state_path(ax, 3.7, r"$\mathbf{h}_{t-1}$", r"$\mathbf{h}_t$", [(3.0, r"$\times$"), (6.2, r"$+$")])
    label(ax, 3.0, 4.15, r"$1-\mathbf{z}_t$", fontsize=9)
    label(ax, 4.6, 4.15, "additive path", fontsize=9, color=COLOURS["grad"])
    ax.plot([0.3, 6.4], [0.5, 0.5], color=COLOURS["edge"], lw=1.2)
    label(ax, 0.3, 0.2, r"$[\mathbf{h}_{t-1}; \mathbf{x}_t]$", ha="left")
    _gate(ax, 3.0, 1.6, r"$\mathbf{z}_t\ \sigma$")
    arrow(ax, (3.0, 0.5), (3.0, 1.35), shrink=0)
    arrow(ax, (3.0, 1.85), (3.0, 3.48), "update", text_offset=(-0.5, 0))
    # candidate: tanh(W x + U (r * h_{t-1}))
    _gate(ax, 4.0, 1.2, r"$\mathbf{r}_t\ \sigma$")
    arrow(ax, (4.0, 0.5), (4.0, 0.95), shrink=0)
    _op(ax, 4.9, 1.9, r"$\times$")
    arrow(ax, (4.1, 1.45), (4.72, 1.78), "reset", text_offset=(-0.45, 0.0))
    arrow(ax, (4.9, 0.5), (4.9, 1.68), shrink=0)
    label(ax, 5.0, 1.0, r"$\mathbf{h}_{t-1}$", fontsize=9, ha="left")
    box(ax, 6.0, 2.45, r"$\tilde{\mathbf{h}}_t\ \tanh$", w=0.9, h=0.5, colour="param",
        fontsize=10)
    arrow(ax, (5.1, 2.0), (5.6, 2.3))
    arrow(ax, (6.4, 0.5), (6.2, 2.2), shrink=0)
    label(ax, 6.5, 1.0, r"$\mathbf{x}_t$", fontsize=9, ha="left")
    _op(ax, 6.2, 3.1, r"$\times$")
    label(ax, 6.65, 3.1, r"$\mathbf{z}_t$", fontsize=9)
    arrow(ax, (6.1, 2.7), (6.18, 2.88))
    arrow(ax, (6.2, 3.32), (6.2, 3.48))
    return fig


def continuation_counts(sentences: Sequence[Sequence[str]], words: Sequence[str]) -> Figure:
    """For each of ``words``: how often it occurs (count) and after how many different words
    (continuation count), in a toy corpus; left, the distinct (previous word, word) pairs."""
    pairs = {(s[i - 1], s[i]) for s in sentences for i in range(1, len(s))}
    counts = {w: sum(s[1:].count(w) for s in sentences) for w in words}
    cont = {w: len({a for a, b in pairs if b == w}) for w in words}
    fig = new_figure(figsize=(9.0, 3.6))
    left, right = fig.subplots(1, 2, width_ratios=[1.2, 1])
    lefts = sorted({a for a, b in pairs if b in words})
    for j, a in enumerate(lefts):
        left.text(0, -j, a, ha="right", va="center", fontsize=10)
    for k, w in enumerate(words):
        yk = -k * (len(lefts) - 1) / max(len(words) - 1, 1)
        left.text(1, yk, w, ha="left", va="center", fontsize=10, weight="bold")
        for j, a in enumerate(lefts):
            if (a, w) in pairs:
                left.plot([0.05, 0.95], [-j, yk], color=f"C{k}", lw=1.2)
    left.set_xlim(-0.6, 1.6)
    left.axis("off")
    left.set_title("which word comes before which", fontsize=10)
    x = np.arange(len(words))
    right.bar(x - 0.2, [counts[w] for w in words], 0.4, label=r"count $c(w)$",
              color=COLOURS["param"], edgecolor=COLOURS["edge"])
    right.bar(x + 0.2, [cont[w] for w in words], 0.4,
              label=r"continuation $N_{1+}(\bullet\, w)$", color=COLOURS["value"],
              edgecolor=COLOURS["edge"])
    right.set_xticks(x, words)
    right.set_ylim(0, 1.5 * max(counts.values()))
    right.yaxis.get_major_locator().set_params(integer=True)
    right.legend(fontsize=9, loc="upper center", ncol=2)
    right.set_title("frequent is not the same as versatile", fontsize=10)
    return fig


def truncated_bptt(n_windows: int = 3, window: int = 4) -> Figure:
    """A stream cut into windows: the state is carried forward across every boundary (black),
    the gradient (red) stops at the start of its window."""
    fig, ax = canvas(n_windows * (window + 0.6) + 0.6, 2.8, scale=0.8)
    x = 0.8
    for w in range(n_windows):
        start = x
        for k in range(window):
            box(ax, x, 1.2, rf"$\mathbf{{h}}_{{{w * window + k + 1}}}$", w=0.7, h=0.5,
                colour="value", fontsize=9)
            if k:
                arrow(ax, (x - 0.65, 1.3), (x - 0.35, 1.3), shrink=0)
                arrow(ax, (x - 0.35, 1.05), (x - 0.65, 1.05), colour="grad", shrink=0)
            x += 1.0
        ax.add_patch(__import__("matplotlib.patches", fromlist=["Rectangle"]).Rectangle(
            (start - 0.5, 0.6), window - 0.0, 1.2, fill=False, ls="--", lw=0.8,
            edgecolor=COLOURS["edge"]))
        label(ax, start + (window - 1) / 2, 2.05, f"window {w + 1}: backward pass", fontsize=9)
        if w < n_windows - 1:
            arrow(ax, (x - 0.65, 1.3), (x + 0.25, 1.3), shrink=0)
            label(ax, x - 0.2, 0.35, "state carried,\ndetached", fontsize=8)
            x += 0.6
    label(ax, x / 2, 2.55, "forward: the state runs through the whole stream; "
          "gradient (red): stops at each window's start", fontsize=9)
    return fig


def temperature(words: Sequence[str], logits: Sequence[float],
                taus: Sequence[float] = (0.5, 1.0, 2.0)) -> Figure:
    """The same logits turned into a distribution at several temperatures."""
    z = np.asarray(logits, float)
    fig = new_figure(figsize=(9.0, 2.8))
    axes = fig.subplots(1, len(taus), sharey=True, squeeze=False)[0]  # one row, even for one tau
    for ax, tau in zip(axes, taus):
        p = np.exp(z / tau - (z / tau).max())
        p /= p.sum()
        ax.bar(range(len(z)), p, color=COLOURS["value"], edgecolor=COLOURS["edge"])
        ax.set_xticks(range(len(z)), words, rotation=45, fontsize=9)
        ax.set_title(rf"$\tau = {tau:g}$: top word {p.max():.0%}", fontsize=10)
    axes[0].set_ylabel("probability")
    return fig


def power_norms(norms: dict[str, Sequence[float]], bound: float | None = None) -> Figure:
    """The norm of the k-th power of a matrix against k, one line per matrix (log scale), and
    the bound ``bound``**k (dashed) where it is given."""
    fig = new_figure(figsize=(6.5, 3.0))
    ax = fig.add_subplot()
    for name, v in norms.items():
        ax.plot(np.arange(1, len(v) + 1), v, "o-", ms=3, label=name)
    ax.set(xlabel="power k (steps back)", ylabel=r"$\Vert A^k \Vert$", yscale="log")
    ax.axhline(1, color="grey", lw=0.5)
    if bound is not None:
        k = np.arange(1, max(len(v) for v in norms.values()) + 1)
        ax.plot(k, float(bound) ** k, "--", color=COLOURS["grad"],
                label=rf"the bound $\Vert A\Vert^k$ = {bound:.2f}$^k$")
        low = min(min(v) for v in norms.values())
        ax.set_ylim(low / 3, 1e4)
    ax.legend(fontsize=9)
    return fig


def class_softmax(n_classes: int = 4, per_class: int = 3) -> Figure:
    """The class-based softmax: a softmax over the classes, then a softmax over the words of the
    target's class only; the other classes' blocks of output rows are not computed."""
    fig, ax = canvas(10.0, 3.7, scale=0.85)
    box(ax, 0.9, 2.2, r"$\mathbf{h}_t$", w=0.9, h=0.6, colour="value", fontsize=11)
    s = 0.42
    x0 = 2.6
    top = 2.2 + n_classes * s / 2
    for c in range(n_classes):
        chosen = c == 1
        box(ax, x0 + 0.5, top - (c + 0.5) * s, f"class {c + 1}", w=1.0, h=s * 0.9,
            colour="highlight" if chosen else "param", fontsize=9, rounded=False)
    arrow(ax, (1.35, 2.2), (x0, 2.2))
    label(ax, x0 + 0.5, top + 0.35, r"$P(c \mid \mathbf{h}_t)$: $C$ rows", fontsize=10)
    x1 = 5.6
    for c in range(n_classes):
        chosen = c == 1
        y = top - (c + 0.5) * s
        for k in range(per_class):
            box(ax, x1 + k * 0.75, y, rf"$w_{{{c * per_class + k + 1}}}$", w=0.7, h=s * 0.9,
                colour="highlight" if chosen else "muted", fontsize=9, rounded=False)
    arrow(ax, (x0 + 1.0, top - 1.5 * s), (x1 - 0.4, top - 1.5 * s), colour="grad")
    label(ax, x1 + 0.75, top + 0.35, r"$P(w \mid c, \mathbf{h}_t)$: the class's rows only",
          fontsize=10)
    label(ax, 5.0, 0.35, r"$P(w \mid \mathbf{h}_t) = P(c(w) \mid \mathbf{h}_t)\,"
          r"P(w \mid c(w), \mathbf{h}_t)$: about $C + V/C$ rows, not $V$", fontsize=10)
    return fig

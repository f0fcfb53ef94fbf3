"""Concept figures of book/building_blocks.md: graphs, shapes, softmax, optimisers, dropout, residuals.

Each function returns a matplotlib ``Figure`` made without pyplot. Numbers shown in a figure are computed
here from the arguments (or passed in from the chapter's own runs), never typed in.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Circle

from nlpcourse.figures import COLOURS, arrow, box, canvas, cells, label

GRAD = COLOURS["grad"]


def chain_rule_graph(x: float = 2.0, w: float = -0.5, b: float = 0.8) -> Figure:
    """The graph of L = -log(sigmoid(w x + b)): values forward (black), gradients backward (red).

    Left: the whole graph with each node's value above and dL/d(node) below. Right: one node, the
    product ``z0 = w * x``, with the rule it applies: downstream gradient = upstream x local derivative.
    """
    z0 = w * x
    z = z0 + b
    p = 1.0 / (1.0 + math.exp(-z))
    loss = -math.log(p)
    g_p = -1.0 / p
    g_z = g_p * p * (1 - p)
    g_z0, g_b = g_z, g_z
    g_w, g_x = g_z0 * x, g_z0 * w

    fig, ax = canvas(13.6, 5.2, scale=0.66)
    nodes = {"x": (0.9, 3.9, f"$x$ = {x:g}", "input"), "w": (0.9, 2.3, f"$w$ = {w:g}", "param"),
             "b": (3.4, 0.8, f"$b$ = {b:g}", "param"), "z0": (3.4, 3.1, r"$z_0 = w x$", "value"),
             "z": (5.6, 3.1, r"$z = z_0 + b$", "value"), "p": (7.6, 3.1, r"$p = \sigma(z)$", "value"),
             "L": (9.4, 3.1, r"$L = -\log p$", "value")}
    values = {"x": x, "w": w, "b": b, "z0": z0, "z": z, "p": p, "L": loss}
    grads = {"x": g_x, "w": g_w, "b": g_b, "z0": g_z0, "z": g_z, "p": g_p, "L": 1.0}
    for key, (cx, cy, text, colour) in nodes.items():
        box(ax, cx, cy, text, w=1.55, h=0.62, colour=colour, fontsize=10)
        if key not in ("x", "w", "b"):
            label(ax, cx, cy + 0.55, f"{values[key]:.3f}", fontsize=9)
        label(ax, cx, cy - 0.55, f"{grads[key]:+.3f}", fontsize=9, color=GRAD)
    for a, c in (("x", "z0"), ("w", "z0"), ("z0", "z"), ("b", "z"), ("z", "p"), ("p", "L")):
        (x0, y0, *_), (x1, y1, *_) = nodes[a], nodes[c]
        arrow(ax, (x0 + 0.78, y0), (x1 - 0.78, y1 + (0.12 if a == "x" else -0.12 if a == "w" else 0)))
    label(ax, 5.2, 5.0, "forward: values (black, above each node)", fontsize=9)
    label(ax, 5.2, 4.6, r"backward: $\partial L/\partial$node (red, below), from $\partial L/\partial L = 1$",
          fontsize=9, color=GRAD)

    # the zoomed node: z0 = w * x
    box(ax, 11.6, 3.1, r"$z_0 = w \cdot x$", w=1.5, h=0.7, colour="highlight", fontsize=10)
    box(ax, 10.7, 4.5, r"$w$", w=0.6, h=0.45, colour="param")
    box(ax, 10.7, 1.7, r"$x$", w=0.6, h=0.45, colour="input")
    arrow(ax, (10.9, 4.3), (11.4, 3.45))
    arrow(ax, (10.9, 1.9), (11.4, 2.75))
    arrow(ax, (12.7, 3.6), (12.1, 3.45), colour="grad")
    label(ax, 12.5, 3.95, "upstream\n" + r"$\partial L/\partial z_0$" + f" = {g_z0:+.3f}", fontsize=9,
          color=GRAD)
    arrow(ax, (11.25, 3.45), (10.95, 4.25), colour="grad", curve=-0.3)
    label(ax, 11.6, 0.95, r"$\partial L/\partial w = (\partial L/\partial z_0)\,(\partial z_0/\partial w)$",
          fontsize=10, color=GRAD)
    label(ax, 11.6, 0.45, f"= {g_z0:+.3f} x {x:g} = {g_w:+.3f}", fontsize=10, color=GRAD)
    label(ax, 11.75, 5.0, r"local: $\partial z_0/\partial w = x$", fontsize=9)
    ax.plot([10.25, 10.25], [0.2, 5.2], color="0.7", lw=0.8, ls=":")
    return fig


def two_layer_shapes(B: int = 4, D: int = 5, M: int = 3, C: int = 2) -> Figure:
    """A two-layer network's matrices with their shapes (M hidden units, H their values).

    Forward in the middle; the weights' gradients above their weights, the other gradients (red)
    below what they are the gradient of.
    """
    fig, ax = canvas(16.7, 6.6, scale=0.55)
    mid, par, low, high = 2.9, 4.5, 1.0, 6.0
    xs = {"X": 1.0, "Z1": 4.3, "H": 7.3, "Z2": 10.6, "Yh": 13.3, "L": 15.8, "W1": 2.7, "W2": 9.0}
    for key, text, colour in (("X", rf"$X$ ({B},{D})", "input"), ("Z1", rf"$Z_1$ ({B},{M})", "value"),
                              ("H", rf"$H$ ({B},{M})", "value"), ("Z2", rf"$Z_2$ ({B},{C})", "value"),
                              ("Yh", rf"$\hat Y$ ({B},{C})", "value"), ("L", r"$L$ (scalar)", "value")):
        box(ax, xs[key], mid, text, w=1.6, h=0.6, colour=colour, fontsize=9)
    for key, text in (("W1", rf"$W_1$ ({D},{M})"), ("W2", rf"$W_2$ ({M},{C})")):
        box(ax, xs[key], par, text, w=1.6, h=0.6, colour="param", fontsize=9)
    for a, c, text in (("X", "Z1", ""), ("Z1", "H", "ReLU"), ("H", "Z2", ""), ("Z2", "Yh", "softmax"),
                       ("Yh", "L", "CE")):
        arrow(ax, (xs[a] + 0.82, mid), (xs[c] - 0.82, mid), text=text, text_offset=(0, 0.2))
    arrow(ax, (xs["W1"] + 0.3, par - 0.32), (xs["Z1"] - 0.5, mid + 0.32))
    arrow(ax, (xs["W2"] + 0.3, par - 0.32), (xs["Z2"] - 0.5, mid + 0.32))
    label(ax, 4.0, 3.75, r"$Z_1 = X W_1$", fontsize=9, ha="left")
    label(ax, 10.3, 3.75, r"$Z_2 = H W_2$", fontsize=9, ha="left")
    for key, text in (("Z1", r"$dZ_1 = dH \odot [Z_1 > 0]$" + f"\n({B},{M})"),
                      ("H", r"$dH = dZ_2 W_2^\top$" + f"\n({B},{M})"),
                      ("Z2", rf"$dZ_2 = (\hat Y - Y)/{B}$" + f"\n({B},{C})")):
        box(ax, xs[key], low, "", w=2.45, h=0.95, colour="white")
        label(ax, xs[key], low, text, fontsize=9, color=GRAD)
    for key, text in (("W1", r"$dW_1 = X^\top dZ_1$" + f"  ({D},{M})"),
                      ("W2", r"$dW_2 = H^\top dZ_2$" + f"  ({M},{C})")):
        label(ax, xs[key], high - 0.55, text, fontsize=9, color=GRAD)
    arrow(ax, (xs["L"], mid - 0.32), (xs["Z2"] + 1.25, low), colour="grad", curve=-0.25)
    arrow(ax, (xs["Z2"] - 1.25, low), (xs["H"] + 1.25, low), colour="grad")
    arrow(ax, (xs["H"] - 1.25, low), (xs["Z1"] + 1.25, low), colour="grad")
    arrow(ax, (xs["Z1"] - 1.0, low + 0.48), (xs["W1"] - 0.5, high - 0.8), colour="grad", curve=-0.2)
    arrow(ax, (xs["Z2"] - 1.0, low + 0.48), (xs["W2"] - 0.3, high - 0.8), colour="grad", curve=-0.2)
    label(ax, 1.0, low, "backward\n(red)", fontsize=9, color=GRAD)
    label(ax, 8.0, 0.05, "every gradient has the shape of what it is the gradient of, "
          r"and the shapes of each product chain: $H^\top dZ_2$ is " + f"({M},{B})({B},{C}) = ({M},{C})",
          fontsize=9)
    return fig


def softmax_cross_entropy(scores: Sequence[float] = (2.0, 1.0, 0.0), target: int = 0,
                          classes: Sequence[str] = ("pos", "neu", "neg")) -> Figure:
    """Scores -> softmax probabilities -> cross-entropy, and the gradient y_hat - y, as bar rows."""
    z = np.asarray(scores, dtype=float)
    p = np.exp(z - z.max())
    p /= p.sum()
    y = np.eye(len(z))[target]
    loss = -math.log(p[target])
    fig = Figure(figsize=(9.0, 2.9), layout="constrained")
    axes = fig.subplots(1, 4, gridspec_kw={"width_ratios": [1, 1, 1, 1]})
    rows = [("scores $z$", z, COLOURS["value"]), (r"$\hat y = \mathrm{softmax}(z)$", p, COLOURS["value"]),
            ("target $y$ (one-hot)", y, COLOURS["input"]),
            (r"$\partial L/\partial z = \hat y - y$", p - y, GRAD)]
    names = list(classes)
    for ax, (title, v, colour) in zip(axes, rows):
        bars = ax.bar(names, v, color=colour, edgecolor=COLOURS["edge"], lw=0.8)
        for bar, value in zip(bars, v):
            ax.text(bar.get_x() + bar.get_width() / 2, value + (0.05 if value >= 0 else -0.05),
                    f"{value:.3f}" if colour != COLOURS["input"] else f"{value:g}",
                    ha="center", va="bottom" if value >= 0 else "top", fontsize=9)
        ax.set_title(title, fontsize=10)
        ax.axhline(0, color=COLOURS["edge"], lw=0.8)
        lo, hi = min(0.0, v.min()), max(1.0, v.max())
        ax.set_ylim(lo - 0.3 * (hi - lo) * (v.min() < 0), hi + 0.25 * (hi - lo))
        ax.tick_params(labelsize=9)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    fig.suptitle(rf"$L = -\log \hat y_{{{names[target]}}} = -\log {p[target]:.3f} = {loss:.3f}$;"
                 " the gradient pushes the right class's score up, the others down", fontsize=10)
    return fig


def optimiser_paths(paths: Mapping[str, np.ndarray], a: float = 1.0, b: float = 20.0) -> Figure:
    """Trajectories (each an array (steps+1, 2)) of optimisers on f = (a x^2 + b y^2) / 2, over its contours.

    Left: the paths over the contour lines; right: f at every step (log scale).
    """
    fig = Figure(figsize=(9.5, 3.8), layout="constrained")
    ax, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.6, 1]})
    start = next(iter(paths.values()))[0]
    lim_x = abs(start[0]) * 1.15
    lim_y = abs(start[1]) * 1.6
    gx, gy = np.meshgrid(np.linspace(-lim_x, lim_x, 300), np.linspace(-lim_y, lim_y, 200))
    f = 0.5 * (a * gx**2 + b * gy**2)
    ax.contour(gx, gy, f, levels=np.geomspace(f.max() / 3000, f.max(), 12), colors="0.75",
               linewidths=0.7)
    styles = ["o-", "s-", "^-", "d-"]
    for i, (name, path) in enumerate(paths.items()):
        path = np.asarray(path)
        ax.plot(path[:, 0], path[:, 1], styles[i % 4], ms=2.5, lw=1.2, color=f"C{i}", label=name)
        ax2.plot(0.5 * (a * path[:, 0] ** 2 + b * path[:, 1] ** 2), color=f"C{i}", lw=1.5, label=name)
    ax.plot(*start, "ko", ms=5)
    ax.plot(0, 0, "k*", ms=10)
    ax.annotate("start", start, textcoords="offset points", xytext=(4, 6), fontsize=9)
    ax.set_xlim(-lim_x, lim_x)
    ax.set_ylim(-lim_y, lim_y)
    ax.set_xlabel("$x$ (gentle direction)", fontsize=9)
    ax.set_ylabel("$y$ (steep direction)", fontsize=9)
    coef = "" if a == 1 else f"{a:g}"
    ax.set_title(rf"paths on $f = ({coef}x^2 + {b:g}y^2)/2$ (minimum: star)", fontsize=10)
    ax.legend(fontsize=9, loc="lower right")
    ax2.set_yscale("log")
    ax2.set_xlabel("step", fontsize=9)
    ax2.set_title("$f$ at each step", fontsize=10)
    ax2.grid(alpha=0.3)
    for axis in (ax, ax2):
        axis.tick_params(labelsize=9)
    return fig


def dropout_network(p: float = 0.5, widths: Sequence[int] = (4, 6, 6, 2), seed: int = 3) -> Figure:
    """A small network drawn twice: at training time with a random mask (dropped units crossed out)
    and at test time with every unit present."""
    rng = np.random.default_rng(seed)
    masks = [np.ones(widths[0], bool)] + [rng.random(n) >= p for n in widths[1:-1]] + \
        [np.ones(widths[-1], bool)]
    fig = Figure(figsize=(9.0, 3.6), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, train in zip(axes, (True, False)):
        pos = [[(3.0 * li, (max(widths) - 1) / 2 - j + (n - 1) / 2 - (max(widths) - 1) / 2 + 0.0)
                for j in range(n)] for li, n in enumerate(widths)]
        for li in range(len(widths) - 1):
            for j, (x0, y0) in enumerate(pos[li]):
                for k, (x1, y1) in enumerate(pos[li + 1]):
                    on = (masks[li][j] and masks[li + 1][k]) or not train
                    ax.plot([x0, x1], [y0, y1], color="0.35" if on else "0.88", lw=0.8 if on else 0.5,
                            zorder=1)
        for li, layer in enumerate(pos):
            for j, (x, y) in enumerate(layer):
                kept = masks[li][j] or not train
                colour = COLOURS["input"] if li == 0 else COLOURS["param"] if li == len(widths) - 1 \
                    else COLOURS["value"]
                ax.scatter([x], [y], s=260, color=colour if kept else COLOURS["muted"],
                           edgecolor=COLOURS["edge"], zorder=2)
                if not kept:
                    ax.plot([x - 0.25, x + 0.25], [y - 0.25, y + 0.25], color=GRAD, lw=2, zorder=3)
                    ax.plot([x - 0.25, x + 0.25], [y + 0.25, y - 0.25], color=GRAD, lw=2, zorder=3)
                elif train and 0 < li < len(widths) - 1:
                    ax.text(x, y, r"$\times 2$" if p == 0.5 else rf"$/{1 - p:g}$", ha="center",
                            va="center", fontsize=8, zorder=4)
        dropped = sum(int((~m).sum()) for m in masks)
        ax.set_title(f"training step: {dropped} hidden units dropped (p = {p:g}),\nthe rest scaled "
                     f"by 1/(1-p)" if train else "test time (model.eval()): every unit,\nno scaling",
                     fontsize=10)
        ax.set_xlim(-0.8, 3.0 * (len(widths) - 1) + 0.8)
        ax.set_ylim(-(max(widths) + 1) / 2 - 0.2, (max(widths) + 1) / 2 - 0.2)
        ax.set_aspect("equal")
        ax.axis("off")
    return fig


def residual_block() -> Figure:
    """Three blocks side by side: a residual connection x + f(x), post-LN LN(x + f(x)), pre-LN
    x + f(LN(x)); the skip path drawn bold, the branch f beside it."""
    fig, ax = canvas(13.5, 5.6, scale=0.66)

    def block(cx: float, title: str, ln_before: bool, ln_after: bool) -> None:
        label(ax, cx + 0.4, 5.35, title, fontsize=10)
        box(ax, cx, 0.4, r"$h_l$", w=0.9, h=0.5, colour="input")
        y_branch = 1.6
        if ln_before:
            box(ax, cx + 1.0, 1.45, "LN", w=0.8, h=0.45, colour="highlight", fontsize=9)
            y_branch = 2.35
        box(ax, cx + 1.0, y_branch + (0.0 if ln_before else 0.6), r"$f$", w=0.8, h=0.55,
            colour="param")
        fy = y_branch + (0.0 if ln_before else 0.6)
        ax.add_patch(Circle((cx, 3.4), 0.25, facecolor="white", edgecolor=COLOURS["edge"], lw=1.2))
        label(ax, cx, 3.4, "+", fontsize=12)
        # skip path
        arrow(ax, (cx, 0.65), (cx, 3.15), lw=2.2)
        label(ax, cx - 0.55, 2.0, "skip", fontsize=9, rotation=90)
        # branch
        if ln_before:
            arrow(ax, (cx, 0.9), (cx + 1.0, 1.22), curve=-0.3)
            arrow(ax, (cx + 1.0, 1.68), (cx + 1.0, fy - 0.28))
        else:
            arrow(ax, (cx, 0.9), (cx + 1.0, fy - 0.28), curve=-0.3)
        arrow(ax, (cx + 1.0, fy + 0.28), (cx + 0.22, 3.5), curve=0.3)
        if ln_after:
            box(ax, cx, 4.2, "LN", w=0.8, h=0.45, colour="highlight", fontsize=9)
            arrow(ax, (cx, 3.65), (cx, 3.97))
            label(ax, cx - 0.8, 4.2, r"$h_{l+1}$", fontsize=10)
        else:
            arrow(ax, (cx, 3.65), (cx, 4.35))
            label(ax, cx - 0.6, 4.3, r"$h_{l+1}$", fontsize=10)

    block(1.4, r"residual: $h + f(h)$", False, False)
    block(6.0, r"post-LN: $\mathrm{LN}(h + f(h))$", False, True)
    block(10.6, r"pre-LN: $h + f(\mathrm{LN}(h))$", True, False)
    label(ax, 6.0, 4.7, "the sum is normalised: its scale is reset", fontsize=9)
    label(ax, 10.6, 4.7, "only the branch's input is normalised:\nthe stream $h$ itself can grow",
          fontsize=9)
    ax.plot([4.2, 4.2], [0.1, 4.7], color="0.8", lw=0.8, ls=":")
    ax.plot([8.8, 8.8], [0.1, 4.7], color="0.8", lw=0.8, ls=":")
    return fig


def broadcasting(rows: int = 2, cols: int = 3) -> Figure:
    """A (rows, cols) matrix plus a (cols,) bias: the bias row repeated (greyed copies) to (rows, cols);
    and the classic bug, (4,1) - (4,) -> (4,4)."""
    fig, ax = canvas(14.0, 4.2, scale=0.62)
    s = 0.55
    top = 3.4
    mat = np.arange(rows * cols, dtype=float).reshape(rows, cols)
    bias = np.array([10.0 * (j + 1) for j in range(cols)])
    cells(ax, 0.3, top, mat, size=s, colour="value", fmt="{:g}")
    label(ax, 0.3 + cols * s / 2, top + 0.3, f"({rows},{cols})", fontsize=9)
    label(ax, 0.3 + cols * s + 0.35, top - rows * s / 2, "+", fontsize=14)
    bx = 0.3 + cols * s + 0.7
    colours = ["param"] * cols + ["muted"] * (cols * (rows - 1))
    cells(ax, bx, top, np.vstack([bias] * rows), size=s, colour=colours, fmt="{:g}")
    label(ax, bx + cols * s / 2, top + 0.3, f"({cols},) seen as ({rows},{cols})", fontsize=9)
    ox = bx + cols * s + 0.7
    label(ax, ox - 0.35, top - rows * s / 2, "=", fontsize=14)
    cells(ax, ox, top, mat + bias, size=s, colour="value", fmt="{:g}")
    label(ax, ox + cols * s / 2, top + 0.3, f"({rows},{cols})", fontsize=9)
    label(ax, 3.2, 0.8, "shapes line up from the right;\na missing or size-1 dimension is repeated\n"
          "(grey: copies that are never stored)", fontsize=9)

    # the bug
    x0 = 7.6
    col = np.zeros((4, 1))
    cells(ax, x0, top, col, size=s * 0.8, colour="value", fmt="{:g}")
    label(ax, x0 + 0.22, top + 0.3, "(4,1)", fontsize=9)
    label(ax, x0 + 0.85, top - 0.9, "-", fontsize=14)
    cells(ax, x0 + 1.2, top - 0.65, np.ones(4), size=s * 0.8, colour="input", fmt="{:g}")
    label(ax, x0 + 1.2 + 0.88, top - 0.35, "(4,)", fontsize=9)
    label(ax, x0 + 3.2, top - 0.9, "=", fontsize=14)
    cells(ax, x0 + 3.6, top, col - np.ones(4), size=s * 0.8, colour="highlight", fmt="{:g}")
    label(ax, x0 + 3.6 + 0.88, top + 0.3, "(4,4), not (4,)!", fontsize=9, color=GRAD)
    label(ax, x0 + 2.6, 0.55, "a (B,1) output minus (B,) labels:\nevery output against every label",
          fontsize=9)
    ax.plot([7.2, 7.2], [0.2, 4.0], color="0.8", lw=0.8, ls=":")
    return fig


def early_stopping(train: Sequence[float], val: Sequence[float], patience: int) -> Figure:
    """Training and validation loss per epoch, the best epoch marked, and the patience epochs after it
    shaded: the epochs that confirmed the best one (its weights are restored)."""
    fig = Figure(figsize=(7.5, 3.4), layout="constrained")
    ax = fig.subplots()
    epochs = np.arange(1, len(val) + 1)
    best = int(np.argmin(val))
    ax.plot(epochs, train, "o-", ms=3, label="training loss")
    ax.plot(epochs, val, "s-", ms=3, label="validation loss")
    ax.axvspan(best + 1, len(val), color=COLOURS["muted"], zorder=0,
               label=f"patience: {len(val) - best - 1} epochs without a better val loss")
    ax.plot([best + 1], [val[best]], "*", color=GRAD, ms=14, label="best epoch: weights restored")
    ax.set_xlabel("epoch", fontsize=9)
    ax.set_ylabel("cross-entropy", fontsize=9)
    ax.set_title(f"early stopping with patience {patience}", fontsize=10)
    ax.legend(fontsize=9)
    ax.grid(alpha=0.3)
    return fig

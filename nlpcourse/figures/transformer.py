"""Concept figures of book/transformer.md: post-LN and pre-LN layers, scaled dot-product attention
with its shapes, the multi-head split, the causal and padding masks, cross-attention, the sinusoidal
positions and what the key-value cache keeps."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from nlpcourse.figures import COLOURS, arrow, box, canvas, cells, label, new_figure

#: Colours of the layer diagrams: sub-layers, layer normalisation, the residual sum.
_SUBLAYER, _NORM, _SUM = "value", "highlight", "muted"


def _residual(ax, x: float, y_from: float, y_to: float, right: float) -> None:
    """The residual path: from the main line at ``y_from`` out to ``right`` and back into the sum."""
    c = COLOURS["grad"]
    ax.plot([x, right, right], [y_from, y_from, y_to], color=c, lw=1.3)
    arrow(ax, (right, y_to), (x + 0.2, y_to), colour="grad", shrink=0, lw=1.3)
    ax.plot([x], [y_from], "o", color=c, ms=3)


def _layer_stack(ax, x: float, sublayers: Sequence[str], norm_first: bool, title: str,
                 top: float) -> None:
    """One layer drawn bottom-up at column ``x``: each sub-layer wrapped in a residual sum, with
    the layer normalisation after the sum (post-LN) or on the sub-layer's input (pre-LN)."""
    step, w, y = 0.72, 2.7, 0.9
    label(ax, x, top, title, fontsize=9.5)
    label(ax, x, 0.25, "x (B, T, D)", fontsize=8.5)
    previous = 0.45
    for name in sublayers:
        order = ("LN", name, "+") if norm_first else (name, "+", "LN")
        branch = y - 0.42
        ax.plot([x, x], [previous, branch], color=COLOURS["edge"], lw=1.2)
        previous = branch
        for part in order:
            if part == "+":
                box(ax, x, y, "+", w=0.4, h=0.4, colour=_SUM, fontsize=10)
                _residual(ax, x, branch, y, x + w / 2 + 0.25)
                height = 0.4
            elif part == "LN":
                box(ax, x, y, "LayerNorm", w=w * 0.75, h=0.45, colour=_NORM, fontsize=8.5)
                height = 0.45
            else:
                box(ax, x, y, name, w=w, h=0.5, colour=_SUBLAYER, fontsize=8.5)
                height = 0.5
                if name.startswith("cross"):
                    arrow(ax, (x - w / 2 - 0.75, y), (x - w / 2, y), shrink=0)
                    label(ax, x - w / 2 - 0.45, y + 0.32, "memory", fontsize=7.5)
            arrow(ax, (x, previous), (x, y - height / 2), shrink=0)
            previous = y + height / 2
            y += step
        y += 0.2
    arrow(ax, (x, previous), (x, y - 0.2), shrink=0)
    label(ax, x, y, "to the next layer", fontsize=8)
    if norm_first:
        box(ax, x, y + 0.85, "after the last layer only:\none final LayerNorm", w=w, h=0.7,
            colour=_NORM, fontsize=8).set_linestyle("--")


def layer_diagrams() -> Figure:
    """Encoder and decoder layers, post-LN (the paper's) beside pre-LN: where LayerNorm sits on
    each sub-layer, and the residual paths (red) that go around it."""
    fig, ax = canvas(19, 10.8, scale=0.55)
    encoder = ("self-attention", "feed-forward")
    decoder = ("masked self-attention", "cross-attention", "feed-forward")
    columns = ((2.2, encoder, False, "encoder layer"), (6.9, decoder, False, "decoder layer"),
               (12.1, encoder, True, "encoder layer"), (16.8, decoder, True, "decoder layer"))
    for x, subs, first, title in columns:
        _layer_stack(ax, x, subs, first, title, top=9.75)
    ax.plot([9.5, 9.5], [0.2, 10.6], color="#999999", lw=0.8, ls=":")
    label(ax, 4.55, 10.45, r"post-LN (the paper's): $x \leftarrow \mathrm{LN}(x + f(x))$",
          fontsize=10)
    label(ax, 14.45, 10.45, r"pre-LN: $x \leftarrow x + f(\mathrm{LN}(x))$", fontsize=10)
    return fig


def _softmax_rows(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scaled_attention(q: Sequence[Sequence[float]] = ((1, 0), (0, 2), (1, 1)),
                     k: Sequence[Sequence[float]] = ((1, 0), (0, 1), (1, 1), (-1, 0)),
                     v: Sequence[Sequence[float]] = ((1, 0), (0, 1), (2, 2), (0, -1))) -> Figure:
    """Scaled dot-product attention on small numbers, laid out as the matrix products it is:
    Q (T, D_h) against K^T (D_h, S) gives the scores (T, S); a softmax of each row gives the
    weights; the weights against V (S, D_h) give the output (T, D_h)."""
    q, k, v = (np.asarray(a, float) for a in (q, k, v))
    (T, dh), S = q.shape, k.shape[0]
    scores = q @ k.T / math.sqrt(dh)
    weights = _softmax_rows(scores)
    out = weights @ v
    c = 0.62                                                     # the side of one cell
    x_q, x_s = 0.3, 0.3 + dh * c + 1.0
    x_w = x_s + S * c + 1.5
    x_o = x_w + S * c + 1.2
    y_top = 1.6 + T * c                                          # top of the T-row grids
    height = y_top + 0.35 + max(dh, S) * c + 0.65
    fig, ax = canvas(x_o + dh * c + 0.6, height, scale=0.75)
    fmt = "{:.2f}"
    cells(ax, x_q, y_top, q, c, "input", "{:g}", 8)
    cells(ax, x_s, y_top + 0.35 + dh * c, k.T, c, "input", "{:g}", 8)
    cells(ax, x_s, y_top, scores, c, "param", fmt, 8)
    cells(ax, x_w, y_top, weights, c, "highlight", fmt, 8)
    cells(ax, x_o, y_top + 0.35 + S * c, v, c, "input", "{:g}", 8)
    cells(ax, x_o, y_top, out, c, "value", fmt, 8)
    below = y_top - T * c - 0.35
    label(ax, x_q + dh * c / 2, below, "Q\n(B, H, T, $D_h$)", fontsize=8.5, va="top")
    label(ax, x_s + S * c / 2, below, r"scores $QK^\top/\sqrt{D_h}$" + "\n(B, H, T, S)",
          fontsize=8.5, va="top")
    label(ax, x_w + S * c / 2, below, "weights\n(B, H, T, S)", fontsize=8.5, va="top")
    label(ax, x_o + dh * c / 2, below, "output\n(B, H, T, $D_h$)", fontsize=8.5, va="top")
    label(ax, x_s + S * c / 2, y_top + 0.35 + dh * c + 0.3, r"$K^\top$ (B, H, $D_h$, S)",
          fontsize=8.5)
    label(ax, x_o + dh * c / 2, y_top + 0.35 + S * c + 0.3, "V (B, S, $D_h$)", fontsize=8.5)
    mid = y_top - T * c / 2
    arrow(ax, (x_s + S * c + 0.05, mid), (x_w - 0.05, mid), shrink=0)
    label(ax, (x_s + S * c + x_w) / 2, mid + 0.55, "softmax\nof each row", fontsize=8)
    label(ax, (x_w + S * c + x_o) / 2, mid + 0.3, r"$\times V$", fontsize=9)
    label(ax, (x_q + dh * c + x_s) / 2, mid + 0.3, r"$\times K^\top$", fontsize=9)
    label(ax, x_q, 0.35, f"T = {T} queries, S = {S} keys, $D_h$ = {dh}: "
          "each row of weights sums to 1", fontsize=8.5, ha="left")
    return fig


def head_split(d_model: int = 8, heads: int = 2, length: int = 3) -> Figure:
    """Multi-head attention as a reshape: the D columns of the projected queries (keys and values
    alike) are cut into H blocks of D_h, each block attends on its own, and the outputs are put
    back side by side and mixed by W^O. Each cell shows the column it came from."""
    dh = d_model // heads
    c = 0.42
    tints = ["#dbe9f6", "#fde2c4", "#e5f2dc", "#f3d6e8", "#f7d154", "#d9d2f0", "#cfe8e6", "#eeeeee"]
    colour_of = [tints[d // dh % len(tints)] for d in range(d_model)]
    grid = np.tile(np.arange(d_model), (length, 1))
    head_gap = length * c + 0.75
    height = max(heads * head_gap + 1.2, length * c + 3.0)
    x_heads = 0.4 + d_model * c + 2.2
    x_att = x_heads + dh * c + 1.5
    x_out = x_att + 2.6
    x_cat = x_out + dh * c + 2.2
    x_wo = x_cat + d_model * c + 1.1
    fig, ax = canvas(x_wo + 2.1, height, scale=0.62)
    mid = height / 2 + 0.2
    top = mid + length * c / 2
    cells(ax, 0.4, top, grid, c, [colour_of[d] for _ in range(length) for d in range(d_model)],
          fontsize=7.5)
    label(ax, 0.4 + d_model * c / 2, top - length * c - 0.3, "Q = X $W^Q$, (B, T, D)\n(K and V are cut alike)",
          fontsize=8.5, va="top")
    label(ax, 0.4 + d_model * c / 2, top + 0.3, f"T = {length}, D = {d_model}", fontsize=8)
    for h in range(heads):
        y = height - 0.75 - h * head_gap
        block = grid[:, h * dh:(h + 1) * dh]
        cells(ax, x_heads, y, block, c, colour_of[h * dh], fontsize=7.5)
        cells(ax, x_out, y, block, c, colour_of[h * dh], fontsize=7.5)
        label(ax, x_heads + dh * c / 2, y + 0.22,
              f"head {h + 1}: columns {h * dh}–{(h + 1) * dh - 1}", fontsize=7.5)
        label(ax, x_out + dh * c / 2, y + 0.22, f"output of head {h + 1}", fontsize=7.5)
        y_mid = y - length * c / 2
        arrow(ax, (0.4 + d_model * c + 0.1, mid), (x_heads - 0.1, y_mid), shrink=0, lw=0.8)
        box(ax, x_att + 0.55, y_mid, "attention", w=1.5, h=0.45, colour="param", fontsize=8)
        arrow(ax, (x_heads + dh * c + 0.05, y_mid), (x_att - 0.2, y_mid), shrink=0, lw=0.8)
        arrow(ax, (x_att + 1.3, y_mid), (x_out - 0.05, y_mid), shrink=0, lw=0.8)
        arrow(ax, (x_out + dh * c + 0.1, y_mid), (x_cat - 0.1, mid), shrink=0, lw=0.8)
    label(ax, (0.4 + d_model * c + x_heads) / 2, 0.55,
          "view (B, T, H, $D_h$)\ntranspose (B, H, T, $D_h$)", fontsize=8)
    label(ax, x_att + 0.55, 0.55, f"H = {heads} heads at once:\none batched product",
          fontsize=8)
    label(ax, (x_out + x_cat) / 2 + 0.5, 0.55, "transpose, reshape\n(B, T, D)", fontsize=8)
    cells(ax, x_cat, top, grid, c, [colour_of[d] for _ in range(length) for d in range(d_model)],
          fontsize=7.5)
    label(ax, x_cat + d_model * c / 2, top - length * c - 0.3, "heads side by side\n(B, T, D)",
          fontsize=8.5, va="top")
    arrow(ax, (x_cat + d_model * c + 0.05, mid), (x_wo + 0.15, mid), shrink=0)
    box(ax, x_wo + 0.9, mid, "× $W^O$\n(D, D)", w=1.4, h=0.8, colour="param", fontsize=8.5)
    label(ax, x_wo + 0.9, mid - 0.75, "output\n(B, T, D)", fontsize=8.5, va="top")
    return fig


def _mask_grid(ax, x: float, top: float, allowed: np.ndarray, tokens: Sequence[str], title: str,
               size: float) -> None:
    n = len(tokens)
    colours = ["value" if a else "muted" for a in allowed.ravel()]
    cells(ax, x, top, np.where(allowed, "", "×"), size, colours, fontsize=9)
    label(ax, x + n * size / 2, top + 1.25, title, fontsize=9)
    for j, t in enumerate(tokens):
        label(ax, x + (j + 0.5) * size, top + 0.1, t, fontsize=7.5, rotation=50, ha="left",
              va="bottom", rotation_mode="anchor")
        label(ax, x - 0.08, top - (j + 0.5) * size, t, fontsize=7.5, ha="right")
    label(ax, x + n * size / 2, top - n * size - 0.3,
          f"{int(allowed.sum())} of {allowed.size} pairs allowed", fontsize=8.5)


def mask_grids(tokens: Sequence[str] = ("<bos>", "jehová", "habló", "<pad>", "<pad>"),
               pad: str = "<pad>") -> Figure:
    """Which query (row) may attend to which key (column): the causal mask, the padding mask, and
    both together, for one padded sequence. Green: allowed; grey ×: blocked (weight 0)."""
    n = len(tokens)
    real = np.array([t != pad for t in tokens])
    causal = np.tril(np.ones((n, n), bool))
    padding = np.tile(real, (n, 1))
    size, gap = 0.6, 1.6
    width = 3 * (n * size + gap) + 0.6
    fig, ax = canvas(width, n * size + 2.7, scale=0.7)
    top = n * size + 1.2
    titles = ("causal: no key after the query", "padding: no padded key", "both (decoder)")
    for g, (allowed, title) in enumerate(zip((causal, padding, causal & padding), titles)):
        _mask_grid(ax, 1.5 + g * (n * size + gap), top, allowed, tokens, title, size)
    label(ax, width / 2, 0.2, "rows: queries; columns: keys; green: allowed; ×: blocked (weight 0)",
          fontsize=8.5)
    return fig


def cross_attention(source: Sequence[str] = ("the", "lord", "spake", "<eos>"),
                    target: Sequence[str] = ("<bos>", "jehová", "habló"),
                    focus: int = -1) -> Figure:
    """Cross-attention: every decoder position (a query) scores every position of the encoder's
    output (keys and values); one query's lines are drawn in red."""
    S, T = len(source), len(target)
    focus = focus % T
    step = 1.5
    width = max(S, T) * step + 6.6
    fig, ax = canvas(width, 7.3, scale=0.62)
    x_src = [1.2 + step * s for s in range(S)]
    x_tgt = [1.2 + step * (S - T) / 2 + step * t for t in range(T)]
    y_src, y_enc, y_mem, y_q, y_dec, y_tgt = 6.85, 6.0, 5.1, 1.95, 1.15, 0.35
    span = (x_src[0] - 0.65, max(x_src[-1], x_tgt[-1]) + 0.65)
    box(ax, sum(span) / 2, y_enc, "encoder (all its layers)", w=span[1] - span[0], h=0.45,
        colour="muted", fontsize=8.5)
    box(ax, (x_tgt[0] + x_tgt[-1]) / 2, y_dec, "the decoder layer's masked self-attention",
        w=x_tgt[-1] - x_tgt[0] + 1.3, h=0.45, colour="muted", fontsize=8.5)
    for s, (x, w) in enumerate(zip(x_src, source)):
        box(ax, x, y_src, w, w=1.3, h=0.45, colour="input", fontsize=8.5)
        box(ax, x, y_mem, f"$m_{s + 1}$", w=0.9, h=0.55, colour="value", fontsize=9)
        arrow(ax, (x, y_src - 0.23), (x, y_enc + 0.23), shrink=0)
        arrow(ax, (x, y_enc - 0.23), (x, y_mem + 0.28), shrink=0)
    for t, (x, w) in enumerate(zip(x_tgt, target)):
        box(ax, x, y_tgt, w, w=1.3, h=0.45, colour="input", fontsize=8.5)
        box(ax, x, y_q, f"$h_{t + 1}$", w=0.9, h=0.55,
            colour="highlight" if t == focus else "param", fontsize=9)
        arrow(ax, (x, y_tgt + 0.23), (x, y_dec - 0.23), shrink=0)
        arrow(ax, (x, y_dec + 0.23), (x, y_q - 0.28), shrink=0)
    for t, xt in enumerate(x_tgt):      # lines first, the focused query's last (on top)
        if t != focus:
            for xs in x_src:
                ax.plot([xt, xs], [y_q + 0.28, y_mem - 0.28], color="#aaaaaa", lw=0.7)
    for xs in x_src:
        ax.plot([x_tgt[focus], xs], [y_q + 0.28, y_mem - 0.28], color=COLOURS["grad"], lw=1.4)
    right = span[1] + 0.5
    label(ax, right, y_mem + 0.1, f"keys and values: the encoder's output\n(B, S, D), S = {S}",
          fontsize=8.5, ha="left")
    label(ax, right, y_mem - 0.75, "the same memory for every decoder layer", fontsize=8,
          ha="left", color=COLOURS["grad"])
    label(ax, right, (y_mem + y_q) / 2 - 0.2, f"weights (B, H, T, S): {T} × {S} per head,\n"
          "each row a softmax over the source", fontsize=8.5, ha="left")
    label(ax, right, y_q, f"queries: the decoder's states\n(B, T, D), T = {T}", fontsize=8.5,
          ha="left")
    label(ax, right, y_tgt, "target read so far (pieces)", fontsize=8, ha="left")
    label(ax, right, y_src, "source (pieces)", fontsize=8, ha="left")
    return fig


def _sinusoid_table(length: int, d_model: int) -> np.ndarray:
    """(length, d_model): column 2i holds sin(p / 10000^(2i/D)), column 2i+1 the cosine."""
    p = np.arange(length)[:, None]
    angle = p / 10000 ** (np.arange(0, d_model, 2) / d_model)      # (length, D/2)
    table = np.empty((length, d_model))
    table[:, 0::2], table[:, 1::2] = np.sin(angle), np.cos(angle)
    return table


def sinusoid_waves(d_model: int = 16, length: int = 50, pairs: Sequence[int] = (0, 1, 2, 4)) -> Figure:
    """Left: the sine of several dimension pairs i along the positions (dots: the whole positions
    a token can take), each of its own wavelength 2π·10000^(2i/D). Right: the whole (T, D) table,
    columns as in the paper (sin, cos alternating)."""
    table = _sinusoid_table(length, d_model)
    fig = new_figure(figsize=(10.5, 3.4))
    left, right = fig.subplots(1, 2, width_ratios=[1.25, 1])
    positions = np.arange(length)
    smooth = np.linspace(0, length - 1, 20 * length)
    for i in pairs:
        wavelength = 2 * math.pi * 10000 ** (2 * i / d_model)
        line, = left.plot(smooth, np.sin(smooth / 10000 ** (2 * i / d_model)), lw=1.0, alpha=0.6,
                          label=f"i = {i}: wavelength {wavelength:.1f}")
        left.plot(positions, table[:, 2 * i], "o", ms=2.5, color=line.get_color())
    left.set_xlabel("position p")
    left.set_ylabel(r"$\sin(p\,/\,10000^{2i/D})$")
    left.set_title(f"column 2i for D = {d_model}", fontsize=10)
    left.legend(fontsize=8, loc="lower left", framealpha=0.9)
    left.set_ylim(-1.9, 1.15)
    left.grid(alpha=0.3)
    image = right.imshow(table, cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
    right.set_xlabel("column (sin, cos, sin, cos, ...)")
    right.set_ylabel("position p")
    right.set_title(f"the (T, D) table, T = {length}", fontsize=10)
    fig.colorbar(image, ax=right, shrink=0.85)
    return fig


def kv_cache_steps(length: int = 5) -> Figure:
    """Decoding ``length`` pieces: which positions' keys and values each step computes, re-running
    the decoder on the whole prefix (left) or with the key-value cache (right)."""
    size, gap = 0.55, 2.2
    width = 2 * length * size + gap + 2.6
    fig, ax = canvas(width, length * size + 2.6, scale=0.75)
    top = length * size + 1.1
    steps = np.arange(length)[:, None]
    positions = np.arange(length)[None, :]
    needed = positions <= steps
    new = positions == steps
    for g, cached in enumerate((False, True)):
        x = 1.4 + g * (length * size + gap)
        again = needed & ~new
        colours = ["highlight" if n else ("value" if cached else "#f4c7c3") if a else "#ffffff"
                   for n, a in zip(new.ravel(), again.ravel())]
        text = np.where(new, "new", np.where(again, "kept" if cached else "again", ""))
        cells(ax, x, top, text, size, colours, fontsize=6.5)
        for t in range(length):
            label(ax, x + (t + 0.5) * size, top + 0.2, str(t + 1), fontsize=8)
            label(ax, x - 0.12, top - (t + 0.5) * size, f"step {t + 1}", fontsize=7.5, ha="right")
        title = "with the key-value cache" if cached else "re-running the prefix"
        label(ax, x + length * size / 2, top + 0.75, title, fontsize=9)
        computed = int(new.sum()) + (0 if cached else int(again.sum()))
        what = (f"{computed} computed, {int(again.sum())} read back" if cached
                else f"{computed} computed, {int(again.sum())} of them again")
        label(ax, x + length * size / 2, top - length * size - 0.35, what, fontsize=8.5)
    label(ax, width / 2, 0.25, "columns: target positions whose keys and values a layer needs; "
          "the source's are computed\nat every step when the prefix is re-run, once with the cache",
          fontsize=8)
    return fig

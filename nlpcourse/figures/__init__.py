"""Concept figures of the chapters, drawn with matplotlib from code, never from saved images.

Each chapter's figures are functions in ``nlpcourse.figures.<chapter>``; each returns a matplotlib
``Figure`` made without pyplot, so that a notebook shows it exactly once (as the value of its cell),
and the same drawing appears on the site, where the chapter's cell gives it a caption and alt text.
This module holds the few drawing pieces they share: a blank canvas in data units, boxes, arrows
and rows or grids of cells with numbers in them.
"""
from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

#: Colours the figures share: what is given (inputs), what is learnt (parameters), what is computed,
#: what flows backwards (gradients), what is highlighted, and what is left out (greyed).
COLOURS = {"input": "#dbe9f6", "param": "#fde2c4", "value": "#e5f2dc", "grad": "#c0392b",
           "highlight": "#f7d154", "muted": "#eeeeee", "edge": "#333333", "text": "#222222"}


class CourseFigure(Figure):
    """A matplotlib figure that shows itself as a PNG in a notebook, with or without pyplot imported."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
        return buffer.getvalue()


def new_figure(**kw) -> CourseFigure:
    """A CourseFigure (``layout="constrained"`` unless ``kw`` says otherwise); add axes with add_subplot."""
    kw.setdefault("layout", "constrained")
    return CourseFigure(**kw)


def canvas(width: float, height: float, scale: float = 1.0) -> tuple[Figure, Axes]:
    """A figure whose axes run from 0 to ``width`` and 0 to ``height`` (equal units, no frame)."""
    fig = new_figure(figsize=(width * scale, height * scale))
    ax = fig.add_subplot()
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig, ax


def box(ax: Axes, x: float, y: float, text: str = "", w: float = 1.0, h: float = 0.6,
        colour: str = "value", fontsize: float = 10, rounded: bool = True, **text_kw) -> FancyBboxPatch:
    """A box centred on (x, y) with ``text`` in it; ``colour`` is a key of COLOURS or a colour."""
    style = "round,pad=0.02,rounding_size=0.08" if rounded else "square,pad=0"
    patch = FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle=style, lw=1.0,
                           facecolor=COLOURS.get(colour, colour), edgecolor=COLOURS["edge"])
    ax.add_patch(patch)
    if text:
        ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, color=COLOURS["text"], **text_kw)
    return patch


def arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float], text: str = "",
          colour: str = "edge", curve: float = 0.0, fontsize: float = 9, shrink: float = 4.0,
          text_offset: tuple[float, float] = (0.0, 0.12), lw: float = 1.2, style: str = "-|>") -> None:
    """An arrow from ``start`` to ``end`` (bent by ``curve``), with ``text`` beside its middle."""
    c = COLOURS.get(colour, colour)
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=11, lw=lw, color=c,
                                 shrinkA=shrink, shrinkB=shrink, connectionstyle=f"arc3,rad={curve}"))
    if text:
        mx, my = (start[0] + end[0]) / 2 + text_offset[0], (start[1] + end[1]) / 2 + text_offset[1]
        ax.text(mx, my, text, ha="center", va="bottom", fontsize=fontsize, color=c)


def cells(ax: Axes, x: float, y: float, values: Sequence | np.ndarray, size: float = 0.5,
          colour: str | Sequence[str] = "value", fmt: str = "{}", fontsize: float = 9) -> None:
    """A grid of square cells, its top-left corner at (x, y), one per entry of ``values`` (1-D: a row).

    ``values`` may hold numbers (written with ``fmt``) or strings; ``colour`` is one colour for all
    cells or one per cell (row-major, flattened).
    """
    grid = np.asarray(values, dtype=object)
    grid = grid.reshape(1, -1) if grid.ndim == 1 else grid
    colours = [colour] * grid.size if isinstance(colour, str) else list(colour)
    for k, ((i, j), v) in enumerate(np.ndenumerate(grid)):
        left, top = x + j * size, y - i * size
        ax.add_patch(Rectangle((left, top - size), size, size, lw=0.8, edgecolor=COLOURS["edge"],
                               facecolor=COLOURS.get(colours[k], colours[k])))
        if v is not None and v != "":
            ax.text(left + size / 2, top - size / 2, fmt.format(v) if not isinstance(v, str) else v,
                    ha="center", va="center", fontsize=fontsize, color=COLOURS["text"])


def label(ax: Axes, x: float, y: float, text: str, fontsize: float = 10, **kw) -> None:
    """Plain text at (x, y), centred unless ``ha``/``va`` say otherwise."""
    kw.setdefault("ha", "center")
    kw.setdefault("va", "center")
    ax.text(x, y, text, fontsize=fontsize, color=kw.pop("color", COLOURS["text"]), **kw)

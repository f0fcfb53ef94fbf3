"""The figure of the course's front page: the chapters and what each builds on."""
from __future__ import annotations

from matplotlib.figure import Figure

from . import arrow, box, canvas

#: (x, y) of each chapter's box, its title and the model built in it.
CHAPTERS = {
    1: ((1.6, 3.0), "1  Building blocks", "an MLP classifier"),
    2: ((4.9, 4.6), "2  Word vectors", "skip-gram, CBOW"),
    3: ((8.2, 4.6), "3  CNN classifiers", "Kim's CNN"),
    4: ((4.9, 1.4), "4  Language models", "Kneser-Ney, LSTM"),
    5: ((8.2, 1.4), "5  Seq2seq, attention", "a GRU translator"),
    6: ((11.5, 1.4), "6  The Transformer", "a translator"),
    7: ((11.5, 4.6), "7  Pretraining", "ELMo, GPT, BERT"),
}
#: Which chapter uses which (an arrow from the first to the second).
USES = [(1, 2), (1, 4), (2, 3), (4, 5), (5, 6), (6, 7), (3, 7)]


def course_map() -> Figure:
    """The seven chapters as boxes, each with its model, and arrows from a chapter to those that use it."""
    fig, ax = canvas(13.2, 6.4, scale=0.62)
    w, h = 3.0, 1.2
    for (x, y), title, model in CHAPTERS.values():
        box(ax, x, y, "", w=w, h=h, colour="input" if y > 3 else "value")
        ax.text(x, y + 0.2, title, ha="center", va="center", fontsize=10, weight="bold")
        ax.text(x, y - 0.25, model, ha="center", va="center", fontsize=9, style="italic")
    for a, b in USES:
        (xa, ya), (xb, yb) = CHAPTERS[a][0], CHAPTERS[b][0]
        if ya == yb:  # side by side: edge to edge
            start, end = (xa + w / 2, ya), (xb - w / 2, yb)
        elif xa == xb:  # one above the other
            start, end = (xa, ya + h / 2 * (1 if yb > ya else -1)), (xb, yb - h / 2 * (1 if yb > ya else -1))
        else:  # diagonal: from the side of the first to the nearer side of the second
            start = (xa + w / 2, ya)
            end = (xb - w / 2, yb) if xb > xa + w else (xb, yb + h / 2 * (-1 if yb > ya else 1))
        arrow(ax, start, end)
    (x2, y2), (x7, y7) = CHAPTERS[2][0], CHAPTERS[7][0]  # word vectors, made contextual: over the top
    arrow(ax, (x2, y2 + h / 2), (x7, y7 + h / 2), curve=-0.18)
    return fig

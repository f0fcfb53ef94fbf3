"""Concept figures of book/seq2seq.md: the shapes of RNN problems, the encoder-decoder with and
without attention, one attention step, teacher forcing, a beam search tree and BLEU's matching."""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from matplotlib.figure import Figure

from nlpcourse.figures import COLOURS, arrow, box, canvas, label


def rnn_shapes() -> Figure:
    """Four ways to read an RNN: one-to-many, many-to-one, aligned many-to-many, seq2seq."""
    fig, ax = canvas(16, 4.6, scale=0.55)
    titles = ["one label per sequence", "one label per token", "language model",
              "sequence to sequence"]
    for k, title in enumerate(titles):
        x0 = 0.6 + 4 * k
        label(ax, x0 + 1.4, 4.3, title, fontsize=10)
        n_in = 4 if k != 3 else 3
        n_cells = 4 if k != 3 else 6
        for i in range(n_cells):
            x = x0 + i * (3.0 / max(n_cells - 1, 1))
            w = 0.45 if n_cells == 6 else 0.6
            box(ax, x, 2.2, "", w=w, h=0.6, colour="value")
            if i:
                arrow(ax, (x - 3.0 / max(n_cells - 1, 1) + w / 2, 2.2), (x - w / 2, 2.2),
                      shrink=0)
            if i < n_in:
                box(ax, x, 0.8, "x", w=w, h=0.5, colour="input", fontsize=9)
                arrow(ax, (x, 1.05), (x, 1.9), shrink=0)
            out = (k == 0 and i == n_cells - 1) or k in (1, 2) or (k == 3 and i >= n_in - 1)
            if out:
                box(ax, x, 3.5, "y", w=w, h=0.5, colour="highlight", fontsize=9)
                arrow(ax, (x, 2.5), (x, 3.25), shrink=0)
    label(ax, 8, 0.1, "x: input tokens    y: outputs    green: RNN states", fontsize=9)
    return fig


def encoder_decoder(attention: bool, source: Sequence[str] = ("the", "lord", "spake", "</s>"),
                    target: Sequence[str] = ("<s>", "jehová", "habló")) -> Figure:
    """An encoder-decoder; without attention every decoder step sees one summary vector, with
    attention each step reaches every encoder state (drawn for the last step)."""
    fig, ax = canvas(13.6, 5, scale=0.62)
    xs = [1 + 1.5 * i for i in range(len(source))]
    for i, (x, w) in enumerate(zip(xs, source)):
        box(ax, x, 0.7, w, w=1.2, h=0.5, colour="input", fontsize=9)
        box(ax, x, 2.0, f"$m_{i + 1}$", w=0.9, h=0.6, colour="value")
        arrow(ax, (x, 0.95), (x, 1.7), shrink=0)
        if i:
            arrow(ax, (xs[i - 1] + 0.45, 2.0), (x - 0.45, 2.0), shrink=0)
    label(ax, (xs[0] + xs[-1]) / 2, 4.6, "encoder", fontsize=11)
    sx = xs[-1] + 1.6
    box(ax, sx, 2.0, "summary", w=1.3, h=0.6, colour="param", fontsize=9)
    arrow(ax, (xs[-1] + 0.45, 2.0), (sx - 0.65, 2.0), shrink=0)
    dxs = [sx + 1.8 + 1.5 * j for j in range(len(target))]
    for j, (x, w) in enumerate(zip(dxs, target)):
        box(ax, x, 0.7, w, w=1.2, h=0.5, colour="input", fontsize=9)
        box(ax, x, 2.0, f"$h_{j + 1}$", w=0.9, h=0.6, colour="value")
        arrow(ax, (x, 0.95), (x, 1.7), shrink=0)
        box(ax, x, 3.4, f"$P(y_{{{j + 1}}})$", w=1.2, h=0.5, colour="highlight", fontsize=9)
        arrow(ax, (x, 2.3), (x, 3.15), shrink=0)
        prev = sx + 0.65 if j == 0 else dxs[j - 1] + 0.45
        arrow(ax, (prev, 2.0), (x - 0.45, 2.0), shrink=0)
    label(ax, (dxs[0] + dxs[-1]) / 2, 4.6, "decoder", fontsize=11)
    if attention:
        last = dxs[-1]
        for x in xs:
            arrow(ax, (x, 2.3), (last - 0.45, 2.2), colour=COLOURS["grad"], curve=-0.3, lw=0.9)
        label(ax, (xs[0] + dxs[-1]) / 2, 4.15, "attention: every $m_s$ reaches every step",
              fontsize=9, color=COLOURS["grad"])
    else:
        label(ax, sx, 2.75, "all the source\nin $H$ numbers", fontsize=9,
              color=COLOURS["grad"])
    return fig


def attention_step(keys: Sequence[Sequence[float]], query: Sequence[float],
                   words: Sequence[str] = ("the", "lord", "spake")) -> Figure:
    """One attention step with numbers: dot scores, softmax weights, weighted sum (the context)."""
    import numpy as np

    k, q = np.asarray(keys, float), np.asarray(query, float)
    scores = k @ q
    weights = np.exp(scores - scores.max())
    weights /= weights.sum()
    context = weights @ k
    fig, ax = canvas(13, 4.8, scale=0.65)
    label(ax, 1.3, 4.4, "encoder state $m_s$", fontsize=9)
    label(ax, 4.4, 4.4, r"score $e_s = h^\top m_s$", fontsize=9)
    label(ax, 7.3, 4.4, r"weight $\alpha_s$", fontsize=9)
    label(ax, 10.6, 4.4, r"context $c = \sum_s \alpha_s m_s$", fontsize=9)
    for s, (w, row) in enumerate(zip(words, k)):
        y = 3.4 - 1.1 * s
        box(ax, 1.3, y, f"{w}: (" + ", ".join(f"{v:g}" for v in row) + ")", w=2.3, h=0.6,
            colour="value", fontsize=9)
        box(ax, 4.4, y, f"{scores[s]:.2f}", w=1.1, h=0.6, colour="param", fontsize=9)
        box(ax, 7.3, y, f"{weights[s]:.2f}", w=1.1, h=0.6, colour="highlight", fontsize=9)
        arrow(ax, (2.45, y), (3.85, y), shrink=0)
        arrow(ax, (4.95, y), (6.75, y), "softmax" if s == 0 else "", shrink=0, fontsize=8)
        arrow(ax, (7.85, y), (9.6, 2.3), shrink=0, lw=0.6 + 3 * weights[s])
    box(ax, 10.6, 2.3, "(" + ", ".join(f"{v:.2f}" for v in context) + ")", w=2.0, h=0.6,
        colour="value", fontsize=9)
    label(ax, 4.4, 0.1, "query $h$ = (" + ", ".join(f"{v:g}" for v in q) + ")", fontsize=9)
    return fig


def teacher_forcing(reference: Sequence[str] = ("jehová", "habló", "a", "moisés"),
                    own: Sequence[str] = ("jehová", "dijo", "a", "a")) -> Figure:
    """Training reads the reference's previous word; translating reads the model's own."""
    fig, ax = canvas(12, 5.2, scale=0.7)
    for row, (title, fed, out) in enumerate((
            ("teacher forcing (training)", ("<s>",) + tuple(reference[:-1]), reference),
            ("free running (translating)", ("<s>",) + tuple(own[:-1]), own))):
        y = 4.4 - 2.6 * row
        label(ax, 0.2, y + 0.45, title, fontsize=10, ha="left")
        for j, (f, o) in enumerate(zip(fed, out)):
            x = 1.2 + 2.6 * j
            box(ax, x, y - 1.3, f, w=1.3, h=0.45, colour="input" if row == 0 else "param",
                fontsize=9)
            box(ax, x, y - 0.6, "", w=0.8, h=0.45, colour="value")
            box(ax, x + 1.1, y - 0.6, o, w=1.2, h=0.45, colour="highlight", fontsize=9)
            arrow(ax, (x, y - 1.07), (x, y - 0.83), shrink=0)
            arrow(ax, (x + 0.4, y - 0.6), (x + 0.5, y - 0.6), shrink=0)
            if j + 1 < len(fed):
                arrow(ax, (x, y - 0.37), (x + 2.6, y - 0.37), curve=-0.25, lw=0.9)  # the state
                if row == 0:
                    label(ax, x + 2.6, y - 1.75, "reference", fontsize=8,
                          color=COLOURS["edge"])
    for j in range(len(own) - 1):  # after the boxes, so that no box hides an arrowhead
        x, y = 1.2 + 2.6 * j, 4.4 - 2.6
        arrow(ax, (x + 1.1, y - 0.83), (x + 2.6, y - 1.07), colour="grad", curve=0.3, lw=0.9)
    return fig


def beam_tree(steps: Sequence[dict[str, float]], kept: Sequence[set[str]],
              greedy: str | None = None) -> Figure:
    """A beam search tree: ``steps[t]`` maps each extended hypothesis (words joined by spaces) to
    its log-probability; those in ``kept[t]`` stay in the beam, the rest are pruned (grey)."""
    fig, ax = canvas(13, 1.0 + 0.75 * max(len(s) for s in steps), scale=0.65)
    height = ax.get_ylim()[1]
    pos: dict[str, tuple[float, float]] = {"": (0.7, height / 2)}
    box(ax, 0.7, height / 2, "<s>", w=0.9, h=0.45, colour="input", fontsize=9)
    for t, (step, keep) in enumerate(zip(steps, kept)):
        x = 3.0 + 3.6 * t
        ordered = sorted(step, key=lambda h: (pos[" ".join(h.split()[:-1])][1], step[h]),
                         reverse=True)
        for i, hyp in enumerate(ordered):
            y = height - 0.6 - 0.75 * i
            word, parent = hyp.split()[-1], " ".join(hyp.split()[:-1])
            on = hyp in keep
            colour = "highlight" if on else "muted"
            box(ax, x, y, f"{word}  {step[hyp]:.2f}", w=2.1, h=0.45, colour=colour, fontsize=9,
                alpha=1.0 if on else 0.6)
            if greedy is not None and greedy.split()[:t + 1] == hyp.split():
                box(ax, x, y, "", w=2.25, h=0.58, colour="none")
            px, py = pos[parent]
            arrow(ax, (px + 0.5, py), (x - 1.05, y), shrink=1,
                  colour="edge" if on else "#aaaaaa", lw=1.0 if on else 0.6)
            pos[hyp] = (x + 0.55, y)
        label(ax, x, height - 0.1, f"step {t + 1}", fontsize=9)
    return fig


def bleu_matches(hypothesis: Sequence[str], reference: Sequence[str], n_max: int = 2) -> Figure:
    """Which of the hypothesis's n-grams (n = 1..n_max) the reference holds, clipped."""
    fig, ax = canvas(2.0 + 1.2 * max(len(hypothesis), len(reference)), 1.6 + 1.5 * n_max,
                     scale=0.75)
    top = ax.get_ylim()[1]
    label(ax, 0.1, top - 0.3, "reference", fontsize=9, ha="left")
    for i, w in enumerate(reference):
        box(ax, 1.6 + 1.2 * i, top - 0.75, w, w=1.1, h=0.45, colour="input", fontsize=9)
    for n in range(1, n_max + 1):
        y = top - 0.55 - 1.5 * n
        ref_counts = Counter(tuple(reference[i:i + n]) for i in range(len(reference) - n + 1))
        used: Counter = Counter()
        matched = 0
        for i in range(len(hypothesis) - n + 1):
            gram = tuple(hypothesis[i:i + n])
            hit = used[gram] < ref_counts[gram]
            used[gram] += hit
            matched += hit
            x = 1.6 + 1.2 * i + 0.6 * (n - 1)
            box(ax, x, y - 0.5 * (i % 2) * (n > 1), " ".join(gram), w=1.2 * n - 0.1, h=0.4,
                colour="value" if hit else "muted", fontsize=8)
        label(ax, 0.1, y + 0.4, f"{n}-grams: {matched}/{len(hypothesis) - n + 1} match",
              fontsize=9, ha="left")
    return fig

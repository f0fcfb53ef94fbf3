"""Concept figures of book/pretraining.md: ELMo's stack and scalar mix, ULMFiT's three stages, causal
against bidirectional attention, BERT's input embeddings and masking rule, the family of the four
models, BERT's fine-tuning heads and T5's span corruption."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from nlpcourse.errors import ConfigError
from nlpcourse.figures import COLOURS, arrow, box, canvas, cells, label


def elmo_stack(words: Sequence[str] = ("the", "light", "was", "red"), focus: int = 1,
               weights: Sequence[float] | None = None, gamma: float | None = None) -> Figure:
    """ELMo's biLM: word inputs, two LSTM layers each way, and the scalar mix of word ``focus``'s
    three vectors into one. With ``weights`` (the mix's w) the softmax s_j are written as numbers."""
    fig, ax = canvas(17, 7.6, scale=0.6)
    xs = [3.0 + 2.1 * i for i in range(len(words))]
    ys = (1.6, 3.5, 5.4)
    for j, name in enumerate(("layer 0: $x_k$", "LSTM layer 1", "LSTM layer 2")):
        label(ax, 0.1, ys[j], name, fontsize=8.5, ha="left")
    fx = xs[focus]
    box(ax, fx, 3.5, "", w=1.75, h=5.0, colour="none")  # the focus word's column
    for i, (x, w) in enumerate(zip(xs, words)):
        box(ax, x, 0.45, w, w=1.3, h=0.5, colour="highlight" if i == focus else "input", fontsize=9)
        arrow(ax, (x, 0.7), (x, 1.32), shrink=0)
        box(ax, x, ys[0], f"$x_{i + 1}$", w=1.3, h=0.55, colour="input", fontsize=9)
        for y in ys[1:]:
            box(ax, x - 0.33, y, r"$\rightarrow$", w=0.64, h=0.55, colour="value", fontsize=9)
            box(ax, x + 0.33, y, r"$\leftarrow$", w=0.64, h=0.55, colour="param", fontsize=9)
        arrow(ax, (x, ys[0] + 0.28), (x, ys[1] - 0.28), shrink=0)
        arrow(ax, (x, ys[1] + 0.28), (x, ys[2] - 0.28), shrink=0)
        if i:
            for y in ys[1:]:
                arrow(ax, (xs[i - 1] + 0.66, y + 0.13), (x - 0.66, y + 0.13), shrink=0, lw=0.9)
                arrow(ax, (x - 0.66, y - 0.13), (xs[i - 1] + 0.66, y - 0.13), shrink=0, lw=0.9,
                      colour=COLOURS["grad"])
    label(ax, xs[0] - 0.7, 6.5, "forward LM: green, reads left to right (black arrows)\n"
          "backward LM: orange, reads right to left (red arrows)", fontsize=8.5, ha="left")
    # the scalar mix of word ``focus``
    if weights is not None:
        w = np.asarray(weights, float)
        s = np.exp(w - w.max())
        s /= s.sum()
        s_text = [f"$\\times s_{j}$ = {v:.2f}" for j, v in enumerate(s)]
    else:
        s_text = [f"$\\times s_{j}$" for j in range(3)]
    k = focus + 1
    hx, sx, sumx = xs[-1] + 2.2, xs[-1] + 4.0, xs[-1] + 5.6
    for j, y in enumerate(ys):
        box(ax, hx, y, f"$h_{{{k},{j}}}$", w=1.1, h=0.55, colour="value", fontsize=9)
        box(ax, sx, y, s_text[j], w=1.9 if weights is not None else 1.2, h=0.55, colour="highlight",
            fontsize=9)
        arrow(ax, (hx + 0.55, y), (sx - (0.95 if weights is not None else 0.6), y), shrink=0)
        arrow(ax, (sx, y + (0.28 if j == 0 else -0.28 if j == 2 else 0)) if j != 1 else
              (sx + (0.95 if weights is not None else 0.6), y), (sumx - 0.3, ys[1]), shrink=0,
              lw=0.9)
    box(ax, sumx, ys[1], r"$\Sigma$", w=0.6, h=0.55, colour="value", fontsize=10)
    g_text = r"$\times\gamma$" if gamma is None else rf"$\times\gamma$ = {gamma:.2f}"
    box(ax, sumx, ys[2] + 0.9, g_text, w=1.6 if gamma is not None else 1.0, h=0.55,
        colour="highlight", fontsize=9)
    arrow(ax, (sumx, ys[1] + 0.28), (sumx, ys[2] + 0.62), shrink=0)
    label(ax, sumx, 7.25, f"ELMo vector of '{words[focus]}'", fontsize=9)
    arrow(ax, (sumx, ys[2] + 1.18), (sumx, 7.0), shrink=0)
    label(ax, hx, 0.45, f"the three vectors\nof '{words[focus]}'", fontsize=8.5)
    label(ax, sx + 0.6, 0.45, "s = softmax(w)", fontsize=8.5)
    return fig


def ulmfit_stages(groups: int = 4, ratio: float = 2.6, schedule: Sequence[float] | None = None) -> Figure:
    """ULMFiT's three stages; under the third, the discriminative rates eta / ratio**depth and which
    layer groups train at each stage of gradual unfreezing. ``schedule`` (factors of the peak rate,
    one per step) draws the slanted triangle under the second stage."""
    fig, ax = canvas(15, 7.4, scale=0.62)
    stages = [("1. general-domain LM", "pretrain a language model\non general text\n(Wikitext-103)"),
              ("2. target-domain LM", "fine-tune it, still as an LM,\non the task's own text\n(labels unread)"),
              ("3. classifier", "add a classifier; fine-tune\non the labelled examples")]
    for k, (title, body) in enumerate(stages):
        x = 2.4 + 5.1 * k
        box(ax, x, 6.1, "", w=4.4, h=1.9, colour="input" if k < 2 else "highlight")
        label(ax, x, 6.75, title, fontsize=10, fontweight="bold")
        label(ax, x, 5.85, body, fontsize=8.5)
        if k:
            arrow(ax, (x - 5.1 + 2.2, 6.1), (x - 2.2, 6.1), shrink=1)
    # stage 2: the slanted triangle
    if schedule is not None:
        sch = np.asarray(schedule, float)
        x0, y0, w, h = 5.6, 2.0, 3.4, 2.2
        ax.plot(x0 + w * np.arange(len(sch)) / (len(sch) - 1), y0 + h * sch, color=COLOURS["edge"],
                lw=1.4)
        ax.plot([x0, x0 + w], [y0, y0], color="#999999", lw=0.8)
        label(ax, x0 + w / 2, y0 - 0.3, "step $t$", fontsize=8.5)
        label(ax, x0 + w / 2, y0 + h + 0.45, "slanted triangular rate\n(stages 2 and 3)", fontsize=8.5)
    # stage 3: layer groups, their rates, gradual unfreezing
    gx = 11.9
    names = [f"group {g}" for g in range(1, groups)] + ["classifier"]
    label(ax, gx + 0.3, 4.7, "rate", fontsize=8.5)
    label(ax, gx + 1.55, 4.7, "trains in\nepoch", fontsize=8)
    for g, name in enumerate(names):
        y = 1.0 + 0.85 * g
        depth = groups - 1 - g
        rate = r"$\eta$" if depth == 0 else (rf"$\eta/{ratio:g}$" if depth == 1 else
                                            rf"$\eta/{ratio:g}^{{{depth}}}$")
        box(ax, gx - 1.4, y, name, w=1.5, h=0.6, colour="param" if g < groups - 1 else "highlight",
            fontsize=8.5)
        label(ax, gx + 0.3, y, rate, fontsize=9)
        for e in range(groups):
            on = e >= depth
            cells(ax, gx + 1.0 + 0.42 * e, y + 0.21, [""], size=0.42,
                  colour="value" if on else "muted")
    for e in range(groups):
        label(ax, gx + 1.21 + 0.42 * e, 0.35, str(e + 1), fontsize=8)
    label(ax, gx + 0.3, 0.0, "green: trains, grey: frozen", fontsize=8)
    label(ax, 2.4, 3.2, "discriminative rates:\neach group below the top\ngets the rate above / "
          f"{ratio:g}\n(stages 2 and 3)\n\ngradual unfreezing:\none more group trains\neach epoch "
          "(stage 3)", fontsize=8.5)
    return fig


def attention_patterns(tokens: Sequence[str] = ("[CLS]", "the", "plot", "is", "thin", "[SEP]")) -> Figure:
    """Which position each position's attention may read: GPT's causal mask, BERT's full one."""
    n = len(tokens)
    size = 0.55
    fig, ax = canvas(2 * n * size + 5.2, n * size + 2.6, scale=0.7)
    top = n * size + 1.4
    for k, (title, causal) in enumerate((("GPT: causal", True), ("BERT: bidirectional", False))):
        x0 = 2.0 + k * (n * size + 2.6)
        seen = np.array([[j <= i or not causal for j in range(n)] for i in range(n)])
        cells(ax, x0, top, np.full((n, n), ""), size=size,
              colour=["value" if s else "muted" for s in seen.flat])
        for i, t in enumerate(tokens):
            label(ax, x0 - 0.1, top - size * (i + 0.5), t, fontsize=8, ha="right")
            label(ax, x0 + size * (i + 0.5), top + 0.1, t, fontsize=8, rotation=60, ha="left", va="bottom")
        label(ax, x0 + n * size / 2, 0.45, f"{title}: {int(seen.sum())} of {n * n} pairs", fontsize=9)
    label(ax, 0.1, top - n * size / 2, "position\nthat reads", fontsize=8, ha="left")
    return fig


def bert_inputs(pieces: Sequence[str], segments: Sequence[int]) -> Figure:
    """BERT's input vector at each position: piece + segment + position embeddings, summed."""
    n = len(pieces)
    step = 1.25
    fig, ax = canvas(n * step + 2.6, 5.6, scale=0.62)
    rows = [("input", 4.9, "input"), ("piece", 3.7, "param"), ("segment", 2.6, "value"),
            ("position", 1.5, "highlight")]
    for name, y, _ in rows:
        label(ax, 1.2, y, name, fontsize=9, ha="right")
    for i, (p, s) in enumerate(zip(pieces, segments)):
        x = 2.0 + i * step
        box(ax, x, 4.9, p, w=step - 0.1, h=0.5, colour="input", fontsize=8)
        box(ax, x, 3.7, f"$E_{{{p.replace('#', '')}}}$" if not p.startswith("[") else
            f"$E_{{{p[1:-1]}}}$", w=step - 0.1, h=0.5, colour="param", fontsize=7.5)
        box(ax, x, 2.6, "$E_A$" if s == 0 else "$E_B$", w=step - 0.1, h=0.5,
            colour="value" if s == 0 else "#cfe0f0", fontsize=8)
        box(ax, x, 1.5, f"$E_{{{i}}}$", w=step - 0.1, h=0.5, colour="highlight", fontsize=8)
        for y in (3.15, 2.05):
            label(ax, x, y, "+", fontsize=10)
        label(ax, x, 0.85, "=", fontsize=10)
    label(ax, 2.0 + (n - 1) * step / 2, 0.3, "sum, then layer norm: one vector of $D$ numbers per "
          "position", fontsize=9)
    return fig


def masking_rule(original: Sequence[str], corrupted: Sequence[str], chosen: Sequence[bool],
                 rate: float = 0.15) -> Figure:
    """BERT's masking: each piece chosen with probability ``rate``; of the chosen, 80% become [MASK],
    10% a random piece, 10% stay. Below the rule, one drawn example: ``original`` and ``corrupted``
    pieces, ``chosen`` marking the positions the loss is taken at."""
    n = len(original)
    step = 1.05
    width = max(n * step + 2.6, 13.0)
    fig, ax = canvas(width, 6.4, scale=0.6)
    box(ax, 2.0, 5.6, "each piece\n(not a special)", w=2.6, h=0.9, colour="input", fontsize=9)
    box(ax, 6.0, 5.6, f"chosen\n(probability {rate:g})", w=2.6, h=0.9, colour="highlight", fontsize=9)
    arrow(ax, (3.3, 5.6), (4.7, 5.6), shrink=0)
    label(ax, 2.0, 4.75, f"not chosen ({1 - rate:g}): given,\nno loss", fontsize=8)
    for k, (text, p) in enumerate((("[MASK]", 0.8), ("a random piece", 0.1), ("unchanged", 0.1))):
        y = 6.0 - 0.75 * k
        box(ax, 10.2, y, f"{text}  ({p:g})", w=3.0, h=0.55, colour="param", fontsize=9)
        arrow(ax, (7.3, 5.6), (8.7, y), shrink=0, lw=0.9)
    label(ax, 10.2, 3.75, "the loss is taken at every chosen position", fontsize=8.5)
    label(ax, 0.2, 2.75, "text", fontsize=8.5, ha="left")
    label(ax, 0.2, 1.55, "input", fontsize=8.5, ha="left")
    kinds = {"mask": 0, "random": 0, "same": 0}
    for i, (o, c, ch) in enumerate(zip(original, corrupted, chosen)):
        x = 1.9 + i * step
        box(ax, x, 2.75, o, w=step - 0.08, h=0.5, colour="input", fontsize=7.5)
        kind = "mask" if c == "[MASK]" else "same" if c == o else "random"
        if ch:
            kinds[kind] += 1
        colour = "param" if ch else "muted"
        box(ax, x, 1.55, c, w=step - 0.08, h=0.5, colour=colour, fontsize=7.5,
            fontweight="bold" if ch else "normal")
        if ch:
            label(ax, x, 0.95, {"mask": "mask", "random": "random", "same": "kept"}[kind], fontsize=7,
                  color=COLOURS["grad"])
    specials = sum(o.startswith("[") and o.endswith("]") for o in original)  # [CLS], [SEP]: never chosen
    label(ax, width / 2, 0.3, f"this draw: {sum(chosen)} of {n - specials} pieces chosen "
          f"({kinds['mask']} [MASK], {kinds['random']} random, {kinds['same']} unchanged)", fontsize=9)
    return fig


def family_tree() -> Figure:
    """ELMo, ULMFiT, GPT and BERT: the network, what it pretrains on, how a task uses it, and which
    idea each took from which."""
    fig, ax = canvas(17, 7.6, scale=0.6)
    models = [
        ("ELMo", "Peters et al. 2018", "2-layer biLSTM LMs,\nforward + backward",
         "predict next word\n(each direction)", "features: frozen,\nscalar mix into task model"),
        ("ULMFiT", "Howard & Ruder 2018", "3-layer LSTM LM\n(AWD-LSTM)", "predict next word",
         "fine-tune all:\ndiscr. rates, slanted tri.,\ngradual unfreezing"),
        ("GPT", "Radford et al. 2018", "12-layer Transformer\ndecoder (causal)", "predict next piece",
         "fine-tune all,\n+ LM loss as auxiliary"),
        ("BERT", "Devlin et al. 2019", "12/24-layer Transformer\nencoder (bidirectional)",
         "predict masked pieces\n(+ next sentence)", "fine-tune all,\none layer on top"),
    ]
    for name, y in (("network", 4.45), ("pretrains by", 3.05), ("a task uses it", 1.5)):
        label(ax, 0.1, y, name, fontsize=9, ha="left", fontweight="bold")
    xs = [3.9 + 3.7 * k for k in range(len(models))]
    for x, (name, cite, net, objective, use) in zip(xs, models):
        box(ax, x, 6.2, name, w=2.2, h=0.6, colour="highlight", fontsize=11, fontweight="bold")
        label(ax, x, 5.6, cite, fontsize=8)
        box(ax, x, 4.45, net, w=3.3, h=1.0, colour="param", fontsize=8.5)
        box(ax, x, 3.05, objective, w=3.3, h=0.9, colour="input", fontsize=8.5)
        frozen = name == "ELMo"
        box(ax, x, 1.5, use, w=3.3, h=1.2, colour="muted" if frozen else "value", fontsize=8.5)
    arrow(ax, (xs[1] + 1.15, 6.2), (xs[2] - 1.15, 6.2), shrink=0)
    label(ax, (xs[1] + xs[2]) / 2, 6.45, "fine-tune\nthe whole LM", fontsize=7.5, va="bottom")
    arrow(ax, (xs[2] + 1.15, 6.2), (xs[3] - 1.15, 6.2), shrink=0)
    label(ax, (xs[2] + xs[3]) / 2, 6.45, "Transformer,\nfine-tuned", fontsize=7.5, va="bottom")
    arrow(ax, (xs[0], 6.5), (xs[3], 6.5), curve=-0.12, colour=COLOURS["grad"], shrink=2)
    label(ax, (xs[0] + xs[3]) / 2, 7.35, "context from both sides: two LMs (ELMo), one network (BERT)",
          fontsize=8, color=COLOURS["grad"])
    label(ax, 9.5, 0.35, "grey: the pretrained network stays frozen;  green: all its weights are "
          "fine-tuned", fontsize=8.5)
    return fig


def fine_tuning_heads() -> Figure:
    """BERT on four kinds of task: what goes in, and which final states the new layer reads."""
    fig, ax = canvas(16, 5.2, scale=0.6)
    tasks = [("one text: sentiment", ["[CLS]", "a", "fine", "film", "[SEP]"], [0], "class"),
             ("a pair: entailment", ["[CLS]", "a", "[SEP]", "b", "[SEP]"], [0], "class"),
             ("each piece: tags", ["[CLS]", "the", "plot", "thins", "[SEP]"], [1, 2, 3], "tag"),
             ("a span: answer", ["[CLS]", "q", "[SEP]", "p1", "p2"], [3, 4], "start/end")]
    for k, (title, toks, read, out) in enumerate(tasks):
        x0 = 0.5 + 4.0 * k
        label(ax, x0 + 1.6, 4.9, title, fontsize=9, fontweight="bold")
        box(ax, x0 + 1.6, 2.3, "BERT", w=3.5, h=0.8, colour="value", fontsize=9)
        for i, t in enumerate(toks):
            x = x0 + 0.2 + 0.7 * i
            box(ax, x, 0.8, t, w=0.66, h=0.45, colour="input", fontsize=6.5)
            arrow(ax, (x, 1.03), (x, 1.9), shrink=0, lw=0.8)
            if i in read:
                arrow(ax, (x, 2.7), (x, 3.7), shrink=0, lw=1.0, colour=COLOURS["grad"])
        box(ax, x0 + 1.6, 4.0, f"new linear layer -> {out}", w=3.6, h=0.5, colour="highlight", fontsize=8)
    return fig


def span_corruption(words: Sequence[str], spans: Sequence[tuple[int, int]],
                    sentinels: Sequence[str] = ("<X>", "<Y>", "<Z>")) -> Figure:
    """T5's span corruption: each span [start, end) of ``words`` is replaced in the input by one
    sentinel; the target lists each sentinel followed by the words it hides, then a final sentinel."""
    source, target = span_corrupt_text(words, spans, sentinels)
    width = max(len(words), len(source), len(target)) * 1.0 + 2.8
    fig, ax = canvas(width, 4.2, scale=0.62)
    hidden = {i for s, e in spans for i in range(s, e)}
    for y, name, row, colour_of in (
            (3.5, "text", list(words), lambda i, t: "param" if i in hidden else "input"),
            (2.2, "input", source, lambda i, t: "highlight" if t in sentinels else "input"),
            (0.9, "target", target, lambda i, t: "highlight" if t in sentinels else "param")):
        label(ax, 0.2, y, name, fontsize=9, ha="left")
        for i, t in enumerate(row):
            box(ax, 2.2 + 1.0 * i, y, t, w=0.94, h=0.5, colour=colour_of(i, t), fontsize=8)
    return fig


def span_corrupt_text(words: Sequence[str], spans: Sequence[tuple[int, int]],
                      sentinels: Sequence[str] = ("<X>", "<Y>", "<Z>")) -> tuple[list[str], list[str]]:
    """The (input, target) word lists of T5's span corruption for non-overlapping sorted ``spans``."""
    if len(spans) >= len(sentinels):
        raise ConfigError(f"span_corrupt_text: {len(spans)} spans need {len(spans) + 1} sentinels")
    source: list[str] = []
    target: list[str] = []
    at = 0
    for k, (start, end) in enumerate(spans):
        if not at <= start < end <= len(words):
            raise ConfigError(f"span_corrupt_text: spans must be sorted, disjoint and inside; got {spans}")
        source += [*words[at:start], sentinels[k]]
        target += [sentinels[k], *words[start:end]]
        at = end
    source += list(words[at:])
    target.append(sentinels[len(spans)])
    return source, target

"""Interactive controls (ipywidgets) used by the chapters.

Nothing runs at import and no constructor prints: a function builds the widget and returns it, and
the notebook displays it. Every widget draws its figure on the kernel side (matplotlib, Agg) into an
``ipywidgets.HTML`` value, so the executed notebook, and the website that embeds the widget state,
show the picture of the current setting even where no kernel is running.
"""
from __future__ import annotations

import base64
import functools
import html
import io
import math
from collections.abc import Callable

import torch

from .errors import ConfigError

#: The activation functions the explorer offers, by name: tensor -> tensor, element-wise.
ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "relu": torch.relu,
    "gelu": torch.nn.functional.gelu,
}

#: How each activation behaves where its derivative vanishes: a *squashing* function (sigmoid, tanh) flattens
#: towards a bound on both sides, and a large input of either sign *saturates* it; a *rectifier* (ReLU, GELU)
#: never flattens for z > 0, and its flat side z < 0, where the output is (close to) 0, switches the unit *off*
#: for that input (a unit that is off for every input is "dead"). Off is not saturation: for ReLU it is half of
#: the inputs at every scale, and the other half passes the gradient unchanged.
KINDS: dict[str, str] = {"sigmoid": "squashing", "tanh": "squashing", "relu": "rectifier", "gelu": "rectifier"}

#: A unit counts as flat (saturated, or off) where its input lies in a tail of the real line on which
#: |f'| stays below this fraction of max |f'| all the way to infinity.
SATURATION_THRESHOLD = 0.05


def activation_and_derivative(name: str, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``f(z)`` and ``f'(z)`` (by autograd) of the activation called ``name``, element-wise."""
    if name not in ACTIVATIONS:
        raise ConfigError(f"activation_and_derivative: unknown activation {name!r}; "
                          f"choose one of {sorted(ACTIVATIONS)}")
    z = z.detach().to(torch.float64).requires_grad_(True)
    f = ACTIVATIONS[name](z)
    (df,) = torch.autograd.grad(f.sum(), z)
    return f.detach(), df


@functools.cache
def flat_tails(name: str) -> tuple[float, float]:
    """``(lo, hi)``: |f'(z)| < SATURATION_THRESHOLD * max |f'| for every z <= lo and for every z >= hi.

    ``lo`` is ``-inf`` (``hi`` is ``inf``) where f never flattens on that side. Only the tails count: GELU's
    derivative also crosses 0 near z = -0.75, where the function turns, without flattening there.
    """
    z = torch.arange(-20000, 20001, dtype=torch.float64) / 1000  # steps of 0.001, 0 on the grid
    _, df = activation_and_derivative(name, z)
    small = df.abs() < SATURATION_THRESHOLD * df.abs().max()
    n_lo = int(small.long().cumprod(0).sum())          # leading run of small derivatives
    n_hi = int(small.flip(0).long().cumprod(0).sum())  # trailing run
    lo = z[n_lo - 1].item() if n_lo else -math.inf
    hi = z[-n_hi].item() if n_hi else math.inf
    return lo, hi


def saturation(name: str, sigma: float, n_grid: int = 4001) -> dict[str, float]:
    """How a unit with pre-activation ``z ~ N(0, sigma^2)`` behaves, from the normal distribution function
    or by quadrature (no sampling):

    ``mean_grad`` = E[f'(z)]; ``saturated`` = the probability that z lies in a flat tail (see
    :func:`flat_tails`) of a squashing function, 0 for a rectifier; ``off`` = the probability that z lies in
    the flat tail z < 0 of a rectifier (output about 0, no gradient for this input), 0 for a squashing
    function; ``out_std`` = the standard deviation of f(z).
    """
    if not sigma > 0:
        raise ConfigError(f"saturation: sigma must be > 0, got {sigma}")
    z = torch.linspace(-8 * sigma, 8 * sigma, n_grid, dtype=torch.float64)
    w = torch.exp(-0.5 * (z / sigma) ** 2)
    w = w / w.sum()  # normal density on the grid, normalised to sum to 1
    f, df = activation_and_derivative(name, z)
    mean_f = (w * f).sum()
    lo, hi = flat_tails(name)
    normal = torch.distributions.Normal(0.0, sigma)
    p_lo = normal.cdf(torch.tensor(lo, dtype=torch.float64)).item() if lo > -math.inf else 0.0
    p_hi = 1 - normal.cdf(torch.tensor(hi, dtype=torch.float64)).item() if hi < math.inf else 0.0
    squashing = KINDS[name] == "squashing"
    return {
        "mean_grad": (w * df).sum().item(),
        "saturated": p_lo + p_hi if squashing else 0.0,
        "off": 0.0 if squashing else p_lo,
        "out_std": math.sqrt(max(((w * (f - mean_f) ** 2).sum()).item(), 0.0)),
    }


def _figure_html(name: str, sigma: float) -> str:
    """The explorer's picture as an HTML ``<img>`` (PNG, base64) followed by a one-line summary."""
    from matplotlib.figure import Figure

    z = torch.linspace(-6, 6, 601, dtype=torch.float64)
    f, df = activation_and_derivative(name, z)
    density = torch.exp(-0.5 * (z / sigma) ** 2)
    density = density / density.max()  # scaled to peak at 1, for display only
    fig = Figure(figsize=(6.4, 3.4), dpi=80)
    ax = fig.add_subplot()
    ax.fill_between(z.numpy(), 0, density.numpy(), color="0.85", label=f"z ~ N(0, {sigma:.2g}²), scaled")
    ax.plot(z.numpy(), f.numpy(), lw=2, label=f"{name}(z)")
    ax.plot(z.numpy(), df.numpy(), lw=2, ls="--", label=f"{name}'(z)")
    ax.set_xlabel("pre-activation z")
    ax.set_ylim(-1.2, 2.2)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(f"{name}: function, derivative and where the inputs fall")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    png = base64.b64encode(buf.getvalue()).decode("ascii")
    s = saturation(name, sigma)
    if KINDS[name] == "squashing":
        flat = f"saturated units (|f'| &lt; {SATURATION_THRESHOLD:g}·max |f'|) = {100 * s['saturated']:.1f}%"
    else:
        flat = (f"units off (flat side z ≤ {flat_tails(name)[0]:.2f}; not saturation) = "
                f"{100 * s['off']:.1f}%")
    summary = f"σ = {sigma:.2f}: mean f'(z) = {s['mean_grad']:.3f}, {flat}, std of f(z) = {s['out_std']:.3f}"
    return f'<img src="data:image/png;base64,{png}" alt="{name} and its derivative"/><p>{summary}</p>'


def activation_explorer(activation: str = "tanh", sigma: float = 1.0):
    """An activation-function explorer: a dropdown picks the function, a slider sets the spread ``sigma``
    of the pre-activations; the picture shows f, f' and where the inputs fall, with the share of
    saturated units (sigmoid, tanh) or of units switched off (ReLU, GELU). Returns an ``ipywidgets.VBox``:
    display it as the last expression of a cell.

    The returned box has attributes ``dropdown``, ``slider`` and ``html`` (the picture and summary);
    changing a control redraws ``html``. Its text form (``repr``) names the current setting only.
    """
    import ipywidgets as widgets

    if activation not in ACTIVATIONS:
        raise ConfigError(f"activation_explorer: unknown activation {activation!r}; "
                          f"choose one of {sorted(ACTIVATIONS)}")
    if not 0.1 <= sigma <= 10:
        raise ConfigError(f"activation_explorer: sigma must be in [0.1, 10], got {sigma}")

    class ActivationExplorer(widgets.VBox):
        """A VBox (rendered as one by the front end) with a short, stable text form."""

        def __repr__(self) -> str:
            return f"ActivationExplorer(activation={self.dropdown.value!r}, sigma={self.slider.value:.2f})"

    dropdown = widgets.Dropdown(options=list(ACTIVATIONS), value=activation, description="activation")
    slider = widgets.FloatLogSlider(
        value=sigma, base=10, min=-1, max=1, step=0.05, description="σ of z", readout_format=".2f",
        continuous_update=False,
    )
    html = widgets.HTML(value=_figure_html(activation, sigma))

    def redraw(_change=None) -> None:
        html.value = _figure_html(dropdown.value, slider.value)

    dropdown.observe(redraw, names="value")
    slider.observe(redraw, names="value")
    box = ActivationExplorer([widgets.HBox([dropdown, slider]), html])
    box.dropdown, box.slider, box.html = dropdown, slider, html
    return box


def _table(scored: list[tuple[str, float]]) -> str:
    """(word, cosine) pairs as an HTML table."""
    rows = "".join(f"<tr><td>{html.escape(w)}</td><td>{s:.3f}</td></tr>" for w, s in scored)
    return f"<table>{rows}</table>"


def _neighbours_html(kv, word: str, k: int) -> str:
    word = word.strip().lower()
    if word not in kv.key_to_index:
        return f"<p><b>{html.escape(word) or '(empty)'}</b> is not in the vocabulary ({len(kv)} words).</p>"
    return f"<p>Nearest neighbours of <b>{html.escape(word)}</b> (cosine):</p>{_table(kv.most_similar(word, topn=k))}"


def _analogy_html(kv, a: str, b: str, c: str, k: int) -> str:
    a, b, c = (w.strip().lower() for w in (a, b, c))
    unknown = [w for w in (a, b, c) if w not in kv.key_to_index]
    if unknown:
        return f"<p>Not in the vocabulary: {', '.join('<b>' + html.escape(w) + '</b>' for w in unknown)}.</p>"
    # 3CosAdd with gensim: the words closest to b - a + c, the three query words excluded
    best = kv.most_similar(positive=[b, c], negative=[a], topn=k)
    return (f"<p><b>{html.escape(a)}</b> is to <b>{html.escape(b)}</b> as <b>{html.escape(c)}</b> is to "
            f"<b>{html.escape(best[0][0])}</b></p>{_table(best)}")


def embedding_explorer(vectors, word: str = "king", analogy: tuple[str, str, str] = ("man", "woman", "king"),
                       k: int = 8):
    """Explore word vectors (a :class:`nlpcourse.vectors.WordVectors`): type a word to list its nearest
    neighbours, or three words a, b, c to solve "a is to b as c is to ?" (3CosAdd, by gensim). Returns
    an ``ipywidgets.VBox`` with attributes ``word``, ``a``, ``b``, ``c`` (text boxes), ``neighbours`` and
    ``answer`` (HTML); editing a box redraws its result."""
    import ipywidgets as widgets

    if len(analogy) != 3:
        raise ConfigError(f"embedding_explorer: analogy must be three words (a, b, c), got {analogy!r}")
    kv = vectors.to_gensim()

    class EmbeddingExplorer(widgets.VBox):
        """A VBox with a short, stable text form."""

        def __repr__(self) -> str:
            return (f"EmbeddingExplorer(word={self.word.value!r}, analogy=({self.a.value!r}, {self.b.value!r}, "
                    f"{self.c.value!r}), vocabulary={len(kv)})")

    style = {"description_width": "initial"}
    word_box = widgets.Text(value=word, description="neighbours of", continuous_update=False, style=style)
    boxes = [widgets.Text(value=w, description=d, continuous_update=False, style=style,
                          layout=widgets.Layout(width="160px"))
             for w, d in zip(analogy, ("a", "is to b", "as c"))]
    neighbours = widgets.HTML(value=_neighbours_html(kv, word, k))
    answer = widgets.HTML(value=_analogy_html(kv, *analogy, k))

    def redraw_neighbours(_change=None) -> None:
        neighbours.value = _neighbours_html(kv, word_box.value, k)

    def redraw_answer(_change=None) -> None:
        answer.value = _analogy_html(kv, *(b.value for b in boxes), k)

    word_box.observe(redraw_neighbours, names="value")
    for b in boxes:
        b.observe(redraw_answer, names="value")
    box = EmbeddingExplorer([
        widgets.HBox([widgets.VBox([word_box, neighbours]),
                      widgets.VBox([widgets.HBox(boxes), answer])]),
    ])
    box.word, (box.a, box.b, box.c), box.neighbours, box.answer = word_box, boxes, neighbours, answer
    return box


def _sentence_html(model, vocab, tokenize: Callable[[str], list[str]], text: str, labels: tuple[str, ...],
                   k: int) -> str:
    """The model's prediction for ``text`` and the n-grams that decided it, as HTML."""
    from .models.cnn import decisive_ngrams

    words = tokenize(text)
    if not words:
        return "<p>Type a sentence.</p>"
    ids = vocab.encode(words)
    with torch.no_grad():
        probs = model.predict_proba(torch.tensor([ids]))[0]  # (K,)
    c = int(probs.argmax())
    unknown = [w for w, i in zip(words, ids) if i == vocab.unk_id]
    K = len(probs)

    def push(e) -> float:  # what the feature adds to logit c minus the mean of what it adds to the others
        return float(e.contribution[c] - (e.contribution.sum() - e.contribution[c]) / (K - 1))

    rows = "".join(
        f"<tr><td>{html.escape(' '.join(words[e.start:e.stop]))}</td><td>{e.width}</td>"
        f"<td>{e.filter}</td><td>{push(e):+.2f}</td></tr>" for e in decisive_ngrams(model, ids, k))
    note = f"<p>Not in the vocabulary (read as &lt;unk&gt;): {html.escape(', '.join(unknown))}</p>" if unknown else ""
    return (f"<p><b>{html.escape(labels[c])}</b> (p = {float(probs[c]):.3f})</p>{note}"
            f"<table><tr><th>n-gram</th><th>width</th><th>filter</th><th>push to {html.escape(labels[c])}</th></tr>"
            f"{rows}</table>")


def sentence_explorer(model, vocab, tokenize: Callable[[str], list[str]], sentence: str,
                      labels: tuple[str, ...] = ("rotten", "fresh"), k: int = 5):
    """Classify a sentence with a trained :class:`nlpcourse.models.cnn.KimCNN` (and its ``vocab``) and list
    the ``k`` n-grams that pushed it most towards its predicted class (one per pooled feature: the window
    that won the filter's max). Returns an ``ipywidgets.VBox`` with attributes ``text`` (the text box)
    and ``result`` (HTML); editing the box redraws the result."""
    import ipywidgets as widgets

    if len(labels) != model.config.n_classes:
        raise ConfigError(f"sentence_explorer: {len(labels)} labels for a model of {model.config.n_classes} classes")
    model.eval()

    class SentenceExplorer(widgets.VBox):
        """A VBox with a short, stable text form."""

        def __repr__(self) -> str:
            return f"SentenceExplorer(sentence={self.text.value!r}, vocabulary={len(vocab)})"

    text = widgets.Text(value=sentence, description="sentence", continuous_update=False,
                        layout=widgets.Layout(width="95%"))
    result = widgets.HTML(value=_sentence_html(model, vocab, tokenize, sentence, labels, k))

    def redraw(_change=None) -> None:
        result.value = _sentence_html(model, vocab, tokenize, text.value, labels, k)

    text.observe(redraw, names="value")
    box = SentenceExplorer([text, result])
    box.text, box.result = text, result
    return box


def _next_token_probs(logits: torch.Tensor, temperature: float, top_k: int | None) -> torch.Tensor:
    """(V,) the distribution the next token is drawn from: softmax(logits / temperature) over the
    ``top_k`` largest logits (all of them with ``None``), 0 elsewhere."""
    scores = logits.double() / temperature  # (V,)
    if top_k is not None and top_k < len(scores):
        kth = torch.topk(scores, top_k).values[-1]
        scores = scores.masked_fill(scores < kth, -math.inf)
    return torch.softmax(scores, -1)


def _next_token_html(model, itos: list[str], level: str, prompt: str, temperature: float,
                     top_k: int | None, k: int) -> str:
    """The next-token distribution after ``prompt`` as an HTML ``<img>`` (bars, PNG) and a summary."""
    from matplotlib.figure import Figure

    from .data.lm_corpus import lm_tokens

    stoi = {t: i for i, t in enumerate(itos)}
    tokens = lm_tokens(prompt, level)
    if not tokens:
        return "<p>Type a prompt.</p>"
    ids = torch.tensor([[stoi.get(t, 0) for t in tokens]])  # (1,P), <unk> = 0
    model.eval()
    with torch.no_grad():
        logits, _ = model(ids)  # (1,P,V)
    plain = torch.softmax(logits[0, -1].double(), -1)  # (V,) at temperature 1
    probs = _next_token_probs(logits[0, -1], temperature, top_k)  # (V,)
    top = probs.topk(min(k, len(probs)))
    names = [repr(itos[i]) if level == "char" else itos[i] for i in top.indices.tolist()]
    fig = Figure(figsize=(6.4, 3.6), dpi=80)
    ax = fig.add_subplot()
    y = list(range(len(names)))[::-1]
    ax.barh(y, top.values.numpy(), color="tab:blue", label=f"τ = {temperature:.2g}"
            + (f", top-{top_k}" if top_k else ""))
    ax.scatter(plain[top.indices].numpy(), y, color="black", s=12, zorder=3, label="τ = 1, no top-k")
    ax.set_yticks(y, names, fontsize=9)
    ax.set_xlim(0, max(0.05, 1.1 * max(top.values.max().item(), plain[top.indices].max().item())))
    ax.set_xlabel("probability of the next token")
    ax.legend(loc="lower right", fontsize=8)
    shown = " ".join(tokens[-12:]) if level == "word" else "".join(tokens[-40:])
    ax.set_title(f"after '…{shown}'" if len(tokens) > (12 if level == "word" else 40) else f"after '{shown}'",
                 fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    png = base64.b64encode(buf.getvalue()).decode("ascii")
    nonzero = int((probs > 0).sum())
    entropy = -(probs[probs > 0] * probs[probs > 0].log()).sum().item()
    unknown = sorted({t for t in tokens if t not in stoi})
    note = (f"<p>Not in the vocabulary (read as &lt;unk&gt;): {html.escape(', '.join(unknown))}</p>"
            if unknown else "")
    summary = (f"{nonzero:,} of {len(probs):,} tokens can be drawn; the {len(names)} shown hold "
               f"{top.values.sum().item():.1%} of the probability; entropy {entropy:.2f} nats "
               f"(as uncertain as a uniform choice among {math.exp(entropy):,.1f} tokens)")
    return f'<img src="data:image/png;base64,{png}" alt="next-token distribution"/>{note}<p>{summary}</p>'


def next_token_explorer(model, itos: list[str], prompt: str, level: str = "word", temperature: float = 1.0,
                        top_k: int | None = None, k: int = 12):
    """The next-token distribution of a language model (an :class:`nlpcourse.models.rnnlm.RNNLM` and its
    vocabulary ``itos``, id 0 ``<unk>``) after a prompt: type the prompt, move the temperature and
    top-k sliders (top-k 0: no cut), and the bars show the ``k`` most likely next tokens under that
    setting, with their probability at temperature 1 as dots. ``level`` is ``"word"`` or ``"char"``, how
    the prompt is cut into tokens (``nlpcourse.data.lm_corpus.lm_tokens``). Returns an ``ipywidgets.VBox``
    with attributes ``text``, ``temperature``, ``top_k`` (the controls) and ``result`` (HTML)."""
    import ipywidgets as widgets

    if level not in ("word", "char"):
        raise ConfigError(f"next_token_explorer: level must be 'word' or 'char', got {level!r}")
    if not 0.1 <= temperature <= 10:
        raise ConfigError(f"next_token_explorer: temperature must be in [0.1, 10], got {temperature}")
    if top_k is not None and not 1 <= top_k <= len(itos):
        raise ConfigError(f"next_token_explorer: top_k must be in [1, {len(itos)}] or None, got {top_k}")
    if len(itos) != model.config.vocab_size:
        raise ConfigError(f"next_token_explorer: {len(itos)} tokens in itos for a model of "
                          f"{model.config.vocab_size}")

    class NextTokenExplorer(widgets.VBox):
        """A VBox with a short, stable text form."""

        def __repr__(self) -> str:
            return (f"NextTokenExplorer(prompt={self.text.value!r}, temperature={self.temperature.value:.2f}, "
                    f"top_k={self.top_k.value or None})")

    text = widgets.Text(value=prompt, description="prompt", continuous_update=False,
                        layout=widgets.Layout(width="95%"))
    temp = widgets.FloatLogSlider(value=temperature, base=10, min=-1, max=1, step=0.05,
                                  description="temperature", readout_format=".2f", continuous_update=False,
                                  style={"description_width": "initial"})
    cut = widgets.IntSlider(value=top_k or 0, min=0, max=min(100, len(itos)), description="top-k (0: all)",
                            continuous_update=False, style={"description_width": "initial"})
    result = widgets.HTML(value=_next_token_html(model, itos, level, prompt, temperature, top_k, k))

    def redraw(_change=None) -> None:
        result.value = _next_token_html(model, itos, level, text.value, temp.value, cut.value or None, k)

    for control in (text, temp, cut):
        control.observe(redraw, names="value")
    box = NextTokenExplorer([text, widgets.HBox([temp, cut]), result])
    box.text, box.temperature, box.top_k, box.result = text, temp, cut, result
    return box


def _attention_html(model, split, sentence: str, beam: int, alpha: float) -> str:
    """The translation of ``sentence`` and its attention weights as a heatmap (HTML: a PNG and a line)."""
    from matplotlib.figure import Figure

    from .data.translation import tokens
    from .models.seq2seq import beam_decode, greedy_decode

    words = tokens(sentence)
    if not words:
        return "<p>Type an English sentence to translate.</p>"
    src = torch.tensor([split.src_vocab.encode(words, add_eos=True)])  # (1,S)
    max_len = 2 * len(words) + 5
    out = greedy_decode(model, src, max_len) if beam == 1 else beam_decode(model, src, max_len, beam, alpha)
    ids, weights = out.ids[0], out.attention[0]  # (T,S)
    shown = split.tgt_vocab.decode(ids)
    unknown = [w not in split.src_vocab for w in words]
    fig = Figure(figsize=(0.42 * len(words) + 2.4, 0.3 * len(shown) + 1.6), dpi=80)
    ax = fig.add_subplot()
    ax.imshow(weights.numpy(), cmap="Greys", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(words) + 1), [*words, "<eos>"], rotation=60, ha="right", rotation_mode="anchor",
                  fontsize=9)
    for label, unk in zip(ax.get_xticklabels(), unknown):
        if unk:
            label.set_color("tab:red")  # read as <unk>
    ax.set_yticks(range(len(shown)), shown, fontsize=9)
    ax.set_xlabel("source (red: unknown, read as <unk>)")
    ax.set_title("attention weights: one row per output token", fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    png = base64.b64encode(buf.getvalue()).decode("ascii")
    how = "greedy; log P" if beam == 1 else f"beam {beam}, alpha {alpha:g}; log P / length^alpha"
    return (f'<img src="data:image/png;base64,{png}" alt="attention weights"/>'
            f"<p>{html.escape(split.decode(ids))} <small>({how} = {out.scores[0]:.2f})</small></p>")


def attention_explorer(model, split, sentence: str, beam: int = 1, alpha: float = 1.0):
    """Translate an English sentence with an attention model (:class:`nlpcourse.models.seq2seq.Seq2Seq`
    and the :class:`nlpcourse.data.translation.TranslationSplit` whose vocabularies it was trained with)
    and draw where each output token looked. Type a sentence, pick greedy or beam search; the heatmap has
    one row per output token and one column per source token. Returns an ``ipywidgets.VBox`` with
    attributes ``text``, ``decoding`` (the controls) and ``result`` (HTML)."""
    import ipywidgets as widgets

    if getattr(model, "attn", None) is None:
        raise ConfigError("attention_explorer: this model has no attention to show (attention='none')")
    if (model.config.src_vocab, model.config.tgt_vocab) != (len(split.src_vocab), len(split.tgt_vocab)):
        raise ConfigError(f"attention_explorer: the model's vocabularies ({model.config.src_vocab}, "
                          f"{model.config.tgt_vocab}) are not the split's ({len(split.src_vocab)}, "
                          f"{len(split.tgt_vocab)})")
    if beam < 1:
        raise ConfigError(f"attention_explorer: beam must be >= 1, got {beam}")

    class AttentionExplorer(widgets.VBox):
        """A VBox with a short, stable text form."""

        def __repr__(self) -> str:
            return f"AttentionExplorer(sentence={self.text.value!r}, decoding={self.decoding.value!r})"

    text = widgets.Text(value=sentence, description="English", continuous_update=False,
                        layout=widgets.Layout(width="95%"))
    choices = [("greedy", 1)] + ([(f"beam {beam}", beam)] if beam > 1 else [("beam 5", 5)])
    decoding = widgets.ToggleButtons(options=choices, value=beam, description="decoding")
    result = widgets.HTML(value=_attention_html(model, split, sentence, beam, alpha))

    def redraw(_change=None) -> None:
        result.value = _attention_html(model, split, text.value, decoding.value, alpha)

    for control in (text, decoding):
        control.observe(redraw, names="value")
    box = AttentionExplorer([text, decoding, result])
    box.text, box.decoding, box.result = text, decoding, result
    return box


#: The Transformer's attentions, as the head explorer names them: (label, key of ``attention_maps``).
ATTENTION_KINDS = (("cross-attention (decoder over source)", "cross"), ("encoder self-attention", "encoder"),
                   ("decoder self-attention (causal)", "decoder"))


def _heads_img(w: torch.Tensor, rows: list[str], cols: list[str], title: str) -> str:
    """An <img> of every head's weights ``w`` (H,rows,cols) side by side; ``title`` formats the head number."""
    from matplotlib.figure import Figure

    H = w.shape[0]
    fig = Figure(figsize=(min(3.2 * H, 14), 0.22 * len(rows) + 1.8), dpi=80)
    for h, ax in enumerate(fig.subplots(1, H, squeeze=False)[0]):
        ax.imshow(w[h].numpy(), cmap="Greys", vmin=0, vmax=1, aspect="auto")
        ax.set_title(title.format(h + 1), fontsize=9)
        ax.set_xticks(range(len(cols)), cols, rotation=70, ha="right", rotation_mode="anchor", fontsize=7)
        ax.set_yticks(range(len(rows)), rows if h == 0 else [], fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    png = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img src="data:image/png;base64,{png}" alt="attention weights of every head"/>'


def _heads_html(model, sub, sentence: str, kind: str, layer: int) -> str:
    """The greedy translation of ``sentence`` and every head's weights in one layer (HTML: a PNG, a line)."""

    from .models.transformer import attention_maps, greedy_decode

    if not sentence.strip():
        return "<p>Type an English sentence to translate.</p>"
    src = torch.tensor([sub.encode(sentence)])  # (1,S)
    out = greedy_decode(model, src, 2 * src.shape[1] + 10).ids[0]
    y_in = torch.tensor([[model.config.bos_id, *out[:-1]]])  # (1,T): what the decoder read
    w = attention_maps(model, src, y_in)[kind][layer][0]  # (H,rows,cols)
    src_labels = [*sub.pieces(sentence), "<eos>"]
    read = ["<bos>", *(sub.tokenizer.id_to_token(i) for i in out[:-1])]  # the decoder's input at each step
    wrote = [sub.tokenizer.id_to_token(i) for i in out]  # what each step wrote: a row is labelled by it
    rows, cols = {"cross": (wrote, src_labels), "encoder": (src_labels, src_labels),
                  "decoder": (wrote, read)}[kind]
    note = "each row: the step that wrote that piece, and where it looked"
    return (_heads_img(w, rows, cols, "head {}")
            + f"<p>{html.escape(sub.decode(out))} <small>(greedy; {note})</small></p>")


def head_explorer(model, sub, sentence: str, kind: str = "cross", layer: int | None = None):
    """Translate an English sentence with a :class:`nlpcourse.models.transformer.Transformer` (and the
    :class:`nlpcourse.data.subword.SubwordSplit` it was trained with) and draw the weights of every head
    of one attention layer: the decoder's attention over the source, the encoder's self-attention or the
    decoder's causal self-attention. Returns an ``ipywidgets.VBox`` with attributes ``text``, ``kind``,
    ``layer`` (the controls) and ``result`` (HTML)."""
    import ipywidgets as widgets

    if model.config.vocab != sub.vocab_size:
        raise ConfigError(f"head_explorer: the model has {model.config.vocab} pieces, the tokenizer "
                          f"{sub.vocab_size}")
    kinds = dict((k, label) for label, k in ATTENTION_KINDS)
    if kind not in kinds:
        raise ConfigError(f"head_explorer: kind must be one of {sorted(kinds)}, got {kind!r}")
    n_layers = {"encoder": model.config.enc_layers}.get(kind, model.config.dec_layers)
    layer = n_layers - 1 if layer is None else layer
    if not 0 <= layer < n_layers:
        raise ConfigError(f"head_explorer: layer must be in 0..{n_layers - 1}, got {layer}")

    class HeadExplorer(widgets.VBox):
        """A VBox with a short, stable text form."""

        def __repr__(self) -> str:
            return (f"HeadExplorer(sentence={self.text.value!r}, kind={self.kind.value!r}, "
                    f"layer={self.layer.value})")

    text = widgets.Text(value=sentence, description="English", continuous_update=False,
                        layout=widgets.Layout(width="95%"))
    kind_box = widgets.Dropdown(options=list(ATTENTION_KINDS), value=kind, description="attention",
                                layout=widgets.Layout(width="60%"))
    layer_box = widgets.IntSlider(value=layer, min=0, max=n_layers - 1, description="layer")
    result = widgets.HTML(value=_heads_html(model, sub, sentence, kind, layer))

    def redraw(_change=None) -> None:
        top = model.config.enc_layers if kind_box.value == "encoder" else model.config.dec_layers
        layer_box.max = top - 1
        result.value = _heads_html(model, sub, text.value, kind_box.value, min(layer_box.value, top - 1))

    for control in (text, kind_box, layer_box):
        control.observe(redraw, names="value")
    box = HeadExplorer([text, widgets.HBox([kind_box, layer_box]), result])
    box.text, box.kind, box.layer, box.result = text, kind_box, layer_box, result
    return box


def _bert_html(model, wp, sentence: str, layer: int) -> str:
    """Every head's weights in one layer of a BERT over ``sentence``, and its guesses at each [MASK]."""

    from .models.bert import attention_maps, fill_masks

    if not sentence.strip():
        return "<p>Type a sentence; write [MASK] where BERT should guess a piece.</p>"
    ids = torch.tensor(wp.pair(sentence, max_len=model.config.max_len).ids)  # (T,)
    w = attention_maps(model, ids[None])[layer][0]  # (H,T,T)
    labels = ["[CLS]", *wp.pieces(sentence)][:len(ids) - 1] + ["[SEP]"]
    guesses = "".join(
        f"<li>position {t}: " + ", ".join(f"{html.escape(wp.tokenizer.id_to_token(i))} {p:.2f}"
                                          for i, p in zip(top, probs)) + "</li>"
        for t, top, probs in fill_masks(model, ids))
    return (_heads_img(w, labels, labels, f"layer {layer + 1}, head {{}}")
            + (f"<p>Guesses at each [MASK]:</p><ul>{guesses}</ul>" if guesses else
               "<p><small>(no [MASK] in the sentence: write one to see BERT's guesses)</small></p>"))


def bert_explorer(model, wp, sentence: str, layer: int | None = None):
    """Draw every head of one layer of a :class:`nlpcourse.models.bert.Bert` over ``sentence`` (in the
    :class:`nlpcourse.data.wordpiece.WordPieces` it was trained with), and its likeliest pieces at each
    [MASK]. Returns an ``ipywidgets.VBox`` with attributes ``text``, ``layer`` (the controls) and
    ``result`` (HTML)."""
    import ipywidgets as widgets

    if model.config.vocab != wp.vocab_size:
        raise ConfigError(f"bert_explorer: the model has {model.config.vocab} pieces, the tokenizer "
                          f"{wp.vocab_size}")
    layer = model.config.layers - 1 if layer is None else layer
    if not 0 <= layer < model.config.layers:
        raise ConfigError(f"bert_explorer: layer must be in 0..{model.config.layers - 1}, got {layer}")

    class BertExplorer(widgets.VBox):
        """A VBox with a short, stable text form."""

        def __repr__(self) -> str:
            return f"BertExplorer(sentence={self.text.value!r}, layer={self.layer.value})"

    text = widgets.Text(value=sentence, description="sentence", continuous_update=False,
                        layout=widgets.Layout(width="95%"))
    layer_box = widgets.IntSlider(value=layer, min=0, max=model.config.layers - 1, description="layer")
    result = widgets.HTML(value=_bert_html(model, wp, sentence, layer))

    def redraw(_change=None) -> None:
        result.value = _bert_html(model, wp, text.value, layer_box.value)

    for control in (text, layer_box):
        control.observe(redraw, names="value")
    box = BertExplorer([text, layer_box, result])
    box.text, box.layer, box.result = text, layer_box, result
    return box

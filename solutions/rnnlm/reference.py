"""Reference for the assignment "RNN language models and backpropagation through time" (``rnnlm.ipynb``).
Instructor side: never shipped.

Students write a recurrent language model one piece at a time: the Elman network's forward pass over a
sequence, its backward pass through time derived by hand, a gradient check (central differences and a
relative error), an LSTM over a sequence in PyTorch's layout, stream batching and the windows of truncated
BPTT, the window loop that carries the state and cuts the graph, global-norm clipping, perplexity from summed
log-probabilities with padding masked, temperature / top-k sampling, and finally a character-level LSTM
language model trained on a prefix of Shakespeare with their own pieces. Every reference below is PyTorch's own
kernel where there is one: ``torch._VF.rnn_tanh`` (what ``nn.RNN(nonlinearity="tanh")`` runs: cuDNN on CUDA),
autograd through it for BPTT, ``torch._VF.lstm`` (``nn.LSTM``'s kernel, gate order i, f, g, o), PyTorch's own
Elman cell ``torch.rnn_tanh_cell`` inside the student's window loop, ``torch.nn.utils.clip_grad_norm_``,
``F.cross_entropy(..., ignore_index=-100)`` and the probabilities ``torch.multinomial`` draws from.

``train_char_lm`` is judged by its outcome, never by a number the kernel reports: the student's trainer returns
its parameters for a seed the case names, and :func:`_check_training` loads them into PyTorch's ``nn.LSTM`` here
and measures the perplexity of the TEST part of the corpus (each character predicted with the full context
before it), which must be at most ``MAX_TEST_PERPLEXITY``.

Cases: ``cases(generator, device)`` draws every random input from ``generator`` on the CPU and moves it to
``device``, so the same seed gives the same inputs on every device. The REAL inputs are text of the bundled
corpora under the LM protocol (``nlpcourse.data.lm_corpus``): characters of the first 300,000 characters of
Shakespeare (one-hot, 75 symbols) and words of Jane Austen's novels (ids, embedded with a random table where a
part needs vectors), with distributions estimated from their training parts for perplexity and sampling.

Forbidden names follow ``solutions/word2vec/reference.py``'s rules: an entry beginning with a dot matches an
attribute on any object (``.lstm`` forbids ``torch.lstm`` and ``torch._VF.lstm``), any other entry a run of
whole components of a dotted name or import.
"""
from __future__ import annotations

import math
from functools import lru_cache

import torch
import torch.nn.functional as F
from torch import _VF

from grader.gradcheck import COMMON_FUNCTIONS, gradcheck_parts
from grader.spec import Part, make_case, recipe_check, tensor_problem, tuple_check
from nlpcourse.checking import Case, Verdict, compare, compare_samples, value_and_grads
from nlpcourse.data.lm_corpus import lm_corpus

NOTEBOOK = "rnnlm.ipynb"

# ------------------------------------------------------------------ forbidden names

#: The course's models and PyTorch's recurrent layers, kernels, losses, clipping and LM batching.
NO_LIBRARY = ("nlpcourse.models", "nlpcourse.data", "torch.nn", "torch._VF", "torch._C", "torch.ops", "RNN",
              "LSTM", "RNNCell", "LSTMCell", "GRU", ".rnn_tanh", ".rnn_tanh_cell", ".rnn_relu", ".lstm",
              ".lstm_cell", ".clip_grad_norm_", ".clip_grad_norm", ".cross_entropy", ".nll_loss", "lm_stream",
              "lm_batches")
#: Autograd in any form: the backward pass and the gradient check are derived, not differentiated.
NO_AUTOGRAD = ("torch.autograd", "torch.func", "functorch", ".backward", "torch.enable_grad", "value_and_grads",
               "torch.testing", "gradcheck")
BACKWARD_FORBIDDEN = NO_LIBRARY + NO_AUTOGRAD
#: The trainer may use autograd, ``torch.optim`` and ``F.cross_entropy``, but not PyTorch's layers nor clipping.
TRAIN_FORBIDDEN = tuple(n for n in NO_LIBRARY if n not in ("torch.nn", ".cross_entropy")) + (
    "torch.nn.Module", "torch.nn.Linear", "torch.nn.Embedding", "torch.nn.utils")

# ------------------------------------------------------------------ reference implementations


def elman_forward(X, h0, W_xh, W_hh, b_h):
    """(B, T, D) -> (B, T, Hd): every hidden state of nn.RNN(nonlinearity="tanh") with these weights."""
    params = [W_xh, W_hh, b_h, torch.zeros_like(b_h)]
    out, _ = _VF.rnn_tanh(X, h0.unsqueeze(0).contiguous(), params, True, 1, 0.0, False, False, True)
    return out


def _elman_probe(X, h0, W_xh, W_hh, b_h, dH):
    return (elman_forward(X, h0, W_xh, W_hh, b_h) * dH).sum()


def elman_bptt(X, h0, W_xh, W_hh, b_h, H, dH):
    """(dX, dh0, dW_xh, dW_hh, db_h) of sum(H * dH), by autograd through PyTorch's RNN kernel."""
    _, grads = value_and_grads(_elman_probe)(X, h0, W_xh, W_hh, b_h, dH)
    return tuple(grads[:5])


def lstm_forward(X, h0, c0, W_ih, W_hh, b_ih, b_hh):
    """(H (B, T, Hd), (h_T, c_T)) of nn.LSTM with these weights (gate order i, f, g, o)."""
    out, h, c = _VF.lstm(X, (h0.unsqueeze(0).contiguous(), c0.unsqueeze(0).contiguous()),
                         [W_ih, W_hh, b_ih, b_hh], True, 1, 0.0, False, False, True)
    return out, (h[0], c[0])


# The functions whose numerical gradients the hidden tests ask for. The notebook's locked cell
# "gradcheck-functions" defines the same ones under the same names (test_rnnlm_reference.py checks it).
def _tanh_recurrence(x, W, G):
    h = torch.zeros(x.shape[1], dtype=x.dtype, device=x.device)
    total = torch.zeros((), dtype=x.dtype, device=x.device)
    for t in range(x.shape[0]):
        h = torch.tanh(W @ h + x[t])
        total = total + (G[t] * h).sum()
    return total


def _cross_entropy_sum(x, y):
    return -torch.log_softmax(x, dim=-1).gather(-1, y.unsqueeze(-1)).sum()


GRADCHECK_FUNCTIONS = {**COMMON_FUNCTIONS, "tanh_recurrence": _tanh_recurrence,
                       "cross_entropy": _cross_entropy_sum}


def stream_batches(ids, B):
    """(N_total,) -> (B, N): B contiguous slices of the stream, the tail that fills no row dropped."""
    N = ids.numel() // B
    return ids[:N * B].view(B, N).clone()


def lm_windows(stream, bptt):
    """The windows of truncated BPTT over (B, N) streams: [(x, y)], each (B, T <= bptt), y = x shifted by one."""
    N = stream.shape[1]
    return [(stream[:, i:i + min(bptt, N - 1 - i)], stream[:, i + 1:i + 1 + min(bptt, N - 1 - i)])
            for i in range(0, N - 1, bptt)]


def _tbptt_reference(step, X, h0, bptt):
    h, outputs = h0, []
    for start in range(0, X.shape[1], bptt):
        for t in range(start, min(start + bptt, X.shape[1])):
            h = step(X[:, t], h)
            outputs.append(h)
        h = h.detach()
    return torch.stack(outputs, dim=1), h


def tbptt_probe(X, h0, W_ih, W_hh, b_ih, b_hh, bptt, G, tbptt=_tbptt_reference):
    """(value, [dX, dh0, dW_ih, dW_hh, db_ih, db_hh]) of sum(outputs * G) over windows of ``bptt`` steps of
    PyTorch's Elman cell. The notebook's locked cell of the same name runs the student's tbptt_forward."""
    def loss(X, h0, W_ih, W_hh, b_ih, b_hh):
        outputs, _ = tbptt(lambda x, h: torch.rnn_tanh_cell(x, h, W_ih, W_hh, b_ih, b_hh), X, h0, bptt)
        return (outputs * G).sum()
    return value_and_grads(loss)(X, h0, W_ih, W_hh, b_ih, b_hh)


def clip_global_norm(grads, max_norm):
    """([g clipped], total norm before clipping) by torch.nn.utils.clip_grad_norm_."""
    params = []
    for g in grads:
        p = torch.zeros_like(g, requires_grad=True)
        p.grad = g.clone()
        params.append(p)
    total = torch.nn.utils.clip_grad_norm_(params, max_norm)
    return [p.grad for p in params], float(total)


def masked_perplexity(logits, targets, mask):
    """exp(mean negative log-probability over the real tokens), by F.cross_entropy with padding ignored."""
    ignored = targets.masked_fill(~mask.bool(), -100)
    total = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).double(), ignored.reshape(-1), reduction="sum",
                            ignore_index=-100)
    return float(torch.exp(total / mask.sum()))


def sampling_probabilities(logits, temperature, top_k):
    """(V,) the distribution sample_next must draw from: softmax(logits / temperature) on the top k only, and on
    every token that ties with the k-th highest logit."""
    z = logits.double() / temperature
    keep = z >= torch.topk(z, top_k).values[-1]
    return torch.softmax(z.masked_fill(~keep, float("-inf")), dim=-1)


def draw_many(logits, temperature, top_k, n, seed):
    """The grader does not draw: the probabilities the n draws must follow (see _check_draws)."""
    return sampling_probabilities(logits, temperature, top_k)


# ------------------------------------------------------------------ the corpus of the trainer

CHARS = 300_000  # the trainer's corpus: the first 300,000 characters of Shakespeare, split 80/10/10
#: The hyperparameters of the hidden cases (the notebook's defaults, passed explicitly):
#: dim, hidden, batch, bptt, lr, steps, clip.
TRAIN_SETTINGS = (32, 192, 16, 32, 0.01, 450, 1.0)
#: The trained part's outcome (grader.spec.OUTCOME_FIELDS), measured with
#: ``python scripts/trained_part_seeds.py rnnlm --seeds 20 --jobs 2`` (and ``--baseline``): the solution's test
#: perplexity over student seeds 0-19 against the course's character Kneser-Ney trigram on the same split (the
#: 4-gram gets 5.67 and the 5-gram 5.11: a longer-trained LSTM's prize). The threshold is stated in the notebook.
OUTCOME = {"metric": "perplexity", "better": "lower", "bar": 7.4, "solution_worst": 7.0, "solution_worst_seed": 9,
           "solution_best": 6.56, "baseline": "character Kneser-Ney trigram (nlpcourse.ngram), the same split",
           "baseline_best": 7.73, "baseline_best_seed": None, "seeds": 20, "seconds": 8.5}
MAX_TEST_PERPLEXITY = OUTCOME["bar"]
UNIGRAM_PERPLEXITY = 26.4


@lru_cache(maxsize=1)
def _chars():
    return lm_corpus("shakespeare", "char", None, max_chars=CHARS)


@lru_cache(maxsize=1)
def _austen():
    return lm_corpus("austen")


#: The recipe case's settings (dim, hidden, batch, bptt, lr, steps, clip): a run of 3 windows, short enough to
#: repeat here. The recipe fixes every draw and every step, so a trainer that follows it returns the reference
#: recipe's weights up to rounding, whatever the seed; one that skips zero_grad or starts each window from a
#: zero state does not, even where its perplexity would clear the bar (measured in bugs.py).
RECIPE_SETTINGS = (8, 16, 4, 6, 0.01, 3, 1.0)
#: How far the recipe's weights may be from the reference's: ||got - expected|| / ||expected|| per tensor.
#: Rounding moves them by 1e-6 or so (the first Adam steps amplify a gradient's rounding near 0); a step
#: taken on other gradients moves them by a good part of the rate.
RECIPE_RTOL = 1e-3


def train_char_lm(seed, dim, hidden, batch, bptt, lr, steps, clip):
    """The full run: the grader does not train, what the parameters must reach (see _check_training); the
    recipe case (RECIPE_SETTINGS): the recipe's weights, by the reference pieces."""
    if (dim, hidden, batch, bptt, lr, steps, clip) == RECIPE_SETTINGS:
        return recipe_run(seed, *RECIPE_SETTINGS)
    return {"max_perplexity": MAX_TEST_PERPLEXITY}


def recipe_run(seed, dim, hidden, batch, bptt, lr, steps, clip) -> dict:
    """The notebook's recipe for train_char_lm, step by step, with the reference's pieces (nn.LSTM's kernel,
    clip_grad_norm_)."""
    data = _chars()
    V = data.vocab_size
    rng = torch.Generator().manual_seed(seed)
    E = torch.randn(V, dim, generator=rng) * 0.1
    W_ih = (torch.rand(4 * hidden, dim, generator=rng) * 2 - 1) / hidden ** 0.5
    W_hh = (torch.rand(4 * hidden, hidden, generator=rng) * 2 - 1) / hidden ** 0.5
    params = [E, W_ih, W_hh, torch.zeros(4 * hidden), torch.zeros(4 * hidden), torch.zeros(V, hidden),
              torch.zeros(V)]
    for p in params:
        p.requires_grad_(True)
    optimizer = torch.optim.Adam(params, lr=lr)
    h, c = torch.zeros(batch, hidden), torch.zeros(batch, hidden)
    with torch.enable_grad():
        for x, y in lm_windows(stream_batches(data.train, batch), bptt)[:steps]:
            H, (h, c) = lstm_forward(E[x], h, c, *params[1:5])  # (B,T,Hd)
            logits = H @ params[5].T + params[6]  # (B,T,Hd) x (Hd,V) -> (B,T,V)
            loss = F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, clip)
            optimizer.step()
            h, c = h.detach(), c.detach()
    return {name: p.detach() for name, p in zip(PARAM_NAMES, params)}


PARAM_NAMES = ("E", "W_ih", "W_hh", "b_ih", "b_hh", "W_out", "b_out")


@torch.no_grad()
def char_perplexity(params: dict, part: str = "test", context: int = 200) -> float:
    """Perplexity of trained parameters on a part of the trainer's corpus, by PyTorch's nn.LSTM: every
    character of the part predicted from the ``context`` characters before it and the part so far."""
    p = {k: params[k].detach().cpu().float() for k in PARAM_NAMES}
    corpus = _chars()
    ids = torch.cat([corpus.context_before(part, context), getattr(corpus, part)])
    lstm = torch.nn.LSTM(p["E"].shape[1], p["W_hh"].shape[1], batch_first=True)
    for name, key in (("weight_ih_l0", "W_ih"), ("weight_hh_l0", "W_hh"), ("bias_ih_l0", "b_ih"),
                      ("bias_hh_l0", "b_hh")):
        getattr(lstm, name).copy_(p[key])
    out, _ = lstm(p["E"][ids[:-1]].unsqueeze(0))  # (1, N - 1, Hd)
    logits = out[0] @ p["W_out"].T + p["b_out"]
    nll = F.cross_entropy(logits.double(), ids[1:], reduction="none")[context - 1:]  # the part's characters only
    return math.exp(float(nll.mean()))


def _shape_problem(params, V, dim, hidden) -> str:
    if not isinstance(params, dict) or not set(PARAM_NAMES) <= set(params):
        return f"expected a dict with the keys {', '.join(repr(k) for k in PARAM_NAMES)}"
    expected = {"E": (V, dim), "W_ih": (4 * hidden, dim), "W_hh": (4 * hidden, hidden), "b_ih": (4 * hidden,),
                "b_hh": (4 * hidden,), "W_out": (V, hidden), "b_out": (V,)}
    problems = (tensor_problem(key, params[key], shape, "training diverged: check the clipping and the rate")
                for key, shape in expected.items())
    return next((p for p in problems if p), "")


def baseline_outcome(case: Case, trainer) -> float | None:
    """The chapter's count-based baseline on the same split: the course's character Kneser-Ney trigram
    (``nlpcourse.ngram``, modified discounts) fitted on the training part, its test perplexity (each character
    predicted from the two before it, the context before the part included). It has no seed. None for the
    recipe case, which is judged on its weights, not an outcome."""
    if tuple(case.args[1:]) == RECIPE_SETTINGS:
        return None
    from nlpcourse.ngram import KneserNey

    corpus = _chars()
    model = KneserNey(3).fit(corpus.train, corpus.vocab_size)
    return model.perplexity(corpus.test, corpus.context_before("test", 2))


def _check_training(expected, got, case, device):
    """The trained parameters: the shapes of the case's settings, finite, and the test perplexity measured here;
    for the recipe case, the recipe's weights."""
    _, dim, hidden = case.args[:3]
    problem = _shape_problem(got, _chars().vocab_size, dim, hidden)
    if problem:
        return Verdict(False, problem)
    if "max_perplexity" not in expected:
        return _check_recipe(expected, got)
    ppl = char_perplexity(got, "test")
    ok = ppl <= expected["max_perplexity"]
    why = (f"test perplexity {ppl:.2f} (must be at most {expected['max_perplexity']}; a character Kneser-Ney "
           f"trigram gets {OUTCOME['baseline_best']})")
    return Verdict(ok, "" if ok else why, {"perplexity": ppl})


# ------------------------------------------------------------------ checks


def _check_recipe(expected: dict, got: dict) -> Verdict:
    return recipe_check(expected, got, RECIPE_RTOL, f"after {RECIPE_SETTINGS[5]} windows with settings "
                        f"{RECIPE_SETTINGS}", "follow steps 1-3 of the recipe exactly, window by window")


def _check_draws(expected, got, case, device):
    """Draws: n ids of dtype long, distributed as softmax(logits / temperature) on the top k (chi-square)."""
    n = case.args[3]
    if isinstance(got, torch.Tensor) and tuple(got.shape) == (n,) and got.dtype != torch.long:
        return Verdict(False, f"output: expected ids of dtype torch.long, got {got.dtype}")
    return compare_samples(expected, got, (n,), "draws", device=device)


def _check_clip(expected, got, case, device):
    if not (isinstance(got, (list, tuple)) and len(got) == 2):
        return Verdict(False, f"expected (clipped gradients, total norm), got {type(got).__name__}")
    verdict = compare(expected[1], got[1], "the total norm (before clipping)", case.rtol, case.atol, device)
    if not verdict.ok:
        return verdict
    return compare(expected[0], got[0], "the clipped gradients", case.rtol, case.atol, device)


def _check_tbptt(expected, got, case, device):
    """(value, grads): the outputs' weighted sum (is the state carried?), then how far back gradients reach."""
    names = ("dX, the gradient w.r.t. the inputs (does each window's gradient stop at the window's start?)",
             "dh0", "dW_ih", "dW_hh", "db_ih", "db_hh")
    if not (isinstance(got, (list, tuple)) and len(got) == 2 and isinstance(got[1], (list, tuple))
            and len(got[1]) == len(names)):
        return compare(expected, got, "output", case.rtol, case.atol, device)
    verdict = compare(expected[0], got[0], "sum(outputs * G), the outputs (is the state carried from window to "
                      "window, and reset nowhere?)", case.rtol, case.atol, device)
    if not verdict.ok:
        return verdict
    for name, e, g in zip(names, expected[1], got[1]):
        verdict = compare(e, g, name, case.rtol, case.atol, device)
        if not verdict.ok:
            return verdict
    return Verdict(True)


# ------------------------------------------------------------------ case helpers

f64, f32 = torch.float64, torch.float32


def _randn(g, *shape, dtype=f64, scale=1.0):
    return torch.randn(*shape, generator=g, dtype=dtype) * scale


def _randint(g, low, high):
    return int(torch.randint(low, high, (1,), generator=g))


def _real_chars(g, B, T, part="train"):
    """(B, T) ids of B random passages of T characters of a part of the trainer's corpus."""
    ids = getattr(_chars(), part)
    starts = torch.randint(0, len(ids) - T, (B,), generator=g)
    return torch.stack([ids[s:s + T] for s in starts.tolist()])


def _one_hot(ids, dtype):
    return F.one_hot(ids, _chars().vocab_size).to(dtype)


def _real_words(g, B, T):
    ids = _austen().train
    starts = torch.randint(0, len(ids) - T, (B,), generator=g)
    return torch.stack([ids[s:s + T] for s in starts.tolist()])


def _elman_weights(g, D, Hd, dtype=f64, scale=1.0):
    k = scale / math.sqrt(Hd)
    return _randn(g, Hd, D, dtype=dtype, scale=k), _randn(g, Hd, Hd, dtype=dtype, scale=k), \
        _randn(g, Hd, dtype=dtype, scale=k)


def _elman_inputs(g):
    """(name, X, h0, W_xh, W_hh, b_h, tolerances) for the Elman parts: random, edge and real."""
    rows = []
    for name, B, T, D, Hd, dt, h0_zero, scale in [
            ("random B=3 T=5 D=4 Hd=6, h0 non-zero, float64", 3, 5, 4, 6, f64, False, 1.0),
            ("random B=2 T=7 D=3 Hd=5, h0 zero, float64", 2, 7, 3, 5, f64, True, 1.0),
            ("one step (T=1), B=4 D=3 Hd=4, h0 non-zero, float64", 4, 1, 3, 4, f64, False, 1.0),
            ("one sequence (B=1) T=6 D=2 Hd=3, float64", 1, 6, 2, 3, f64, False, 1.0),
            ("large weights (saturated tanh) B=2 T=6 D=3 Hd=4, float64", 2, 6, 3, 4, f64, False, 4.0),
            ("random B=3 T=8 D=5 Hd=7, float32", 3, 8, 5, 7, f32, False, 1.0)]:
        X = _randn(g, B, T, D, dtype=dt)
        h0 = torch.zeros(B, Hd, dtype=dt) if h0_zero else _randn(g, B, Hd, dtype=dt, scale=0.5)
        rows.append((name, X, h0, *_elman_weights(g, D, Hd, dt, scale), None))
    ids = _real_chars(g, 4, 20)
    V = _chars().vocab_size
    rows.append(("real: 4 passages of 20 Shakespeare characters, one-hot (D=75), Hd=16, h0 zero, float32",
                 _one_hot(ids, f32), torch.zeros(4, 16, dtype=f32), *_elman_weights(g, V, 16, f32, 2.0),
                 (1e-4, 1e-4)))
    words = _real_words(g, 3, 12)
    E = _randn(g, _austen().vocab_size, 8, dtype=f64)
    rows.append(("real: 3 passages of 12 Austen words embedded with a random table (D=8), Hd=10, float64",
                 E[words], _randn(g, 3, 10, scale=0.5), *_elman_weights(g, 8, 10), None))
    return rows


# ------------------------------------------------------------------ 1. Elman forward


def forward_cases(g: torch.Generator, device: str) -> list[Case]:
    return [make_case(name, (X, h0, W_xh, W_hh, b_h), device, *(tol or (None, None)))
            for name, X, h0, W_xh, W_hh, b_h, tol in _elman_inputs(g)]


# ------------------------------------------------------------------ 2. BPTT by hand


def bptt_cases(g: torch.Generator, device: str) -> list[Case]:
    cases = []
    for name, X, h0, W_xh, W_hh, b_h, tol in _elman_inputs(g):
        H = elman_forward(X, h0, W_xh, W_hh, b_h)
        dH = _randn(g, *H.shape, dtype=X.dtype)
        if X.dtype == f32:  # float32 sums over T steps of saturated units: entries near 0 carry errors
            tol = (1e-4, 1e-3)  # of a few 1e-4 (one exceeded an atol of 1e-4 in a CI run); bugs miss by far more
        cases.append(make_case(name + ", random upstream gradients dH", (X, h0, W_xh, W_hh, b_h, H, dH), device,
                               *(tol or (None, None))))
    X, h0, (W_xh, W_hh, b_h) = _randn(g, 2, 9, 3), _randn(g, 2, 4), _elman_weights(g, 3, 4)
    H = elman_forward(X, h0, W_xh, W_hh, b_h)
    dH = torch.zeros_like(H)
    dH[:, -1] = _randn(g, 2, 4)
    cases.append(make_case("an upstream gradient on the last state only (it must flow back to every step), "
                           "B=2 T=9 D=3 Hd=4, float64", (X, h0, W_xh, W_hh, b_h, H, dH), device))
    return cases


# ------------------------------------------------------------------ 3. gradient check


def own_gradcheck_cases(g: torch.Generator, device: str) -> list[Case]:
    """The numerical-gradient cases on this notebook's own functions (grader.gradcheck adds the common ones)."""
    return [
        make_case("a tanh recurrence over 5 steps, x (5, 3) float64 (2-D), eps 1e-5",
                  ("tanh_recurrence", _randn(g, 5, 3), 1e-5, _randn(g, 3, 3, scale=0.7), _randn(g, 5, 3)), device),
        make_case("cross-entropy of 4 rows of 6 logits, x (4, 6) float64, eps 1e-5",
                  ("cross_entropy", _randn(g, 4, 6), 1e-5, torch.randint(0, 6, (4,), generator=g)), device),
    ]


# ------------------------------------------------------------------ 4. LSTM


def _lstm_weights(g, D, Hd, dtype=f64, scale=1.0):
    k = scale / math.sqrt(Hd)
    return (_randn(g, 4 * Hd, D, dtype=dtype, scale=k), _randn(g, 4 * Hd, Hd, dtype=dtype, scale=k),
            _randn(g, 4 * Hd, dtype=dtype, scale=k), _randn(g, 4 * Hd, dtype=dtype, scale=k))


def lstm_cases(g: torch.Generator, device: str) -> list[Case]:
    cases = []
    for name, B, T, D, Hd, dt, zero in [("random B=3 T=5 D=4 Hd=6, h0 and c0 non-zero, float64", 3, 5, 4, 6, f64, 0),
                                        ("random B=2 T=7 D=3 Hd=5, h0 and c0 zero, float64", 2, 7, 3, 5, f64, 1),
                                        ("one step (T=1), B=4 D=3 Hd=4, float64", 4, 1, 3, 4, f64, 0),
                                        ("one sequence (B=1) T=6 D=2 Hd=3, float64", 1, 6, 2, 3, f64, 0),
                                        ("random B=3 T=8 D=5 Hd=7, float32", 3, 8, 5, 7, f32, 0)]:
        X = _randn(g, B, T, D, dtype=dt)
        h0 = torch.zeros(B, Hd, dtype=dt) if zero else _randn(g, B, Hd, dtype=dt, scale=0.5)
        c0 = torch.zeros(B, Hd, dtype=dt) if zero else _randn(g, B, Hd, dtype=dt)
        cases.append(make_case(name, (X, h0, c0, *_lstm_weights(g, D, Hd, dt)), device))
    W_ih, W_hh, b_ih, b_hh = _lstm_weights(g, 3, 4)
    b_ih[4:8] += 3.0  # a forget gate near 1: the cell keeps its content
    cases.append(make_case("forget-gate biases of +3 (the cell state builds up), B=2 T=10 D=3 Hd=4, float64",
                           (_randn(g, 2, 10, 3), _randn(g, 2, 4), _randn(g, 2, 4, scale=2.0), W_ih, W_hh, b_ih,
                            b_hh), device))
    ids = _real_chars(g, 3, 25)
    cases.append(make_case("real: 3 passages of 25 Shakespeare characters, one-hot (D=75), Hd=12, float32",
                           (_one_hot(ids, f32), torch.zeros(3, 12, dtype=f32), torch.zeros(3, 12, dtype=f32),
                            *_lstm_weights(g, _chars().vocab_size, 12, f32, 2.0)), device, 1e-4, 1e-4))
    return cases


# ------------------------------------------------------------------ 5. stream batching and windows


def stream_cases(g: torch.Generator, device: str) -> list[Case]:
    start = _randint(g, 0, len(_austen().train) - 20_000)
    words = _austen().train[start:start + 10_007]
    return [
        make_case("ids 0..22 (23 tokens), B=4: the tail of 3 dropped", (torch.arange(23), 4), device),
        make_case("random ids (100,), B=5: no tail", (torch.randint(0, 50, (100,), generator=g), 5), device),
        make_case("one stream (B=1), 17 ids", (torch.randint(0, 9, (17,), generator=g), 1), device),
        make_case("random ids (64,), B=32: two tokens a stream", (torch.randint(0, 99, (64,), generator=g), 32),
                  device),
        make_case("real: 10,007 Austen word ids, B=7", (words, 7), device),
        make_case("real: 5,000 Shakespeare character ids, B=32", (_chars().train[:5000], 32), device),
    ]


def window_cases(g: torch.Generator, device: str) -> list[Case]:
    start = _randint(g, 0, len(_austen().train) - 20_000)
    real = stream_batches(_austen().train[start:start + 10_007], 7)
    return [
        make_case("a (2, 11) stream of 0..21, bptt 3: the last window shorter", (torch.arange(22).view(2, 11), 3),
                  device),
        make_case("random (4, 21) stream, bptt 5: windows fit exactly",
                  (torch.randint(0, 30, (4, 21), generator=g), 5), device),
        make_case("bptt 1, random (3, 6) stream", (torch.randint(0, 30, (3, 6), generator=g), 1), device),
        make_case("bptt longer than the stream (one window), (2, 8), bptt 50",
                  (torch.randint(0, 30, (2, 8), generator=g), 50), device),
        make_case("one stream (B=1) of 15, bptt 4", (torch.randint(0, 30, (1, 15), generator=g), 4), device),
        make_case(f"real: Austen words as 7 streams of {real.shape[1]}, bptt 35", (real, 35), device),
    ]


# ------------------------------------------------------------------ 6. truncated BPTT


def tbptt_cases(g: torch.Generator, device: str) -> list[Case]:
    cases = []
    for name, B, N, D, Hd, bptt, dt, zero in [
            ("B=2 N=10 D=3 Hd=4, bptt 3 (the last window shorter), h0 non-zero, float64", 2, 10, 3, 4, 3, f64, 0),
            ("B=3 N=12 D=2 Hd=5, bptt 4, h0 zero, float64", 3, 12, 2, 5, 4, f64, 1),
            ("bptt 1 (every step a window), B=2 N=6 D=3 Hd=3, float64", 2, 6, 3, 3, 1, f64, 0),
            ("bptt longer than the sequence (one window), B=2 N=5 D=2 Hd=3, float64", 2, 5, 2, 3, 8, f64, 0),
            ("one sequence (B=1) N=9 D=3 Hd=4, bptt 2, float64", 1, 9, 3, 4, 2, f64, 0),
            ("B=2 N=11 D=4 Hd=5, bptt 5, float32", 2, 11, 4, 5, 5, f32, 0)]:
        X = _randn(g, B, N, D, dtype=dt)
        h0 = torch.zeros(B, Hd, dtype=dt) if zero else _randn(g, B, Hd, dtype=dt, scale=0.5)
        W_ih, W_hh, b_ih = _elman_weights(g, D, Hd, dt, 1.5)
        b_hh = _randn(g, Hd, dtype=dt, scale=0.3)
        tol = (1e-4, 1e-4) if dt == f32 else (None, None)
        cases.append(make_case(name, (X, h0, W_ih, W_hh, b_ih, b_hh, bptt, _randn(g, B, N, Hd, dtype=dt)), device,
                               *tol))
    ids = _real_chars(g, 3, 30)
    V, Hd = _chars().vocab_size, 8
    W_ih, W_hh, b_ih, b_hh = _elman_weights(g, V, Hd, f64, 2.0) + (_randn(g, Hd, scale=0.1),)
    cases.append(make_case("real: 3 passages of 30 Shakespeare characters, one-hot (D=75), Hd=8, bptt 7, float64",
                           (_one_hot(ids, f64), torch.zeros(3, Hd, dtype=f64), W_ih, W_hh, b_ih, b_hh, 7,
                            _randn(g, 3, 30, Hd)), device))
    return cases


# ------------------------------------------------------------------ 7. clipping


def _real_gradients(g):
    """The gradients of a bigram character model's cross-entropy on real text: an embedding and an output layer."""
    ids = _real_chars(g, 4, 40)
    V = _chars().vocab_size
    E = _randn(g, V, 16, dtype=f32, scale=0.5).requires_grad_(True)
    W = _randn(g, V, 16, dtype=f32, scale=0.5).requires_grad_(True)
    b = torch.zeros(V, dtype=f32, requires_grad=True)
    loss = F.cross_entropy((E[ids[:, :-1]] @ W.T + b).reshape(-1, V), ids[:, 1:].reshape(-1))
    return [t.detach() for t in torch.autograd.grad(loss, [E, W, b])]


def clip_cases(g: torch.Generator, device: str) -> list[Case]:
    shapes = [(3, 4), (5,), (2, 3, 2)]

    def grads(scale, dtype=f64):
        return [_randn(g, *s, dtype=dtype, scale=scale) for s in shapes]
    big, small = grads(2.0), grads(0.05)
    real = _real_gradients(g)
    real_norm = float(torch.stack([t.norm() for t in real]).norm())
    return [
        make_case("three tensors (3, 4), (5,), (2, 3, 2), global norm about 10, max 1, float64", (big, 1.0), device,
                  1e-5, 1e-9),
        make_case("global norm below the max (unchanged), max 5, float64", (small, 5.0), device),
        make_case("one tensor (6,) of norm about 2.4, max 0.5, float64", ([_randn(g, 6)], 0.5), device, 1e-5, 1e-9),
        make_case("one large tensor among small ones (clipping each alone differs), max 1, float64",
                  ([_randn(g, 4, scale=10.0), _randn(g, 3, scale=0.01), _randn(g, 2, 2, scale=0.01)], 1.0), device,
                  1e-5, 1e-9),
        make_case("float32 tensors, max 2", (grads(1.0, f32), 2.0), device, 1e-5, 1e-6),
        make_case("all-zero gradients (norm 0, unchanged), max 1", ([torch.zeros(3, 2, dtype=f64),
                                                                     torch.zeros(4, dtype=f64)], 1.0), device),
        make_case(f"real: the gradients of a bigram character model on Shakespeare (global norm {real_norm:.2f}), "
                  "max 0.1, float32", (real, 0.1), device, 1e-5, 1e-6),
    ]


# ------------------------------------------------------------------ 8. perplexity


def _padded_targets(g, B, T, V, lengths):
    targets = torch.randint(0, V, (B, T), generator=g)
    mask = torch.arange(T)[None, :] < lengths[:, None]
    return targets, mask


def perplexity_cases(g: torch.Generator, device: str) -> list[Case]:
    cases = []
    for name, B, T, V, lengths, dt in [
            ("B=3 T=5 V=7, lengths 5, 2, 4, float64", 3, 5, 7, [5, 2, 4], f64),
            ("no padding, B=2 T=6 V=10, float64", 2, 6, 10, [6, 6], f64),
            ("an all-padding row, B=4 T=4 V=5, lengths 4, 0, 1, 3, float64", 4, 4, 5, [4, 0, 1, 3], f64),
            ("one token (B=1 T=1), V=6, float64", 1, 1, 6, [1], f64),
            ("very different lengths, B=3 T=9 V=8, lengths 9, 1, 2, float32", 3, 9, 8, [9, 1, 2], f32)]:
        lengths = torch.tensor(lengths)
        targets, mask = _padded_targets(g, B, T, V, lengths)
        logits = _randn(g, B, T, V, dtype=dt, scale=2.0)
        logits = torch.where(mask[:, :, None], logits, logits * 50)  # garbage at padding
        tol = (1e-4, 1e-8) if dt == f32 else (1e-9, 1e-12)
        cases.append(make_case(name + " (large garbage logits at padding)", (logits, targets, mask), device, *tol))
    # real: Austen passages of 4 lengths, predicted by the unigram model of the training part (add-one)
    austen = _austen()
    counts = torch.bincount(austen.train, minlength=austen.vocab_size).double() + 1
    lengths = torch.tensor([12, 3, 0, 8])
    words = _real_words(g, 4, 13)
    targets = words[:, 1:]
    mask = torch.arange(12)[None, :] < lengths[:, None]
    logits = counts.log().to(f32).expand(4, 12, -1).clone()
    logits[1] += _randn(g, 12, austen.vocab_size, dtype=f32)
    cases.append(make_case("real: 4 Austen passages (12, 3, 0 and 8 words) under a unigram model, V=10001, float32",
                           (logits, targets.masked_fill(~mask, 0), mask), device, 1e-4, 1e-8))
    return cases


# ------------------------------------------------------------------ 9. sampling


def sampling_cases(g: torch.Generator, device: str) -> list[Case]:
    corpus = _chars()
    counts = torch.bincount(corpus.train[1:][corpus.train[:-1] == corpus.stoi["e"]], minlength=corpus.vocab_size)
    bigram = (counts.double() + 0.01).log().to(f32)  # the next character after "e" (log-counts)
    austen = _austen()
    unigram = torch.bincount(austen.train, minlength=austen.vocab_size)[:2000].double().log().to(f32)
    n = 20_000

    def case(name, logits, temperature, top_k, draws=n):
        return make_case(name, (logits, temperature, top_k, draws, _randint(g, 0, 2**31 - 1)), device)
    return [
        case("random logits (V=12) float32, temperature 1, top_k = V", _randn(g, 12, dtype=f32), 1.0, 12),
        case("random logits (V=30) float64, temperature 0.7, top_k 5", _randn(g, 30, scale=2.0), 0.7, 5),
        case("random logits (V=20), temperature 2.5 (flatter), top_k 10", _randn(g, 20, dtype=f32), 2.5, 10),
        case("top_k = 1 (always the best), V=15, temperature 1.3", _randn(g, 15, dtype=f32), 1.3, 1, 2000),
        case("temperature near 0 (0.01), V=10, top_k = V", _randn(g, 10, dtype=f32, scale=3.0), 0.01, 10, 2000),
        case("a large temperature (50: nearly uniform), V=25, top_k = V", _randn(g, 25, dtype=f32), 50.0, 25),
        case("real: the next Shakespeare character after 'e' (bigram log-counts, V=75), temperature 0.8, top_k 20",
             bigram, 0.8, 20),
        case("real: the 2,000 most frequent Austen words (log-counts), temperature 1.2, top_k = V", unigram, 1.2,
             2000, 10_000),
        case("ties at the k-th logit (V=6, top_k 2: the three tokens tied second are all kept)",
             torch.tensor([2.0, 1.0, 1.0, 1.0, 0.0, -1.0]), 1.0, 2, 4000),
    ]


# ------------------------------------------------------------------ 10. training on Shakespeare


def training_cases(g: torch.Generator, device: str) -> list[Case]:
    """One run, on a seed of the grader's choosing, the default settings: about 9 s of one CPU thread for the
    solution; and the recipe's first 3 windows on another seed, in small settings. The trainer runs on the
    CPU: no CUDA case."""
    if device != "cpu":
        return []
    seed, recipe_seed = _randint(g, 1, 2**31 - 1), _randint(g, 1, 2**31 - 1)
    return [make_case(f"seed {seed}, the default settings, scored on the test part ({len(_chars().test):,} "
                      "characters)", (seed, *TRAIN_SETTINGS), device),
            make_case(f"seed {recipe_seed}, the recipe's first {RECIPE_SETTINGS[5]} windows in small settings "
                      f"{RECIPE_SETTINGS}: the weights must be the recipe's", (recipe_seed, *RECIPE_SETTINGS), device)]


# ------------------------------------------------------------------ the parts

PARTS: dict[str, Part] = {
    "elman_forward": Part("forward-test", elman_forward, forward_cases, ("forward-solution",), NO_LIBRARY),
    "elman_bptt": Part("bptt-test", elman_bptt, bptt_cases, ("bptt-solution",), BACKWARD_FORBIDDEN,
                       check=tuple_check(("dX", "dh0", "dW_xh", "dW_hh", "db_h"))),
    **gradcheck_parts(GRADCHECK_FUNCTIONS, own_gradcheck_cases, BACKWARD_FORBIDDEN),
    "lstm_forward": Part("lstm-test", lstm_forward, lstm_cases, ("lstm-solution",), NO_LIBRARY),
    "stream_batches": Part("batching-test", stream_batches, stream_cases, ("batching-solution",), NO_LIBRARY),
    "lm_windows": Part("batching-test", lm_windows, window_cases, ("batching-solution",), NO_LIBRARY),
    "tbptt_forward": Part("tbptt-test", tbptt_probe, tbptt_cases, ("tbptt-solution",), NO_LIBRARY,
                          check=_check_tbptt),
    "clip_global_norm": Part("clip-test", clip_global_norm, clip_cases, ("clip-solution",), NO_LIBRARY,
                             check=_check_clip),
    "masked_perplexity": Part("perplexity-test", masked_perplexity, perplexity_cases, ("perplexity-solution",),
                              NO_LIBRARY),
    "sample_next": Part("sampling-test", draw_many, sampling_cases, ("sampling-solution",), NO_LIBRARY,
                        check=_check_draws),
    "train_char_lm": Part("train-test", train_char_lm, training_cases, ("train-solution",), TRAIN_FORBIDDEN,
                          check=_check_training),
}

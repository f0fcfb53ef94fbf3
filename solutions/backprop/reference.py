"""Reference for the assignment "Backprop by hand" (``backprop.ipynb``). Instructor side: never shipped.

Students write, without autograd, a numerical gradient check, the forward and backward pass of a
one-hidden-layer MLP classifier with softmax cross-entropy, and a training loop that fits it to the
movie reviews. Every reference below is PyTorch's own operation, and every reference gradient comes from
``torch.autograd``: the grade says "your gradients agree with autograd".
(``tanh_backward`` gets the forward *output* ``A``, as autograd's tanh node does; its reference is
``aten.tanh_backward(dA, A)``, the very kernel that node runs, since ``Z`` is not an argument.)

One part is not compared value by value with a reference's output:

* ``train_review_classifier`` returns trained parameters. Its "reference", :func:`required_accuracy`,
  only says what they must reach; :func:`check_training` (the part's ``check``) computes, here in the
  grader, the accuracy of the returned parameters on the held-out reviews of the case's split, with the
  reference forward pass. No number the kernel reports is used. The kernel builds its training data
  itself (``review_data`` in the notebook, from ``data/``), so a case is four integers.

Real data: :func:`_review_rows` draws rows of real reviews as bag-of-words vectors; the linear layer,
the activations, log-softmax, the loss, the MLP, the SGD step and the gradient check (a tanh layer over
reviews) each have cases on them. The gradient check is the course's shared one (grader/gradcheck.py).

Cases: ``cases(generator, device)`` draws every random input from ``generator`` on the CPU and moves
it to ``device``, so the same seed gives the same inputs on every device. Case names say what a case
is; tolerances are the dtype defaults of :mod:`nlpcourse.checking` unless a case sets its own.

Forbidden names (``Part.forbidden``): each entry is a dotted name that an answer cell must not use.
An entry matches a dotted name written in the answer cells (an attribute chain such as
``torch.nn.functional.softmax``, ``F.cross_entropy`` or ``Z.softmax``, a keyword argument, or the module
path of an import, with import aliases resolved) when it equals a run of whole components of it:

* an entry that begins with a dot matches an *attribute* only, on any object: ``.softmax`` forbids
  ``torch.softmax``, ``F.softmax`` and ``Z.softmax(-1)``, but not a function of the student's own
  called ``softmax`` or ``log_softmax``; ``.backward`` forbids ``loss.backward()``;
* any other entry matches wherever its components appear: ``torch.nn`` forbids ``torch.nn.functional``,
  ``import torch.nn.functional as F`` and ``from torch import nn``; ``requires_grad`` forbids the
  attribute, the in-place method ``requires_grad_`` is listed on its own, and the keyword
  ``requires_grad=True``.

So later parts may call the student's own ``log_softmax`` and ``cross_entropy`` (bare names), but not
PyTorch's.
"""
from __future__ import annotations

from functools import lru_cache

import torch
import torch.nn.functional as F

from grader.gradcheck import COMMON_FUNCTIONS, gradcheck_parts
from grader.spec import Part, make_case
from nlpcourse.checking import Case, Verdict
from nlpcourse.data import Vocab, load_reviews, split_indices, word_tokenize
from nlpcourse.models.bow_mlp import bag_of_words

NOTEBOOK = "backprop.ipynb"

# ------------------------------------------------------------------ forbidden names

#: Autograd in any form, and PyTorch's ready-made layers (torch.nn.functional is part of torch.nn).
NO_AUTOGRAD = ("torch.autograd", "torch.func", "functorch", ".backward", ".grad", ".grad_fn", "requires_grad",
               ".requires_grad_", "torch.enable_grad", "torch.nn", "torch.ops", "torch._C", "torch.optim")
#: PyTorch's softmax family and losses (attributes only, so the student's own functions stay usable).
NO_SOFTMAX = (".softmax", ".log_softmax", ".logsumexp", ".cross_entropy", ".nll_loss", ".special")
#: Ready-made activations and their backward kernels.
NO_ACTIVATIONS = (".relu", ".relu_", ".threshold", ".threshold_backward", ".tanh_backward")

LINEAR_FORBIDDEN = NO_AUTOGRAD + (".linear", ".addmm", ".baddbmm")
ACTIVATION_FORBIDDEN = NO_AUTOGRAD + NO_ACTIVATIONS
SOFTMAX_FORBIDDEN = NO_AUTOGRAD + NO_SOFTMAX
MLP_FORBIDDEN = NO_AUTOGRAD + NO_SOFTMAX + NO_ACTIVATIONS + (".linear", ".addmm")
SGD_FORBIDDEN = NO_AUTOGRAD
GRADCHECK_FORBIDDEN = NO_AUTOGRAD  # the point of a numerical gradient: no autograd to lean on
TRAIN_FORBIDDEN = MLP_FORBIDDEN  # the student's own functions train the model: no torch.nn, no torch.optim

# ------------------------------------------------------------------ reference implementations


def _leaf(t: torch.Tensor) -> torch.Tensor:
    return t.detach().clone().requires_grad_(True)


def linear_forward(X, W, b):
    return F.linear(X, W, b)


def linear_backward(dY, X, W):
    with torch.enable_grad():
        X_, W_ = _leaf(X), _leaf(W)
        b_ = torch.zeros(W.shape[0], dtype=W.dtype, device=W.device, requires_grad=True)
        Y = F.linear(X_, W_, b_)
        dX, dW, db = torch.autograd.grad(Y, (X_, W_, b_), grad_outputs=dY)
    return dX, dW, db


def relu_forward(Z):
    return torch.relu(Z)


def relu_backward(dA, Z):
    with torch.enable_grad():
        Z_ = _leaf(Z)
        (dZ,) = torch.autograd.grad(torch.relu(Z_), Z_, grad_outputs=dA)
    return dZ


def tanh_forward(Z):
    return torch.tanh(Z)


def tanh_backward(dA, A):
    # autograd's TanhBackward0 node saves the output A and runs exactly this kernel (derivatives.yaml:
    # "self: tanh_backward(grad, result)"); the cases check it against autograd through Z as well.
    return torch.ops.aten.tanh_backward(dA, A)


def log_softmax(Z):
    return torch.log_softmax(Z, dim=-1)


def cross_entropy(Z, y):
    return F.cross_entropy(Z, y)


def cross_entropy_backward(Z, y):
    with torch.enable_grad():
        Z_ = _leaf(Z)
        (dZ,) = torch.autograd.grad(F.cross_entropy(Z_, y), Z_)
    return dZ


_ACTIVATIONS = {"relu": torch.relu, "tanh": torch.tanh}


def mlp_logits(params, X, activation="relu"):
    hidden = _ACTIVATIONS[activation](F.linear(X, params["W_1"], params["b_1"]))
    return F.linear(hidden, params["W_2"], params["b_2"])


def mlp_loss_and_grads(params, X, y, activation="relu"):
    with torch.enable_grad():
        leaves = {k: _leaf(v) for k, v in params.items()}
        loss = F.cross_entropy(mlp_logits(leaves, X, activation), y)
        grads = torch.autograd.grad(loss, list(leaves.values()))
    return loss.detach(), dict(zip(leaves, grads))


def sgd_step(params, grads, lr):
    new = {k: v.detach().clone() for k, v in params.items()}
    for k, p in new.items():
        p.grad = grads[k].detach().clone()
    torch.optim.SGD(list(new.values()), lr=lr).step()
    for p in new.values():
        p.grad = None
    return new


# ------------------------------------------------------------------ the movie reviews (real data)

SPLIT_FRACTIONS = (0.8, 0.2)  # training and held-out movies, as the notebook's review_data()
TRAIN_VOCAB = 2000  # words of the vocabulary in the training cases (V = 2004 with the specials)
#: The trained part's outcome (grader.spec.OUTCOME_FIELDS), measured with
#: ``python scripts/trained_part_seeds.py backprop --seeds 20 --jobs 2`` (and ``--baseline``): the solution's
#: held-out accuracy over student seeds 0-19 (each its own split, hidden size and seed) against the training
#: reviews' majority label on the same splits (baseline_outcome). The threshold is stated in the notebook.
OUTCOME = {"metric": "accuracy", "better": "higher", "bar": 0.69, "solution_worst": 0.73, "solution_worst_seed": 10,
           "solution_best": 0.75, "baseline": "the training reviews' majority label, the same split",
           "baseline_best": 0.64, "baseline_best_seed": 11, "seeds": 20, "seconds": 1.7}
REQUIRED_ACCURACY = OUTCOME["bar"]  # held-out accuracy each trained classifier must reach


@lru_cache(maxsize=1)
def _tokenized_reviews() -> tuple[list[list[str]], list[int], list[str]]:
    reviews = load_reviews()
    return [word_tokenize(r.text) for r in reviews], [r.label for r in reviews], [r.movie for r in reviews]


@lru_cache(maxsize=16)
def _split_vocab(split_seed: int, vocab_size: int) -> tuple[Vocab, list[int], list[int]]:
    """The vocabulary, training and held-out indices of one split by movie, as review_data() builds them."""
    tokens, _, movies = _tokenized_reviews()
    train_idx, val_idx = split_indices(len(tokens), SPLIT_FRACTIONS, seed=split_seed, groups=movies)
    return Vocab.build([tokens[i] for i in train_idx], min_freq=2, max_size=vocab_size), train_idx, val_idx


@lru_cache(maxsize=4)
def held_out(split_seed: int, vocab_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(X_val (N, V) float32, y_val (N,) long): the held-out reviews exactly as the notebook's
    ``review_data(split_seed, vocab_size)`` returns them."""
    tokens, labels, _ = _tokenized_reviews()
    vocab, _, val_idx = _split_vocab(split_seed, vocab_size)
    X = bag_of_words([vocab.encode(tokens[i]) for i in val_idx], len(vocab))
    return X, torch.tensor([labels[i] for i in val_idx])


def _review_rows(g: torch.Generator, n: int, vocab_size: int = 300, dtype=torch.float64):
    """``n`` reviews drawn at random as bag-of-words rows (n, vocab_size + 4) over the vocabulary of
    split 0's training reviews (0.0 / 1.0; many rows have only a few known words), and their labels."""
    tokens, labels, _ = _tokenized_reviews()
    vocab = _split_vocab(0, vocab_size)[0]
    idx = torch.randperm(len(tokens), generator=g)[:n].tolist()
    X = bag_of_words([vocab.encode(tokens[i]) for i in idx], len(vocab)).to(dtype)
    return X, torch.tensor([labels[i] for i in idx])


def baseline_outcome(case: Case, trainer) -> float:
    """A classifier that ignores the review: the majority label of the case's training reviews, its accuracy on
    the held-out ones (the split decides it; no seed). This shows that a run learnt from the text; it does not
    show what the hidden layer adds (the chapter finds the MLP level with logistic regression on these rows)."""
    split_seed, vocab_size, _, _ = case.args
    _, train_idx, _ = _split_vocab(split_seed, vocab_size)
    labels = _tokenized_reviews()[1]
    majority = int(2 * sum(labels[i] for i in train_idx) >= len(train_idx))
    return float((held_out(split_seed, vocab_size)[1] == majority).double().mean())


def required_accuracy(split_seed, vocab_size, hidden, seed):
    """The "reference" of train_review_classifier: not a trained model (training again here would cost as
    much as the student's run), but the held-out accuracy its parameters must reach."""
    return REQUIRED_ACCURACY


def held_out_accuracy(params, split_seed: int, vocab_size: int) -> float:
    """Accuracy of a ReLU MLP's parameters on the held-out reviews, with the reference forward pass."""
    X, y = held_out(split_seed, vocab_size)
    p = {k: params[k].detach().cpu().double() for k in ("W_1", "b_1", "W_2", "b_2")}
    logits = mlp_logits(p, X.double(), "relu")
    return (logits.argmax(dim=-1) == y).double().mean().item()


def check_training(expected, got, case: Case, device) -> Verdict:
    """``got``, the parameters train_review_classifier returned, must have the right keys, shapes and
    finite values, and reach ``expected`` held-out accuracy, measured here."""
    split_seed, vocab_size, hidden, _ = case.args
    V = held_out(split_seed, vocab_size)[0].shape[1]
    shapes = {"W_1": (hidden, V), "b_1": (hidden,), "W_2": (2, hidden), "b_2": (2,)}
    if not isinstance(got, dict):
        return Verdict(False, f"expected a dict of parameters with keys {sorted(shapes)}, got {type(got).__name__}")
    if device is not None:
        return Verdict(False, f"expected the parameters on {device}, where the inputs were")
    for name, shape in shapes.items():
        t = got.get(name)
        if not isinstance(t, torch.Tensor):
            return Verdict(False, f"params[{name!r}]: expected a tensor of shape {shape}, got {type(t).__name__}")
        if tuple(t.shape) != shape:
            return Verdict(False, f"params[{name!r}]: expected shape {shape}, got {tuple(t.shape)}")
        if not t.is_floating_point():
            return Verdict(False, f"params[{name!r}]: expected floating-point values, got dtype {t.dtype}")
        if not torch.isfinite(t).all():
            return Verdict(False, f"params[{name!r}] holds inf or nan: did the training diverge?")
    accuracy = held_out_accuracy(got, split_seed, vocab_size)
    if accuracy < expected:
        return Verdict(False, f"held-out accuracy {accuracy:.3f}, below the {expected:.2f} required",
                       {"accuracy": accuracy})
    return Verdict(True, details={"accuracy": accuracy})


# ------------------------------------------------------------------ cases


def _randn(g, *shape, dtype=torch.float64, scale=1.0):
    return torch.randn(*shape, generator=g, dtype=dtype) * scale


def _labels(g, B, K):
    return torch.randint(K, (B,), generator=g, dtype=torch.long)


def _with_zeros(g, shape, dtype):
    """Random values with about a third of the entries exactly 0 (+0.0 and -0.0)."""
    Z = _randn(g, *shape, dtype=dtype)
    pick = torch.randint(3, shape, generator=g)
    Z = torch.where(pick == 0, torch.zeros_like(Z), Z)
    return torch.where((pick == 0) & (torch.rand(shape, generator=g) < 0.5), -torch.zeros_like(Z), Z)


f64, f32 = torch.float64, torch.float32


def _real_layer(g, B=16, vocab_size=300, H=8, dtype=f32):
    """B real reviews as bag-of-words rows X (B, vocab_size + 4), their labels y (B,), and the
    pre-activations Z = X W^T + b (B, H) of a random layer over them."""
    X, y = _review_rows(g, B, vocab_size, dtype)
    W, b = _randn(g, H, X.shape[1], dtype=dtype, scale=0.5), _randn(g, H, dtype=dtype, scale=0.1)
    return X, y, X @ W.T + b


# (name, B, D, H, dtype)
_LINEAR_SHAPES = [
    ("random B=4 D=3 H=5 float64", 4, 3, 5, f64),
    ("random B=4 D=3 H=5 float32", 4, 3, 5, f32),
    ("random B=32 D=20 H=16 float32", 32, 20, 16, f32),
    ("batch of 1 (B=1 D=3 H=2) float64", 1, 3, 2, f64),
    ("one feature (B=5 D=1 H=3) float64", 5, 1, 3, f64),
    ("one hidden unit (B=5 D=4 H=1) float64", 5, 4, 1, f64),
    ("square W (B=3 D=4 H=4) float64", 3, 4, 4, f64),
]


def linear_forward_cases(g: torch.Generator, device: str) -> list[Case]:
    cases = [make_case(name, (_randn(g, B, D, dtype=dt), _randn(g, H, D, dtype=dt), _randn(g, H, dtype=dt)), device)
             for name, B, D, H, dt in _LINEAR_SHAPES]
    cases.append(make_case("zero inputs: every row is the bias (B=3 D=2 H=4) float64",
                       (torch.zeros(3, 2, dtype=f64), _randn(g, 4, 2), _randn(g, 4)), device))
    X, _ = _review_rows(g, 16, 300, f32)
    cases.append(make_case("real: 16 reviews as bag-of-words rows (B=16 D=304 H=8) float32",
                           (X, _randn(g, 8, 304, dtype=f32, scale=0.5), _randn(g, 8, dtype=f32)), device))
    return cases


def linear_backward_cases(g: torch.Generator, device: str) -> list[Case]:
    cases = [make_case(name, (_randn(g, B, H, dtype=dt), _randn(g, B, D, dtype=dt), _randn(g, H, D, dtype=dt)), device)
             for name, B, D, H, dt in _LINEAR_SHAPES]
    cases.append(make_case("zero upstream gradient (B=3 D=2 H=4) float64",
                       (torch.zeros(3, 4, dtype=f64), _randn(g, 3, 2), _randn(g, 4, 2)), device))
    X, _ = _review_rows(g, 16, 300, f64)
    cases.append(make_case("real: 16 reviews as bag-of-words rows (B=16 D=304 H=8) float64",
                           (_randn(g, 16, 8), X, _randn(g, 8, 304, scale=0.5)), device))
    return cases


# (name, shape, dtype, scale)
_ELEMENTWISE = [
    ("random (4, 5) float64", (4, 5), f64, 1.0),
    ("random (4, 5) float32", (4, 5), f32, 1.0),
    ("batch of 1 (1, 6) float64", (1, 6), f64, 1.0),
    ("1-D vector (7,) float64", (7,), f64, 1.0),
    ("3-D (2, 3, 4) float32", (2, 3, 4), f32, 1.0),
    ("large values (5, 4) float32, scale 1000", (5, 4), f32, 1000.0),
]


def relu_forward_cases(g: torch.Generator, device: str) -> list[Case]:
    cases = [make_case(name, (_randn(g, *shape, dtype=dt, scale=s),), device) for name, shape, dt, s in _ELEMENTWISE]
    cases.append(make_case("exact zeros (+0.0 and -0.0) (6, 5) float64", (_with_zeros(g, (6, 5), f64),), device))
    cases.append(make_case("all negative (3, 4) float64", (-_randn(g, 3, 4).abs() - 0.1,), device))
    cases.append(make_case("real: pre-activations of a layer over 16 reviews (16, 8) float32",
                           (_real_layer(g)[2],), device))
    return cases


def relu_backward_cases(g: torch.Generator, device: str) -> list[Case]:
    cases = [make_case(name, (_randn(g, *shape, dtype=dt), _randn(g, *shape, dtype=dt, scale=s)), device)
             for name, shape, dt, s in _ELEMENTWISE]
    cases.append(make_case("Z with exact zeros: gradient 0 there (6, 5) float64",
                       (_randn(g, 6, 5), _with_zeros(g, (6, 5), f64)), device))
    cases.append(make_case("Z with exact zeros: gradient 0 there (6, 5) float32",
                       (_randn(g, 6, 5, dtype=f32), _with_zeros(g, (6, 5), f32)), device))
    cases.append(make_case("real: Z the pre-activations of a layer over 16 reviews (16, 8) float32",
                           (_randn(g, 16, 8, dtype=f32), _real_layer(g)[2]), device))
    return cases


_TANH_EXTRA = [
    ("large |Z| (20 to 1000) float64", torch.tensor([[20.0, -20.0, 1000.0, -1000.0], [0.0, 0.5, -700.0, 800.0]])),
    ("zeros (3, 3) float64", torch.zeros(3, 3, dtype=f64)),
]


def tanh_forward_cases(g: torch.Generator, device: str) -> list[Case]:
    cases = [make_case(name, (_randn(g, *shape, dtype=dt, scale=2.0),), device)
             for name, shape, dt, s in _ELEMENTWISE if s == 1.0]
    cases.append(make_case("large |Z| (5, 4) float32, scale 1000", (_randn(g, 5, 4, dtype=f32, scale=1000.0),), device))
    cases += [make_case(name, (Z.to(f64),), device) for name, Z in _TANH_EXTRA]
    cases.append(make_case("real: pre-activations of a layer over 16 reviews (16, 8) float64",
                           (_real_layer(g, dtype=f64)[2],), device))
    return cases


def tanh_backward_cases(g: torch.Generator, device: str) -> list[Case]:
    """Arguments (dA, A) with A = tanh(Z) for random Z, as the forward pass would hand them over."""
    cases = [make_case(name.replace("random", "random Z"),
                   (_randn(g, *shape, dtype=dt), torch.tanh(_randn(g, *shape, dtype=dt, scale=2.0))), device)
             for name, shape, dt, s in _ELEMENTWISE if s == 1.0]
    cases.append(make_case("saturated A = tanh(+-1000) = +-1 (5, 4) float32",
                       (_randn(g, 5, 4, dtype=f32), torch.tanh(_randn(g, 5, 4, dtype=f32, scale=1000.0))), device))
    cases += [make_case(name.replace("|Z|", "|Z|, A = tanh(Z),"), (_randn(g, *Z.shape), torch.tanh(Z.to(f64))), device)
              for name, Z in _TANH_EXTRA]
    cases.append(make_case("real: A = tanh of the pre-activations of a layer over 16 reviews (16, 8) float64",
                           (_randn(g, 16, 8), torch.tanh(_real_layer(g, dtype=f64)[2])), device))
    return cases


def _logits_cases(g: torch.Generator, device: str, with_labels: bool) -> list[Case]:
    """Logits Z (B, K) (and labels y (B,) long) for log_softmax and the loss."""
    specs = [  # name, Z
        ("random B=4 K=3 float64", _randn(g, 4, 3)),
        ("random B=4 K=3 float32", _randn(g, 4, 3, dtype=f32)),
        ("random B=64 K=10 float32", _randn(g, 64, 10, dtype=f32, scale=3.0)),
        ("batch of 1 (B=1 K=5) float64", _randn(g, 1, 5)),
        ("one class (B=3 K=1) float64", _randn(g, 3, 1)),
        ("equal logits (B=2 K=4) float64", torch.full((2, 4), 7.0, dtype=f64)),
        ("large logits around +-1000 (B=4 K=3) float64", _randn(g, 4, 3, scale=1000.0)),
        ("large logits around +-1000 (B=4 K=3) float32", _randn(g, 4, 3, dtype=f32, scale=1000.0)),
        ("logits around 100 (B=5 K=4) float32", 100.0 + _randn(g, 5, 4, dtype=f32)),
    ]
    cases = []
    for name, Z in specs:
        B, K = Z.shape
        args = (Z, _labels(g, B, K)) if with_labels else (Z,)
        cases.append(make_case(name, args, device))
    if with_labels:
        # the right class has by far the lowest logit: the loss is about 2000, with no overflow allowed
        Z = torch.tensor([[1000.0, -1000.0, 0.0], [-1000.0, 1000.0, 500.0]], dtype=f32)
        cases.append(make_case("large logits, wrong class wins by 2000 (B=2 K=3) float32",
                           (Z, torch.tensor([1, 0])), device))
        _, y, Z = _real_layer(g, H=2)
        cases.append(make_case("real: logits of a random layer over 16 reviews, their labels (B=16 K=2) float32",
                               (Z, y), device))
    else:
        cases.append(make_case("1-D vector (K=6) float64", (_randn(g, 6),), device))
        cases.append(make_case("3-D batch of sequences (2, 3, 5) float32", (_randn(g, 2, 3, 5, dtype=f32),), device))
        cases.append(make_case("real: logits of a random layer over 16 reviews (B=16 K=2) float32",
                               (_real_layer(g, H=2)[2],), device))
    return cases


def log_softmax_cases(g: torch.Generator, device: str) -> list[Case]:
    return _logits_cases(g, device, with_labels=False)


def loss_cases(g: torch.Generator, device: str) -> list[Case]:
    return _logits_cases(g, device, with_labels=True)


def _params(g, D, H, K, dtype=f64, w_scale=1.0, b_scale=0.5):
    return {"W_1": _randn(g, H, D, dtype=dtype, scale=w_scale), "b_1": _randn(g, H, dtype=dtype, scale=b_scale),
            "W_2": _randn(g, K, H, dtype=dtype, scale=w_scale), "b_2": _randn(g, K, dtype=dtype, scale=b_scale)}


def _mlp_specs(g: torch.Generator):
    """(name, params, X, y, activation) for the MLP parts."""
    specs = []
    for name, B, D, H, K, dt, act in [
        ("relu random B=4 D=3 H=5 K=2 float64", 4, 3, 5, 2, f64, "relu"),
        ("tanh random B=4 D=3 H=5 K=2 float64", 4, 3, 5, 2, f64, "tanh"),
        ("relu random B=32 D=10 H=16 K=4 float32", 32, 10, 16, 4, f32, "relu"),
        ("tanh random B=32 D=10 H=16 K=4 float32", 32, 10, 16, 4, f32, "tanh"),
        ("relu batch of 1 (D=3 H=4 K=3) float64", 1, 3, 4, 3, f64, "relu"),
        ("tanh one hidden unit (B=5 D=3 H=1 K=3) float64", 5, 3, 1, 3, f64, "tanh"),
    ]:
        specs.append((name, _params(g, D, H, K, dt), _randn(g, B, D, dtype=dt), _labels(g, B, K), act))
    # large weights: logits in the hundreds, exp() of them overflows float32
    p = _params(g, 6, 8, 3, f32, w_scale=10.0)
    specs.append(("relu large weights, logits in the hundreds (B=6 D=6 H=8 K=3) float32", p,
                  _randn(g, 6, 6, dtype=f32), _labels(g, 6, 3), "relu"))
    # large output bias: logits around +-1000, exp() of them overflows float64
    p = _params(g, 4, 5, 3)
    p["b_2"] = torch.tensor([1000.0, -1000.0, 0.0], dtype=f64)
    specs.append(("tanh large logits from the bias (+-1000) (B=6 D=4 H=5 K=3) float64", p, _randn(g, 6, 4),
                  torch.tensor([1, 2, 0, 1, 1, 2]), "tanh"))
    # hidden pre-activations exactly 0 (X = 0 and some b_1 = 0): ReLU's gradient there is 0
    p = _params(g, 3, 6, 2)
    p["b_1"][::2] = 0.0
    specs.append(("relu hidden pre-activations exactly 0 (X = 0, some b_1 = 0) (B=3 D=3 H=6 K=2) float64", p,
                  torch.zeros(3, 3, dtype=f64), torch.tensor([0, 1, 1]), "relu"))
    # real reviews: bag-of-words rows and their labels
    for act, dt in (("relu", f32), ("tanh", f64)):
        X, y = _review_rows(g, 16, 300, dt)
        specs.append((f"{act} real: 16 reviews as bag-of-words rows, their labels (B=16 V=304 H=8 K=2) {dt}"
                      .replace("torch.", ""), _params(g, 304, 8, 2, dt, w_scale=0.3, b_scale=0.1), X, y, act))
    return specs


def mlp_logits_cases(g: torch.Generator, device: str) -> list[Case]:
    return [make_case(name, (params, X, act), device) for name, params, X, y, act in _mlp_specs(g)]


def mlp_loss_and_grads_cases(g: torch.Generator, device: str) -> list[Case]:
    return [make_case(name, (params, X, y, act), device) for name, params, X, y, act in _mlp_specs(g)]


def sgd_step_cases(g: torch.Generator, device: str) -> list[Case]:
    def grads_like(params, scale=1.0):
        return {k: _randn(g, *v.shape, dtype=v.dtype, scale=scale) for k, v in params.items()}

    p64, p32, p_big = _params(g, 3, 5, 2), _params(g, 10, 16, 4, f32), _params(g, 4, 6, 3)
    one = {"w": _randn(g, 3)}
    X, y = _review_rows(g, 16, 300, f32)
    p_real = _params(g, 304, 8, 2, f32, w_scale=0.3, b_scale=0.1)
    grads_real = mlp_loss_and_grads(p_real, X, y, "relu")[1]
    return [
        make_case("MLP parameters float64, lr=0.1", (p64, grads_like(p64), 0.1), device),
        make_case("MLP parameters float32, lr=0.5", (p32, grads_like(p32), 0.5), device),
        make_case("lr=0: parameters unchanged, float64", (p_big, grads_like(p_big), 0.0), device),
        make_case("zero gradients, lr=1.0, float64",
                  (p64, {k: torch.zeros_like(v) for k, v in p64.items()}, 1.0), device),
        make_case("one parameter, integer lr=2, float64", (one, grads_like(one), 2), device),
        make_case("large gradients (scale 1e6), lr=1e-3, float32", (p32, grads_like(p32, 1e6), 1e-3), device),
        make_case("real: an MLP's parameters and their gradients on 16 reviews (V=304 H=8), lr=0.5, float32",
                  (p_real, grads_real, 0.5), device),
    ]


# The functions whose numerical gradients the hidden tests ask for: the notebook's locked cell
# "gradcheck-functions" defines the same ones (tests/test_gradcheck.py checks it).
def _polynomial(X, a, b, c, u):
    return (a * X**2 + b * X**3 + c * torch.tanh(X)).sum() + torch.tanh((u * X).sum())


def _layer(W, R, C):
    return (C * torch.tanh(R @ W.T)).sum()


GRADCHECK_FUNCTIONS = {**COMMON_FUNCTIONS, "polynomial": _polynomial, "layer": _layer}


def _coefficients(g, shape, cubic=0.3, ignore=0.0):
    """(a, b, c, u) of "polynomial" for X of ``shape``; with ``ignore``, that share of the entries of X (at
    random) have all their coefficients 0, so f does not depend on them (its gradient there is exactly 0)."""
    a, b, c, u = (torch.randn(shape, generator=g, dtype=f64) for _ in range(4))
    coefficients = [a, cubic * b, c, 0.5 * u]
    if ignore:
        used = (torch.rand(shape, generator=g) >= ignore).to(f64)
        used.view(-1)[0] = 0.0  # at least one entry ignored
        coefficients = [t * used for t in coefficients]
    return tuple(coefficients)


def own_gradcheck_cases(g: torch.Generator, device: str) -> list[Case]:
    """The numerical-gradient cases on this notebook's own functions (grader.gradcheck adds the common ones)."""
    cases = [make_case(name, ("polynomial", torch.randn(shape, generator=g, dtype=f64), eps,
                              *_coefficients(g, shape)), device)
             for name, shape, eps in [("polynomial, X (3, 4), eps 1e-5", (3, 4), 1e-5),
                                      ("polynomial, 3-D X (2, 3, 2), eps 1e-5", (2, 3, 2), 1e-5)]]
    cases.append(make_case("ignores half of its entries (the gradient is exactly 0 there), X (4, 4), eps 1e-5",
                           ("polynomial", _randn(g, 4, 4), 1e-5, *_coefficients(g, (4, 4), ignore=0.5)), device))
    cases.append(make_case("large entries (|X| up to about 5, tanh saturated), X (3, 3), eps 1e-5",
                           ("polynomial", _randn(g, 3, 3, scale=2.0), 1e-5, *_coefficients(g, (3, 3), cubic=0.05)),
                           device))
    R, _ = _review_rows(g, 6, 50)
    cases.append(make_case("real: tanh layer over 6 reviews (bag of words, 50 words), W (3, 54); words absent "
                           "from all 6 get gradient 0", ("layer", _randn(g, 3, R.shape[1], scale=0.5), 1e-5, R,
                                                         _randn(g, 6, 3)), device))
    return cases


def train_cases(g: torch.Generator, device: str) -> list[Case]:
    """(split_seed, vocab_size, hidden, seed): one run, on a split, a hidden size and a seed of the grader's
    (the notebook's own run uses split 0, H = 32 and seed 0); the kernel builds the data itself
    (review_data), trains, and check_training measures the returned parameters. CPU only: the time limit
    that the notebook states is for one CPU thread. No hidden size below 8: with H = 2, about 2 % of the
    solution's runs end with both ReLU units dead (never active on any review), at the majority class."""
    if device != "cpu":
        return []
    split = int(torch.randint(1, 10**6, (1,), generator=g))
    hidden = (8, 16, 32)[int(torch.randint(0, 3, (1,), generator=g))]
    seed = int(torch.randint(0, 10**6, (1,), generator=g))
    return [make_case(f"split seed {split}, 2000 words, H={hidden}, seed {seed}", (split, TRAIN_VOCAB, hidden, seed),
                      device)]


# ------------------------------------------------------------------ the parts

PARTS: dict[str, Part] = {
    **gradcheck_parts(GRADCHECK_FUNCTIONS, own_gradcheck_cases, GRADCHECK_FORBIDDEN),
    "linear_forward": Part("linear-test", linear_forward, linear_forward_cases, ("linear-solution",), LINEAR_FORBIDDEN),
    "linear_backward": Part("linear-test", linear_backward, linear_backward_cases, ("linear-solution",),
                            LINEAR_FORBIDDEN),
    "relu_forward": Part("activation-test", relu_forward, relu_forward_cases, ("activation-solution",),
                         ACTIVATION_FORBIDDEN),
    "relu_backward": Part("activation-test", relu_backward, relu_backward_cases, ("activation-solution",),
                          ACTIVATION_FORBIDDEN),
    "tanh_forward": Part("activation-test", tanh_forward, tanh_forward_cases, ("activation-solution",),
                         ACTIVATION_FORBIDDEN),
    "tanh_backward": Part("activation-test", tanh_backward, tanh_backward_cases, ("activation-solution",),
                          ACTIVATION_FORBIDDEN),
    "log_softmax": Part("logsoftmax-test", log_softmax, log_softmax_cases, ("logsoftmax-solution",),
                        SOFTMAX_FORBIDDEN),
    "cross_entropy": Part("loss-test", cross_entropy, loss_cases, ("loss-solution",), SOFTMAX_FORBIDDEN),
    "cross_entropy_backward": Part("loss-test", cross_entropy_backward, loss_cases, ("loss-solution",),
                                   SOFTMAX_FORBIDDEN),
    "mlp_logits": Part("mlp-test", mlp_logits, mlp_logits_cases, ("mlp-solution",), MLP_FORBIDDEN),
    "mlp_loss_and_grads": Part("mlp-test", mlp_loss_and_grads, mlp_loss_and_grads_cases, ("mlp-solution",),
                               MLP_FORBIDDEN, weight=2.0),
    "sgd_step": Part("sgd-test", sgd_step, sgd_step_cases, ("sgd-solution",), SGD_FORBIDDEN),
    "train_review_classifier": Part("train-test", required_accuracy, train_cases, ("train-solution",),
                                    TRAIN_FORBIDDEN, check=check_training),
}

"""Checks that only make sense for the assignment "word2vec from its parts": its statistical check of
the sampler, its analogy cases, the functions and the measure the notebook shares with the grader, the
judge of the trained vectors, the names it forbids, and which planted bugs it must have. Private, like
the reference beside it (never released: ``grader.course.PRIVATE_FILES``); the checks every assignment
passes are in tests/test_grading_assignments.py."""
from __future__ import annotations

import math

import nbformat
import pytest
import torch

from grader.course import load_assignment, load_bugs, load_reference
from grader.notebook import forbidden_uses, nbgrader_meta
from grader.submissions import solution_answers
from nlpcourse.checking import Case, compare_samples

pytestmark = pytest.mark.grading

ASSIGNMENT = load_assignment("word2vec")
REFERENCE = load_reference(ASSIGNMENT)
BUGS = load_bugs(ASSIGNMENT)
NEGATIVES, SGNS, GRADIENTS, GRADCHECK, CBOW, TRAIN = (
    "negatives-test", "sgns-test", "gradients-test", "gradcheck-test", "cbow-test", "train-test")
#: The answer cells the trainer is made of, in notebook order.
TRAINER_CELLS = ("keep-solution", "pairs-solution", "negatives-solution", "gradients-solution", "train-solution")


def _cell(grade_id: str) -> str:
    nb = nbformat.read(str(ASSIGNMENT.source), as_version=4)
    return next(c.source for c in nb.cells if nbgrader_meta(c).get("grade_id") == grade_id)


def _run_cells(*sources: str) -> dict:
    """The namespace of the notebook's cells ``sources``, run in order after ``import torch``."""
    ns: dict = {}
    exec("import torch", ns)
    for source in sources:
        exec(source, ns)
    return ns


def test_the_bugs_the_assignment_is_about_are_planted():
    """The unstable log-sigmoid (which also breaks CBOW, built on the SGNS loss), three ways of getting the
    noise distribution wrong, the classic slips of a hand-derived gradient and of a gradient check, and a
    trainer that updates only the centre vectors: each loses the trainer's points too when it spoils training."""
    names = " ".join(bug.name for bug in BUGS)
    assert any(bug.loses == {SGNS, CBOW} and "log(sigmoid" in bug.name for bug in BUGS)
    assert sum(NEGATIVES in bug.loses for bug in BUGS) >= 3
    for what in ("sign error on the noise words", "1/B of the batch mean", "forward differences",
                 "every coordinate at once", "only the centre vectors"):
        assert what in names, what
    assert all(TRAIN in bug.loses for bug in BUGS if bug.cell in ("gradients-solution", "train-solution"))
    assert all(bug.loses == {GRADCHECK} for bug in BUGS if bug.cell == "gradcheck-solution")


def test_each_analogy_case_has_one_clear_best_answer():
    """A margin far above rounding, so that a correct answer in float32 cannot pick another word."""
    part = REFERENCE.PARTS["analogy"]
    for case in part.cases(torch.Generator().manual_seed(7), "cpu"):
        E, a, b, c = case.args
        top2 = REFERENCE._analogy_scores(E.double(), a, b, c).topk(2, dim=1).values
        need = 1e-4 if E.dtype == torch.float32 else 1e-9
        assert (top2[:, 0] - top2[:, 1]).min() > need, case.name


@pytest.mark.parametrize("seed", [0, 99])
def test_draws_check_rejects_uniform_and_unigram_samplers(seed):
    """The chi-square check of draw_negatives accepts the reference's draws and rejects, on every case,
    draws from the uniform distribution and from the unsmoothed unigram distribution (power 1)."""
    part = REFERENCE.PARTS["draw_negatives"]
    for case in part.cases(torch.Generator().manual_seed(seed), "cpu"):
        noise, B, K, s = case.args
        assert B * K >= 20000 and len(noise) >= 200, case.name
        g = torch.Generator().manual_seed(s + 1)
        unigram = noise ** (1 / 0.75)  # the noise is counts ** 0.75, normalised
        samplers = {
            "uniform": torch.randint(len(noise), (B, K), generator=g),
            "power 1": torch.multinomial(unigram / unigram.sum(), B * K, replacement=True, generator=g).view(B, K),
        }
        expected = part.reference(*case.args)
        assert compare_samples(noise, expected, (B, K)).ok, case.name
        assert part.check(expected, expected, case, None).ok, case.name
        assert not part.check(expected, expected.int(), case, None).ok, case.name  # ids must be torch.long
        for what, draws in samplers.items():
            verdict = compare_samples(noise, draws, (B, K))
            assert not verdict.ok, f"{case.name}: the {what} sampler passed ({verdict.details})"
            assert not part.check(expected, draws, case, None).ok, case.name


def test_forbidden_names_catch_ready_made_losses():
    """PyTorch's stable log-sigmoid and losses, autograd and the word-vector libraries are refused in the
    answer cells."""
    uses = {
        "log_sigmoid": "import torch.nn.functional as F\ndef log_sigmoid(x):\n    return F.logsigmoid(x)\n",
        "sgns_loss": "def log_sigmoid(x):\n    return -torch.logaddexp(torch.zeros_like(x), -x)\n",
        "cbow_loss": "def cbow_hidden(W_in, context, mask):\n    return torch.embedding_bag(W_in, context)\n",
        "analogy": "from gensim.models import KeyedVectors\n",
    }
    for name, code in uses.items():
        assert forbidden_uses(code, REFERENCE.PARTS[name].forbidden), name
    assert forbidden_uses("loss.backward()", REFERENCE.PARTS["sgns_loss"].forbidden)






def test_the_notebooks_heldout_quality_and_slices_are_the_graders():
    """The notebook's austen_slice and heldout_quality (what the student sees) are what the grader uses to
    judge the trained vectors: the same vocabulary and the same numbers, when the student's noise_distribution
    and log_sigmoid (which the notebook's heldout_quality calls) are right."""
    ns = _run_cells(_cell("train-helpers"))
    ns |= {"noise_distribution": REFERENCE.noise_distribution, "log_sigmoid": REFERENCE.log_sigmoid}
    g = torch.Generator().manual_seed(0)
    for start in (0, 333_333):
        corpus = ns["austen_slice"](start, REFERENCE.TRAIN_TOKENS)
        assert corpus.words == REFERENCE._training_corpus(start, REFERENCE.TRAIN_TOKENS).words
        V = corpus.vocab_size
        W_in, W_out = torch.randn(V, 8, generator=g), torch.randn(V, 8, generator=g)
        mine = ns["heldout_quality"](W_in, W_out, start, REFERENCE.TRAIN_TOKENS, seed=4)
        theirs = REFERENCE.heldout_quality(W_in, W_out, start, REFERENCE.TRAIN_TOKENS, seed=4)
        assert mine == pytest.approx(theirs, rel=1e-12)


def _training_case(seed: int) -> Case:
    return REFERENCE.PARTS["train_sgns"].cases(torch.Generator().manual_seed(seed), "cpu")[0]


def test_training_cases_stay_inside_austen_and_only_run_on_the_cpu():
    part = REFERENCE.PARTS["train_sgns"]
    assert part.cases(torch.Generator().manual_seed(1), "cuda") == []
    words = len(REFERENCE._austen_words())
    for seed in range(5):
        for case in part.cases(torch.Generator().manual_seed(seed), "cpu"):
            start, n_tokens = case.args[:2]
            assert start >= 0 and start + n_tokens + REFERENCE.HELD_OUT_TOKENS <= words, case.name
            assert tuple(case.args[3:]) == REFERENCE.TRAIN_SETTINGS


def test_training_check_rejects_vectors_that_learned_nothing():
    """Zero vectors, random ones, a constant score (the best of them by the loss: 2.70) and scores that know
    only the frequency of the context word all fail; so do wrong shapes, integer tensors and nan."""
    part = REFERENCE.PARTS["train_sgns"]
    case = _training_case(0)
    start, n_tokens, seed, dim = case.args[:4]
    corpus = REFERENCE._training_corpus(start, n_tokens)
    V = corpus.vocab_size
    expected = part.reference(*case.args)
    g = torch.Generator().manual_seed(1)
    constant = math.sqrt(math.log(5) / dim)  # every score -log 5: the best constant
    frequency = torch.log(corpus.counts.double() / corpus.counts.sum()).float()  # score of o = log P(o) + const
    wrong = {
        "zeros": (torch.zeros(V, dim), torch.zeros(V, dim)),
        "random": (torch.randn(V, dim, generator=g), torch.randn(V, dim, generator=g)),
        "constant score": (torch.full((V, dim), constant), torch.full((V, dim), -constant)),
        "frequency only": (torch.ones(V, dim) / dim, frequency[:, None].expand(V, dim) - 1.0),
    }
    for what, got in wrong.items():
        verdict = part.check(expected, got, case, None)
        assert not verdict.ok and "held-out loss" in verdict.message, what
    assert REFERENCE.heldout_quality(*wrong["constant score"], start, n_tokens)[0] < 2.71  # the loss alone is fooled
    bad = {
        "one matrix": (torch.zeros(V, dim),),
        "wrong shape": (torch.zeros(V + 1, dim), torch.zeros(V + 1, dim)),
        "integers": (torch.zeros(V, dim, dtype=torch.long), torch.zeros(V, dim, dtype=torch.long)),
        "nan": (torch.full((V, dim), float("nan")), torch.zeros(V, dim)),
    }
    for what, got in bad.items():
        assert not part.check(expected, got, case, None).ok, what


def test_the_solutions_trainer_passes_the_check():
    """The notebook's own trainer (its solution cells), on a hidden case of the grader: within the thresholds
    with some room (about 2 s of CPU), where the chapter's count-based vectors of the same slice are not."""
    answers = solution_answers("word2vec")
    ns = _run_cells(_cell("train-helpers"), *(answers[c] for c in TRAINER_CELLS))
    part = REFERENCE.PARTS["train_sgns"]
    case = _training_case(2)
    torch.set_num_threads(1)
    got = ns["train_sgns"](*case.args)
    verdict = part.check(part.reference(*case.args), got, case, None)
    assert verdict.ok, verdict.message
    assert verdict.details["loss"] < REFERENCE.MAX_HELDOUT_LOSS - 0.03
    assert verdict.details["accuracy"] > REFERENCE.MIN_PAIR_ACCURACY + 0.015
    assert REFERENCE.baseline_outcome(case, None) < REFERENCE.MIN_PAIR_ACCURACY - 0.02  # PPMI + SVD, same slice


def test_forbidden_names_keep_autograd_out_of_the_hand_derived_parts():
    """sgns_gradients, the gradient check and the trainer may not differentiate with autograd, not even through
    the course's value_and_grads; the trainer may not use torch.optim."""
    grads, check, train = (REFERENCE.PARTS[p].forbidden for p in ("sgns_gradients", "numerical_gradient", "train_sgns"))
    assert forbidden_uses("def sgns_gradients(v, u, n):\n    return value_and_grads(sgns_loss)(v, u, n)[1]\n", grads)
    assert forbidden_uses("loss = sgns_loss(v, u, n)\nloss.backward()\n", grads)
    assert forbidden_uses("torch.autograd.grad(f(x), x)\n", check)
    assert forbidden_uses("opt = torch.optim.SGD([W_in, W_out], lr=0.1)\n", train)
    assert REFERENCE.PARTS["train_sgns"].solution_cells == ("train-solution", "gradients-solution")

"""Checks that only make sense for the assignment "word2vec from its parts": its statistical check of
the sampler, its analogy cases, the names it forbids, and which planted bugs it must have. Private,
like the reference beside it (never released: ``grader.course.PRIVATE_FILES``); the checks every
assignment passes are in tests/test_grading_assignments.py."""
from __future__ import annotations

import pytest
import torch

from grader.course import load_assignment, load_bugs, load_reference
from grader.notebook import forbidden_uses
from nlpcourse.checking import compare_samples

pytestmark = pytest.mark.grading

ASSIGNMENT = load_assignment("word2vec")
REFERENCE = load_reference(ASSIGNMENT)
BUGS = load_bugs(ASSIGNMENT)
NEGATIVES, SGNS, CBOW = "negatives-test", "sgns-test", "cbow-test"


def test_the_bugs_the_assignment_is_about_are_planted():
    """The unstable log-sigmoid (which also breaks CBOW, built on the SGNS loss) and three ways of
    getting the noise distribution wrong."""
    assert any(bug.loses == {SGNS, CBOW} and "log(sigmoid" in bug.name for bug in BUGS)
    assert sum(bug.loses == {NEGATIVES} for bug in BUGS) >= 3


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

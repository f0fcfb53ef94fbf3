"""Checks that only make sense for the assignment "Sequence to sequence with attention": the functions the
notebook shares with the grader, the reference's beam search against exhaustive search, the decoder-step
reference against the chapter's trained model run whole, the judge of the trained parameters, the edge cases
the hidden tests must hold, and which planted bugs it must have. Private, like the reference beside it (never
released: ``grader.course.PRIVATE_FILES``); the checks every assignment passes are in
tests/test_grading_assignments.py."""
from __future__ import annotations

import itertools

import pytest
import torch

from grader.course import load_assignment, load_bugs, load_reference
from grader.submissions import run_solved_cells
from grader.trial import recipe_verdicts
from nlpcourse.checking import Case

pytestmark = pytest.mark.grading

ASSIGNMENT = load_assignment("seq2seq")
REFERENCE = load_reference(ASSIGNMENT)
BUGS = load_bugs(ASSIGNMENT)
TRAINER_CELLS = ("setup", "attention-solution", "decoder-solution", "loss-solution", "train-helpers",
                 "train-solution")


def _run_cells(*grade_ids: str) -> dict:
    return run_solved_cells("seq2seq", *grade_ids)


def _cases(part: str, seed: int = 0) -> list[Case]:
    return REFERENCE.PARTS[part].cases(torch.Generator().manual_seed(seed), "cpu")


def test_the_bugs_the_issue_names_are_planted():
    names = " ".join(bug.name for bug in BUGS)
    for what in ("softmax over the wrong axis", "padding not masked", "masked with 0 instead of -inf",
                 "length penalty inverted", "finished hypotheses keep growing", "fed its own prediction",
                 "BOS/EOS off by one", "BLEU on token ids"):
        assert what in names, what
    assert len(BUGS) >= 8


def test_hidden_cases_hold_the_edge_cases_the_issue_asks_for():
    dot = _cases("dot_attention")
    assert any(c.args[0].shape[1] == 1 for c in dot) and any(c.args[1].shape[1] == 1 for c in dot), "T = 1, S = 1"
    assert any(c.args[0].shape[0] == 1 for c in dot) and any(c.args[3].all() for c in dot), "B = 1, no padding"
    assert {c.args[0].dtype for c in dot} == {torch.float32, torch.float64}
    greedy = _cases("greedy_translate")
    assert any(c.args[4] == 1 for c in greedy), "max_len 1"
    beam = _cases("beam_search")
    assert any(c.args[5] >= (c.args[0]["table"].shape[0] - 2) ** c.args[4] for c in beam), "a beam of every prefix"
    assert {c.args[6] for c in beam} >= {0.0, 1.0}, "alpha 0 and 1"
    for part in ("dot_attention", "additive_attention", "dot_attention_backward", "decoder_step",
                 "masked_cross_entropy", "teacher_forced_nll", "greedy_translate", "beam_search", "corpus_scores"):
        assert any(c.name.startswith("real") for c in _cases(part)), part


def test_notebook_toy_decoder_is_the_graders():
    ns = _run_cells("setup", "toy-model")
    worked = REFERENCE.worked_toy()
    assert all(torch.equal(ns["TOY"][k], worked[k]) for k in worked), "the notebook's TOY is the hidden case's"
    for case in _cases("teacher_forced_nll", 3):
        toy, h0, tgt, _ = case.args
        ours, theirs = REFERENCE.toy_step(toy), ns["toy_step"](toy)
        for t in range(tgt.shape[1]):
            a, b = ours(tgt[:, t], h0), theirs(tgt[:, t], h0)
            assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


def _exhaustive(toy, h0, bos, eos, max_len, alpha):
    step, V, best = REFERENCE.toy_step(toy), toy["table"].shape[0], None
    words = [w for w in range(V) if w not in (REFERENCE.PAD, bos, eos)]
    for n in range(max_len):
        for prefix in itertools.product(words, repeat=n):
            tokens, h, logp = list(prefix) + [eos], h0, 0.0
            prev = bos
            for w in tokens:
                logits, h = step(torch.tensor([prev]), h)
                logp += float(torch.log_softmax(logits[0].double(), -1)[w])
                prev = w
            score = logp / len(tokens) ** alpha
            if best is None or score > best[1]:
                best = (tokens, score)
    return best


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.0, 2.0])
def test_reference_beam_with_every_prefix_is_exhaustive_search(alpha):
    g = torch.Generator().manual_seed(7)
    for _ in range(3):
        toy = REFERENCE._eos_toy(g, 5, 3, -0.5)
        h0 = torch.randn(1, 3, generator=g, dtype=torch.float64)
        tokens, score = REFERENCE.beam_probe(toy, h0, REFERENCE.BOS, REFERENCE.EOS, 4, 10_000, alpha)
        best = _exhaustive(toy, h0, REFERENCE.BOS, REFERENCE.EOS, 4, alpha)
        assert tokens == best[0] and score == pytest.approx(best[1], rel=1e-9)


def test_decoder_step_reference_is_the_trained_models_step():
    """The reference's one step, fed the chapter's trained model's weights, gives the logits the whole model
    computes at that step (teacher forced), so the student's step is held to the model the chapter trains."""
    case = _cases("decoder_step")[-1]
    y_prev, h_prev, memory, mask, params = case.args
    logits, h, weights = REFERENCE.decoder_step(y_prev, h_prev, memory, mask, params)
    assert torch.allclose(weights.sum(-1), torch.ones(len(y_prev)))
    assert (weights[~mask] == 0).all()
    model = REFERENCE._trained()
    q, memory2, mask2, src, tgt = REFERENCE._real_states(torch.Generator().manual_seed(0), 3)
    with torch.no_grad():
        whole = model(src, tgt[:, :-1])  # (B,T,V)
    step_logits, _, _ = REFERENCE.decoder_step(tgt[:, 3], q[:, 2], memory2, mask2, params)
    assert torch.allclose(step_logits, whole[:, 3], atol=1e-4)


def test_the_notebooks_measure_is_the_graders_and_the_judge_rejects_broken_weights():
    """A short run of the solution's trainer (the bar's margin over 20 seeds is OUTCOME's, which
    tests/test_outcomes.py re-measures): the notebook's measure agrees with the grader's; the check rejects
    weights in another layout, nan, a wrong shape and untrained weights; the recipe case accepts the
    solution's weights and not those of one step more."""
    torch.set_num_threads(1)
    ns = _run_cells(*TRAINER_CELLS)
    case = Case("seed", [0, *REFERENCE.TRAIN_SETTINGS])
    expected = REFERENCE.train_translator(*case.args)
    params = ns["train_translator"](10, steps=60)
    assert ns["translation_loss"](params, "valid") == pytest.approx(REFERENCE.test_loss(params, "valid"), rel=1e-4)
    verdict = REFERENCE._check_training(expected, params, case, "cpu")
    assert verdict.details["loss"] < REFERENCE.UNIGRAM_LOSS, verdict
    ok, one_step_more = recipe_verdicts(REFERENCE, "train_translator", ns["train_translator"])
    assert ok.ok and not one_step_more.ok and "not the recipe's" in one_step_more.message, (ok, one_step_more)
    swapped = dict(params, W_c=torch.cat([params["W_c"][:, 64:], params["W_c"][:, :64]], dim=1))
    assert not REFERENCE._check_training(expected, swapped, case, "cpu").ok
    assert "nan" in REFERENCE._check_training(expected, dict(params, W_a=params["W_a"] * float("nan")), case,
                                              "cpu").message
    assert "W_out" in REFERENCE._check_training(expected, dict(params, W_out=params["W_out"].T), case, "cpu").message
    blind = ns["init_params"](10)
    assert not REFERENCE._check_training(expected, blind, case, "cpu").ok

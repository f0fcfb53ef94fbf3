"""Checks that only make sense for the assignment "RNN language models and backpropagation through time": the
functions the notebook shares with the grader, the judge of the trained parameters, the edge cases the hidden
tests must hold, the statistical test of the sampler, and which planted bugs it must have. Private, like the
reference beside it (never released: ``grader.course.PRIVATE_FILES``); the checks every assignment passes are in
tests/test_grading_assignments.py."""
from __future__ import annotations

import pytest
import torch

from grader.course import load_assignment, load_bugs, load_reference
from grader.submissions import run_solved_cells
from grader.trial import recipe_verdicts
from nlpcourse.checking import Case

pytestmark = pytest.mark.grading

ASSIGNMENT = load_assignment("rnnlm")
REFERENCE = load_reference(ASSIGNMENT)
BUGS = load_bugs(ASSIGNMENT)
#: The answer cells the trainer is made of, in notebook order (with the locked cells it needs).
TRAINER_CELLS = ("setup", "lstm-solution", "batching-solution", "clip-solution", "train-helpers", "train-solution")


def _run_cells(*grade_ids: str) -> dict:
    return run_solved_cells("rnnlm", *grade_ids)


def _cases(part: str, seed: int = 0) -> list[Case]:
    return REFERENCE.PARTS[part].cases(torch.Generator().manual_seed(seed), "cpu")


def test_the_bugs_the_issue_names_are_planted():
    names = " ".join(bug.name for bug in BUGS)
    for what in ("forgetting to detach", "clipping each parameter separately", "averaging perplexity per sentence",
                 "targets not shifted by one", "tanh where the input gate needs a sigmoid", "forget gate's sign",
                 "1 - h instead of 1 - h^2", "hidden state reset", "gate order i, f, o, g", "B * T",
                 "temperature applied after the softmax", "top-k keeps k + 1", "dh_next"):
        assert what in names, what
    assert len(BUGS) >= 8
    assert all(bug.loses == {"gradcheck-test"} for bug in BUGS if bug.cell == "gradcheck-solution")


def test_hidden_cases_hold_the_edge_cases_the_issue_asks_for():
    forward = _cases("elman_forward")
    assert any(c.args[0].shape[1] == 1 for c in forward), "T = 1"
    assert any(c.args[0].shape[0] == 1 for c in forward), "B = 1"
    assert any((c.args[1] == 0).all() for c in forward) and any((c.args[1] != 0).any() for c in forward), "h0"
    assert {c.args[0].dtype for c in forward} == {torch.float32, torch.float64}
    lstm = _cases("lstm_forward")
    assert any(c.args[0].shape[1] == 1 for c in lstm) and any(c.args[0].shape[0] == 1 for c in lstm)
    ppl = _cases("masked_perplexity")
    assert any((~c.args[2]).all(dim=1).any() for c in ppl), "an all-padding row"
    sampling = _cases("sample_next")
    top_k = {(c.args[2], c.args[0].shape[-1]) for c in sampling}
    assert any(k == 1 for k, _ in top_k) and any(k == V for k, V in top_k), "top_k = 1 and top_k = V"
    temperatures = [c.args[1] for c in sampling]
    assert min(temperatures) <= 0.01 and max(temperatures) >= 10
    tbptt = _cases("tbptt_forward")
    assert any(c.args[6] == 1 for c in tbptt) and any(c.args[6] >= c.args[0].shape[1] for c in tbptt)
    assert any(c.args[0].shape[1] % c.args[6] for c in tbptt), "a shorter last window"
    for part in ("elman_forward", "elman_bptt", "lstm_forward", "stream_batches", "lm_windows", "tbptt_forward",
                 "clip_global_norm", "masked_perplexity", "sample_next"):
        assert any(c.name.startswith("real") for c in _cases(part)), part


def test_notebook_tbptt_probe_is_the_graders():
    ns = _run_cells("setup", "tbptt-solution", "tbptt-probe")
    for case in _cases("tbptt_forward", 3):
        value, grads = ns["tbptt_probe"](*case.args)
        expected = REFERENCE.tbptt_probe(*case.args)
        assert torch.allclose(value, expected[0]) and all(torch.allclose(a, b) for a, b in zip(grads, expected[1]))


def test_the_statistical_test_accepts_the_reference_and_rejects_a_wrong_temperature():
    check = REFERENCE.PARTS["sample_next"].check
    for case in _cases("sample_next", 5):
        logits, temperature, top_k, n, seed = case.args
        probs = REFERENCE.draw_many(*case.args)
        g = torch.Generator().manual_seed(seed)
        draws = torch.multinomial(probs, n, replacement=True, generator=g)
        assert check(probs, draws, case, "cpu").ok, case.name
        if temperature != 1.0 and temperature < 10:
            wrong = REFERENCE.sampling_probabilities(logits, temperature * 1.5, top_k)
            if wrong.max() < 0.999:
                bad = torch.multinomial(wrong, n, replacement=True, generator=g)
                assert not check(probs, bad, case, "cpu").ok, case.name


def test_the_notebooks_measure_is_the_graders_and_the_judge_rejects_broken_weights():
    """The solution's trainer on one seed, a short run (the bar's margin over 20 seeds is OUTCOME's, which
    tests/test_outcomes.py re-measures): the notebook's char_perplexity, which the student's own run uses,
    gives the grader's number on the validation part; the check rejects weights in another gate order, nan,
    and a wrong shape, with a reason; the recipe case accepts the solution's weights and no others."""
    torch.set_num_threads(1)
    ns = _run_cells(*TRAINER_CELLS)
    case = Case("seed", [0, *REFERENCE.TRAIN_SETTINGS])
    expected = REFERENCE.train_char_lm(*case.args)
    params = ns["train_char_lm"](10, steps=150)
    assert ns["char_perplexity"](params, "valid") == pytest.approx(REFERENCE.char_perplexity(params, "valid"),
                                                                  rel=1e-6)
    verdict = REFERENCE._check_training(expected, params, case, "cpu")
    assert verdict.details["perplexity"] < REFERENCE.UNIGRAM_PERPLEXITY / 2, verdict
    ok, one_step_more = recipe_verdicts(REFERENCE, "train_char_lm", ns["train_char_lm"], steps_at=5)
    assert ok.ok and not one_step_more.ok and "not the recipe's" in one_step_more.message, (ok, one_step_more)
    Hd = params["W_hh"].shape[1]
    order = torch.cat([torch.arange(0, 2 * Hd), torch.arange(3 * Hd, 4 * Hd), torch.arange(2 * Hd, 3 * Hd)])
    swapped = dict(params, **{k: params[k][order] for k in ("W_ih", "W_hh", "b_ih", "b_hh")})
    assert not REFERENCE._check_training(expected, swapped, case, "cpu").ok
    nan = dict(params, W_hh=params["W_hh"] * float("nan"))
    assert "nan" in REFERENCE._check_training(expected, nan, case, "cpu").message
    assert "W_out" in REFERENCE._check_training(expected, dict(params, W_out=params["W_out"].T), case, "cpu").message
    untrained = {k: torch.zeros_like(v) for k, v in params.items()}
    assert not REFERENCE._check_training(expected, untrained, case, "cpu").ok

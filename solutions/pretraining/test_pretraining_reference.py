"""Checks that only make sense for the assignment "Pretraining": the planted bugs the issue names, the edge and
real cases the hidden tests hold, the statistical judge of the masking, the references against the course's
pretrained models and PyTorch's kernels, and the judge of the fine-tuned classifier. Private, like the
reference beside it (never released: ``grader.course.PRIVATE_FILES``); the checks every assignment passes are
in tests/test_grading_assignments.py."""
from __future__ import annotations

import pytest
import torch

from grader.course import load_assignment, load_bugs, load_reference
from grader.submissions import run_solved_cells
from grader.trial import recipe_verdicts
from nlpcourse.checking import Case
from nlpcourse.finetune import slanted_triangular
from nlpcourse.models.bert import mlm_corrupt
from nlpcourse.models.elmo import ScalarMix
from nlpcourse.models.gpt import gpt_loss

pytestmark = pytest.mark.grading

ASSIGNMENT = load_assignment("pretraining")
REFERENCE = load_reference(ASSIGNMENT)
BUGS = load_bugs(ASSIGNMENT)
TRAINER_CELLS = ("setup", "loss-solution", "rates-solution", "causal-solution", "train-helpers", "train-solution")


def _cases(part: str, seed: int = 0) -> list[Case]:
    return REFERENCE.PARTS[part].cases(torch.Generator().manual_seed(seed), "cpu")


def test_the_bugs_the_issue_names_are_planted():
    names = " ".join(bug.name for bug in BUGS)
    for what in ("[CLS] and [SEP] may be chosen", "every chosen piece replaced by [MASK]",
                 "the mean over every position", "segment ids swapped", "without the softmax",
                 "the peak at the wrong step", "targets not shifted"):
        assert what in names, what
    assert len(BUGS) >= 8


def test_hidden_cases_hold_the_edge_and_real_cases():
    masks = _cases("mask_tokens")
    assert any(c.args[2] != 0.15 for c in masks), "a rate other than BERT's"
    assert any(int((c.args[0] >= 5).sum()) == 0 for c in masks), "nothing to choose"
    assert any(c.args[1] <= 10 for c in masks), "a vocabulary where random pieces often equal the original"
    losses = _cases("masked_lm_loss")
    assert any(int((c.args[1] != -100).sum()) == 1 for c in losses), "one labelled position"
    assert any(int((c.args[1] == -100).sum()) == 0 for c in losses), "every position labelled"
    assert any(c.args[1] == [] for c in _cases("pair_input")), "an empty second text"
    assert any(c.args[1] is None for c in _cases("pair_input")), "one text"
    assert any(c.args[0].shape[1] == 1 for c in _cases("bert_embed")), "T = 1"
    assert any(c.args[0].shape[0] == 1 for c in _cases("scalar_mix")), "one layer"
    assert any(c.args[2] != 0 for c in _cases("causal_lm_loss")), "a padding id that is not 0"
    assert any(not float(c.args[1] * c.args[2]).is_integer() for c in _cases("triangular_lr")), (
        "total * cut_frac not whole")
    for part in REFERENCE.PARTS:
        # the shared gradient check (grader/gradcheck.py) differentiates functions, on no data
        if part not in ("layer_rates", "triangular_lr", "fine_tune_reviews", "numerical_gradient", "relative_error"):
            cases = _cases(part)
            assert any(c.name.startswith("real") for c in cases), part
            if part not in ("mask_tokens", "pair_input"):
                dtypes = {t.dtype for c in cases for t in c.args if isinstance(t, torch.Tensor)
                          and t.is_floating_point()}
                assert {torch.float32, torch.float64} <= dtypes, part


def test_masking_judge_accepts_the_rule_on_any_seed_and_names_what_breaks_it():
    case = _cases("mask_tokens")[0]
    ids, vocab, rate = case.args
    judge = REFERENCE._check_masking
    for seed in range(5):
        g = torch.Generator().manual_seed(seed)
        assert judge(None, REFERENCE.mask_tokens(ids, vocab, rate, g), case, "cpu").ok, seed
        assert judge(None, mlm_corrupt(ids, torch.Generator().manual_seed(seed), rate, vocab), case, "cpu").ok
    inputs, labels = REFERENCE.mask_tokens(ids, vocab, rate, torch.Generator().manual_seed(9))
    chosen = labels != -100
    all_masked = torch.where(chosen, torch.full_like(ids, 4), ids)
    assert "[MASK] share" in judge(None, (all_masked, labels), case, "cpu").message
    everywhere = (inputs, ids.clone())
    assert "special piece was chosen" in judge(None, everywhere, case, "cpu").message
    too_many = REFERENCE.mask_tokens(ids, vocab, 0.2, torch.Generator().manual_seed(1))
    assert "chosen share" in judge(None, too_many, case, "cpu").message
    touched = inputs.clone()
    touched[~chosen & (ids >= 5)] = 4
    assert "not chosen was changed" in judge(None, (touched, labels), case, "cpu").message
    assert not judge(None, inputs, case, "cpu").ok, "one tensor is not a pair"
    nothing = next(c for c in _cases("mask_tokens") if int((c.args[0] >= 5).sum()) == 0)
    got = REFERENCE.mask_tokens(*nothing.args)
    assert judge(None, got, nothing, "cpu").ok


def test_references_are_the_course_models_and_pytorch_kernels():
    bert = REFERENCE._bert()
    ids, segments, E_tok, E_pos, E_seg, g, b, eps = _cases("bert_embed")[-1].args
    with torch.no_grad():
        assert torch.allclose(REFERENCE.bert_embed(ids, segments, E_tok, E_pos, E_seg, g, b, eps),
                              bert.embed(ids, segments), atol=1e-5)
    h, W_pool, b_pool, W_out, b_out = _cases("cls_logits")[-1].args
    with torch.no_grad():
        want = bert.pooled(h) @ W_out.T + b_out
    assert torch.allclose(REFERENCE.cls_logits(h, W_pool, b_pool, W_out, b_out), want, atol=1e-5)
    layers, w, gamma = _cases("scalar_mix")[-1].args
    mix = ScalarMix(len(layers))
    with torch.no_grad():
        mix.w.copy_(w)
        mix.gamma.copy_(gamma)
        assert torch.allclose(REFERENCE.scalar_mix(layers, w, gamma), mix(list(layers)), atol=1e-5)
    logits, ids, pad = _cases("causal_lm_loss")[-1].args
    with torch.no_grad():
        want = gpt_loss(REFERENCE._gpt(), ids)  # the course's GPT's own loss: logits of ids[:, :-1]
    assert float(REFERENCE.causal_lm_loss(logits, ids, pad)) == pytest.approx(float(want), rel=1e-5)
    for case in _cases("triangular_lr"):
        t, total, cut_frac, ratio = case.args
        if float(total * cut_frac).is_integer():
            assert REFERENCE.triangular_lr(t, total, cut_frac, ratio) == pytest.approx(
                slanted_triangular(total, cut_frac, ratio)(t)), case.name


def test_gradient_reference_is_zero_where_nothing_is_predicted_and_sums_to_zero():
    for case in _cases("masked_lm_loss_grad"):
        logits, labels = case.args
        grad = REFERENCE.masked_lm_loss_grad(logits, labels)
        assert (grad[labels == -100] == 0).all(), case.name
        assert torch.allclose(grad.sum(-1), torch.zeros(labels.shape, dtype=grad.dtype), atol=1e-6), case.name


def test_the_notebooks_measure_is_the_graders_and_the_judge_rejects_broken_weights():
    """A short run of the solution's trainer (the full run clears the bar in the grading suite, on the grader's
    seed): the notebook's measure agrees with the grader's; the check rejects weights in another layout, nan,
    missing tensors, an untrained head and a constant answer; the recipe case accepts the solution's weights
    and not those of one step more."""
    torch.set_num_threads(1)
    ns = run_solved_cells("pretraining", *TRAINER_CELLS)
    case = Case("seed", [5, *REFERENCE.TRAIN_SETTINGS])
    expected = REFERENCE.fine_tune_reviews(*case.args)
    trained = ns["fine_tune_reviews"](5, steps=100)  # of 250: test AUC 0.710, past the bar already
    verdict = REFERENCE._check_training(expected, trained, case, "cpu")
    assert verdict.ok and verdict.details["auc"] > REFERENCE.MIN_TEST_AUC, verdict
    assert ns["review_quality"](trained, "valid") == pytest.approx(REFERENCE.quality(trained, "valid"), abs=1e-6), (
        "the notebook's measure is the grader's")
    ok, one_step_more = recipe_verdicts(REFERENCE, "fine_tune_reviews", ns["fine_tune_reviews"])
    assert ok.ok and not one_step_more.ok and "not the recipe's" in one_step_more.message, (ok, one_step_more)
    bad_head = dict(trained, W_out=trained["W_out"].T)
    assert "W_out" in REFERENCE._check_training(expected, bad_head, case, "cpu").message
    nan = dict(trained, b_out=trained["b_out"] * float("nan"))
    assert "nan" in REFERENCE._check_training(expected, nan, case, "cpu").message
    missing = dict(trained, gpt={k: v for k, v in list(trained["gpt"].items())[1:]})
    assert "state_dict" in REFERENCE._check_training(expected, missing, case, "cpu").message
    untrained = {"gpt": ns["load_gpt"]().state_dict(), **ns["init_head"](5)}
    assert not REFERENCE._check_training(expected, untrained, case, "cpu").ok, "an untrained head fails"
    constant = dict(trained, W_out=torch.zeros_like(trained["W_out"]), b_out=torch.tensor([1.0, 0.0]))
    verdict = REFERENCE._check_training(expected, constant, case, "cpu")
    assert not verdict.ok and verdict.details["auc"] == 0.5, "always 'rotten' ranks nothing"

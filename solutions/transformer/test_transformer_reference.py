"""Checks that only make sense for the assignment "The Transformer": the planted bugs the issue names, the edge
and real cases the hidden tests hold, the causal mask's judge, the references against the chapter's trained
layers and PyTorch's attention, and the judge of the trained language model. Private, like the reference
beside it (never released: ``grader.course.PRIVATE_FILES``); the checks every assignment passes are in
tests/test_grading_assignments.py."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from grader.course import load_assignment, load_bugs, load_reference
from grader.submissions import run_solved_cells, solved_cells
from nlpcourse.checking import Case, CheckFailure

pytestmark = pytest.mark.grading

ASSIGNMENT = load_assignment("transformer")
REFERENCE = load_reference(ASSIGNMENT)
BUGS = load_bugs(ASSIGNMENT)
TRAINER_CELLS = ("setup", "attention-solution", "mha-solution", "positions-solution", "causal-solution",
                 "block-solution", "loss-solution", "train-helpers", "train-solution")


def _cases(part: str, seed: int = 0) -> list[Case]:
    return REFERENCE.PARTS[part].cases(torch.Generator().manual_seed(seed), "cpu")


def test_the_bugs_the_issue_names_are_planted():
    names = " ".join(bug.name for bug in BUGS)
    for what in ("divided by Dh instead of sqrt(Dh)", "mask applied after the softmax", "heads split on the wrong axis",
                 "layer_norm: over the batch", "positions added after the first block", "cannot see itself",
                 "the next position visible", "smoothing mass given to padding"):
        assert what in names, what
    assert len(BUGS) >= 8


def test_hidden_cases_hold_the_edge_cases_the_issue_asks_for():
    att = _cases("attention")
    assert any(c.args[0].shape[2] == 1 for c in att) and any(c.args[1].shape[2] == 1 for c in att), "T = 1, S = 1"
    assert any(c.args[3] is None for c in att), "no mask"
    assert any(c.args[3] is not None and c.args[3].dim() == 2 for c in att), "a causal (T, T) mask"
    assert {c.args[0].dtype for c in att} == {torch.float32, torch.float64}
    assert any(c.args[3] == 1 for c in _cases("multi_head_attention")), "one head"
    assert any(c.args[-1] != 0 for c in _cases("encode")), "a padding id that is not 0"
    assert any(c.args[-1] != 0 for c in _cases("smoothed_cross_entropy")), "a padding id that is not 0"
    assert any(c.args[2] == 0 for c in _cases("smoothed_cross_entropy")), "eps 0"
    assert any(c.args[0] == 1 for c in _cases("causal_mask")), "T = 1"
    for part in ("attention", "multi_head_attention", "encoder_block", "encode", "smoothed_cross_entropy",
                 "smoothed_cross_entropy_grad"):
        assert any(c.name.startswith("real") for c in _cases(part)), part


def test_causal_judge_names_the_leak_and_the_blind_diagonal():
    case = _cases("causal_mask")[2]
    T = case.args[0]
    right = REFERENCE.causal_mask(T)
    assert REFERENCE._check_causal(right, right.clone(), case, "cpu").ok
    leak = REFERENCE._check_causal(right, torch.ones(T, T, dtype=torch.bool).tril(1), case, "cpu")
    assert not leak.ok and "later position" in leak.message
    blind = REFERENCE._check_causal(right, torch.ones(T, T, dtype=torch.bool).tril(-1), case, "cpu")
    assert not blind.ok and "itself" in blind.message
    assert not REFERENCE._check_causal(right, right.int(), case, "cpu").ok, "an int mask is not a bool mask"


@pytest.mark.parametrize("cut", [1, 3, 6])
def test_reference_language_model_never_sees_the_future(cut):
    """Property: changing the pieces after position ``cut`` never changes the reference model's logits up to it."""
    g = torch.Generator().manual_seed(cut)
    params = {"E": torch.randn(30, 8, generator=g), "final_g": torch.ones(8), "final_b": torch.zeros(8),
              "blocks": [REFERENCE._block_params(g, 8, 16, torch.float32) for _ in range(2)]}
    ids = torch.randint(4, 30, (3, 8), generator=g)
    later = ids.clone()
    later[:, cut + 1:] = torch.randint(4, 30, (3, 7 - cut), generator=g)
    a, b = REFERENCE.lm_logits(params, ids, 2), REFERENCE.lm_logits(params, later, 2)
    assert torch.allclose(a[:, :cut + 1], b[:, :cut + 1], atol=1e-5)
    assert not torch.allclose(a[:, cut + 1:], b[:, cut + 1:])


def test_references_are_pytorchs_own_on_the_chapters_layers():
    """The real block case's reference is the chapter's trained encoder layer run whole, and the attention
    reference's weights give its output (the one F.scaled_dot_product_attention computes)."""
    model = REFERENCE._trained()
    x, params, heads, mask = _cases("encoder_block")[-1].args
    with torch.no_grad():
        whole = model.encoder.layers[1](x, src_key_padding_mask=~mask[:, 0])
    assert torch.allclose(REFERENCE.encoder_block(x, params, heads, mask), whole, atol=1e-5)
    for case in _cases("attention"):
        q, k, v, m = case.args
        out, weights = REFERENCE.attention(q, k, v, m)
        assert torch.allclose(weights @ v, out, atol=1e-4 if q.dtype == torch.float32 else 1e-10)
        if m is not None:
            assert (weights.masked_select(~m.expand_as(weights)) == 0).all()


def test_gradient_reference_is_the_derivative_of_pytorchs_loss():
    logits, targets, eps, pad = _cases("smoothed_cross_entropy_grad")[0].args
    grad = REFERENCE.smoothed_cross_entropy_grad(logits, targets, eps, pad)
    assert (grad[targets == pad] == 0).all()
    bump = torch.zeros_like(logits)
    bump[0, 0, 1] = 1e-6
    numeric = (F.cross_entropy((logits + bump).reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=pad,
                               label_smoothing=eps) -
               F.cross_entropy((logits - bump).reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=pad,
                               label_smoothing=eps)) / 2e-6
    assert float(grad[0, 0, 1]) == pytest.approx(float(numeric), rel=1e-6)


def test_the_solution_clears_the_bar_and_the_judge_rejects_broken_weights():
    torch.set_num_threads(1)
    ns = run_solved_cells("transformer", *TRAINER_CELLS)
    case = Case("seed", [0, *REFERENCE.TRAIN_SETTINGS])
    expected = REFERENCE.train_language_model(*case.args)
    params = ns["train_language_model"](10)
    assert ns["lm_loss"](params) == pytest.approx(REFERENCE.test_loss(params, 4, "valid"), rel=1e-4), (
        "the notebook's measure is the grader's")
    verdict = REFERENCE._check_training(expected, params, case, "cpu")
    assert verdict.ok and verdict.details["loss"] < REFERENCE.baseline_outcome(case, None), verdict
    assert f"assert valid_loss <= {REFERENCE.VALID_MAX}," in solved_cells("transformer")["train-run"], (
        "the notebook's own run is held to VALID_MAX")
    block = params["blocks"][0]
    assert "W_1" in REFERENCE._check_training(expected, dict(params, blocks=[dict(block, W_1=block["W_1"].T)]), case,
                                              "cpu").message
    assert "nan" in REFERENCE._check_training(expected, dict(params, E=params["E"] * float("nan")), case, "cpu").message
    assert not REFERENCE._check_training(expected, ns["init_lm"](10), case, "cpu").ok, "an untrained model fails"


def test_the_notebooks_worked_logits_are_the_references_and_catch_a_post_ln_block():
    """The train-run cell checks lm_forward on small weights before training: its literals are the reference's
    logits (the grader's pieces), the solution passes them, a post-LN block does not."""
    ns = run_solved_cells("transformer", *TRAINER_CELLS)
    worked = solved_cells("transformer")["train-run"].split("# Train with seed 0")[0]  # not the training run
    exec(worked, ns)
    assert torch.allclose(ns["expected"], REFERENCE.lm_logits(ns["small"], ns["ids"], 2)[:, :3, 100:103], atol=1e-4)
    post_ln = next(b for b in BUGS if b.name.startswith("encoder_block: post-LN"))
    block = solved_cells("transformer")["block-solution"].replace(post_ln.old, post_ln.new, 1)
    exec(block, ns)
    with pytest.raises(CheckFailure, match="lm_forward output"):
        exec(worked, ns)


@pytest.mark.gpu
def test_cuda_cases_hold_the_cpu_inputs_and_the_fused_kernels_agree():
    """On CUDA the attention reference runs PyTorch's fused kernels: the same inputs (drawn on the CPU) give the
    CPU's outputs within the cases' tolerances."""
    cpu = REFERENCE.attention_cases(torch.Generator().manual_seed(3), "cpu")
    cuda = REFERENCE.attention_cases(torch.Generator().manual_seed(3), "cuda")
    for a, b in zip(cpu, cuda, strict=True):
        assert b.device == "cuda" and a.name == b.name
        want = REFERENCE.attention(*a.args)
        got = REFERENCE.attention(*[x.to("cuda") if isinstance(x, torch.Tensor) else x for x in b.args])
        for w, g in zip(want, got):
            assert torch.allclose(g.cpu(), w, rtol=a.rtol or 1e-7, atol=a.atol or 1e-9), a.name

"""Arguments left alone: a graded call that changes its inputs in place is caught, in the notebook's visible
test (check_close) and by the grader (run_case records where, the judge fails the case)."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.judging import judge_case
from grader.spec import Part
from nlpcourse.checking import Case, CheckFailure, changed_arguments, check_close, compare, copy_to, run_case


def _nested(seed: int) -> list:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(3, 2, generator=g), {"W": torch.randn(2, 2, generator=g), "b": torch.zeros(2)},
            [torch.arange(4), torch.tensor([float("nan"), 1.0])], 0.5, "text"]


LEAVES = {  # path -> the tensor at that path
    "[0]": lambda a: a[0], "[1]['W']": lambda a: a[1]["W"], "[1]['b']": lambda a: a[1]["b"],
    "[2][0]": lambda a: a[2][0], "[2][1]": lambda a: a[2][1],
}


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), path=st.sampled_from(sorted(LEAVES)))
def test_an_in_place_change_is_found_exactly_where_it_happened(seed, path):
    args = _nested(seed)
    before = copy_to(args, "cpu")
    assert changed_arguments(before, args) == [], "untouched arguments (NaN included) are unchanged"
    LEAVES[path](args).add_(1)
    assert changed_arguments(before, args) == [path]


def test_a_list_or_dict_changed_in_shape_or_a_number_in_a_list_is_found():
    args = _nested(0)
    before = copy_to(args, "cpu")
    args[2].append(torch.ones(1))
    del args[1]["b"]
    assert changed_arguments(before, args) == ["[1]", "[2]"]
    ids = [[2, 7, 3], float("nan")]
    before = copy_to(ids, "cpu")
    assert changed_arguments(before, ids) == []
    ids[0][1] = 8
    assert changed_arguments(before, ids) == ["[0][1]"]


def _clip_in_place(grads, max_norm):
    total = torch.stack([g.norm() for g in grads]).norm()
    return [g.mul_(min(1.0, max_norm / float(total))) for g in grads], total


def _clip(grads, max_norm):
    total = torch.stack([g.norm() for g in grads]).norm()
    return [g * min(1.0, max_norm / float(total)) for g in grads], total


GRADS = [torch.tensor([3.0, 0.0]), torch.tensor([[0.0], [4.0]])]


def test_run_case_records_which_argument_changed_and_leaves_the_case_intact():
    case = Case("two tensors, norm 5", [GRADS, 1.0])
    got = run_case(_clip_in_place, case)
    assert got["ok"] and got["changed"] == ["[0][0]", "[0][1]"]
    assert run_case(_clip, case)["changed"] == []
    assert torch.equal(case.args[0][0], torch.tensor([3.0, 0.0])), "the case's own tensors are never handed out"


def test_the_visible_check_names_the_students_parameter():
    expected = ([torch.tensor([0.6, 0.0]), torch.tensor([[0.0], [0.8]])], torch.tensor(5.0))
    check_close("clip", _clip, [GRADS, 1.0], expected)
    with pytest.raises(CheckFailure, match=r"clip: changed its argument grads\[0\] in place"):
        check_close("clip", _clip_in_place, [GRADS, 1.0], expected)


def test_the_grader_fails_a_call_that_changed_its_arguments_whatever_it_returned():
    part = Part("clip-test", _clip, lambda g, device: [])
    case = Case("two tensors, norm 5", [GRADS, 1.0])
    assert judge_case(part, case, run_case(_clip, case)).ok
    verdict = judge_case(part, case, run_case(_clip_in_place, case))
    assert not verdict.ok and "changed its argument grads[0] in place" in verdict.message, verdict


def test_a_failed_comparison_prints_enough_digits_to_show_the_difference():
    """Never "expected -0.394902, got -0.394902" (issue 55): as many digits as it takes, from 6."""
    from nlpcourse.checking import differing

    assert differing(-0.3949021, -0.3949024) == ("-0.3949021", "-0.3949024")
    assert differing(1.5, 2.5) == ("1.5", "2.5")
    v = compare(torch.tensor([-0.39490212]), torch.tensor([-0.39490235]), rtol=1e-9, atol=0.0)
    expected, got = v.message.split("expected ")[1].split(" (rtol")[0].split(", got ")
    assert not v.ok and expected != got, v.message
    v = compare(-0.394902112, -0.394902335, rtol=1e-9, atol=0.0)
    assert not v.ok and v.message == "output: expected -0.3949021, got -0.3949023", v.message

"""The grader's verdicts, apart from the kernels that produce what they judge: the hidden-test cases drawn
from a seed (:func:`make_cases`), and each recorded call judged against the reference (:func:`judge_case`,
:func:`judge_part`). It needs torch and the course's own modules only, so that the same judges run where no
Jupyter stack is installed (``scripts/gpu_check.py`` on a GPU machine)."""
from __future__ import annotations

import hashlib
from collections.abc import Collection

import torch

from nlpcourse.checking import Case, Verdict, argument_name, compare, copy_to
from nlpcourse.device import available_devices, full_float32


def make_cases(reference, seed: int, parts: Collection[str] | None = None) -> dict[str, list[Case]]:
    """The hidden-test inputs, from the seed: the grader regenerates them rather than trusting a file
    the kernel could have rewritten. ``parts``: those parts' only (default all); a part's cases are the same
    whichever others are drawn beside it."""
    cases: dict[str, list[Case]] = {}
    for name, part in reference.PARTS.items():
        if parts is not None and name not in parts:
            continue
        part_seed = seed + int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)
        # a generator per device, seeded alike: the CUDA cases hold the same inputs as the CPU cases
        cases[name] = [c for dev in available_devices()
                       for c in part.cases(torch.Generator().manual_seed(part_seed), str(dev.type))]
    return cases


def judge_case(part, case: Case, got: dict) -> Verdict:
    """The verdict on one recorded call (see nlpcourse.checking.run_case): it raised, it changed its
    arguments in place, or what it returned against the reference's output on the same case."""
    if not got.get("ok"):
        return Verdict(False, f"raised {str(got.get('error', 'an error'))[:300]}")
    changed = got.get("changed") or []
    if changed:
        where = argument_name(part.reference, changed[0])
        return Verdict(False, f"changed its argument {where} in place; the function must leave its inputs as they "
                              f"were (compute new tensors)")
    expected = _reference_output(part, case)
    dev = case.device if set(got.get("devices", [])) - {case.device} else None
    if part.check is None:
        return compare(expected, got.get("value"), "output", case.rtol, case.atol, device=dev)
    try:
        return part.check(expected, got.get("value"), case, dev)
    except Exception as exc:  # noqa: BLE001 - an output the check cannot read is a wrong output
        return Verdict(False, f"output cannot be checked: {type(exc).__name__}: {str(exc)[:200]}")


def judge_part(part, cases: list[Case], recording: list[dict] | None, why_missing: str) -> tuple[float, str]:
    """Fraction of cases passed and a message naming the first failing case."""
    if recording is None:
        return 0.0, why_missing
    if len(recording) != len(cases):
        return 0.0, f"recorded {len(recording)} results for {len(cases)} cases"
    passed, first_failure = 0, ""
    for case, got in zip(cases, recording):
        verdict = judge_case(part, case, got)
        if verdict.ok:
            passed += 1
        else:
            first_failure = first_failure or f"case '{case.name}' ({case.device}): {verdict.message}"
    frac = passed / len(cases) if cases else 0.0
    msg = f"{passed}/{len(cases)} cases passed" + (f"; first failure: {first_failure}" if first_failure else "")
    return frac, msg


def _reference_output(part, case: Case):
    """The reference's output for the case, on the CPU. It runs on the CPU, or where the case's tensors are
    for a part that asks (``Part.same_device``), there in full float32: cuDNN's convolutions use TF32 (a
    10-bit mantissa) by default on CUDA, far coarser than the float32 tolerances of the cases."""
    if not part.same_device or case.device == "cpu":
        return part.reference(*copy_to(case.args, "cpu"))
    with full_float32():
        return copy_to(part.reference(*copy_to(case.args, case.device)), "cpu")


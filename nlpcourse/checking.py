"""Checking student functions against expected values: the comparisons behind every assignment's tests.

Two users:

* **Visible tests** in a released notebook call :func:`check_close` with one small worked case whose
  expected value is written in the test; a failure says what to fix (shape, dtype, where the error is).
* **Hidden tests** only :func:`record` what the student's function returns on inputs the grader chose.
  The grader compares the recording with its reference in its own process (:func:`compare`), so
  nothing a notebook does to itself (patching ``torch.allclose``, this module, IPython) changes a grade.

This module holds no reference implementation of any exercise.
"""
from __future__ import annotations

import inspect
import math
import os
import re
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .errors import CourseError, ReturnTypeError

#: Environment variables the grader sets in the kernel it runs a submission in.
INPUTS_ENV = "NLPCOURSE_GRADER_INPUTS"  # folder with the cases, one file <part>.pt per part
OUTPUTS_ENV = "NLPCOURSE_GRADER_OUTPUTS"  # folder where record() writes <part>.pt

#: Default tolerances (rtol, atol) by dtype: looser for lower precision.
TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-9),
    torch.float32: (1e-4, 1e-5),
    torch.float16: (1e-2, 1e-3),
    torch.bfloat16: (2e-2, 1e-2),
}


@dataclass
class Case:
    """One input case: positional arguments for the function under test."""

    name: str  # what the case is, e.g. "random 4x3" or "large logits"
    args: list[Any]  # positional arguments: tensors, numbers, dicts of tensors
    device: str = "cpu"  # device the tensor arguments live on
    rtol: float | None = None  # tolerance override for this case
    atol: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "args": self.args, "device": self.device, "rtol": self.rtol, "atol": self.atol}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Case:
        return cls(d["name"], list(d["args"]), d.get("device", "cpu"), d.get("rtol"), d.get("atol"))


@dataclass
class Verdict:
    """The result of comparing one output with its expected value."""

    ok: bool  # True if the output matches
    message: str = ""  # what is wrong, without revealing the expected implementation
    details: dict[str, Any] = field(default_factory=dict)  # numbers behind the message


def _map(obj: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, Mapping):
        return {k: _map(v, fn) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map(v, fn) for v in obj) if not hasattr(obj, "_fields") else [_map(v, fn) for v in obj]
    return obj


def copy_to(obj: Any, device: str | torch.device) -> Any:
    """Return ``obj`` with every tensor inside it (also in tuples, lists and dicts) replaced by a fresh
    detached copy on ``device``, so that the function under test gets its own tensors and the caller's
    stay intact whatever it does to them. To *move* tensors, use :func:`nlpcourse.device.to_device`."""
    return _map(obj, lambda t: t.detach().to(device).clone())


def _where(index: int, shape: Sequence[int]) -> tuple[int, ...]:
    out = []
    for size in reversed(list(shape)):
        out.append(index % size)
        index //= size
    return tuple(reversed(out))


def _compare_tensor(expected: torch.Tensor, got: Any, what: str, rtol: float | None, atol: float | None,
                    device: str | None) -> Verdict:
    if not isinstance(got, torch.Tensor):
        return Verdict(False, f"{what}: expected a tensor of shape {tuple(expected.shape)}, got {type(got).__name__}")
    if device is not None and got.device.type != torch.device(device).type:
        return Verdict(False, f"{what}: expected a tensor on {device} (where the inputs were), got one on {got.device}")
    if tuple(got.shape) != tuple(expected.shape):
        return Verdict(False, f"{what}: expected shape {tuple(expected.shape)}, got {tuple(got.shape)}",
                       {"expected_shape": tuple(expected.shape), "got_shape": tuple(got.shape)})
    if expected.is_floating_point() != got.is_floating_point():
        return Verdict(False, f"{what}: expected dtype {expected.dtype}, got {got.dtype}")
    e = expected.detach().cpu()
    g = got.detach().cpu()
    if not e.is_floating_point():
        bad = (e != g).flatten().nonzero()
        if len(bad):
            i = int(bad[0])
            return Verdict(False, f"{what}: {len(bad)} of {e.numel()} values differ; first at index "
                                  f"{_where(i, e.shape)}: expected {e.flatten()[i].item()}, "
                                  f"got {g.flatten()[i].item()}")
        return Verdict(True)
    r0, a0 = TOLERANCES.get(e.dtype, TOLERANCES[torch.float32])
    rtol = r0 if rtol is None else rtol
    atol = a0 if atol is None else atol
    e64, g64 = e.double(), g.double()
    finite_mismatch = torch.isfinite(e64) != torch.isfinite(g64)
    if finite_mismatch.any():
        i = int(finite_mismatch.flatten().nonzero()[0])
        return Verdict(False, f"{what}: non-finite value at index {_where(i, e.shape)}: expected "
                              f"{e64.flatten()[i].item():.6g}, got {g64.flatten()[i].item():.6g} "
                              "(overflow, or the log of 0?)",
                       {"index": _where(i, e.shape)})
    diff = (e64 - g64).abs().nan_to_num(0.0)  # equal infinities count as equal
    both_inf = torch.isinf(e64) & torch.isinf(g64) & (e64 != g64)
    if both_inf.any():
        i = int(both_inf.flatten().nonzero()[0])
        return Verdict(False, f"{what}: infinity of the wrong sign at index {_where(i, e.shape)}")
    diff = torch.where(torch.isinf(e64), torch.zeros_like(diff), diff)
    if e.numel() == 0:
        return Verdict(True)
    allowed = atol + rtol * e64.abs().nan_to_num(0.0, posinf=0.0, neginf=0.0)
    excess = diff - allowed
    i = int(excess.flatten().argmax())
    max_abs = diff.max().item()
    rel = (diff / e64.abs().clamp_min(1e-12)).max().item()
    if excess.flatten()[i] > 0 or math.isnan(max_abs):
        n_bad = int((excess > 0).sum())
        shown = differing(e64.flatten()[i].item(), g64.flatten()[i].item())
        return Verdict(False, f"{what}: {n_bad} of {e.numel()} values off; max abs error {max_abs:.3g}, "
                              f"max rel error {rel:.3g}; worst at index {_where(i, e.shape)}: expected "
                              f"{shown[0]}, got {shown[1]} "
                              f"(rtol={rtol:g}, atol={atol:g}, {e.dtype})",
                       {"max_abs": max_abs, "max_rel": rel, "index": _where(i, e.shape)})
    return Verdict(True, details={"max_abs": max_abs, "max_rel": rel})


def differing(expected: float, got: float, least: int = 6) -> tuple[str, str]:
    """Two numbers printed with as many significant digits as it takes to tell them apart (at least ``least``,
    at most 17): never "expected -0.394902, got -0.394902"."""
    for digits in range(least, 18):
        e, g = f"{expected:.{digits}g}", f"{got:.{digits}g}"
        if e != g:
            return e, g
    return f"{expected!r}", f"{got!r}"


def compare(expected: Any, got: Any, what: str = "output", rtol: float | None = None, atol: float | None = None,
            device: str | None = None) -> Verdict:
    """Compare ``got`` with ``expected``: tensors (shape, dtype kind, device, values with dtype-aware
    tolerances), numbers, and tuples / lists / dicts of these, recursively."""
    if isinstance(expected, torch.Tensor):
        return _compare_tensor(expected, got, what, rtol, atol, device)
    if isinstance(expected, Mapping):
        if not isinstance(got, Mapping):
            return Verdict(False, f"{what}: expected a dict with keys {sorted(expected)}, got {type(got).__name__}")
        missing = sorted(set(expected) - set(got))
        if missing:
            return Verdict(False, f"{what}: missing keys {missing}")
        for k in expected:
            v = compare(expected[k], got[k], f"{what}[{k!r}]", rtol, atol, device)
            if not v.ok:
                return v
        return Verdict(True)
    if isinstance(expected, (list, tuple)):
        if not isinstance(got, (list, tuple)):
            return Verdict(False, f"{what}: expected a tuple of {len(expected)}, got {type(got).__name__}")
        if len(got) != len(expected):
            return Verdict(False, f"{what}: expected {len(expected)} values, got {len(got)}")
        for k, (e, g) in enumerate(zip(expected, got)):
            v = compare(e, g, f"{what}[{k}]", rtol, atol, device)
            if not v.ok:
                return v
        return Verdict(True)
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if not isinstance(got, (int, float)) or isinstance(got, bool):
            return Verdict(False, f"{what}: expected a number, got {type(got).__name__}")
        r, a = (rtol or 1e-6), (atol or 1e-8)
        if math.isclose(float(expected), float(got), rel_tol=r, abs_tol=a):
            return Verdict(True)
        return Verdict(False, "{}: expected {}, got {}".format(what, *differing(float(expected), float(got))))
    return Verdict(expected == got, "" if expected == got else f"{what}: expected {expected!r}, got {got!r}")


def compare_samples(probs: torch.Tensor, got: Any, shape: Sequence[int], what: str = "draws",
                    alpha: float = 1e-6, device: str | None = None) -> Verdict:
    """Random draws: ``got`` must be an integer tensor of ``shape`` whose values are ids in
    ``0 .. len(probs)-1``, distributed as ``probs`` (a chi-square goodness-of-fit test; categories
    expected fewer than 5 times are pooled). With seeded draws the verdict is reproducible; a correct
    sampler fails with probability ``alpha``."""
    if not isinstance(got, torch.Tensor):
        return Verdict(False, f"{what}: expected a tensor of shape {tuple(shape)}, got {type(got).__name__}")
    if device is not None and got.device.type != torch.device(device).type:
        return Verdict(False, f"{what}: expected a tensor on {device} (where the inputs were), got one on {got.device}")
    if tuple(got.shape) != tuple(shape):
        return Verdict(False, f"{what}: expected shape {tuple(shape)}, got {tuple(got.shape)}",
                       {"expected_shape": tuple(shape), "got_shape": tuple(got.shape)})
    if got.is_floating_point() or got.is_complex() or got.dtype == torch.bool:
        return Verdict(False, f"{what}: expected integer ids (torch.long), got dtype {got.dtype}")
    p = probs.detach().cpu().double().flatten()
    p = p / p.sum()
    ids = got.detach().cpu().long().flatten()
    V, n = len(p), ids.numel()
    if n == 0:
        return Verdict(True)
    if int(ids.min()) < 0 or int(ids.max()) >= V:
        bad = ids[(ids < 0) | (ids >= V)][0].item()
        return Verdict(False, f"{what}: id {bad} is out of range 0..{V - 1}")
    observed = torch.bincount(ids, minlength=V).double()
    impossible = (p == 0) & (observed > 0)
    if impossible.any():
        i = int(impossible.nonzero()[0])
        return Verdict(False, f"{what}: drew id {i} {int(observed[i])} times, but its probability is 0")
    expected = p * n
    big = expected >= 5
    o = torch.cat([observed[big], observed[~big].sum().reshape(1)])
    e = torch.cat([expected[big], expected[~big].sum().reshape(1)])
    keep = e > 0
    o, e = o[keep], e[keep]
    dof = len(e) - 1
    if dof < 1:
        return Verdict(True)
    stat = ((o - e) ** 2 / e).sum()
    p_value = torch.special.gammaincc(torch.tensor(dof / 2, dtype=torch.float64), stat / 2).item()
    if p_value < alpha:
        ratio = observed / expected.clamp_min(1e-12)
        i = int(torch.where(expected >= 5, (observed - expected).abs() / expected.clamp_min(1e-12).sqrt(),
                            torch.zeros_like(ratio)).argmax())
        return Verdict(False, f"{what}: the {n} draws do not follow the expected distribution (chi-square "
                              f"{stat.item():.1f} on {dof} degrees of freedom, p = {p_value:.2g}); "
                              f"the worst id is {i}: "
                              f"expected about {expected[i].item():.1f} draws (probability {p[i].item():.4g}), "
                              f"got {int(observed[i])}",
                       {"p_value": p_value, "chi2": stat.item(), "dof": dof})
    return Verdict(True, details={"p_value": p_value, "chi2": stat.item(), "dof": dof})


def value_and_grads(fn: Callable[..., torch.Tensor]) -> Callable[..., tuple[torch.Tensor, list[torch.Tensor]]]:
    """Wrap a function that returns a scalar tensor, so that it returns ``(value, grads)``: ``grads[i]``
    is the gradient of the value with respect to the ``i``-th floating-point tensor argument, computed
    by autograd *through* ``fn`` (zeros where the value does not depend on it). Tests use it to check a
    loss and its gradients at once, on the student's function and on the reference alike."""

    def wrapped(*args: Any) -> tuple[torch.Tensor, list[torch.Tensor]]:
        leaves = [a.detach().clone().requires_grad_(True) if isinstance(a, torch.Tensor) and a.is_floating_point()
                  else a for a in args]
        wrt = [a for a in leaves if isinstance(a, torch.Tensor) and a.requires_grad]
        with torch.enable_grad():
            value = fn(*leaves)
            if not isinstance(value, torch.Tensor) or value.numel() != 1 or not value.is_floating_point():
                shape = f" of shape {tuple(value.shape)}" if isinstance(value, torch.Tensor) else ""
                raise ReturnTypeError(f"{getattr(fn, '__name__', 'the function')} must return a scalar float "
                                      f"tensor, got {type(value).__name__}{shape}")
            grads = torch.autograd.grad(value, wrt, allow_unused=True) if value.requires_grad else [None] * len(wrt)
        return value.detach(), [torch.zeros_like(w) if g is None else g.detach() for w, g in zip(wrt, grads)]

    wrapped.__name__ = f"value_and_grads({getattr(fn, '__name__', 'fn')})"
    return wrapped


class CheckFailure(CourseError, AssertionError):
    """A visible test failed; the message says what to fix."""


def check_close(part: str, fn: Callable, args: Sequence[Any], expected: Any, hint: str = "",
                rtol: float | None = None, atol: float | None = None) -> None:
    """Visible test: call ``fn(*args)`` and compare with ``expected``; raise :class:`CheckFailure`
    with a message naming the part, the difference and a hint."""
    given = copy_to(list(args), "cpu")
    before = copy_to(given, "cpu")
    try:
        got = fn(*given)
    except NotImplementedError:
        raise CheckFailure(f"{part}: not implemented yet") from None
    changed = changed_arguments(before, given)
    if changed:  # the grader fails this too: a caller's tensors must come back as they were given
        raise CheckFailure(f"{part}: changed its argument {argument_name(fn, changed[0])} in place; leave the "
                           f"inputs as they were and compute new tensors")
    verdict = compare(expected, got, f"{part} output", rtol, atol)
    if not verdict.ok:
        raise CheckFailure(verdict.message + (f"\nHint: {hint}" if hint else ""))


def check_samples(part: str, fn: Callable, args: Sequence[Any], probs: torch.Tensor, shape: Sequence[int],
                  hint: str = "") -> None:
    """Visible test of a sampler: ``fn(*args)`` returns ids of ``shape`` drawn from ``probs``
    (see :func:`compare_samples`)."""
    try:
        got = fn(*copy_to(list(args), "cpu"))
    except NotImplementedError:
        raise CheckFailure(f"{part}: not implemented yet") from None
    verdict = compare_samples(probs, got, shape, f"{part} output")
    if not verdict.ok:
        raise CheckFailure(verdict.message + (f"\nHint: {hint}" if hint else ""))


def check_shape_of(part: str, fn: Callable, args: Sequence[Any], shapes: Any) -> None:
    """Visible test: the output of ``fn(*args)`` has the given shape(s) (a tuple, or a nest of tuples)."""
    try:
        got = fn(*copy_to(list(args), "cpu"))
    except NotImplementedError:
        raise CheckFailure(f"{part}: not implemented yet") from None

    def walk(s, g, what):
        if isinstance(s, Mapping):
            if not isinstance(g, Mapping):
                raise CheckFailure(f"{what}: expected a dict with keys {sorted(s)}, got {type(g).__name__}")
            for k in s:
                if k not in g:
                    raise CheckFailure(f"{what}: missing key {k!r}")
                walk(s[k], g[k], f"{what}[{k!r}]")
        elif isinstance(s, list):
            if not isinstance(g, (list, tuple)) or len(g) != len(s):
                raise CheckFailure(f"{what}: expected {len(s)} values, got {type(g).__name__}")
            for k, (a, b) in enumerate(zip(s, g)):
                walk(a, b, f"{what}[{k}]")
        else:
            if not isinstance(g, torch.Tensor):
                raise CheckFailure(f"{what}: expected a tensor of shape {s}, got {type(g).__name__}")
            if tuple(g.shape) != tuple(s):
                raise CheckFailure(f"{what}: expected shape {tuple(s)}, got {tuple(g.shape)}")

    walk(shapes, got, f"{part} output")


# ------------------------------------------------------------------ hidden tests: record, then compare outside


def load_cases(folder: str | Path, part: str | None = None) -> dict[str, list[Case]]:
    """Read the cases the grader wrote (tensors and plain data only: nothing executable), one file per part
    (``folder/<part>.pt``): every part's, or only ``part``'s (a hidden test reads only its own)."""
    folder = Path(folder)
    files = [folder / f"{part}.pt"] if part is not None else sorted(folder.glob("*.pt"))
    return {f.stem: [Case.from_dict(c) for c in torch.load(f, map_location="cpu", weights_only=True)]
            for f in files if f.is_file()}


def save_cases(folder: str | Path, cases: Mapping[str, Sequence[Case]]) -> None:
    """Write the cases, one file per part (``folder/<part>.pt``), so that each hidden test reads only its own."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for part, cs in cases.items():
        torch.save([copy_to(c.to_dict(), "cpu") for c in cs], folder / f"{part}.pt")


def _same(before: torch.Tensor, after: Any) -> bool:
    """Whether ``after`` is still the tensor ``before`` copied: its shape, dtype and values (NaN equal to NaN)."""
    if not isinstance(after, torch.Tensor) or after.shape != before.shape or after.dtype != before.dtype:
        return False
    after = after.detach().to(before.device)
    return bool(((after == before) | (after != after) & (before != before)).all())


def changed_arguments(before: Any, after: Any, path: str = "") -> list[str]:
    """Where ``after`` (the arguments after a call) differs from ``before`` (their copy from before it):
    paths such as ``"[1]['W']"``, the leading index the argument's position. Tensors, numbers and strings
    are compared, and the lists, tuples and dicts that hold them; anything else is taken as unchanged."""
    if isinstance(before, torch.Tensor):
        return [] if _same(before, after) else [path]
    if isinstance(before, (bool, int, float, str)):
        same = type(after) is type(before) and (after == before or after != after and before != before)
        return [] if same else [path]
    if isinstance(before, Mapping):
        if not isinstance(after, Mapping) or set(after) != set(before):
            return [path]
        return [p for k in before for p in changed_arguments(before[k], after[k], f"{path}[{k!r}]")]
    if isinstance(before, (list, tuple)):
        if not isinstance(after, (list, tuple)) or len(after) != len(before):
            return [path]
        return [p for i, (b, a) in enumerate(zip(before, after)) for p in changed_arguments(b, a, f"{path}[{i}]")]
    return []


def argument_name(fn: Callable, path: Any) -> str:
    """``"[0][1]"`` -> ``"grads[1]"``: a path of :func:`changed_arguments`, its leading position named after
    ``fn``'s parameter."""
    path = str(path)[:120]
    match = re.match(r"\[(\d+)\]", path)
    try:
        names = [p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):  # a builtin without a signature
        names = []
    if match is None or int(match[1]) >= len(names):
        return path or "(the arguments)"
    return names[int(match[1])] + path[match.end():]


def run_case(fn: Callable, case: Case) -> dict[str, Any]:
    """Call ``fn`` on one case; return ``{"ok": True, "value": ..., "changed": [...]}`` (the value moved to
    CPU, with the device it came from, and where the call changed its arguments, see
    :func:`changed_arguments`) or ``{"ok": False, "error": "..."}`` (the exception, without any traceback)."""
    args = copy_to(case.args, case.device)
    before = copy_to(args, case.device)
    try:
        value = fn(*args)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt are a failed case too
        if isinstance(exc, KeyboardInterrupt):
            raise
        if isinstance(exc, NotImplementedError) and not str(exc):
            return {"ok": False, "error": "NotImplementedError: not implemented yet"}
        return {"ok": False, "error": f"{type(exc).__name__}: {str(exc)[:300]}" if str(exc) else type(exc).__name__}
    devices = set()
    _map(value, lambda t: devices.add(t.device.type))
    try:
        value = _map(value, lambda t: t.detach().cpu().clone())
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "error": f"cannot read the output: {type(exc).__name__}: {exc}"}
    return {"ok": True, "value": value, "devices": sorted(devices), "changed": changed_arguments(before, args)}


def record(part: str, fn: Callable) -> None:
    """Hidden test: run ``fn`` on the grader's cases for ``part`` and save what it returns.

    Outside the grader (no ``$NLPCOURSE_GRADER_INPUTS``) this only says so: the verdict is never
    reached inside the notebook.
    """
    inputs = os.environ.get(INPUTS_ENV)
    outdir = os.environ.get(OUTPUTS_ENV)
    if not inputs or not outdir:
        print(f"[{part}] hidden tests run when the grader grades this notebook")
        return
    cases = load_cases(inputs, part).get(part, [])
    results = []
    for case in cases:
        if case.device != "cpu" and not torch.cuda.is_available():
            results.append({"ok": False, "error": f"device {case.device} not available in the kernel"})
            continue
        results.append(run_case(fn, case))
    path = Path(outdir) / f"{part}.pt"
    tmp = path.with_name(path.name + ".tmp")
    try:
        torch.save(results, tmp)
        tmp.replace(path)
    except Exception:  # noqa: BLE001 - an output that cannot be saved is graded as missing
        traceback.print_exc(limit=0)
    print(f"[{part}] recorded {len(results)} cases for the grader")

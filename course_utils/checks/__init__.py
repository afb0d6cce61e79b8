"""Exercise checkers: run a learner's function on several cases and say what is wrong.

A notebook exercise gives a stub that raises ``NotImplementedError`` and a checker from
``course_utils.checks.nbNN`` (one module per notebook). Each checker is a call to
:func:`check_function` with the cases chosen for that exercise, edge cases included::

    check_function(my_softmax, reference=softmax, cases=[Case(([2.0, 1.0, 0.1],), "basic")])

It prints one verdict per case (expected against got, shape, dtype, or the exception raised) and
returns a :class:`CheckResult` that tests can assert on. A stub still raising
``NotImplementedError`` is reported as "not attempted yet", not as a failure.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

NOT_ATTEMPTED = "not attempted"
PASSED = "passed"
FAILED = "failed"
_MISSING = object()


@dataclass(frozen=True)
class Case:
    """One call to try: ``func(*args, **kwargs)``.

    The expected value is ``expected`` when given, else ``reference(*args, **kwargs)``.
    ``raises`` says the call must raise that exception type instead (an edge case such as an
    empty input).
    """

    args: tuple
    label: str = ""
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    expected: Any = _MISSING
    raises: type[BaseException] | None = None


@dataclass(frozen=True)
class CaseResult:
    """The verdict on one case: ``passed`` and a message that says what was wrong."""

    label: str
    passed: bool
    message: str


@dataclass
class CheckResult:
    """What a checker found: ``status`` is "passed", "failed" or "not attempted"."""

    name: str
    status: str
    cases: list[CaseResult]

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    @property
    def n_passed(self) -> int:
        return sum(case.passed for case in self.cases)

    def __repr__(self) -> str:
        if self.status == NOT_ATTEMPTED:
            return f"{self.name}: not attempted yet (replace `raise NotImplementedError` with code)"
        return f"{self.name}: {self.status} ({self.n_passed}/{len(self.cases)} cases)"


def _as_array(value: Any) -> np.ndarray | None:
    """A NumPy view of numbers (array, tensor, list, scalar), or None for anything else."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch.Tensor (torch not imported)
        value = value.detach().cpu().numpy()
    if isinstance(value, (np.ndarray, np.generic, int, float, complex, bool, list)):
        try:
            array = np.asarray(value)
        except ValueError:  # ragged nested lists
            return None
        return array if array.dtype != object else None
    return None


def _short(array: np.ndarray) -> str:
    with np.printoptions(precision=4, suppress=True, threshold=12, edgeitems=3):
        return np.array2string(np.asarray(array), separator=", ")


def compare(got: Any, expected: Any, *, rtol: float = 1e-6, atol: float = 1e-9) -> str | None:
    """``None`` when ``got`` matches ``expected``, else a sentence saying how it differs.

    Numbers are compared with ``np.allclose(got, expected, rtol, atol)`` (NaN equals NaN) after
    checking the kind of object, the shape and the dtype; tuples and dicts item by item.
    """
    if isinstance(expected, tuple):
        if not isinstance(got, tuple) or len(got) != len(expected):
            kind = type(got).__name__
            return f"expected a tuple of {len(expected)} items, got {kind} {got!r:.80}"
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            problem = compare(g, e, rtol=rtol, atol=atol)
            if problem:
                return f"item {i}: {problem}"
        return None
    if isinstance(expected, dict):
        if not isinstance(got, dict) or set(got) != set(expected):
            return f"expected a dict with keys {sorted(expected)}, got {got!r:.80}"
        for key in expected:
            problem = compare(got[key], expected[key], rtol=rtol, atol=atol)
            if problem:
                return f"key {key!r}: {problem}"
        return None
    want = _as_array(expected)
    if want is None:  # strings, None, other objects: plain equality
        return None if got == expected else f"expected {expected!r}, got {got!r}"
    have = _as_array(got)
    if have is None:
        return f"expected a number or array, got {type(got).__name__} {got!r:.80}"
    for library in ("torch", "numpy"):
        wants = type(expected).__module__.startswith(library)
        if wants and not type(got).__module__.startswith(library) and want.ndim > 0:
            return f"expected a {library} array, got {type(got).__module__}.{type(got).__name__}"
    if have.shape != want.shape:
        return f"shape: expected {want.shape}, got {have.shape}"
    if want.dtype.kind == "f" and want.ndim > 0 and have.dtype != want.dtype:
        return f"dtype: expected {want.dtype}, got {have.dtype}"
    if want.dtype.kind in "fc" or have.dtype.kind in "fc":
        if have.dtype.kind not in "biufc":
            return f"expected numbers, got dtype {have.dtype}"
        ok = np.allclose(have, want, rtol=rtol, atol=atol, equal_nan=True)
        if not ok:
            diff = np.abs(have.astype(np.float64) - want.astype(np.float64))
            worst = np.nan if np.isnan(diff).all() else np.nanmax(diff)
            return (
                f"values differ: expected {_short(want)}, got {_short(have)}"
                f" (max |error| {worst:.3g})"
            )
        return None
    if not np.array_equal(have, want):
        return f"values differ: expected {_short(want)}, got {_short(have)}"
    return None


def check_function(
    func: Callable[..., Any],
    *,
    cases: Sequence[Case],
    reference: Callable[..., Any] | None = None,
    name: str | None = None,
    rtol: float = 1e-6,
    atol: float = 1e-9,
    verbose: bool = True,
) -> CheckResult:
    """Run ``func`` on every case, print a verdict per case, and return a :class:`CheckResult`.

    Each case's arguments are deep-copied before the call, so a function that changes its
    input in place cannot spoil the next case. ``NotImplementedError`` from the stub means
    "not attempted yet".
    """
    if not callable(func):
        raise TypeError(f"func must be a function, got {type(func).__name__}")
    if not cases:
        raise ValueError("cases must hold at least one Case")
    name = name or getattr(func, "__name__", "function")
    results: list[CaseResult] = []
    for number, case in enumerate(cases, 1):
        label = case.label or f"case {number}"
        args, kwargs = copy.deepcopy(case.args), copy.deepcopy(dict(case.kwargs))
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                got = func(*args, **kwargs)
        except NotImplementedError:
            return CheckResult(name, NOT_ATTEMPTED, [])
        except Exception as error:  # the learner's bug, reported rather than raised
            if case.raises is not None and isinstance(error, case.raises):
                results.append(CaseResult(label, True, f"raised {type(error).__name__}"))
            else:
                wanted = f" (expected {case.raises.__name__})" if case.raises else ""
                message = f"raised {type(error).__name__}: {error}{wanted}"
                results.append(CaseResult(label, False, message))
            continue
        if case.raises is not None:
            message = f"should raise {case.raises.__name__}, returned {got!r:.60}"
            if caught:
                message += f" (it warned: {caught[0].message})"
            results.append(CaseResult(label, False, message))
            continue
        if case.expected is not _MISSING:
            expected = case.expected
        elif reference is not None:
            expected = reference(*copy.deepcopy(case.args), **copy.deepcopy(dict(case.kwargs)))
        else:
            raise ValueError(f"case {label!r} has no expected value and no reference was given")
        problem = compare(got, expected, rtol=rtol, atol=atol)
        if problem and caught:
            problem += f" (it warned: {caught[0].message})"
        results.append(CaseResult(label, problem is None, problem or "ok"))
    status = PASSED if all(r.passed for r in results) else FAILED
    result = CheckResult(name, status, results)
    if verbose:
        for r in results:
            verdict = f"  ✓ {r.label}" if r.passed else f"  ✗ {r.label}: {r.message}"
            print(verdict)
    return result

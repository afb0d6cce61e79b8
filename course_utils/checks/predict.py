"""The verdict on a *predict* exercise: a number the learner wrote down before running anything."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from course_utils.checks.compare import _describe
from course_utils.checks.results import CaseResult, CheckResult, Status


def _shown(value: float) -> str:
    """A number as a learner wrote it: whole numbers from 10,000 on with thousands separators
    (``1,666,243``, not ``1.66624e+06``), others to six significant digits."""
    value = float(value)
    if value.is_integer() and 1e4 <= abs(value) < 1e16:
        return f"{int(value):,}"
    return f"{value:.6g}"


_misses: dict[str, int] = {}  # misses per predict exercise in this session: the second shows


def check_number(
    answer: Any,
    expected: float,
    *,
    name: str,
    label: str,
    explanation: str,
    hint: str,
    mistakes: Mapping[float, str] | None = None,
    rtol: float = 0.05,
    atol: float = 0.0,
    show_answer: bool = False,
    verbose: bool = True,
) -> CheckResult:
    """A *predict* exercise's verdict: ``answer`` (a number the learner wrote down) within
    ``rtol``/``atol`` of ``expected``; ``...`` (the stub) means "not attempted yet".

    A pass prints the ``explanation``. A first miss holds the right value back: it says whether
    the answer is too high or too low and names the mistake when the answer matches a value of
    ``mistakes`` (value -> what that answer did; the nearest within the tolerance), else gives
    the ``hint``. A further miss of the same exercise, or ``show_answer=True``, also prints the
    right value and the explanation.
    """
    reveal = f"  the answer: {'about ' if rtol else ''}{_shown(expected)}. {explanation}"
    if answer is Ellipsis:
        if verbose and show_answer:
            print(reveal)
        return CheckResult(name, Status.NOT_ATTEMPTED, [], todo="replace `...` with your number")
    if isinstance(answer, (bool, np.bool_)) or not isinstance(answer, numbers.Real):
        message = f"expected a number, got {_describe(answer)}"  # int, float, Fraction, NumPy
    elif not math.isfinite(answer):
        message = f"expected a finite number, got {answer}"
    elif abs(float(answer) - expected) <= atol + rtol * abs(expected):
        message = ""
    else:
        value = float(answer)
        near = [(abs(value - wrong), text) for wrong, text in (mistakes or {}).items()
                if abs(value - wrong) <= atol + rtol * abs(wrong)]
        why = min(near, key=lambda pair: pair[0])[1] if near else hint
        side = "too high" if value > expected else "too low"
        message = f"{_shown(value)} is {side}: {why}"
    passed = not message
    if not passed:
        _misses[name] = _misses.get(name, 0) + 1
    result = CheckResult(name, Status.PASSED if passed else Status.FAILED,
                         [CaseResult(label, passed, message or "ok")])
    if verbose:
        print(f"  ✓ {label}. {explanation}" if passed else f"  ✗ {label}: {message}")
        if not passed and (show_answer or _misses[name] > 1):
            print(reveal)
    return result

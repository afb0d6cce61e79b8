"""Checkers for notebook 16's exercises (scaffolded by tools/notebooks.py: replace them with
the notebook's own)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.checks import Case, CheckResult, check_function, check_number, exercise


def _mean(x: np.ndarray) -> float:
    return float(np.mean(x))


@exercise("practice")
def check_mean(func: Callable[[np.ndarray], float]) -> CheckResult:
    """``func(x)`` must return the mean of ``x`` as a float; ValueError when it is empty."""
    cases = [
        Case((np.array([1.0, 2.0, 3.0, 6.0]),), "[1, 2, 3, 6] -> 3.0"),
        Case((np.array([5]),), "one integer: [5] -> 5.0"),
        Case((np.array([-2.0, 2.0]),), "entries that cancel: [-2, 2] -> 0.0"),
        Case((np.array([]),), "an empty array has no mean", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=_mean, name="mean")


@exercise("predict")
def check_sum_to_1000(answer: float) -> CheckResult:
    """``answer`` must be 1 + 2 + ... + 1000 = 500500, exactly."""
    return check_number(answer, 500500, name="sum_to_1000", label="1 + 2 + ... + 1000",
                        rtol=0.0, explanation="500 pairs (1 + 1000, 2 + 999, ...) of 1001 each: "
                        "1000 * 1001 / 2 = 500500")


def _sum_of_squares(n: int) -> int:
    return sum(k * k for k in range(1, n + 1))


@exercise("derive")
def check_sum_of_squares(func: Callable[[int], int]) -> CheckResult:
    """``func(n)`` must return 1 + 4 + ... + n² as an integer for n = 1 ... 200."""
    cases = [Case((n,), f"n = {n}") for n in (1, 2, 3, 10, 57, 200)]
    return check_function(func, cases=cases, reference=_sum_of_squares, name="sum_of_squares",
                          exact_dtype=True)

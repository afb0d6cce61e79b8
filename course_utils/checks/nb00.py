"""Checker for notebook 00's warm-up exercise."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.checks import Case, CheckResult, check_function, exercise


def _unit_vector(v: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(v)
    if norm == 0:
        raise ValueError("v must not be the zero vector")
    return v / norm


@exercise("practice")
def check_unit_vector(func: Callable[[np.ndarray], np.ndarray], *,
                      verbose: bool = True) -> CheckResult:
    """``func(v)`` must return v / ||v||₂ as float64 and raise ValueError for the zero vector;
    ``verbose=False`` prints nothing (the verdicts are in the returned result)."""
    cases = [
        Case((np.array([3.0, 4.0]),), "3-4-5 triangle: [3, 4] -> [0.6, 0.8]"),
        Case((np.array([0.0, 0.0, 2.0]),), "already along an axis"),
        Case((np.array([-1.0, 1.0, -1.0, 1.0]),), "negative entries"),
        Case((np.array([1, 2, 2]),), "integers in, floats out: [1, 2, 2] -> [1/3, 2/3, 2/3]"),
        Case((np.zeros(3),), "the zero vector has no direction", raises=ValueError),
    ]
    mistakes = {"it divides by the sum of the entries, not by the length": lambda v: v / v.sum()}
    return check_function(func, cases=cases, reference=_unit_vector, name="unit_vector",
                          mistakes=mistakes, verbose=verbose)

"""Checkers for notebook 07: finite differences, a numerical gradient and dCE/dlogits."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.calculus import derivative, numerical_gradient
from course_utils.checks import Case, CheckResult, check_function
from course_utils.softmax import softmax


def _square(x):
    return x**2


def _cube(x):
    return x**3


def check_central_difference(func: Callable[[Callable, float, float], float]) -> CheckResult:
    """``func(f, x, h)`` must return (f(x + h) - f(x - h)) / (2h)."""
    cases = [
        Case((_square, 3.0, 1e-3), "x^2 at 3 (exactly 6 for a central difference)"),
        Case((np.sin, 1.0, 1e-3), "sin at 1 (about cos 1)"),
        Case((np.exp, 0.0, 1e-2), "exp at 0 with a big step"),
        Case((_cube, -2.0, 1e-3), "x^3 at -2"),
    ]
    return check_function(
        func, cases=cases, reference=derivative, name="central_difference", rtol=1e-9
    )


def _sum_of_squares(v):
    return float(np.sum(v**2))


def _quadratic_form(m):
    return float(np.sum(m * np.array([[1.0, 2.0], [3.0, 4.0]]) * m))


def _log_sum_exp(v):
    return float(np.log(np.sum(np.exp(v))))


def check_numerical_gradient(func: Callable[[Callable, np.ndarray], np.ndarray]) -> CheckResult:
    """``func(f, x)`` must return the central-difference gradient of f at x, shaped like x."""
    cases = [
        Case((_sum_of_squares, np.array([3.0, 4.0])), "x^2 + y^2 at (3, 4) -> (6, 8)"),
        Case((_sum_of_squares, np.array([3, 4])), "integers in: a step of 1e-5 needs floats"),
        Case((_log_sum_exp, np.array([2.0, 1.0, 0.1])), "logsumexp: its gradient is softmax"),
        Case((_quadratic_form, np.array([[1.0, -1.0], [0.5, 2.0]])), "a 2x2 input: keep the shape"),
    ]
    return check_function(
        func, cases=cases, reference=numerical_gradient, name="numerical_gradient", rtol=1e-6,
        atol=1e-8,
    )


def _ce_grad(z: np.ndarray, target: int) -> np.ndarray:
    return softmax(z) - np.eye(len(z))[target]


def check_cross_entropy_grad(func: Callable[[np.ndarray, int], np.ndarray]) -> CheckResult:
    """``func(z, target)`` must return d(-log softmax(z)[target]) / dz = softmax(z) - onehot."""
    cases = [
        Case((np.array([2.0, 1.0, 0.1]), 0), "z = [2, 1, 0.1], target 0"),
        Case((np.array([2.0, 1.0, 0.1]), 2), "the same logits, target 2"),
        Case((np.array([0.0, 0.0, 0.0, 0.0]), 1), "equal logits: p is uniform"),
        Case((np.array([1000.0, 0.0, -1000.0]), 1), "huge logits: use a stable softmax"),
    ]
    return check_function(func, cases=cases, reference=_ce_grad, name="cross_entropy_grad")

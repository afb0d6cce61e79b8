"""Checkers for notebook 07: the best finite-difference step, a numerical gradient, dCE/dlogits."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.calculus import numerical_gradient
from course_utils.checks import Case, CheckResult, check_function
from course_utils.softmax import softmax


def _best_step(fx: float, f3x: float, eps: float) -> float:
    return (3 * eps * abs(fx) / abs(f3x)) ** (1 / 3)


def check_best_step(func: Callable[[float, float, float], float]) -> CheckResult:
    """``func(fx, f3x, eps)``: the step h that minimises section 3's error model of the central
    difference, E(h) = h²/6 · |f'''(x)| + ε·|f(x)|/h, which is h = (3ε|f(x)| / |f'''(x)|)^(1/3).
    """
    eps64, eps32 = float(np.finfo(np.float64).eps), float(np.finfo(np.float32).eps)
    e, e10 = float(np.e), float(np.exp(10.0))
    cases = [
        Case((e, e, eps64), "e^x at 1 in float64: about 1e-5"),
        Case((e10, e10, eps64), "e^x at 10: only the ratio |f| / |f'''| matters"),
        Case((10.0, -60_000.0, eps64), "1/x at 0.1: f''' = -6/x^4 is negative, use its size"),
        Case((float(np.sin(4.0)), float(-np.cos(4.0)), eps64), "sin at 4: f(x) is negative"),
        Case((8.0, 6.0, eps64), "x^3 at 2"),
        Case((e, e, eps32), "e^x at 1 in float32: a much larger step"),
    ]
    return check_function(func, cases=cases, reference=_best_step, name="best_step", rtol=1e-9)


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

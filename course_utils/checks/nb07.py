"""Checkers for notebook 07: the best step, integer input, tanh's slope, the largest rate."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from course_utils.calculus import numerical_gradient
from course_utils.checks import Case, CheckResult, check_function, check_number, exercise


def _step(fx: Any, f3x: Any, eps: Any, *, factor: float = 3, root: float = 3) -> Any:
    return (factor * eps * abs(fx) / abs(f3x)) ** (1 / root)


@exercise("derive")
def check_best_step(func: Callable[[float, float, float], float]) -> CheckResult:
    """``func(fx, f3x, eps)``: the s minimising E(s) = s²/6 · |f'''| + ε|f|/s, (3ε|f| /
    |f'''|)^(1/3), for floats or arrays; steps of 9 and 5e-16 lie outside a search's bracket."""
    e64, e32, e = float(np.finfo(np.float64).eps), float(np.finfo(np.float32).eps), float(np.e)
    cases = [Case((e, e, e64), "e^x at 1 in float64: about 1e-5"),
             Case((np.exp(10.0), np.exp(10.0), e64), "e^x at 10: only |f| / |f'''| matters"),
             Case((10.0, -60_000.0, e64), "1/x at 0.1: f''' = -6/x^4 is negative, use its size"),
             Case((float(np.sin(4.0)), float(-np.cos(4.0)), e64), "sin at 4: f(x) is negative"),
             Case((8.0, 6.0, e64), "x^3 at 2"),
             Case((e, e, e32), "e^x at 1 in float32: a much larger step"),
             Case((1.0, 1e-18, e64), "e^(x/10^6) at 0: f''' = 1e-18, a step of about 9"),
             Case((1e-30, 6.0, e64), "x^3 at 1e-10: f = 1e-30, a step of about 5e-16"),
             Case((np.array([e, 10.0, 8.0]), np.array([e, -60_000.0, 6.0]),
                   np.array([e64, e64, e32])), "three at once, as NumPy arrays: a step each")]
    mistakes = {
        "6ε where 3ε belongs: it sets the two terms equal, or drops the 2 of d(s²)/ds = 2s":
            lambda *args: _step(*args, factor=6),
        "the 3 that differentiating s²/6 leaves is missing": lambda *a: _step(*a, factor=1),
        "a square root: E'(s) = 0 is an equation in s³": lambda *args: _step(*args, root=2),
        "it is ε^(1/3) alone: |f| / |f'''| is left out": lambda fx, f3x, eps: eps ** (1 / 3),
        "a negative f or f''' gives a complex root: use their sizes":
            lambda fx, f3x, eps: (3 * eps * fx / f3x) ** (1 / 3)}
    return check_function(func, cases=cases, reference=_step, name="best_step", rtol=1e-9,
                          atol=0, mistakes=mistakes, shortcuts=("minimize_scalar", "minimize",
                          "brentq", "bisect", "newton", "root_scalar", "fsolve", "argmin"))


def _gradient(f: Callable, x: np.ndarray, s: float = 1e-5, copy: bool = True,
              put_back: bool = True, central: bool = True) -> np.ndarray:
    """The central difference; with a flag off, a known mistake (the given function: no copy)."""
    x = np.array(x, dtype=np.float64) if copy else x
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        x[i] += s
        up = f(x)
        x[i] -= s * (1 + central)
        grad[i] = (up - f(x)) / (s * (1 + central))
        x[i] += s * central * put_back
    return grad


def _squares(v): return float(np.sum(v**2))
def _product(v): return float(v[0] * v[1])
def _log_sum_exp(v): return float(np.log(np.sum(np.exp(v))))
def _plane(v): return float(3 * v[0] + 4 * v[1] + v[0] * v[1])
def _quadratic(m): return float(np.sum(m * np.array([[1.0, 2.0], [3.0, 4.0]]) * m))


@exercise("debug")
def check_numerical_gradient(func: Callable[[Callable, np.ndarray], np.ndarray]) -> CheckResult:
    """``func(f, x)``: the central-difference gradient of f at x (integers too), shaped like x."""
    cases = [Case((_squares, np.array([3.0, 4.0])), "x1^2 + x2^2 at (3, 4) -> (6, 8)"),
             Case((_squares, np.array([3, 4])), "integers in: a step of 1e-5 needs floats"),
             Case((_plane, np.array([0, 0])), "3 x1 + 4 x2 + x1 x2 at the integers (0, 0)"),
             Case((_product, np.array([3.0, 4.0])),
                  "x1·x2 at (3, 4) -> (4, 3): put each entry back before nudging the next"),
             Case((_log_sum_exp, np.array([2.0, 1.0, 0.1])), "logsumexp: its gradient is softmax"),
             Case((_quadratic, np.array([[1.0, -1.0], [0.5, 2.0]])), "a 2x2 input: keep the shape"),
             Case((_quadratic, np.array([[1, -1], [0, 2]])), "a 2x2 integer input")]
    mistakes = {  # the first that gives the same numbers names the answer's mistake
        "each entry is left 1e-5 below where it started: put it back before nudging the next":
            lambda f, x: _gradient(f, x, put_back=False),
        "still the bug: an integer array cannot hold x + 1e-5 (3 + 1e-5 is stored as 3), so the "
        "step was 0 or a whole 1: work on a float copy of x":
            lambda f, x: _gradient(f, x, copy=False, put_back=False),
        "a forward difference (f(x + s) - f(x)) / s: the central one is far more accurate":
            lambda f, x: _gradient(f, x, central=False)}
    return check_function(func, cases=cases, reference=numerical_gradient, mistakes=mistakes,
                          name="numerical_gradient", rtol=1e-6, atol=1e-8,
                          shortcuts=("numerical_gradient", "approx_fprime"))


@exercise("derive")
def check_tanh_slope(func: Callable[[np.ndarray], np.ndarray]) -> CheckResult:
    """``func(a)``: the slope of tanh where tanh(x) = a, 1 - a², to 1e-12 and without a warning;
    at a = ±1 (a saturated unit) it is 0, and no x gives that a."""
    cases = [Case((np.array(a),), label) for a, label in [
        ([0.0], "a = 0 (x = 0): tanh is steepest there, slope 1"),
        ([0.5, -0.5], "a = ±0.5: tanh is odd, so its slope is the same at ±a"),
        ([0.9, 0.99, -0.999], "a near ±1: tanh flattens, the slope goes to 0"),
        (np.tanh(np.linspace(-3, 3, 13)), "13 points x from -3 to 3"),
        (np.tanh([20.0, -20.0, 0.3]), "a = ±1 exactly, as tanh(±20) is in float64: slope 0, "
                                      "and no x to go back to")]]
    mistakes = {"1 + a²: the quotient rule subtracts u·v'": lambda a: 1 + a**2,
                "1 - a: the square is missing": lambda a: 1 - a,
                "a (1 - a) is the sigmoid's slope, not tanh's": lambda a: a * (1 - a),
                "twice the slope: one factor 2 too many": lambda a: 2 * (1 - a**2)}
    return check_function(func, cases=cases, reference=lambda a: (1 - a) * (1 + a),
                          name="tanh_slope", rtol=1e-12, atol=1e-15, no_warnings=True,
                          mistakes=mistakes, shortcuts=("tanh", "arctanh", "cosh", "log", "exp"))


@exercise("predict")
def check_largest_lr(answer: Any, *, show_answer: bool = False) -> CheckResult:
    """The learning rate above which gradient descent on x1² + 5 x2² diverges: 2 / 10 = 0.2."""
    return check_number(
        answer, 0.2, name="largest_lr", rtol=0.01, show_answer=show_answer,
        label="the largest learning rate for x1^2 + 5 x2^2",
        explanation="Each step multiplies x2 by 1 - 10·lr and x1 by 1 - 2·lr (the gradient is "
                    "(2 x1, 10 x2)); the path shrinks only while both factors lie in (-1, 1): "
                    "lr < 2/10 = 0.2 for x2, lr < 1 for x1. The steep direction sets the limit: at "
                    "lr = 0.2 x2 flips sign at full size forever, and above it grows.",
        hint="follow x2 alone: a step multiplies it by a fixed number; when does that shrink it?",
        mistakes={1.0: "there x1's factor 1 - 2·lr reaches -1; the steep x2 runs away long before",
                  0.1: "it sends x2 to 0 in one step: the fastest rate, not the largest one",
                  0.18: "section 6 showed that it still converges: the limit lies higher"})

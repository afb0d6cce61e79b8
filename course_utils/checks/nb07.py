"""Checkers for notebook 07: the best finite-difference step, a numerical gradient that works on
integers and leaves its input alone, the slope of tanh from its output, and the largest learning
rate gradient descent survives on a stretched bowl."""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

import numpy as np

from course_utils.calculus import numerical_gradient
from course_utils.checks import (
    Case,
    CheckResult,
    RuleBroken,
    check_function,
    check_number,
    exercise,
    lines_run,
    names_used,
    wraps_answer,
)


def _best_step(fx: float, f3x: float, eps: float) -> float:
    return (3 * eps * abs(fx) / abs(f3x)) ** (1 / 3)


_SEARCH_RULE = (
    "the rule is calculus, not a search: {name} was called; set E'(s) = 0 and solve for s"
)
_SEARCHES = ("minimize_scalar", "minimize", "fminbound", "brent", "golden", "brentq", "brenth",
             "bisect", "ridder", "newton", "root_scalar", "root", "fsolve", "least_squares")


@contextmanager
def _forbidden_search(func: Callable) -> Any:
    """Replace SciPy's minimisers and root finders by functions that raise :class:`RuleBroken`
    naming themselves, for as long as the learner's code runs: in ``scipy.optimize`` and among
    the names ``func`` sees (``from scipy.optimize import minimize_scalar`` in the cell)."""
    import scipy.optimize as optimize

    originals = {name: getattr(optimize, name) for name in _SEARCHES if hasattr(optimize, name)}
    names = getattr(func, "__globals__", {})
    imported = [(key, value) for key, value in names.items()
                if any(value is original for original in originals.values())]

    def forbid(label: str) -> Callable[..., Any]:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise RuleBroken(_SEARCH_RULE.format(name=label))
        return refuse

    try:
        for name in originals:
            setattr(optimize, name, forbid(f"scipy.optimize.{name}"))
        for key, value in imported:
            names[key] = forbid(f"scipy.optimize.{value.__name__}")
        yield
    finally:
        for name, original in originals.items():
            setattr(optimize, name, original)
        for key, value in imported:
            names[key] = value


_GRID_NAMES = ("linspace", "logspace", "geomspace", "arange", "argmin", "argmax", "searchsorted")
_GRID_RULE = (
    "the rule is calculus, not a search: your code uses {name}, which builds or searches a grid "
    "of trial steps; set E'(s) = 0 and solve for s"
)

_LOOP_LIMIT = 12  # lines of the learner's code per call: a formula needs a few, a search runs on
_LOOP_RULE = (
    "it ran {count} lines of your code for one answer: a loop or a search (Newton's method, "
    "bisection, a grid) walking towards s; the rule is calculus: solve E'(s) = 0 on paper and "
    "return that formula"
)


@exercise("derive")
def check_best_step(func: Callable[[float, float, float], float]) -> CheckResult:
    """``func(fx, f3x, eps)``: the step s that minimises section 3's error model of the central
    difference, E(s) = s²/6 · |f'''(x)| + ε·|f(x)|/s, which is s = (3ε|f(x)| / |f'''(x)|)^(1/3);
    SciPy's minimisers and root finders raise :class:`RuleBroken` while ``func`` runs, and so
    does a hand-written search (more than a dozen lines of the learner's code run per call); code
    that names a function which builds or searches a grid (linspace, logspace, geomspace, arange,
    argmin, argmax, searchsorted) is refused by that name; a case of NumPy arrays wants one step
    per entry."""
    grid = sorted(names_used(func) & set(_GRID_NAMES))

    @wraps_answer(func)
    def answer(fx: float, f3x: float, eps: float) -> Any:
        if grid:
            raise RuleBroken(_GRID_RULE.format(name=grid[0]))
        with _forbidden_search(func):
            result, count = lines_run(func, fx, f3x, eps)
        if count > _LOOP_LIMIT:
            raise RuleBroken(_LOOP_RULE.format(count=count))
        return result

    eps64, eps32 = float(np.finfo(np.float64).eps), float(np.finfo(np.float32).eps)
    e, e10 = float(np.e), float(np.exp(10.0))
    cases = [
        Case((e, e, eps64), "e^x at 1 in float64: about 1e-5"),
        Case((e10, e10, eps64), "e^x at 10: only the ratio |f| / |f'''| matters"),
        Case((10.0, -60_000.0, eps64), "1/x at 0.1: f''' = -6/x^4 is negative, use its size"),
        Case((float(np.sin(4.0)), float(-np.cos(4.0)), eps64), "sin at 4: f(x) is negative"),
        Case((8.0, 6.0, eps64), "x^3 at 2"),
        Case((e, e, eps32), "e^x at 1 in float32: a much larger step"),
        Case((np.array([e, 10.0, 8.0]), np.array([e, -60_000.0, 6.0]),
              np.array([eps64, eps64, eps32])),
             "three functions at once, as NumPy arrays: one step per entry"),
    ]
    return check_function(answer, cases=cases, reference=_best_step, name="best_step", rtol=1e-9)


def _sum_of_squares(v):
    return float(np.sum(v**2))


def _quadratic_form(m):
    return float(np.sum(m * np.array([[1.0, 2.0], [3.0, 4.0]]) * m))


def _product(v):
    return float(v[0] * v[1])


def _log_sum_exp(v):
    return float(np.log(np.sum(np.exp(v))))


_INTEGER_STEP = (
    "integer input: the answer came back as integers ({dtype}, {values}). An integer array cannot "
    "hold x + s: storing 3 + 1e-5 truncates it to 3 (and 3 - 2e-5 to 2), so the step was 0 or a "
    "whole 1, never s = 1e-5: work on a float copy of x"
)


@exercise("debug")
def check_numerical_gradient(func: Callable[[Callable, np.ndarray], np.ndarray]) -> CheckResult:
    """``func(f, x)`` must return the central-difference gradient of f at x, shaped like x, for
    integer x too, without changing x."""

    @wraps_answer(func)
    def answer(f: Callable, x: np.ndarray) -> Any:
        integer_in = isinstance(x, np.ndarray) and x.dtype.kind in "iu"
        got = func(f, x)
        if integer_in and isinstance(got, np.ndarray) and got.dtype.kind in "iub":
            values = str(got.tolist())
            raise RuleBroken(_INTEGER_STEP.format(dtype=got.dtype, values=values))
        return got

    cases = [
        Case((_sum_of_squares, np.array([3.0, 4.0])), "x1^2 + x2^2 at (3, 4) -> (6, 8)"),
        Case((_sum_of_squares, np.array([3, 4])), "integers in: a step of 1e-5 needs floats"),
        Case((_product, np.array([3.0, 4.0])),
             "x1·x2 at (3, 4) -> (4, 3): put each entry back before nudging the next"),
        Case((_log_sum_exp, np.array([2.0, 1.0, 0.1])), "logsumexp: its gradient is softmax"),
        Case((_quadratic_form, np.array([[1.0, -1.0], [0.5, 2.0]])), "a 2x2 input: keep the shape"),
        Case((_quadratic_form, np.array([[1, -1], [0, 2]])), "a 2x2 integer input"),
    ]
    return check_function(
        answer, cases=cases, reference=numerical_gradient, name="numerical_gradient", rtol=1e-6,
        atol=1e-8,
    )


_TANH_RULE = (
    "the rule is a formula in a alone (+ - * / and powers): {name} was called, which goes back to "
    "x (or to tanh) instead of writing the slope in a"
)
_TANH_E_RULE = (
    "the rule is a formula in a alone (+ - * / and powers): your code uses e, and a power of e is "
    "exp, which goes back to x (or to tanh) instead of writing the slope in a"
)


@contextmanager
def _forbidden_tanh() -> Any:
    """Replace the functions that would give tanh's slope without a derivation (tanh and its
    relatives, the sigmoid and logit, a shifted and scaled tanh and its inverse, tan and the
    inverse trigonometric functions, which give tanh and arctanh of imaginary numbers, and exp and
    log, which lead back from a to x) by ones that raise :class:`RuleBroken` naming themselves, for
    as long as the learner's code runs."""
    import scipy.special as special
    import torch

    exp_log = ("exp", "expm1", "log", "log1p")
    trig = ("tan", "arctan", "arcsin", "arccos")
    targets = [(np, name) for name in ("tanh", "arctanh", "cosh", "sinh", "arcsinh", "arccosh",
                                       "gradient", "exp2", "log2", "log10", *trig, *exp_log)]
    targets += [(math, name) for name in ("tanh", "atanh", "cosh", "sinh", "asinh", "acosh",
                                          "tan", "atan", "asin", "acos", *exp_log)]
    targets += [(torch, name) for name in ("tanh", "atanh", "arctanh", "cosh", "sinh", "asinh",
                                           "arcsinh", "acosh", "arccosh", "sigmoid", "logit",
                                           "atan", "asin", "acos", *trig, *exp_log)]
    targets += [(torch.special, name) for name in ("expit", "logit")]
    targets += [(special, name) for name in ("expit", "logit", "log_expit")]
    targets += [(np.emath, name) for name in ("log", "log2", "log10", "logn", "arctanh")]
    saved = [(module, name, getattr(module, name)) for module, name in targets]

    def forbid(label: str) -> Callable[..., Any]:
        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise RuleBroken(_TANH_RULE.format(name=label))
        return refuse

    def label(module: Any, name: str) -> str:
        return f"numpy.emath.{name}" if module is np.emath else f"{module.__name__}.{name}"

    try:
        for module, name, _ in saved:
            setattr(module, name, forbid(label(module, name)))
        yield
    finally:
        for module, name, original in saved:
            setattr(module, name, original)


_TANH_NAMES = ("tanh", "arctanh", "atanh", "cosh", "sinh", "arcsinh", "asinh", "arccosh", "acosh",
               "sigmoid", "expit", "logit", "log_expit", "tan", "arctan", "atan", "arcsin", "asin",
               "arccos", "acos", "exp", "expm1", "exp2", "log", "log1p", "log2", "log10", "logn",
               "gradient", "e")


def _tanh_slope_numeric(a: np.ndarray) -> np.ndarray:
    """The central difference of np.tanh at arctanh(a): the check is numerical, not the formula."""
    x, h = np.arctanh(np.asarray(a, dtype=np.float64)), 1e-5
    return (np.tanh(x + h) - np.tanh(x - h)) / (2 * h)


@exercise("derive")
def check_tanh_slope(func: Callable[[np.ndarray], np.ndarray]) -> CheckResult:
    """``func(a)``: the slope of tanh where tanh(x) = a, written in a alone (it is 1 - a²),
    compared with central differences of ``np.tanh``; tanh, arctanh, cosh, sinh, arcsinh,
    arccosh, tan, arctan, arcsin, arccos, exp and log (NumPy, ``np.emath``, math, torch), the
    sigmoid and logit (torch, ``scipy.special``) and ``np.gradient`` raise :class:`RuleBroken`
    while ``func`` runs; one imported by name before the check (``from numpy import log``) is
    refused by its name in the code, and so is the name ``e`` (``np.e ** x`` is exp)."""
    used = sorted(names_used(func) & set(_TANH_NAMES))

    @wraps_answer(func)
    def answer(a: np.ndarray) -> Any:
        with _forbidden_tanh():
            result = func(a)
        if used:
            raise RuleBroken(_TANH_E_RULE if used == ["e"] else
                             _TANH_RULE.format(name=next(name for name in used if name != "e")))
        return result

    cases = [
        Case((np.array([0.0]),), "a = 0 (x = 0): tanh is steepest there, slope 1",
             expected=_tanh_slope_numeric(np.array([0.0]))),
        Case((np.array([0.5, -0.5]),), "a = ±0.5: tanh is odd, so its slope is the same at ±a",
             expected=_tanh_slope_numeric(np.array([0.5, -0.5]))),
        Case((np.array([0.9, 0.99, -0.999]),), "a near ±1: tanh flattens, the slope goes to 0",
             expected=_tanh_slope_numeric(np.array([0.9, 0.99, -0.999]))),
        Case((np.tanh(np.linspace(-3, 3, 13)),), "13 points x from -3 to 3",
             expected=_tanh_slope_numeric(np.tanh(np.linspace(-3, 3, 13)))),
    ]
    return check_function(answer, cases=cases, name="tanh_slope", rtol=1e-6, atol=1e-9)


_LR_EXPLANATION = (
    "Each step multiplies x2 by 1 - 10·lr and x1 by 1 - 2·lr (the gradient is (2 x1, 10 x2)). The "
    "path shrinks only while both factors lie between -1 and 1: for x2 that is lr < 2/10 = 0.2, "
    "for x1 lr < 1. The steep direction sets the limit: at lr = 0.2 the factor for x2 is -1, x2 "
    "flips sign at full size forever, and above 0.2 it grows."
)


@exercise("predict")
def check_largest_lr(answer: Any) -> CheckResult:
    """The learning rate above which gradient descent on x1² + 5 x2² diverges: 2 / 10 = 0.2."""
    return check_number(answer, 0.2, name="largest_lr", rtol=0.01,
                        label="the largest learning rate for x1^2 + 5 x2^2",
                        explanation=_LR_EXPLANATION)

"""Checkers for notebook 04 (probability and statistics)."""

from __future__ import annotations

import inspect
import io
import math
import tokenize
from collections.abc import Callable

import numpy as np

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
from course_utils.stats import standardize

_LINE_BUDGET = 100  # lines of the learner's file per call: a loop over 1,000 draws runs more


@exercise("predict")
def check_variance_of_difference(answer: object) -> CheckResult:
    """The learner's number for Var(X - Y), X and Y two independent fair dice: 35/6."""
    return check_number(
        answer, 35 / 6, name="variance_of_difference", label="Var(X - Y) for two fair dice",
        rtol=0.02,
        explanation="Var(X - Y) = Var(X) + Var(-Y) + 2 Cov(X, -Y) = 35/12 + (-1)^2 * 35/12 + 0 "
                    "= 35/6 = 5.83: -Y spreads as much as Y (Var(cX) = c^2 Var(X) with c = -1), "
                    "and variances of independent terms add even when the terms are subtracted.",
    )


def _score_variance(d_k, mean_q, var_q, mean_k, var_k):
    return float(d_k * ((var_q + mean_q**2) * (var_k + mean_k**2) - mean_q**2 * mean_k**2))


def _formula_only(func: Callable) -> Callable:
    """``func`` under the exercise's rule, no simulation inside: an answer a little off the
    exact value (as an average over random draws is) is refused with the rule's name."""

    @wraps_answer(func)
    def checked(*args):
        got = func(*args)
        want = _score_variance(*args)
        number = isinstance(got, (int, float, np.floating)) and not isinstance(got, bool)
        if number and want != 0 and math.isfinite(got):
            off = abs(got - want) / abs(want)
            if 1e-9 < off < 0.05:
                raise RuleBroken(f"it is {off:.2%} off the exact value {want:g}, as an average "
                                 "over random draws would be: the rule is no simulation inside, "
                                 "a formula gives the variance exactly")
        return got

    return checked


@exercise("derive")
def check_score_variance(func: Callable) -> CheckResult:
    """``func(d_k, mean_q, var_q, mean_k, var_k)``: Var(q . k) for q, k of d_k independent
    entries, q_i with mean ``mean_q`` and variance ``var_q``, k_i with ``mean_k``, ``var_k``:
    d_k ((var_q + mean_q^2)(var_k + mean_k^2) - mean_q^2 mean_k^2)."""
    cases = [
        Case((64, 0.0, 1.0, 0.0, 1.0), "standard normal entries, d_k = 64: section 11's d_k"),
        Case((16, 0.0, 4.0, 0.0, 0.25), "d_k = 16, Var(q_i) = 4, Var(k_i) = 0.25"),
        Case((64, 0.0, 1.0, 1.0, 1.0), "keys with mean 1: E[k_i^2] = Var(k_i) + E[k_i]^2 = 2"),
        Case((8, 1.0, 1.0, 2.0, 0.5), "both means non-zero: (E[q_i k_i])^2 is no longer 0"),
        Case((4, 1.0, 0.0, 2.0, 0.0), "constant entries (variance 0): q . k = 8 always, "
                                      "so its variance is 0"),
    ]
    return check_function(_formula_only(func), cases=cases, reference=_score_variance,
                          name="score_variance", rtol=1e-9)


def _standardize_tokens(x):
    return standardize(x, axis=-1, eps=1e-5)


def _standardize_variant(x, *, eps_inside=True, ddof=0, eps=1e-5):
    centred = x - x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True, ddof=ddof)
    with np.errstate(divide="ignore", invalid="ignore"):
        return centred / (np.sqrt(var + eps) if eps_inside else np.sqrt(var) + eps)


_STANDARDIZE_MISTAKES = {
    (("eps_inside", False),): "it divides by sigma + 1e-5: epsilon goes inside the square root, "
                              "(x - mean) / sqrt(var + 1e-5)",
    (("ddof", 1),): "it divides by d - 1 (ddof=1), the sample variance: section 10's "
                    "standardisation uses the population variance, dividing by d (ddof=0)",
    (("eps", 0.0),): "it leaves out the 1e-5: a constant token has variance 0, and 0 / 0 is NaN",
}


def _named_standardize_mistakes(func: Callable) -> Callable:
    """``func``; an output of the right shape that equals a known mistake's output is told which
    mistake."""

    @wraps_answer(func)
    def named(x):
        got = func(x)
        right = _standardize_tokens(x)
        if isinstance(got, np.ndarray) and got.shape == right.shape and not np.allclose(
                got, right, rtol=1e-7, atol=1e-9):
            for options, why in _STANDARDIZE_MISTAKES.items():
                wrong = _standardize_variant(x, **dict(options))
                if np.allclose(got, wrong, rtol=1e-7, atol=1e-9, equal_nan=True):
                    raise RuleBroken(why)
        return got

    return named


@exercise("debug")
def check_standardize_tokens(func: Callable) -> CheckResult:
    """``func(x)``: each token (the last axis of x) to mean 0 and variance 1,
    (x - mean) / sqrt(var + 1e-5) with the population variance, for any number of leading
    axes. A rejection names an epsilon outside the square root, the d - 1 variance and a missing
    epsilon."""
    rng = np.random.default_rng(41)
    cases = [
        Case((rng.normal(3.0, 2.0, (4, 4)),),
             "4 tokens of d = 4 (the bug runs silently here): each row its own mean"),
        Case((rng.normal(3.0, 2.0, (3, 8)),), "3 tokens of d = 8"),
        Case((rng.normal(0.0, 5.0, (2, 3, 8)),), "a (batch, seq, d) = (2, 3, 8) tensor"),
        Case((np.array([[1.0, 2.0, 3.0, 4.0], [5.0, 5.0, 5.0, 5.0]]),),
             "a constant token: the 1e-5 keeps it finite (all zeros)"),
    ]
    return check_function(_named_standardize_mistakes(func), cases=cases,
                          reference=_standardize_tokens, name="standardize_tokens", rtol=1e-7,
                          atol=1e-9)


def _inverse_transform(probs, u):
    cdf = np.cumsum(probs)
    return np.minimum(np.searchsorted(cdf, u, side="right"), len(probs) - 1).astype(np.int64)


_SEARCHES = {"searchsorted", "digitize", "bucketize"}  # NumPy's two, and torch's two


class _NoSearch(np.ndarray):
    """An array that refuses NumPy's ready-made interval searches."""

    def _refuse(self, *args, **kwargs):
        raise RuleBroken("it uses a ready-made interval search (np.searchsorted, np.digitize, "
                         "torch.searchsorted or torch.bucketize): this exercise finds the "
                         "interval by comparing u with the cumulative sums")

    searchsorted = _refuse

    def __array_ufunc__(self, ufunc, method, *inputs, out=(), **kwargs):
        if out:
            kwargs["out"] = tuple(_plain(x) for x in out)
        return getattr(ufunc, method)(*(_plain(x) for x in inputs), **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if func.__name__ in _SEARCHES:
            self._refuse()
        return super().__array_function__(func, types, args, kwargs)


def _plain(x):
    return x.view(np.ndarray) if isinstance(x, _NoSearch) else x


def _names_used(func: Callable) -> set[str]:
    """The names in the source of ``func`` (empty when the source cannot be read)."""
    try:
        source = inspect.getsource(inspect.unwrap(func))
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (OSError, TypeError, tokenize.TokenError, IndentationError):
        return set()
    return {token.string for token in tokens if token.type == tokenize.NAME}


@exercise("constrain")
def check_sample_from_uniforms(func: Callable) -> CheckResult:
    """``func(probs, u)``: for each uniform number u[j], the first category i with
    u[j] < probs[0] + ... + probs[i] (the last category when rounding leaves the total just
    below u[j]), as integers; without a Python loop and without np.searchsorted, np.digitize,
    torch.searchsorted or torch.bucketize."""

    # by name, also through np.asarray (which drops _NoSearch) and torch
    searches = (_names_used(func) | names_used(func)) & _SEARCHES

    @wraps_answer(func)
    def by_comparison(probs, u):
        if searches:
            probs.view(_NoSearch)._refuse()
        result, lines = lines_run(func, probs.view(_NoSearch), u.view(_NoSearch))
        if lines > _LINE_BUDGET:
            raise RuleBroken(f"it loops over the draws ({lines} lines of Python ran for "
                             f"{len(u)} of them): compare all of u with all the cumulative sums "
                             "at once, u[:, None] against cdf[None, :]")
        return _plain(result)

    rng = np.random.default_rng(44)
    many = rng.dirichlet(np.ones(50))
    cases = [
        Case((np.array([0.7, 0.2, 0.1]), np.array([0.1, 0.75, 0.95])),
             "cat owns [0, 0.7), dog [0.7, 0.9), bird [0.9, 1)"),
        Case((np.array([0.5, 0.25, 0.25]), np.array([0.0, 0.3, 0.5, 0.6, 0.75, 0.9])),
             "a u exactly on a boundary belongs to the category to its right"),
        Case((np.array([0.5, 0.0, 0.5]), np.array([0.25, 0.5, 0.75])),
             "a category of probability 0 is never drawn"),
        Case((np.array([0.7, 0.2, 0.1]), np.array([1 - 2.0**-53])),
             "the largest u below 1, while cumsum([0.7, 0.2, 0.1])[-1] rounds to "
             "0.9999999999999999: the last category, 2"),
        Case((many, rng.random(1_000)), "1,000 draws from 50 categories, without a loop"),
    ]
    return check_function(by_comparison, cases=cases, reference=_inverse_transform,
                          name="sample_from_uniforms")

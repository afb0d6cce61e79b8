"""Checkers for notebook 05 (exponentials, logarithms and softmax)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.checks import Case, CheckResult, check_function, check_number, exercise
from course_utils.softmax import log_softmax


@exercise("predict")
def check_float16_spacing(answer: object, *, show_answer: bool = False) -> CheckResult:
    """The gap between 1000 and the next larger float16: 2^9 / 2^10 = 0.5."""
    return check_number(
        answer, 0.5, name="float16_spacing", label="the gap after 1000 in float16", rtol=0.01,
        show_answer=show_answer,
        hint="write 1000 as (1 + m/2^10) x 2^k: find k, then what one step of m adds",
        mistakes={2.0**-10: "it is the gap after 1: near 1000 it is scaled by a power of two",
                  1000 * 2.0**-10: "it scales the gap after 1 by 1000, not by a power of two",
                  1.0: "it takes k = 10, but 2^10 = 1024 is above 1000"},
        explanation="1000 lies between 2^9 = 512 and 2^10 = 1024, so float16 stores it as "
                    "2^9 x (1 + m/1024) with its 10 mantissa bits: neighbours differ by "
                    "2^9 / 2^10 = 0.5, and 1000.2 is stored as 1000.")


def _sigmoid(d):
    e = np.exp(-np.abs(d))  # never overflows: |d| >= 0
    return np.where(d >= 0, 1 / (1 + e), e / (1 + e))


def _quiet(formula: Callable) -> Callable:  # a mistake run without NumPy's warnings
    def run(*args):
        with np.errstate(all="ignore"):
            return formula(*args)
    return run


@exercise("derive")
def check_sigmoid(func: Callable) -> CheckResult:
    """``func(d)``: 1 / (1 + e^-d) elementwise, exact (e^-710 = 4.5e-309 too), with no warning."""
    cases = [Case((np.array([0.0]),), "equal scores, d = 0: one half"),
             Case((np.array([np.log(3.0)]),), "d = ln 3: e^d = 3 times the weight, so 3/4"),
             Case((np.array([2.0, 1.0, -1.0, -2.0]),), "d and -d give q and 1 - q"),
             Case((np.array([1000.0]),), "d = 1000: the first score takes everything, 1"),
             Case((np.array([-1000.0]),), "d = -1000: the first score gets e^-1000, 0 in float64"),
             Case((np.array([-710.0, 710.0]),), "d = -710: e^-710 = 4.5e-309 is still a float64, "
                                                "though e^710 overflows"),
             Case((np.linspace(-30, 30, 13),), "13 differences from -30 to 30")]
    mistakes = {"it computes e^d / (e^d + 1): e^d overflows for d > 709, and inf / inf is nan":
                _quiet(lambda d: np.exp(d) / (np.exp(d) + 1)),
                "it computes 1 / (1 + e^-d) for every d: for d < -709, e^-d overflows to inf and "
                "the result is 0, not e^d": _quiet(lambda d: 1 / (1 + np.exp(-d))),
                "its two forms are swapped: 1 / (1 + e^-|d|) belongs to d >= 0":
                lambda d: 1 - _sigmoid(d)}
    return check_function(func, cases=cases, reference=_sigmoid, rtol=1e-9, atol=0.0,
                          no_warnings=True, mistakes=mistakes,
                          shortcuts=("expit", "sigmoid", "logistic", "softmax", "logaddexp"))


def _fp16_softmax(shift: str | None) -> Callable:  # a softmax with a wrong shift
    def softmax(scores):
        peak = {"all": scores.max(), "min": scores.amin(dim=-1, keepdim=True), None: 0}[shift]
        e = (scores - peak).exp()
        return e / e.sum(dim=-1, keepdim=True)
    return softmax


@exercise("debug")
def check_softmax_fp16(func: Callable) -> CheckResult:
    """``func(scores)``: softmax along the last axis of a float16 tensor, returned in float16,
    finite for finite scores, scores near 1000 included (e^1000 overflows even float64)."""
    import torch

    def half(values):
        return torch.tensor(values, dtype=torch.float16)

    g = torch.Generator().manual_seed(5)
    batch = (3 * torch.randn(2, 3, 6, generator=g, dtype=torch.float64)).to(torch.float16)
    cases = [Case((half([2.0, 1.0, 0.1]),), "small scores [2, 1, 0.1]"),
             Case((half([12.0, 11.0, 10.0]),), "scores above 11.09: e^12 overflows float16"),
             Case((half([[30.0, 28.0, 27.5, 20.0], [1.0, 0.0, -1.0, -2.0]]),),
                  "two rows of 4 scores, one with scores near 30"),
             Case((half([[12.0, 11.0, 10.0], [-20.0, -21.0, -22.0]]),),
                  "rows 32 apart: shift each row by its own maximum (e^-32 underflows float16)"),
             Case((half([[5.0, 0.0, -10.0]]),), "scores 15 apart: the largest must become 0, not "
                                                  "the smallest (e^15 overflows float16)"),
             Case((half([[1000.0, 999.5, 998.0]]),), "scores near 1000: e^1000 overflows float32 "
                                                       "and float64 too"),
             Case((half([[5.0, 4.0, float("-inf")]]),), "a masked score (-inf) gets weight 0"),
             Case((batch,), "a (2, 3, 6) batch: along the last axis")]
    mistakes = {"still the bug: e^z of unshifted scores overflows (inf / inf = nan) or underflows "
                "(0 / 0 = nan)": _fp16_softmax(None),
                "it shifts by the maximum of the whole tensor: a row far below it underflows to "
                "0 / 0; shift each row by its own maximum": _fp16_softmax("all"),
                "it shifts by each row's minimum: the largest score must become 0, so that every "
                "e^z is <= 1": _fp16_softmax("min")}
    return check_function(func, cases=cases, reference=lambda s: torch.softmax(
        s.double(), dim=-1).to(torch.float16), rtol=4e-3, atol=1e-4, exact_dtype=True,
        mistakes=mistakes, shortcuts=("softmax", "_softmax", "Softmax"))


@exercise("extend")
def check_log_softmax_along(func: Callable) -> CheckResult:
    """``func(x, axis)``: x - LSE(x) along ``axis`` of an N-D array, each slice shifted by its own
    maximum; -inf stays -inf; ValueError for a slice of all -inf."""
    rng = np.random.default_rng(55)
    cases = [Case((np.array([2.0, 1.0, 0.1]), 0), "1-D [2, 1, 0.1]: ln[0.659, 0.242, 0.099]"),
             Case((np.array([0.0, -800.0]), 0), "[0, -800]: -800, not -inf (no log of a softmax)"),
             Case((rng.normal(size=(3, 4)), -1), "a (3, 4) array along its rows (axis=-1)"),
             Case((rng.normal(size=(3, 4)), 0), "a (3, 4) array down its columns (axis=0)"),
             Case((np.array([[1000.0, 999.0], [-1000.0, -1001.0]]), 1),
                  "rows 2000 apart: each row's own maximum"),
             Case((np.array([[0.5, -1.8, -np.inf], [1.0, 2.0, 3.0]]), -1),
                  "a masked entry stays -inf, its row is still a distribution"),
             Case((rng.normal(size=(2, 3, 4)), 1), "a (2, 3, 4) tensor along the middle axis"),
             Case((np.array([[1.0, 2.0], [-np.inf, -np.inf]]), -1),
                  "a row with every entry masked", raises=ValueError)]

    mistakes = {"it takes the log of a softmax: e^-800 rounds to 0, and log 0 is -inf":
                _quiet(lambda x, axis: np.log(np.exp(log_softmax(x, axis=axis)))),
                "it shifts by the maximum of the whole array: a slice far below it underflows":
                _quiet(lambda x, axis: x - x.max() - np.log(np.exp(x - x.max()).sum(
                    axis=axis, keepdims=True))),
                "it works along the last axis whatever `axis` says":
                _quiet(lambda x, axis: log_softmax(x, axis=-1))}
    return check_function(func, cases=cases, reference=log_softmax, rtol=1e-9, atol=1e-12,
                          mistakes=mistakes, shortcuts=("log_softmax", "softmax", "logsumexp",
                                                        "LogSoftmax", "logaddexp"))

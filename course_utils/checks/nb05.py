"""Checkers for notebook 05: softmax, logsumexp and temperature written from scratch."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.checks import Case, CheckResult, check_function
from course_utils.softmax import logsumexp, softmax


def _softmax_1d(x: np.ndarray) -> np.ndarray:
    if np.asarray(x).size == 0:
        raise ValueError("x must not be empty")
    return softmax(x)


def check_softmax_from_scratch(func: Callable[[np.ndarray], np.ndarray]) -> CheckResult:
    """``func(x)`` must return the softmax of a 1-D array as float64, stable for huge inputs."""
    cases = [
        Case((np.array([2.5, 1.2, 0.3, 3.1]),), "the scores [2.5, 1.2, 0.3, 3.1]"),
        Case((np.array([2.0, 1.0, 0.1]),), "[2, 1, 0.1] -> [0.659, 0.242, 0.099]"),
        Case((np.array([1000.0, 1001.0, 1002.0]),), "huge inputs: exp(1000) overflows"),
        Case((np.array([-1000.0, -1001.0]),), "very negative inputs: exp underflows"),
        Case((np.array([0.0, 1000.0]),), "a wide range [0, 1000]: shift by the max, not the min"),
        Case((np.array([7.0]),), "a single score gets probability 1"),
        Case((np.array([1, 2, 3]),), "integers in, float64 probabilities out"),
        Case((np.array([]),), "an empty array has no distribution", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=_softmax_1d, name="softmax_from_scratch")


def _logsumexp_1d(x: np.ndarray) -> float:
    if np.asarray(x).size == 0:
        raise ValueError("x must not be empty")
    return float(logsumexp(x))


def check_logsumexp_from_scratch(func: Callable[[np.ndarray], float]) -> CheckResult:
    """``func(x)`` must return log(sum(exp(x))) of a 1-D array without overflow or underflow."""
    cases = [
        Case((np.array([1.0, 2.0, 3.0]),), "small inputs"),
        Case((np.array([1000.0, 1000.0]),), "[1000, 1000] -> 1000 + ln 2"),
        Case((np.array([-1000.0, -1000.0, -1000.0]),), "[-1000]*3 -> -1000 + ln 3"),
        Case((np.array([0.0, 1000.0]),), "a wide range [0, 1000] -> 1000"),
        Case((np.array([0.0, -np.inf]),), "a -inf entry adds exp(-inf) = 0"),
        Case((np.array([5.0]),), "a single entry is its own logsumexp"),
        Case((np.array([]),), "an empty array", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=_logsumexp_1d, name="logsumexp_from_scratch")


def _softmax_temperature(x: np.ndarray, temperature: float) -> np.ndarray:
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    return softmax(x, temperature=temperature)


def check_softmax_with_temperature(func: Callable[[np.ndarray, float], np.ndarray]) -> CheckResult:
    """``func(x, temperature)`` must return softmax(x / T) and reject T <= 0."""
    x = np.array([2.0, 1.0, 0.1])
    cases = [
        Case((x, 1.0), "T = 1 is the plain softmax"),
        Case((x, 0.5), "T = 0.5 sharpens"),
        Case((x, 10.0), "T = 10 flattens"),
        Case((x, 0.001), "T = 0.001: almost one-hot, without overflow"),
        Case((np.array([300.0, 0.0]), 0.5), "large logits at low temperature"),
        Case((x, 0.0), "T = 0 divides by zero", raises=ValueError),
        Case((x, -1.0), "a negative temperature", raises=ValueError),
    ]
    return check_function(
        func, cases=cases, reference=_softmax_temperature, name="softmax_with_temperature"
    )

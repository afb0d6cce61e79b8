"""Checkers for notebook 04 (probability and statistics)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.checks import Case, CheckResult, check_function
from course_utils.stats import empirical_frequencies, standardize, variance


def check_variance(func: Callable) -> CheckResult:
    """``func(x, ddof)``: sum((x - mean)^2) / (n - ddof) as a float; ValueError when
    n - ddof <= 0 (an empty x included)."""
    rng = np.random.default_rng(5)
    cases = [
        Case((np.array([1.0, 2.0, 3.0, 4.0, 5.0]), 0), "[1, 2, 3, 4, 5], ddof=0: 2.0"),
        Case((np.array([1.0, 2.0, 3.0, 4.0, 5.0]), 1), "[1, 2, 3, 4, 5], ddof=1: 2.5"),
        Case((rng.normal(10.0, 3.0, 50), 1), "50 draws from N(10, 3^2), ddof=1"),
        Case((np.array([7.0]), 0), "a single value has variance 0"),
        Case((np.array([7.0]), 1), "ddof=1 needs 2 values", raises=ValueError),
        Case((np.array([]), 0), "an empty array", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=variance, name="variance", rtol=1e-9)


def check_standardize(func: Callable) -> CheckResult:
    """``func(x)``: each row (last axis) shifted to mean 0 and scaled to population variance 1;
    ValueError when a row is constant."""
    rng = np.random.default_rng(6)
    cases = [
        Case((np.array([1.0, 2.0, 3.0, 4.0, 5.0]),), "[1, 2, 3, 4, 5] -> [-1.41, ..., 1.41]"),
        Case((rng.normal(3.0, 2.0, (3, 6)),), "each row of a (3, 6) array on its own"),
        Case((rng.normal(0.0, 1.0, (2, 2, 4)),), "a (2, 2, 4) tensor: the last axis"),
        Case((np.array([[1.0, 2.0], [5.0, 5.0]]),), "a constant row", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=standardize, name="standardize", rtol=1e-9)


def check_empirical_frequencies(func: Callable) -> CheckResult:
    """``func(samples, n_categories)``: the fraction of samples equal to each category, a float
    array (n_categories,); ValueError for an empty sample or a category out of range."""
    cases = [
        Case((np.array([0, 0, 1, 2, 0]), 3), "[0, 0, 1, 2, 0] -> [0.6, 0.2, 0.2]"),
        Case((np.array([1, 1]), 4), "unseen categories get 0: [0, 1, 0, 0]"),
        Case((np.random.default_rng(7).integers(0, 5, 1000), 5), "1000 draws of 5 categories"),
        Case((np.array([0, 3]), 3), "3 is not a category of 3", raises=ValueError),
        Case((np.array([0, -1]), 3), "-1 is not a category (indexing would count it as 2)",
             raises=ValueError),
        Case((np.array([], dtype=np.int64), 3), "no samples", raises=ValueError),
    ]
    return check_function(
        func, cases=cases, reference=empirical_frequencies, name="empirical_frequencies"
    )

"""Notebook 04's checkers: right answers pass, plausible mistakes fail with a reason."""

import numpy as np
from checker_table import right, table_test, wrong

from course_utils.checks import nb04
from course_utils.stats import empirical_frequencies, standardize, variance


def variance_by_hand(x, ddof):
    if len(x) - ddof <= 0:
        raise ValueError(f"need more than ddof={ddof} values, got {len(x)}")
    return float(((x - x.sum() / len(x)) ** 2).sum() / (len(x) - ddof))


def variance_by_numpy(x, ddof):
    if len(x) <= ddof:
        raise ValueError("too few values")
    return float(np.var(x, ddof=ddof))


def standardize_by_hand(x, axis=-1, ddof=0):
    mean = x.mean(axis=axis, keepdims=True)
    std = x.std(axis=axis, ddof=ddof, keepdims=True)
    if np.any(std == 0):
        raise ValueError("a constant row has no spread")
    return (x - mean) / std


def standardize_in_place(x):
    mean, std = x.mean(axis=-1, keepdims=True), x.std(axis=-1, keepdims=True)
    if np.any(std == 0):
        raise ValueError("constant row")
    x -= mean
    x /= std
    return x


def frequencies_by_counting(samples, n_categories, lowest=0):
    if len(samples) == 0:
        raise ValueError("no samples")
    if samples.min() < lowest or samples.max() >= n_categories:
        raise ValueError(f"samples must lie in [0, {n_categories})")
    counts = np.zeros(n_categories)
    for s in samples:
        counts[s] += 1
    return counts / len(samples)


def frequencies_of_seen(samples, n_categories):
    if len(samples) == 0 or samples.min() < 0 or samples.max() >= n_categories:
        raise ValueError("bad samples")
    return np.bincount(samples) / len(samples)


ROWS = [
    *right(nb04.check_variance, course_utils=variance, worked=variance_by_hand,
           numpy=variance_by_numpy),
    *wrong(
        nb04.check_variance,
        ignores_ddof=(lambda x, ddof: variance_by_hand(x, 0),
                      "[1, 2, 3, 4, 5], ddof=1: 2.5: values differ: expected 2.5, got 2.0"),
        numpy_without_check=(lambda x, ddof: float(np.var(x, ddof=ddof)),
                             "should raise ValueError, returned nan (it warned: Degrees of "
                             "freedom <= 0"),
        always_n_minus_1=(lambda x, ddof: variance_by_hand(x, 1) if len(x) > 1 else 0.0,
                          "values differ: expected 2.0, got 2.5"),
    ),
    *right(nb04.check_standardize, course_utils=standardize, worked=standardize_by_hand),
    *wrong(
        nb04.check_standardize,
        sample_std=(lambda x: standardize_by_hand(x, ddof=1),
                    "the worst at [0]: expected -1.414213562373095, got -1.2649110640673518"),
        whole_array=(lambda x: standardize_by_hand(x, axis=None),
                     "each row of a (3, 6) array on its own: values differ"),
        columns=(lambda x: standardize_by_hand(x, axis=0),
                 "a constant row: should raise ValueError, returned array([[-1., -1.], [1., 1.]])"),
        in_place=(standardize_in_place, "changed its argument `x` in place"),
    ),
    *right(nb04.check_empirical_frequencies, course_utils=empirical_frequencies,
           worked=frequencies_by_counting),
    *wrong(
        nb04.check_empirical_frequencies,
        negative_wraps=(lambda s, n: frequencies_by_counting(s, n, lowest=-n),
                        "-1 is not a category (indexing would count it as 2): should raise "
                        "ValueError, returned array([0.5, 0., 0.5])"),
        unseen_dropped=(frequencies_of_seen, "unseen categories get 0: [0, 1, 0, 0]: shape: "
                        "expected (4,), got (2,)"),
        counts=(lambda s, n: frequencies_by_counting(s, n) * len(s),
                "values differ: expected [0.6, 0.2, 0.2], got [3., 1., 1.]"),
        integer_division=(lambda s, n: np.bincount(s, minlength=n) // len(s),
                          "dtype: expected float64, got int64"),
    ),
]

test_checker = table_test(ROWS)

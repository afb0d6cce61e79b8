"""Notebook 00's checker: right answers pass, plausible mistakes fail with a reason."""

import numpy as np
from checker_table import right, table_test, wrong

from course_utils.checks import nb00


def unit_vector(v):
    v = np.asarray(v, dtype=np.float64)
    length = np.linalg.norm(v)
    if length == 0:
        raise ValueError("v must not be the zero vector")
    return v / length


def unit_vector_by_sum_of_squares(v):
    length = np.sqrt(np.sum(np.square(v, dtype=np.float64)))
    if length == 0:
        raise ValueError("the zero vector has no direction")
    return v / length


def unit_vector_in_place(v):
    if not np.any(v):
        raise ValueError("zero vector")
    v /= np.linalg.norm(v)  # the caller's vector is changed
    return v


ROWS = [
    *right(nb00.check_unit_vector, worked=unit_vector,
           sum_of_squares=unit_vector_by_sum_of_squares),
    *wrong(
        nb00.check_unit_vector,
        divides_by_sum=(lambda v: v / v.sum(), "it divides by the sum of the entries, not by "
                        "the length; values differ: expected [0.6, 0.8], got [0.42857143, "
                        "0.57142857]"),
        l1_norm=(lambda v: unit_vector(v) * np.linalg.norm(v) / np.abs(v).sum(),
                 "the worst at [1]: expected 0.8, got 0.5714285714285714"),
        no_zero_check=(lambda v: v / np.linalg.norm(v),
                       "should raise ValueError, returned array([nan, nan, nan]) "
                       "(it warned: invalid value encountered in divide)"),
        in_place=(unit_vector_in_place, "changed its argument `v` in place"),
    ),
]

test_checker = table_test(ROWS)

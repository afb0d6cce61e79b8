"""Notebook 16's checkers: right answers pass, plausible mistakes fail with a reason."""

import numpy as np
from checker_table import right, table_test, wrong

from course_utils.checks import nb16


def mean(x):
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        raise ValueError("x must not be empty")
    return float(np.sum(x) / x.size)


ROWS = [
    *right(nb16.check_mean, worked=mean),
    *wrong(
        nb16.check_mean,
        divides_by_n_minus_1=(lambda x: np.sum(x) / (len(x) - 1), "expected 3.0, got 4.0"),
        median=(np.median, "expected 3.0, got 2.5"),
        no_empty_check=(np.mean, "should raise ValueError, returned nan"),
    ),
    *right(nb16.check_sum_to_1000, worked=500500),
    *wrong(
        nb16.check_sum_to_1000,
        n_squared_over_2=(1000**2 // 2, "expected about 500500"),
        one_too_many=(1001 * 1002 // 2, "got 501501"),
    ),
    *right(nb16.check_sum_of_squares, worked=lambda n: n * (n + 1) * (2 * n + 1) // 6),
    *wrong(
        nb16.check_sum_of_squares,
        cube_over_3=(lambda n: n**3 // 3, "n = 2: values differ: expected 5, got 2"),
        float_division=(lambda n: n * (n + 1) * (2 * n + 1) / 6, "expected an integer"),
    ),
]

test_checker = table_test(ROWS)

"""Notebook 05's checkers: right answers pass, plausible mistakes fail with a reason."""

import numpy as np
import scipy.special
from checker_table import right, table_test, wrong

from course_utils.checks import nb05


def as_scores(x):
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        raise ValueError("x must not be empty")
    return x


def softmax(x, shift=np.max):
    x = as_scores(x)
    e = np.exp(x - shift(x))
    return e / e.sum()


def softmax_in_place(x):
    x = as_scores(x)  # the same array when x is already float64
    x -= x.max()
    return np.exp(x) / np.exp(x).sum()


def naive_softmax(x):
    with np.errstate(over="ignore", invalid="ignore"):
        return softmax(x, shift=lambda x: 0.0)


def logsumexp(x, shift=np.max):
    x = as_scores(x)
    m = shift(x)
    return float(m + np.log(np.sum(np.exp(x - m))))


def naive_logsumexp(x):
    with np.errstate(over="ignore"):
        return logsumexp(x, shift=lambda x: 0.0)


def softmax_with_temperature(x, temperature, scale=np.divide):
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    return softmax(scale(as_scores(x), temperature))


ROWS = [
    *right(nb05.check_softmax_from_scratch, worked=softmax,
           scipy=lambda x: scipy.special.softmax(as_scores(x))),
    *wrong(
        nb05.check_softmax_from_scratch,
        no_shift=(naive_softmax, "huge inputs: exp(1000) overflows: values differ: expected "
                  "[0.09003057, 0.24472847, 0.66524096], got [nan, nan, nan]; 3 of 3 entries "
                  "differ (3 are nan)"),
        minus_the_min=(lambda x: softmax(x, shift=np.min),
                       "a wide range [0, 1000]: shift by the max, not the min: values differ: "
                       "expected [0., 1.], got [0., nan]"),
        in_place_shift=(softmax_in_place, "changed its argument `x` in place"),
        float32=(lambda x: softmax(x).astype(np.float32), "dtype: expected float64, got float32"),
        a_list=(lambda x: list(softmax(x)), "expected a numpy.ndarray, got list"),
        reversed=(lambda x: softmax(x)[::-1],
                  "the worst at [0]: expected 0.31196831320450585, got 0.5684433286160447"),
    ),
    *right(nb05.check_logsumexp_from_scratch, worked=logsumexp,
           scipy=lambda x: float(scipy.special.logsumexp(as_scores(x)))),
    *wrong(
        nb05.check_logsumexp_from_scratch,
        no_shift=(naive_logsumexp, "[1000, 1000] -> 1000 + ln 2: values differ: expected "
                  "1000.6931471805599, got inf"),
        max_only=(lambda x: float(np.max(as_scores(x))),
                  "small inputs: values differ: expected 3.4076059644443806, got 3.0"),
        minus_the_min=(lambda x: logsumexp(x, shift=np.min),
                       "a -inf entry adds exp(-inf) = 0: values differ: expected 0.0, got nan"),
        forgets_the_max=(lambda x: logsumexp(x) - np.max(x),
                         "expected 1000.6931471805599, got 0.6931471805598903"),
    ),
    *right(nb05.check_softmax_with_temperature, worked=softmax_with_temperature),
    *wrong(
        nb05.check_softmax_with_temperature,
        multiplied=(lambda x, t: softmax_with_temperature(x, t, scale=np.multiply),
                    "T = 0.5 sharpens: values differ"),
        unguarded=(lambda x, t: softmax(np.divide(x, t)),
                   "T = 0 divides by zero: should raise ValueError, returned array([nan, nan, "
                   "nan]) (it warned: divide by zero encountered in divide)"),
        negative_allowed=(lambda x, t: softmax_with_temperature(x, abs(t) or 1),
                          "a negative temperature: should raise ValueError"),
    ),
]

test_checker = table_test(ROWS)

"""The notebook 05 checkers accept a correct solution and catch plausible mistakes."""

import numpy as np

from course_utils.checks import nb05


def stub(*args):
    raise NotImplementedError


def good_softmax(x):
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        raise ValueError("empty")
    e = np.exp(x - x.max())
    return e / e.sum()


def naive_softmax(x):
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        raise ValueError("empty")
    with np.errstate(over="ignore", invalid="ignore"):
        return np.exp(x) / np.exp(x).sum()


def good_logsumexp(x):
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        raise ValueError("empty")
    m = x.max()
    return float(m + np.log(np.sum(np.exp(x - m))))


def naive_logsumexp(x):
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        raise ValueError("empty")
    with np.errstate(over="ignore", divide="ignore"):
        return float(np.log(np.sum(np.exp(x))))


def good_temperature(x, temperature):
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    return good_softmax(np.asarray(x, dtype=np.float64) / temperature)


def multiplied_temperature(x, temperature):
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    return good_softmax(np.asarray(x, dtype=np.float64) * temperature)


def test_softmax_from_scratch():
    assert nb05.check_softmax_from_scratch(good_softmax).passed
    assert nb05.check_softmax_from_scratch(naive_softmax).status == "failed"
    assert nb05.check_softmax_from_scratch(lambda x: good_softmax(x)[::-1]).status == "failed"
    assert nb05.check_softmax_from_scratch(stub).status == "not attempted"


def test_logsumexp_from_scratch():
    assert nb05.check_logsumexp_from_scratch(good_logsumexp).passed
    assert nb05.check_logsumexp_from_scratch(naive_logsumexp).status == "failed"
    assert nb05.check_logsumexp_from_scratch(lambda x: float(np.max(x))).status == "failed"
    assert nb05.check_logsumexp_from_scratch(stub).status == "not attempted"


def test_softmax_with_temperature():
    assert nb05.check_softmax_with_temperature(good_temperature).passed
    assert nb05.check_softmax_with_temperature(multiplied_temperature).status == "failed"
    unguarded = nb05.check_softmax_with_temperature(lambda x, t: good_softmax(np.asarray(x) / t))
    assert unguarded.status == "failed"  # T = 0 must raise, not warn and return nan
    assert nb05.check_softmax_with_temperature(stub).status == "not attempted"

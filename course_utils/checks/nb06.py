"""Checkers for notebook 06: entropy, KL divergence and cross-entropy from logits, from scratch."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.checks import Case, CheckResult, check_function
from course_utils.information import cross_entropy_from_logits, entropy, kl_divergence


def check_entropy_from_scratch(func: Callable[[np.ndarray], float]) -> CheckResult:
    """``func(p)`` must return -sum p log p in nats, with 0 log 0 = 0."""
    cases = [
        Case((np.array([0.8, 0.2]),), "[0.8, 0.2] -> 0.5004 nats"),
        Case((np.full(4, 0.25),), "uniform over 4 -> ln 4"),
        Case((np.array([1.0, 0.0, 0.0]),), "one-hot: no uncertainty, and 0 log 0 = 0 (not nan)"),
        Case((np.array([0.5, 0.5, 0.0]),), "a zero entry changes nothing"),
        Case((np.array([0.1, 0.2, 0.3, 0.4]),), "four outcomes"),
    ]
    return check_function(func, cases=cases, reference=entropy, name="entropy_from_scratch")


def check_kl_from_scratch(func: Callable[[np.ndarray, np.ndarray], float]) -> CheckResult:
    """``func(p, q)`` must return sum p log(p / q): 0 for p = q, inf where q = 0 < p, without
    a warning."""
    p, q = np.array([0.7, 0.3]), np.array([0.6, 0.4])
    cases = [
        Case((p, q), "KL([0.7, 0.3] || [0.6, 0.4]) = 0.0216"),
        Case((q, p), "the other direction differs: 0.0226"),
        Case((p, p.copy()), "KL(p || p) = 0"),
        Case((np.array([1.0, 0.0]), np.array([0.5, 0.5])), "p = 0 terms give 0 (0 log 0 = 0)"),
        Case((np.array([0.5, 0.5]), np.array([1.0, 0.0])), "q = 0 < p: infinite", expected=np.inf),
    ]
    return check_function(func, cases=cases, reference=kl_divergence, name="kl_from_scratch",
                          no_warnings=True)


def check_cross_entropy_from_logits(
    func: Callable[[np.ndarray, np.ndarray], float],
) -> CheckResult:
    """``func(logits, targets)``: mean of -log softmax(logits)[target], skipping targets = -100."""
    rng = np.random.default_rng(6)
    logits = rng.normal(size=(5, 4))
    targets = np.array([0, 3, 1, 1, 2])
    padded = np.array([2, -100, 0, -100, 3])
    cases = [
        Case((np.array([[2.0, 1.0, 0.1]]), np.array([0])), "one row: -log softmax([2, 1, 0.1])[0]"),
        Case((logits, targets), "a batch of 5 rows, 4 classes: the mean over rows"),
        Case((logits * 500, targets), "huge logits: needs log-softmax, not log(softmax)"),
        Case((logits, padded), "targets of -100 (padding) are skipped, the mean is over the rest"),
    ]
    return check_function(
        func, cases=cases, reference=cross_entropy_from_logits, name="cross_entropy_from_logits"
    )

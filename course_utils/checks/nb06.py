"""Checkers for notebook 06 (entropy, cross-entropy and KL divergence)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from course_utils.checks import Case, CheckResult, check_function, check_number, exercise
from course_utils.information import cross_entropy_from_logits
from course_utils.softmax import log_softmax


@exercise("predict")
def check_loss_at_initialisation(answer: object) -> CheckResult:
    """The learner's number for the cross-entropy of equal logits over 50,257 tokens."""
    return check_number(
        answer, math.log(50_257), name="loss_at_initialisation",
        label="mean cross-entropy of equal logits over V = 50,257 tokens", rtol=0.01,
        explanation="Equal logits give softmax 1/V for every token whatever their value (adding a "
                    "constant changes nothing), so every position costs -ln(1/V) = ln V = "
                    "ln 50257 = 10.82 nats, perplexity exactly V. A fresh model's first loss far "
                    "above ln V means its initial logits are far from equal.",
    )


def _smoothed_target(targets, n_classes, alpha):
    return (1 - alpha) * np.eye(n_classes)[targets] + alpha / n_classes


def _label_smoothed(logits, targets, alpha):
    logits = np.asarray(logits, dtype=np.float64)
    p = _smoothed_target(np.asarray(targets), logits.shape[-1], alpha)
    return float(np.mean(-np.sum(p * log_softmax(logits, axis=-1), axis=-1)))


@exercise("derive")
def check_label_smoothed_loss(func: Callable) -> CheckResult:
    """``func(logits, targets, alpha)``: the mean over rows of H(p, softmax(z)) with the smoothed
    target p = (1 - alpha) one_hot(c) + alpha / C, for (N, C) logits and (N,) targets; stable for
    logits near +-1000."""
    rng = np.random.default_rng(61)
    wide = rng.normal(size=(6, 7))
    cases = [
        Case((np.array([[2.0, 1.0, 0.1]]), np.array([0]), 0.0),
             "alpha = 0 is the ordinary cross-entropy, -ln 0.659 = 0.417"),
        Case((np.array([[2.0, 1.0, 0.1]]), np.array([0]), 0.1), "one row, alpha = 0.1"),
        Case((wide, rng.integers(0, 7, 6), 0.2), "6 rows of 7 classes, alpha = 0.2"),
        Case((np.array([[0.0, 0.0, 0.0, 0.0]]), np.array([2]), 0.3),
             "equal logits: the loss is ln 4 whatever alpha"),
        Case((np.array([[1000.0, 0.0, -1000.0]]), np.array([0]), 0.1),
             "logits near +-1000: each class's log-probability stays finite"),
        Case((wide, rng.integers(0, 7, 6), 1.0), "alpha = 1: the target is uniform"),
    ]
    return check_function(func, cases=cases, reference=_label_smoothed,
                          name="label_smoothed_loss", rtol=1e-9)


def _masked_mean_nll(logits, targets, ignore_index):
    return float(cross_entropy_from_logits(logits, targets, ignore_index=ignore_index))


@exercise("debug")
def check_masked_mean_nll(func: Callable) -> CheckResult:
    """``func(logits, targets, ignore_index)``: the mean of -ln softmax(z)[target] over the
    positions whose target is not ``ignore_index``, for (..., V) logits and (...) targets."""
    rng = np.random.default_rng(62)
    logits = rng.normal(size=(2, 6, 5))
    targets = rng.integers(1, 5, size=(2, 6))
    padded = targets.copy()
    padded[0, 4:] = -100
    more = np.concatenate([logits, rng.normal(size=(2, 3, 5))], axis=1)
    more_targets = np.concatenate([padded, np.full((2, 3), -100)], axis=1)
    pad0 = np.where(padded == -100, 0, padded)
    cases = [
        Case((logits, targets, -100), "no padding: every position counts"),
        Case((logits, padded, -100), "sentence 1 padded after 4 tokens: 10 real targets"),
        Case((more, more_targets, -100),
             "the same batch with 3 more padding positions: the loss must not change"),
        Case((logits, pad0, 0), "<pad> has the id 0 and ignore_index=0"),
        Case((logits[0], pad0[0], 0), "one sentence, (N, V) = (6, 5) logits"),
    ]
    return check_function(func, cases=cases, reference=_masked_mean_nll, name="masked_mean_nll",
                          rtol=1e-9)


def _kl_from_logits(teacher, student):
    log_p = log_softmax(np.asarray(teacher, dtype=np.float64), axis=-1)
    log_q = log_softmax(np.asarray(student, dtype=np.float64), axis=-1)
    p = np.exp(log_p)
    with np.errstate(invalid="ignore"):  # -inf - -inf where p_i = 0: that term is 0
        terms = np.where(p > 0, p * (log_p - log_q), 0.0)
    return terms.sum(axis=-1)


@exercise("extend")
def check_kl_from_logits(func: Callable) -> CheckResult:
    """``func(teacher, student)``: KL(softmax(teacher) || softmax(student)) along the last axis,
    one value per row, from logits; stable near +-1000; a -inf teacher logit (p_i = 0) adds
    nothing, a -inf student logit where p_i > 0 gives inf."""
    rng = np.random.default_rng(63)
    cases = [
        Case((np.log(np.array([0.7, 0.3])), np.log(np.array([0.6, 0.4]))),
             "KL([0.7, 0.3] || [0.6, 0.4]) = 0.0216"),
        Case((np.array([1.0, 2.0, 3.0]), np.array([11.0, 12.0, 13.0])),
             "logits that differ by a constant: the same distribution, KL = 0"),
        Case((rng.normal(size=(4, 6)), rng.normal(size=(4, 6))), "4 rows of 6 logits: 4 values"),
        Case((np.array([[1000.0, 0.0]]), np.array([[0.0, 1000.0]])),
             "logits near 1000: KL = 1000 (no inf, no nan)"),
        Case((np.array([0.5, 0.0, -np.inf]), np.array([0.0, 0.5, 1.0])),
             "a teacher logit of -inf (p_i = 0) adds nothing: no nan"),
        Case((np.array([0.5, 0.0, 1.0]), np.array([0.0, 0.5, -np.inf])),
             "a student logit of -inf where the teacher has p_i > 0: inf"),
    ]
    return check_function(func, cases=cases, reference=_kl_from_logits, name="kl_from_logits",
                          rtol=1e-9, atol=1e-12)

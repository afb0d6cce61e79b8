"""Checkers for notebook 06 (entropy, cross-entropy and KL divergence)."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable

import numpy as np

from course_utils.checks import (
    Case,
    CheckResult,
    RuleBroken,
    check_function,
    check_number,
    exercise,
    names_used,
    wraps_answer,
)
from course_utils.information import cross_entropy_from_logits
from course_utils.softmax import log_softmax

_LOSSES = ("cross_entropy", "nll_loss", "CrossEntropyLoss", "NLLLoss", "cross_entropy_from_logits")
_LOSS_RULE = ("it calls {name}, a library loss that does the exercise's work: compute it from a "
              "log-softmax yourself (compare with F.cross_entropy outside your function)")


def _own(func: Callable, name: str) -> bool:
    """Whether ``name`` is a function the learner wrote next to ``func`` (a helper of theirs called
    ``softmax`` is no library's)."""
    inner = inspect.unwrap(func)
    value = getattr(inner, "__globals__", {}).get(name)
    return inspect.isfunction(value) and value.__module__ == getattr(inner, "__module__", None)


def _diagnosed(func: Callable, reference: Callable, mistakes: Callable) -> Callable:
    """``func`` refused with :class:`RuleBroken` when its code calls a library loss, and, where
    its number is wrong, with a message that says which number it matches instead:
    ``mistakes(*args)`` lists (value, what that value means)."""
    used = sorted(name for name in names_used(func) & set(_LOSSES) if not _own(func, name))

    @wraps_answer(func)
    def checked(*args: object) -> object:
        got = func(*args)
        if used:
            raise RuleBroken(_LOSS_RULE.format(name=used[0]))
        try:
            value = float(got)
        except (TypeError, ValueError):
            return got  # not a number: compare() says what it is
        want = reference(*args)
        if math.isclose(value, want, rel_tol=1e-9, abs_tol=1e-12):
            return got
        if not math.isfinite(value):
            raise RuleBroken(f"expected {want:.6g}, got {value}: a log of a probability that "
                             "rounded to 0 (or inf - inf); take every log-probability from a "
                             "stable log-softmax")
        for other, meaning in mistakes(*args):
            if math.isclose(value, other, rel_tol=1e-9, abs_tol=1e-12):
                raise RuleBroken(f"expected {want:.6g}, got {value:.6g}, which is {meaning}")
        return got

    return checked


_RAISED = math.log(49 + math.exp(3)) - 3  # 49 logits of 2.5, the correct one 5.5


@exercise("predict")
def check_loss_with_one_raised_logit(answer: object) -> CheckResult:
    """The learner's number for the cross-entropy over V = 50 tokens when every logit is 2.5 but
    the correct token's, which is 2.5 + 3."""
    return check_number(
        answer, _RAISED, name="loss_with_one_raised_logit",
        label="mean cross-entropy over V = 50 tokens, the correct token's logit 3 above the rest",
        rtol=0.005,
        hint="write the loss as -z_c + log of the sum of e^z_j over all 50 tokens (section 9), "
             "after subtracting 2.5 from every logit",
        mistakes={
            math.log(50): "it is log 50, the uniform guess's loss: the correct token's logit is 3 "
                          "higher, so its probability is not 1/50",
            math.log(50) - 3: "it is log 50 - 3: the raised logit also sits in the sum under the "
                              "log, which is 49 + e^3, not 50",
            math.log(50 + math.exp(3)) - 3: "it is log(50 + e^3) - 3: the sum has 49 terms e^0 "
                                            "and one e^3 (the correct token is one of the 50)",
            _RAISED / math.log(2): "it is the loss in bits: the exercise asks for nats",
            math.exp(_RAISED): "it is the perplexity e^CE, not the cross-entropy",
            math.exp(3) / (49 + math.exp(3)): "it is the correct token's probability; the loss "
                                              "is minus its log",
            2.5: "it is a logit, not a loss",
            5.5: "it is a logit, not a loss",
        },
        explanation="Subtracting 2.5 from every logit changes nothing: 49 logits of 0 and the "
                    "correct one of 3, so the loss is -3 + log(49 e^0 + e^3) = log(69.09) - 3 = "
                    "1.2353 nats, perplexity 3.44. The loss falls from log 50 = 3.91 by 2.68, "
                    "not by the full 3: the raised logit also enlarges the sum under the log.",
    )


def _smoothed_target(targets, n_classes, alpha):
    return (1 - alpha) * np.eye(n_classes)[targets] + alpha / n_classes


def _label_smoothed(logits, targets, alpha):
    logits = np.asarray(logits, dtype=np.float64)
    p = _smoothed_target(np.asarray(targets), logits.shape[-1], alpha)
    return float(np.mean(-np.sum(p * log_softmax(logits, axis=-1), axis=-1)))


def _smoothing_mistakes(logits, targets, alpha):
    logits, targets = np.asarray(logits, dtype=np.float64), np.asarray(targets)
    log_q = log_softmax(logits, axis=-1)
    rows, n_classes = np.arange(len(targets)), logits.shape[-1]
    nll = -log_q[rows, targets]
    others = (-log_q.sum(axis=-1) - nll) / max(n_classes - 1, 1)
    return [
        (float(nll.mean()), "the loss without smoothing: the share alpha spread over the classes "
                            "is missing"),
        (float(np.mean(nll + alpha * -log_q.mean(axis=-1))), "the ordinary loss with weight 1 "
                            "instead of 1 - alpha, plus the spread part"),
        (float(np.mean((1 - alpha) * nll + alpha * -log_q.sum(axis=-1))),
         "alpha times the sum of -log q_j over the classes: each class gets alpha / C, so it is "
         "alpha times their mean"),
        (float(np.mean((1 - alpha) * nll + alpha * others)), "alpha spread over the C - 1 wrong "
                            "classes only: here every class gets alpha / C, the correct one too"),
        (float(np.sum((1 - alpha) * nll + alpha * -log_q.mean(axis=-1))),
         "the sum over the rows: return their mean"),
    ]


@exercise("derive")
def check_label_smoothed_loss(func: Callable) -> CheckResult:
    """``func(logits, targets, alpha)``: the mean over rows of H(p, softmax(z)) with the smoothed
    target p = (1 - alpha) one_hot(c) + alpha / C, for (N, C) logits and (N,) targets; stable for
    logits near +-1000; a library loss (``F.cross_entropy``) is refused, and a wrong number is
    matched against the usual mistakes."""
    rng = np.random.default_rng(61)
    wide = rng.normal(size=(6, 7))
    cases = [
        Case((np.array([[2.0, 1.0, 0.1]]), np.array([0]), 0.0),
             "alpha = 0 is the ordinary cross-entropy, -log 0.659 = 0.417"),
        Case((np.array([[2.0, 1.0, 0.1]]), np.array([0]), 0.1), "one row, alpha = 0.1"),
        Case((wide, rng.integers(0, 7, 6), 0.2), "6 rows of 7 classes, alpha = 0.2"),
        Case((np.array([[0.0, 0.0, 0.0, 0.0]]), np.array([2]), 0.3),
             "equal logits: the loss is log 4 whatever alpha"),
        Case((np.array([[1000.0, 0.0, -1000.0]]), np.array([0]), 0.1),
             "logits near +-1000: each class's log-probability stays finite"),
        Case((wide, rng.integers(0, 7, 6), 1.0), "alpha = 1: the target is uniform"),
    ]
    answer = _diagnosed(func, _label_smoothed, _smoothing_mistakes)
    return check_function(answer, cases=cases, reference=_label_smoothed,
                          name="label_smoothed_loss", rtol=1e-9)


def _masked_mean_nll(logits, targets, ignore_index):
    return float(cross_entropy_from_logits(logits, targets, ignore_index=ignore_index))


def _padding_mistakes(logits, targets, ignore_index):
    logits, targets = np.asarray(logits, dtype=np.float64), np.asarray(targets)
    losses = -np.take_along_axis(log_softmax(logits, axis=-1),
                                 np.clip(targets, 0, None)[..., None], axis=-1)[..., 0]
    kept, kept_100 = targets != ignore_index, targets != -100
    mistakes = [
        (float(losses[kept].sum() / targets.size), "the sum over the real targets divided by "
                        "every position, padding included: divide by the number of real targets"),
        (float(losses[kept].sum()), "the sum over the real targets: return their mean"),
    ]
    if ignore_index != -100:
        mistakes += [
            (float(losses[kept_100].mean()), f"the mean with the positions whose target is "
                        f"{ignore_index} counted: compare the targets with ignore_index, not -100"),
            (float(losses[kept_100].sum() / targets.size), f"the positions whose target is "
                        f"{ignore_index} counted and the sum divided by every position: two bugs"),
        ]
    return mistakes


@exercise("debug")
def check_masked_mean_nll(func: Callable) -> CheckResult:
    """``func(logits, targets, ignore_index)``: the mean of -log softmax(z)[target] over the
    positions whose target is not ``ignore_index``, for (..., V) logits and (...) targets; a
    library loss (``F.cross_entropy``) is refused, and a wrong number is matched against the
    usual mistakes."""
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
        Case((np.array([[[0.0, -800.0], [0.0, 0.0]]]), np.array([[1, -100]]), -100),
             "a target logit 800 below the other: probability e^-800, 0 in float64; loss 800"),
    ]
    answer = _diagnosed(func, _masked_mean_nll, _padding_mistakes)
    return check_function(answer, cases=cases, reference=_masked_mean_nll, name="masked_mean_nll",
                          rtol=1e-9)


def _kl_from_logits(teacher, student):
    log_p = log_softmax(np.asarray(teacher, dtype=np.float64), axis=-1)
    log_q = log_softmax(np.asarray(student, dtype=np.float64), axis=-1)
    p = np.exp(log_p)
    with np.errstate(invalid="ignore"):  # -inf - -inf where p_i = 0: that term is 0
        terms = np.where(p > 0, p * (log_p - log_q), 0.0)
    return terms.sum(axis=-1)


_DIVERGENCES = ("kl_div", "KLDivLoss", "kl_divergence", "rel_entr", "entropy", *_LOSSES)
_DIVERGENCE_RULE = ("it calls {name}, a library divergence or loss that does the exercise's work: "
                    "compute KL from two log-softmaxes yourself (compare with F.kl_div outside "
                    "your function)")


def _no_library_divergence(func: Callable) -> Callable:
    """``func`` refused with :class:`RuleBroken` when its code calls a library KL divergence
    (``F.kl_div``, ``scipy.stats.entropy``, ...) or a library loss."""
    used = sorted(name for name in names_used(func) & set(_DIVERGENCES) if not _own(func, name))

    @wraps_answer(func)
    def checked(*args: object) -> object:
        got = func(*args)
        if used:
            raise RuleBroken(_DIVERGENCE_RULE.format(name=used[0]))
        return got

    return checked


@exercise("extend")
def check_kl_from_logits(func: Callable) -> CheckResult:
    """``func(teacher, student)``: KL(softmax(teacher) || softmax(student)) along the last axis,
    one value per row, from logits; stable near +-1000; a -inf teacher logit (p_i = 0) adds
    nothing, a -inf student logit where p_i > 0 gives inf; a library divergence or loss
    (``F.kl_div``, ``scipy.stats.entropy``) is refused."""
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
    return check_function(_no_library_divergence(func), cases=cases, reference=_kl_from_logits,
                          name="kl_from_logits", rtol=1e-9, atol=1e-12)

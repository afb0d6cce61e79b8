"""Checkers for notebook 06 (entropy, cross-entropy and KL divergence)."""

import math
from collections.abc import Callable
from functools import partial

import numpy as np

from course_utils.checks import Case, CheckResult, check_function, check_number, exercise
from course_utils.information import cross_entropy_from_logits
from course_utils.softmax import log_softmax

_LOSSES = ("cross_entropy", "nll_loss", "CrossEntropyLoss", "NLLLoss", "cross_entropy_from_logits")
_RAISED = math.log(49 + math.exp(3)) - 3  # 49 logits of 2.5, the correct one 5.5


@exercise("predict")
def check_loss_with_one_raised_logit(answer: object, *, show_answer: bool = False) -> CheckResult:
    """Cross-entropy over V = 50 tokens, each logit 2.5 but the correct 5.5: log(49 + e^3) - 3."""
    return check_number(
        answer, _RAISED, name="loss_with_one_raised_logit", rtol=0.005, show_answer=show_answer,
        label="mean cross-entropy over V = 50 tokens, the correct token's logit 3 above the rest",
        hint="subtract 2.5 from every logit, then write -z_c + log sum_j e^z_j (section 9)",
        mistakes={math.log(50): "it is log 50, the uniform guess's loss: one logit is 3 higher",
                  math.log(50) - 3: "it is log 50 - 3: the raised logit also sits in the sum",
                  math.log(50 + math.exp(3)) - 3: "it is log(50 + e^3) - 3: that is 51 terms",
                  _RAISED / math.log(2): "it is the loss in bits: the exercise asks for nats",
                  math.exp(_RAISED): "it is the perplexity e^CE, not the cross-entropy",
                  math.exp(3) / (49 + math.exp(3)): "it is the correct token's probability",
                  2.5: "it is a logit, not a loss", 5.5: "it is a logit, not a loss"},
        explanation="-3 + log(49 + e^3) = 1.2353 nats: 2.68 below log 50, not 3 (the sum grew).")


def _log_q(logits, rounded=False):  # log softmax; rounded: as the log of a probability
    log_q = log_softmax(np.asarray(logits, dtype=np.float64), axis=-1)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(log_q)) if rounded else log_q


def _smooth(z, c, alpha, *, weight=None, spread="mean", reduce=np.mean, rounded=False):
    log_q = _log_q(z, rounded)  # the keywords make the usual mistakes
    nll = -log_q[np.arange(len(c)), c]
    part = {"mean": -log_q.mean(axis=-1), "sum": -log_q.sum(axis=-1), None: 0.0,
            "others": (-log_q.sum(axis=-1) - nll) / (log_q.shape[-1] - 1)}[spread]
    return float(reduce((1 - alpha if weight is None else weight) * nll + alpha * part))


@exercise("derive")
def check_label_smoothed_loss(func: Callable) -> CheckResult:
    """``func(z, c, alpha)``: mean over rows of (1 - alpha)(-log q_c) + alpha mean_j(-log q_j)."""
    rng = np.random.default_rng(61)
    wide, row = rng.normal(size=(6, 7)), np.array([[2.0, 1.0, 0.1]])
    cases = [Case((row, np.array([0]), 0.0), "alpha = 0 is the ordinary loss, -log 0.659 = 0.417"),
             Case((row, np.array([0]), 0.1), "one row, alpha = 0.1"),
             Case((wide, rng.integers(0, 7, 6), 0.2), "6 rows of 7 classes, alpha = 0.2"),
             Case((np.zeros((1, 4)), np.array([2]), 0.3), "equal logits: log 4 whatever alpha"),
             Case((np.array([[1000.0, 0.0, -1000.0]]), np.array([0]), 0.1),
                  "logits near +-1000: each class's log-probability stays finite"),
             Case((wide, rng.integers(0, 7, 6), 1.0), "alpha = 1: the target is uniform")]
    return check_function(func, cases=cases, reference=_smooth, rtol=1e-9, mistakes={
        "it is the loss without smoothing": partial(_smooth, weight=1.0, spread=None),
        "it weights -log q_c by 1 instead of 1 - alpha": partial(_smooth, weight=1.0),
        "it takes the sum of -log q_j, not their mean": partial(_smooth, spread="sum"),
        "it spreads alpha over the C - 1 wrong classes only: some code does, but the exercise's "
        "p gives alpha / C to every class": partial(_smooth, spread="others"),
        "it sums over the rows: return their mean": partial(_smooth, reduce=np.sum),
        "it logs probabilities rounded to 0": partial(_smooth, rounded=True)}, shortcuts=_LOSSES)


def _sentences(z, c, ignore, *, compared_with=None, over_all=False, summed=False,
               rounded=False, batch=False):
    """One mean loss per sentence: -log softmax(z)[c] averaged over that sentence's real
    targets (c != ignore); with a keyword, a known mistake."""
    kept = c != (ignore if compared_with is None else compared_with)
    log_q = _log_q(z, rounded)
    ids = np.where(kept, c, 0)  # any valid id at the ignored positions
    picked = np.take_along_axis(log_q, ids[..., None], axis=-1)[..., 0]
    sums = -np.where(kept, picked, 0.0).sum(axis=-1)
    if batch:  # the batch's one mean, repeated for every sentence
        return np.full(len(c), sums.sum() / kept.sum())
    return sums / (1 if summed else c.shape[-1] if over_all else kept.sum(axis=-1))


@exercise("debug")
def check_sentence_losses(func: Callable) -> CheckResult:
    """``func(z, c, ignore_index)`` for (B, N, V) logits and (B, N) targets: for each sentence,
    the mean of -log softmax(z)[c] over its positions where c != ignore_index, shape (B,)."""
    rng = np.random.default_rng(62)
    logits, targets = rng.normal(size=(2, 6, 5)), rng.integers(1, 5, size=(2, 6))
    padded = np.where((np.arange(2)[:, None] == 0) & (np.arange(6) >= 4), -100, targets)
    more = (np.concatenate([logits, rng.normal(size=(2, 3, 5))], axis=1),
            np.concatenate([padded, np.full((2, 3), -100)], axis=1), -100)
    pad0 = np.where(padded == -100, 0, padded)
    three = rng.normal(size=(3, 4, 7)), np.array([[3, 1, -100, -100], [2, 6, 5, 4],
                                                  [6, -100, -100, -100]])
    cases = [Case((logits, targets, -100), "no padding: every position counts"),
             Case((logits, padded, -100), "sentence 1 padded after 4 tokens, sentence 2 not"),
             Case(more, "the same batch with 3 more padding positions: no loss may change"),
             Case((logits, pad0, 0), "<pad> has the id 0 and ignore_index=0"),
             Case((*three, -100), "3 sentences of 2, 4 and 1 real tokens, V = 7"),
             Case((np.array([[[0.0, -800.0], [0.0, 0.0]]]), np.array([[1, -100]]), -100),
                  "a target logit 800 below the other: probability e^-800, 0 in float64; loss 800")]
    return check_function(func, cases=cases, rtol=1e-9, shortcuts=_LOSSES, mistakes={
        # each case shows one of the given function's two bugs, named alone (fixed or not)
        "it divides each sentence's sum by N, the positions of the whole batch, padding included: "
        "divide by that sentence's own number of real targets":
            partial(_sentences, over_all=True),
        "it compares with -100, not ignore_index: with <pad> = 0 the pads count as targets":
            partial(_sentences, compared_with=-100),
        "still the bug: the given function's numbers":
            partial(_sentences, compared_with=-100, over_all=True),
        "it returns each sentence's sum, not its mean": partial(_sentences, summed=True),
        "it is the batch's one mean loss (section 9), repeated: each sentence needs its own":
            partial(_sentences, batch=True),
        "it logs a probability that rounded to 0": partial(_sentences, rounded=True)},
        reference=lambda z, c, i: np.array([cross_entropy_from_logits(z[b], c[b], i)
                                            for b in range(len(c))]))


def _kl(teacher, student, *, rounded=False, guard=True, reduce=np.sum):
    with np.errstate(all="ignore"):  # rounded: from logs of probabilities; the rest: mistakes
        log_p, log_q = _log_q(teacher, rounded), _log_q(student, rounded)
        terms = np.exp(log_p) * (log_p - log_q)
        return reduce(np.where(log_p > -np.inf, terms, 0.0) if guard else terms, axis=-1)


@exercise("extend")
def check_kl_from_logits(func: Callable) -> CheckResult:
    """``func(teacher, student)``: KL(softmax(teacher) || softmax(student)) along the last axis."""
    teacher = np.array([[0.5, 0.0, -np.inf], [0.5, 0.0, 1.0]])
    cases = [Case((np.log([0.7, 0.3]), np.log([0.6, 0.4])), "KL([0.7, 0.3] || [0.6, 0.4])"),
             Case((np.arange(3.0), np.arange(3.0) + 10), "logits a constant apart: KL = 0"),
             Case((*np.random.default_rng(63).normal(size=(2, 4, 6)),), "4 rows of 6 logits"),
             Case((np.array([[1e3, 0]]), np.array([[0, 1e3]])), "logits near 1000: KL = 1000"),
             Case((teacher, np.array([[0.0, 0.5, 1.0], [0.0, 0.5, -np.inf]])),
                  "a teacher's -inf (p_i = 0) adds 0, not nan; a student's where p_i > 0: inf")]
    return check_function(func, cases=cases, reference=_kl, rtol=1e-9, atol=1e-12, mistakes={
        "it computes KL(student || teacher): KL is not symmetric": lambda t, s: _kl(s, t),
        "it logs probabilities that rounded to 0": partial(_kl, rounded=True),
        "a teacher's -inf makes p_i = 0 and log p_i = -inf, and 0 · (-inf) is nan: those terms "
        "are 0, so leave them out": partial(_kl, guard=False),
        "it averages the terms of a row: KL is their sum": partial(_kl, reduce=np.mean)},
        shortcuts=("kl_div", "KLDivLoss", "kl_divergence", "rel_entr", "entropy", *_LOSSES))

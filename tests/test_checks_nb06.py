"""Notebook 06's checkers: right answers pass, plausible mistakes fail with a reason."""

import numpy as np
import scipy.special
import scipy.stats
from checker_table import right, table_test, wrong

from course_utils.checks import nb06
from course_utils.information import cross_entropy_from_logits, entropy, kl_divergence


def entropy_by_hand(p, log=np.log):
    p = np.asarray(p, dtype=np.float64)
    nonzero = p[p > 0]  # 0 log 0 = 0: drop the zeros
    return float(-np.sum(nonzero * log(nonzero)))


def entropy_by_overwriting(p):
    p[p == 0] = 1.0  # 1 log 1 = 0, but the caller's p is changed
    return float(-np.sum(p * np.log(p)))


def kl_by_hand(p, q):
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    keep = p > 0
    with np.errstate(divide="ignore"):
        return float(np.sum(p[keep] * (np.log(p[keep]) - np.log(q[keep]))))


def kl_with_warning(p, q):
    keep = p > 0
    return float(np.sum(p[keep] * np.log(p[keep] / q[keep])))  # p / 0 warns


def kl_with_floor(p, q):
    keep = p > 0
    return float(np.sum(p[keep] * np.log(p[keep] / np.maximum(q[keep], 1e-12))))


def log_softmax(z):
    m = z.max(axis=-1, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=-1, keepdims=True))


def cross_entropy(logits, targets, divide_by_all=False):
    keep = targets != -100
    log_p = log_softmax(np.asarray(logits, dtype=np.float64))
    picked = log_p[np.arange(len(targets))[keep], targets[keep]]
    return float(-picked.sum() / (len(targets) if divide_by_all else keep.sum()))


def cross_entropy_in_place(logits, targets):
    logits -= logits.max(axis=-1, keepdims=True)
    return cross_entropy(logits, targets)


def cross_entropy_of_probabilities(logits, targets):
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        probs = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
        keep = targets != -100
        return float(-np.log(probs[np.arange(len(targets))[keep], targets[keep]]).mean())


ROWS = [
    *right(nb06.check_entropy_from_scratch, course_utils=entropy, worked=entropy_by_hand,
           scipy=lambda p: float(scipy.stats.entropy(p))),
    *wrong(
        nb06.check_entropy_from_scratch,
        nan_for_zeros=(lambda p: float(-np.sum(p * np.log(p))),
                       "one-hot: no uncertainty, and 0 log 0 = 0 (not nan): values differ: "
                       "expected 0.0, got nan (it warned: divide by zero encountered in log)"),
        bits=(lambda p: entropy_by_hand(p, log=np.log2), "expected 0.5004024235381879, got "
              "0.7219280948873623"),
        forgets_the_minus=(lambda p: -entropy_by_hand(p), "expected 1.3862943611198906, got "
                           "-1.3862943611198906"),
        overwrites_zeros=(entropy_by_overwriting, "changed its argument `p` in place"),
    ),
    *right(nb06.check_kl_from_scratch, course_utils=kl_divergence, worked=kl_by_hand,
           scipy=lambda p, q: float(scipy.special.rel_entr(p, q).sum())),
    *wrong(
        nb06.check_kl_from_scratch,
        reversed=(lambda p, q: kl_by_hand(q, p), "KL([0.7, 0.3] || [0.6, 0.4]) = 0.0216: values "
                  "differ: expected 0.02160085414354644, got 0.0225824210843575"),
        warns=(kl_with_warning, "q = 0 < p: infinite: right value, but it warned: divide by zero "
               "encountered in divide (it must not warn)"),
        floor_on_q=(kl_with_floor, "q = 0 < p: infinite: values differ: expected inf, got "
                    "13.12236337740433"),
    ),
    *right(nb06.check_cross_entropy_from_logits, course_utils=cross_entropy_from_logits,
           worked=cross_entropy),
    *wrong(
        nb06.check_cross_entropy_from_logits,
        counts_padding=(lambda z, t: cross_entropy(z, t, divide_by_all=True),
                        "targets of -100 (padding) are skipped, the mean is over the rest: "
                        "values differ"),
        log_of_softmax=(cross_entropy_of_probabilities,
                        "huge logits: needs log-softmax, not log(softmax): values differ: "
                        "expected 344.02028558158423, got nan"),
        sums=(lambda z, t: cross_entropy(z, t) * np.sum(t != -100),
              "a batch of 5 rows, 4 classes: the mean over rows: values differ"),
        in_place=(cross_entropy_in_place, "changed its argument `logits` in place"),
    ),
]

test_checker = table_test(ROWS)

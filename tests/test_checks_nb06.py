"""Notebook 06's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import numpy as np
import scipy.stats
import torch
import torch.nn.functional as F
from checker_table import right, table_test, wrong

from course_utils.checks import nb06


def log_softmax(z, axis=-1):  # the learner's own helper, under the course function's name
    shifted = z - z.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def smoothed_worked(logits, targets, alpha):
    log_q = log_softmax(logits, axis=-1)
    nll = -log_q[np.arange(len(targets)), targets]
    uniform_part = -log_q.mean(axis=-1)  # (1/C) sum_j -log q_j
    return float(np.mean((1 - alpha) * nll + alpha * uniform_part))


def smoothed_torch(logits, targets, alpha):
    return F.cross_entropy(torch.tensor(logits), torch.tensor(targets),
                           label_smoothing=alpha).item()


def smoothed_ignores_alpha(logits, targets, alpha):
    return smoothed_worked(logits, targets, 0.0)


def smoothed_sum_not_mean(logits, targets, alpha):  # alpha times the sum over classes, not 1/C
    log_q = log_softmax(logits, axis=-1)
    nll = -log_q[np.arange(len(targets)), targets]
    return float(np.mean((1 - alpha) * nll + alpha * -log_q.sum(axis=-1)))


def smoothed_other_classes(logits, targets, alpha):  # alpha / (C - 1) on each wrong class
    log_q = log_softmax(logits, axis=-1)
    nll = -log_q[np.arange(len(targets)), targets]
    others = (-log_q.sum(axis=-1) - nll) / (logits.shape[-1] - 1)
    return float(np.mean((1 - alpha) * nll + alpha * others))


def smoothed_full_weight(logits, targets, alpha):  # forgot the 1 - alpha
    log_q = log_softmax(logits, axis=-1)
    nll = -log_q[np.arange(len(targets)), targets]
    return float(np.mean(nll + alpha * -log_q.mean(axis=-1)))


def smoothed_sum_over_rows(logits, targets, alpha):
    log_q = log_softmax(logits, axis=-1)
    nll = -log_q[np.arange(len(targets)), targets]
    return float(np.sum((1 - alpha) * nll + alpha * -log_q.mean(axis=-1)))


def smoothed_via_probabilities(logits, targets, alpha):
    q = np.exp(logits - logits.max(axis=-1, keepdims=True))
    q = q / q.sum(axis=-1, keepdims=True)
    p = (1 - alpha) * np.eye(logits.shape[-1])[targets] + alpha / logits.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.mean(-np.sum(p * np.log(q), axis=-1)))


def nll_buggy(logits, targets, ignore_index):  # the notebook's function: two bugs
    log_probs = log_softmax(logits, axis=-1)
    kept = targets != -100
    losses = -log_probs[kept, targets[kept]]
    return float(losses.sum() / targets.size)


def nll_own_log_softmax(logits, targets, ignore_index):
    kept = targets != ignore_index
    return float(-log_softmax(logits)[kept, targets[kept]].mean())


def nll_fixed(logits, targets, ignore_index):
    kept = targets != ignore_index
    return float(-log_softmax(logits, axis=-1)[kept, targets[kept]].mean())


def nll_torch(logits, targets, ignore_index):
    v = logits.shape[-1]
    return F.cross_entropy(torch.tensor(logits).reshape(-1, v), torch.tensor(targets).reshape(-1),
                           ignore_index=ignore_index).item()


def nll_only_mean_fixed(logits, targets, ignore_index):
    kept = targets != -100
    return float(-log_softmax(logits, axis=-1)[kept, targets[kept]].mean())


def nll_only_index_fixed(logits, targets, ignore_index):
    kept = targets != ignore_index
    return float(-log_softmax(logits, axis=-1)[kept, targets[kept]].sum() / targets.size)


def nll_summed(logits, targets, ignore_index):
    kept = targets != ignore_index
    return float(-log_softmax(logits, axis=-1)[kept, targets[kept]].sum())


def nll_log_of_probabilities(logits, targets, ignore_index):  # log(softmax): 0 at z = -800
    kept = targets != ignore_index
    probs = np.exp(log_softmax(logits, axis=-1))
    return float(-np.log(probs[kept, targets[kept]]).mean())


def kl_worked(teacher, student):
    log_p, log_q = log_softmax(teacher, axis=-1), log_softmax(student, axis=-1)
    p = np.exp(log_p)
    with np.errstate(invalid="ignore"):
        return np.where(p > 0, p * (log_p - log_q), 0.0).sum(axis=-1)


def kl_as_cross_entropy_minus_entropy(teacher, student):
    log_p, log_q = log_softmax(teacher, axis=-1), log_softmax(student, axis=-1)
    p = np.exp(log_p)
    safe = p > 0  # H(p, q) - H(p), both with 0 log 0 = 0
    with np.errstate(invalid="ignore"):
        cross = np.where(safe, -p * log_q, 0.0).sum(axis=-1)
        own = np.where(safe, -p * log_p, 0.0).sum(axis=-1)
    return cross - own


def kl_via_probabilities(teacher, student):
    p = np.exp(teacher - teacher.max(axis=-1, keepdims=True))
    p = p / p.sum(axis=-1, keepdims=True)
    q = np.exp(student - student.max(axis=-1, keepdims=True))
    q = q / q.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, p * np.log(p / q), 0.0).sum(axis=-1)


def kl_without_zero_rule(teacher, student):
    log_p, log_q = log_softmax(teacher, axis=-1), log_softmax(student, axis=-1)
    with np.errstate(invalid="ignore"):
        return (np.exp(log_p) * (log_p - log_q)).sum(axis=-1)


def kl_reversed(teacher, student):
    return kl_worked(student, teacher)


def kl_torch_kl_div(teacher, student):  # the library's KL, masked and summed: numbers right
    log_p = torch.log_softmax(torch.tensor(teacher, dtype=torch.float64), dim=-1)
    log_q = torch.log_softmax(torch.tensor(student, dtype=torch.float64), dim=-1)
    terms = F.kl_div(log_q, log_p, log_target=True, reduction="none")
    return torch.where(log_p > -torch.inf, terms, 0.0).sum(dim=-1).numpy()


def kl_scipy_entropy(teacher, student):  # scipy.stats.entropy(p, q) is KL(p || q)
    p, q = np.exp(log_softmax(teacher, axis=-1)), np.exp(log_softmax(student, axis=-1))
    return scipy.stats.entropy(p, q, axis=-1)


ROWS = [
    *right(nb06.check_loss_with_one_raised_logit, exact=math.log(49 + math.exp(3)) - 3,
           rounded=1.235),
    *wrong(
        nb06.check_loss_with_one_raised_logit,
        uniform=(math.log(50), "3.91202 is too high: it is log 50, the uniform guess's loss"),
        minus_three=(math.log(50) - 3, "0.912023 is too low: it is log 50 - 3: the raised logit "
                                       "also sits in the sum"),
        fifty_terms=(math.log(50 + math.exp(3)) - 3, "it is log(50 + e^3) - 3: that is 51 terms"),
        bits=((math.log(49 + math.exp(3)) - 3) / math.log(2), "it is the loss in bits"),
        perplexity=(math.exp(math.log(49 + math.exp(3)) - 3), "it is the perplexity e^CE"),
        probability=(math.exp(3) / (49 + math.exp(3)), "it is the correct token's probability"),
        logit=(2.5, "it is a logit, not a loss"),
        other=(2.0, "2 is too high: subtract 2.5 from every logit"),
    ),
    *right(nb06.check_label_smoothed_loss, worked=smoothed_worked,
           torch=smoothed_torch),  # a note: it calls cross_entropy
    *wrong(
        nb06.check_label_smoothed_loss,
        ignores_alpha=(smoothed_ignores_alpha, "one row, alpha = 0.1: it is the loss without "
                                               "smoothing; values differ: expected 0.5136966"),
        sum_not_mean=(smoothed_sum_not_mean, "one row, alpha = 0.1: it takes the sum of -log q_j, "
                                             "not their mean"),
        other_classes=(smoothed_other_classes, "it spreads alpha over the C - 1 wrong classes"),
        full_weight=(smoothed_full_weight, "it weights -log q_c by 1 instead of 1 - alpha"),
        sum_over_rows=(smoothed_sum_over_rows, "6 rows of 7 classes, alpha = 0.2: it sums over "
                                               "the rows"),
        via_probabilities=(smoothed_via_probabilities, "logits near +-1000: each class's "
                           "log-probability stays finite: it logs probabilities rounded to 0"),
    ),
    *right(nb06.check_masked_mean_nll, worked=nll_fixed, own_log_softmax=nll_own_log_softmax,
           torch=nll_torch),  # a note: it calls cross_entropy
    *wrong(
        nb06.check_masked_mean_nll,
        buggy=(nll_buggy, "the same batch with 3 more padding positions: the loss must not "
                          "change: still the bug"),
        buggy_why=(nll_buggy, "<pad> has the id 0 and ignore_index=0: still the bug: the given "
                              "function's number (-100 for ignore_index, every position)"),
        only_mean_fixed=(nll_only_mean_fixed, "<pad> has the id 0 and ignore_index=0: still the "
                                              "bug: the given function's number (-100 for "
                                              "ignore_index"),
        only_index_fixed=(nll_only_index_fixed, "<pad> has the id 0 and ignore_index=0: it "
                                                "divides by every position, padding included"),
        summed=(nll_summed, "it returns the sum over the real targets, not their mean"),
        log_of_probabilities=(nll_log_of_probabilities, "loss 800: it logs a probability that "
                                                        "rounded to 0"),
    ),
    *right(nb06.check_kl_from_logits, worked=kl_worked,
           cross_minus_entropy=kl_as_cross_entropy_minus_entropy,
           torch_kl_div=kl_torch_kl_div),  # a note: it calls kl_div
    *wrong(
        nb06.check_kl_from_logits,
        via_probabilities=(kl_via_probabilities, "logits near 1000: KL = 1000: it logs "
                                                 "probabilities that rounded to 0"),
        no_zero_rule=(kl_without_zero_rule, "a teacher's -inf (p_i = 0) adds 0, not nan; a "
                                            "student's where p_i > 0: inf: values differ"),
        reversed=(kl_reversed, "4 rows of 6 logits: it computes KL(student || teacher)"),
        # the library computes from probabilities: e^-1000 is 0 there
        scipy_entropy=(kl_scipy_entropy, "logits near 1000: KL = 1000: it logs probabilities "
                                         "that rounded to 0"),
    ),
]

test_checker = table_test(ROWS)

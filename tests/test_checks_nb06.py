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


def pick(log_probs, targets, kept):  # each position's target entry, (B, N); 0 where not kept
    ids = np.where(kept, targets, 0)
    return np.take_along_axis(log_probs, ids[:, :, None], axis=-1)[:, :, 0] * kept


def losses_buggy(logits, targets, ignore_index):  # the notebook's function: two bugs
    log_probs = log_softmax(logits, axis=-1)
    kept = targets != -100
    return -pick(log_probs, targets, kept).sum(axis=-1) / targets.shape[-1]


def losses_fixed(logits, targets, ignore_index):
    kept = targets != ignore_index
    return -pick(log_softmax(logits, axis=-1), targets, kept).sum(axis=-1) / kept.sum(axis=-1)


def losses_by_sentence(logits, targets, ignore_index):  # section 9's mask, one sentence at a time
    out = []
    for z, c in zip(logits, targets, strict=True):
        kept = c != ignore_index
        out.append(-log_softmax(z)[np.arange(len(c))[kept], c[kept]].mean())
    return np.array(out)


def losses_one_hot(logits, targets, ignore_index):  # one-hot rows of I pick the targets
    kept = targets != ignore_index
    one_hot = np.eye(logits.shape[-1])[np.where(kept, targets, 0)]
    picked = (log_softmax(logits) * one_hot).sum(axis=-1)
    return -np.where(kept, picked, 0.0).sum(axis=-1) / kept.sum(axis=-1)


def losses_torch(logits, targets, ignore_index):
    b, n, v = logits.shape
    per_token = F.cross_entropy(torch.tensor(logits).reshape(-1, v),
                                torch.tensor(targets).reshape(-1), ignore_index=ignore_index,
                                reduction="none").reshape(b, n).numpy()
    return per_token.sum(axis=-1) / (targets != ignore_index).sum(axis=-1)


def losses_only_index_fixed(logits, targets, ignore_index):
    kept = targets != ignore_index
    return -pick(log_softmax(logits), targets, kept).sum(axis=-1) / targets.shape[-1]


def losses_only_divisor_fixed(logits, targets, ignore_index):
    kept = targets != -100
    return -pick(log_softmax(logits), targets, kept).sum(axis=-1) / kept.sum(axis=-1)


def losses_summed(logits, targets, ignore_index):
    kept = targets != ignore_index
    return -pick(log_softmax(logits), targets, kept).sum(axis=-1)


def losses_batch_mean(logits, targets, ignore_index):  # section 9's one number, for each sentence
    kept = targets != ignore_index
    mean = -log_softmax(logits)[kept, targets[kept]].mean()
    return np.full(len(targets), mean)


def losses_batch_scalar(logits, targets, ignore_index):
    kept = targets != ignore_index
    return float(-log_softmax(logits)[kept, targets[kept]].mean())


def losses_log_of_probabilities(logits, targets, ignore_index):  # log(softmax): 0 at z = -800
    kept = targets != ignore_index
    with np.errstate(divide="ignore", invalid="ignore"):
        log_probs = np.log(np.exp(log_softmax(logits)))
        picked = np.take_along_axis(log_probs, np.where(kept, targets, 0)[:, :, None], -1)
    return -np.where(kept, picked[:, :, 0], 0.0).sum(axis=-1) / kept.sum(axis=-1)


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
    *right(nb06.check_sentence_losses, worked=losses_fixed, by_sentence=losses_by_sentence,
           one_hot=losses_one_hot, torch=losses_torch),  # a note: it calls cross_entropy
    *wrong(
        nb06.check_sentence_losses,
        buggy=(losses_buggy, "the same batch with 3 more padding positions: no loss may change: "
                             "it divides each sentence's sum by N"),
        buggy_why=(losses_buggy, "<pad> has the id 0 and ignore_index=0: it compares with -100, "
                                 "not ignore_index"),
        only_index_fixed=(losses_only_index_fixed, "<pad> has the id 0 and ignore_index=0: it "
                          "divides each sentence's sum by N"),
        only_divisor_fixed=(losses_only_divisor_fixed, "<pad> has the id 0 and ignore_index=0: "
                            "it compares with -100, not ignore_index"),
        summed=(losses_summed, "it returns each sentence's sum, not its mean"),
        batch_mean=(losses_batch_mean, "sentence 1 padded after 4 tokens, sentence 2 not: it is "
                                       "the batch's one mean loss (section 9), repeated"),
        batch_scalar=(losses_batch_scalar, "no padding: every position counts: expected a "
                                           "numpy.ndarray, got float"),
        log_of_probabilities=(losses_log_of_probabilities, "loss 800: it logs a probability "
                                                           "that rounded to 0"),
    ),
    *right(nb06.check_kl_from_logits, worked=kl_worked,
           cross_minus_entropy=kl_as_cross_entropy_minus_entropy,
           torch_kl_div=kl_torch_kl_div),  # a note: it calls kl_div
    *wrong(
        nb06.check_kl_from_logits,
        via_probabilities=(kl_via_probabilities, "logits near 1000: KL = 1000: it logs "
                                                 "probabilities that rounded to 0"),
        no_zero_rule=(kl_without_zero_rule, "a teacher's -inf (p_i = 0) adds 0, not nan; a "
                                            "student's where p_i > 0: inf: a teacher's -inf makes "
                                            "p_i = 0"),
        no_zero_rule_named=(kl_without_zero_rule, "a teacher's -inf makes p_i = 0 and log p_i = "
                                                  "-inf, and 0 · (-inf) is nan"),
        averaged=(lambda t, s: kl_worked(t, s) / t.shape[-1], "4 rows of 6 logits: it averages "
                                                             "the terms of a row"),
        reversed=(kl_reversed, "4 rows of 6 logits: it computes KL(student || teacher)"),
        # the library computes from probabilities: e^-1000 is 0 there
        scipy_entropy=(kl_scipy_entropy, "logits near 1000: KL = 1000: it logs probabilities "
                                         "that rounded to 0"),
    ),
]

test_checker = table_test(ROWS)

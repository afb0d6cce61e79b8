"""Notebook 05's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import numpy as np
import scipy.special
import torch
from checker_table import right, table_test, wrong

from course_utils.checks import nb05
from course_utils.softmax import log_softmax


def sigmoid_two_branches(d):
    e = np.exp(-np.abs(d))
    return np.where(d >= 0, 1 / (1 + e), e / (1 + e))


def sigmoid_from_logaddexp(d):  # exact, no overflow, but the library's stable form: refused
    return np.exp(-np.logaddexp(0.0, -d))  # 1 / (1 + e^-d) = e^(-ln(1 + e^-d))


def sigmoid_naive(d):  # e^d / (e^d + 1) overflows to inf / inf at d = 1000
    e = np.exp(d)
    return e / (e + 1)


def sigmoid_one_branch(d):  # 1 / (1 + e^-d) is right, but e^1000 warns of an overflow
    return 1 / (1 + np.exp(-d))


def sigmoid_silenced(d):  # the one-branch formula with its overflow warning switched off
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-d))


def sigmoid_where_both(d):  # np.where evaluates both branches: e^1000 is computed anyway
    return np.where(d >= 0, 1 / (1 + np.exp(-d)), np.exp(d) / (1 + np.exp(d)))


def sigmoid_clipped(d):  # no overflow, but e^-700 instead of e^-1000 (0 in float64)
    return 1 / (1 + np.exp(-np.clip(d, -700, 700)))


def sigmoid_e_power(d):  # e^-d as np.e ** -d: the same overflow, through np.power
    with np.errstate(over="ignore"):
        return 1 / (1 + np.e ** (-np.asarray(d)))


def sigmoid_np_power(d):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.power(np.e, -d))


def sigmoid_exp2(d):  # e^-d = 2^(-d / ln 2)
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp2(-d / np.log(2.0)))


def sigmoid_torch_exp(d):
    return (1 / (1 + torch.exp(-torch.from_numpy(np.asarray(d))))).numpy()


def sigmoid_math_exp(d):
    return np.array([1 / (1 + math.exp(-x)) for x in d])


def sigmoid_wrong_sign(d):
    e = np.exp(-np.abs(d))
    return np.where(d >= 0, e / (1 + e), 1 / (1 + e))


def sigmoid_scipy_inside(d):  # the library's sigmoid, exact and without overflow
    return scipy.special.expit(np.asarray(d))


def sigmoid_torch(d):
    return torch.sigmoid(torch.from_numpy(np.asarray(d))).numpy()


def softmax_fp16_functional(scores):  # float16 in and out, the shift done by the library
    return torch.nn.functional.softmax(scores, dim=-1)


def softmax_fp16_fixed(scores):
    shifted = scores - scores.max(dim=-1, keepdim=True).values
    e = torch.exp(shifted)
    return e / e.sum(dim=-1, keepdim=True)


def softmax_fp16_buggy(scores):
    s = scores.to(torch.float16)
    e = torch.exp(s)
    return e / e.sum(dim=-1, keepdim=True)


def softmax_fp16_global_max(scores):
    e = torch.exp(scores - scores.max())
    return e / e.sum(dim=-1, keepdim=True)


def softmax_fp16_in_float32(scores):
    return torch.softmax(scores.float(), dim=-1)


def softmax_fp16_float32_detour(scores):  # right numbers and dtype, but computed in float32
    return torch.softmax(scores.float(), dim=-1).to(torch.float16)


def softmax_fp16_numpy_detour(scores):
    s = scores.numpy().astype(np.float64)
    return torch.from_numpy(scipy.special.softmax(s, axis=-1)).to(torch.float16)


def softmax_fp16_min_shift(scores):
    e = torch.exp(scores - scores.min(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)


def log_softmax_by_hand(x, axis):
    m = x.max(axis=axis, keepdims=True)
    if np.isneginf(m).any():
        raise ValueError("a slice with every entry masked has no distribution")
    shifted = x - m
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def log_softmax_logaddexp(x, axis):  # NumPy's pairwise log-sum-exp, reduced along the axis
    lse = np.logaddexp.reduce(x, axis=axis, keepdims=True)
    if np.isneginf(lse).any():
        raise ValueError("a slice whose entries are all -inf has no distribution")
    return x - lse


def log_softmax_scipy_checked(x, axis):  # the library, with the all-masked check added
    if np.isneginf(x.max(axis=axis)).any():
        raise ValueError("a slice with every entry masked has no distribution")
    return scipy.special.log_softmax(x, axis=axis)


def log_softmax_logsumexp(x, axis):
    if np.isneginf(x.max(axis=axis)).any():
        raise ValueError("a slice with every entry masked has no distribution")
    return x - scipy.special.logsumexp(x, axis=axis, keepdims=True)


def log_of_softmax(x, axis):
    with np.errstate(divide="ignore"):
        return np.log(scipy.special.softmax(x, axis=axis))


def log_of_softmax_by_hand(x, axis):  # a softmax first, then its log: -inf where it underflows
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    with np.errstate(divide="ignore"):
        return np.log(e / e.sum(axis=axis, keepdims=True))


def log_softmax_no_check_by_hand(x, axis):
    with np.errstate(invalid="ignore"):
        shifted = x - x.max(axis=axis, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def log_softmax_last_axis(x, axis):
    return log_softmax_by_hand(x, -1)


def log_softmax_global_max(x, axis):
    shifted = x - x.max()
    with np.errstate(divide="ignore"):
        return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


ROWS = [
    *right(nb05.check_float16_spacing, exact=0.5, as_power=2.0**-1),
    *wrong(
        nb05.check_float16_spacing,
        epsilon=(2.0**-10, "expected about 0.5 (within 1%), got 0.000976562"),
        relative_to_1000=(1000 * 2.0**-10, "got 0.976562"),
        one=(1.0, "got 1"),
    ),
    *right(nb05.check_sigmoid, two_branches=sigmoid_two_branches),
    *wrong(
        nb05.check_sigmoid,
        scipy_expit=(scipy.special.expit, "it calls expit, a library's sigmoid (or softmax): the "
                                          "exercise is to write the formula you derived"),
        scipy_expit_inside=(sigmoid_scipy_inside, "it calls expit, a library's sigmoid"),
        torch_sigmoid=(sigmoid_torch, "it calls sigmoid, a library's sigmoid (or softmax)"),
        # exact and without overflow: the library's softplus does the stable form
        logaddexp=(sigmoid_from_logaddexp, "it calls np.logaddexp, a library's stable "
                                           "log-sum-exp"),
        naive=(sigmoid_naive, "d = 1000: the first score takes everything, 1: np.exp "
                              "overflowed to inf at x = 1000"),
        one_branch=(sigmoid_one_branch, "d = -1000: the first score gets e^-1000, 0 in float64: "
                                        "np.exp overflowed to inf at x = 1000"),
        silenced=(sigmoid_silenced, "d = -1000: the first score gets e^-1000, 0 in float64: "
                                    "np.exp overflowed to inf at x = 1000 (silenced or not)"),
        where_both=(sigmoid_where_both, "d = 1000: the first score takes everything, 1: np.exp "
                                        "overflowed to inf at x = 1000"),
        clipped=(sigmoid_clipped, "d = -1000: the first score gets e^-1000, 0 in float64: "
                                  "values differ: expected [0.], got [9.85967654e-305]"),
        wrong_sign=(sigmoid_wrong_sign, "d and -d give q and 1 - q: values differ"),
        e_power=(sigmoid_e_power, "np.power (**) overflowed to inf at x = 1000 (silenced or not)"),
        np_power=(sigmoid_np_power, "np.power (**) overflowed to inf at x = 1000"),
        exp2=(sigmoid_exp2, "np.exp2 overflowed to inf at x = 1442.7"),
        torch_exp=(sigmoid_torch_exp, "torch.exp overflowed to inf at x = 1000"),
        math_exp=(sigmoid_math_exp, "math.exp overflowed at x = 1000: the rule is no overflow"),
    ),
    *right(nb05.check_softmax_fp16, worked=softmax_fp16_fixed),
    *wrong(
        nb05.check_softmax_fp16,
        torch_softmax=(lambda s: torch.softmax(s, dim=-1), "it calls softmax, a library softmax: "
                       "it does the max shift for you"),
        functional_softmax=(softmax_fp16_functional, "it calls softmax, a library softmax"),
        method_softmax=(lambda s: s.softmax(-1), "the rule is to fix the computation in float16 "
                                                 "yourself"),
        buggy=(softmax_fp16_buggy, "scores above 11.09: e^12 overflows float16: values differ"),
        buggy_underflow=(softmax_fp16_buggy, "rows 30 apart: shift each row by its own maximum "
                                             "(e^-30 underflows float16): values differ"),
        global_max=(softmax_fp16_global_max, "rows 30 apart: shift each row by its own maximum "
                                             "(e^-30 underflows float16): values differ"),
        in_float32=(softmax_fp16_in_float32, "small scores [2, 1, 0.1]: it computes in "
                                             "torch.float32 (float)"),
        float32_detour=(softmax_fp16_float32_detour, "small scores [2, 1, 0.1]: it computes in "
                                                     "torch.float32 (float): the rule is to fix "
                                                     "the computation in float16 itself"),
        numpy_detour=(softmax_fp16_numpy_detour, "small scores [2, 1, 0.1]: it leaves torch for "
                                                 "NumPy (numpy)"),
        min_shift=(softmax_fp16_min_shift, "scores 25 apart: the largest must become 0, not the "
                                           "smallest (e^25 overflows float16): values differ"),
    ),
    *right(nb05.check_log_softmax_along, worked=log_softmax_by_hand),
    *wrong(
        nb05.check_log_softmax_along,
        scipy_log_softmax=(log_softmax_scipy_checked, "it calls log_softmax, a library "
                           "(log-)softmax: the rule is to build it from NumPy's elementwise "
                           "operations"),
        course_utils=(lambda x, axis: log_softmax(x, axis=axis), "it calls log_softmax"),
        scipy_logsumexp=(log_softmax_logsumexp, "it calls logsumexp, a library (log-)softmax"),
        logaddexp_reduce=(log_softmax_logaddexp, "it calls np.logaddexp, a library logsumexp"),
        log_of_softmax=(log_of_softmax, "it calls softmax, a library (log-)softmax"),
        log_of_softmax_by_hand=(log_of_softmax_by_hand, "[0, -800]: -800, not -inf (no log of a "
                                "softmax): values differ: expected [0., -800.], got [0., -inf]"),
        last_axis_only=(log_softmax_last_axis, "a (3, 4) array down its columns (axis=0): values "
                                               "differ"),
        global_max=(log_softmax_global_max, "rows 2000 apart: each row's own maximum: values "
                                            "differ"),
        no_check_by_hand=(log_softmax_no_check_by_hand, "a row with every entry masked: should "
                                                        "raise ValueError"),
    ),
]

test_checker = table_test(ROWS)

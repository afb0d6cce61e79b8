"""Notebook 05's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import numpy as np
import scipy.special
import torch
from checker_table import right, table_test, wrong

from course_utils.checks import nb05


def sigmoid_two_branches(d):
    e = np.exp(-np.abs(d))
    return np.where(d >= 0, 1 / (1 + e), e / (1 + e))


def sigmoid_from_logaddexp(d):  # exact, no overflow: the library's stable form, a note
    return np.exp(-np.logaddexp(0.0, -d))  # 1 / (1 + e^-d) = e^(-ln(1 + e^-d))


def sigmoid_masked(d):  # each form only where it is safe, no np.where
    out = np.empty_like(d)
    pos = d >= 0
    out[pos] = 1 / (1 + np.exp(-d[pos]))
    e = np.exp(d[~pos])
    out[~pos] = e / (1 + e)
    return out


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


def sigmoid_scipy_inside(d):  # the library's sigmoid: 0 at d = -710, where e^-710 is not 0
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


def softmax_fp16_float32_detour(scores):  # the shift done by the library, in float32: a note
    return torch.softmax(scores.float(), dim=-1).to(torch.float16)


def softmax_fp16_float32_unshifted(scores):  # float32 hides e^12, not e^1000
    e = torch.exp(scores.float())
    return (e / e.sum(dim=-1, keepdim=True)).to(torch.float16)


def softmax_fp16_float64_unshifted(scores):
    e = torch.exp(scores.double())
    return (e / e.sum(dim=-1, keepdim=True)).to(torch.float16)


def softmax_fp16_in_float32_shifted(scores):  # the fix, computed in float32: right numbers
    s = scores.float()
    e = torch.exp(s - s.max(dim=-1, keepdim=True).values)
    return (e / e.sum(dim=-1, keepdim=True)).half()


def softmax(scores):  # the learner's own helper, under the library's name
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def softmax_fp16_own_helper(scores):
    return softmax(scores)


def softmax_fp16_numpy_detour(scores):
    s = scores.numpy().astype(np.float64)
    return torch.from_numpy(scipy.special.softmax(s, axis=-1)).to(torch.float16)


def softmax_fp16_min_shift(scores):
    e = torch.exp(scores - scores.min(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)


def log_softmax_stacked(x, axis):  # slice by slice, np.stack puts them back: natural here
    moved = np.moveaxis(x, axis, 0)
    if np.isneginf(moved.max(axis=0)).any():
        raise ValueError("a slice with every entry masked has no distribution")
    peak = moved.max(axis=0)
    lse = peak + np.log(np.sum(np.stack([np.exp(row - peak) for row in moved]), axis=0))
    return np.moveaxis(np.stack([row - lse for row in moved]), 0, axis)


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
        epsilon=(2.0**-10, "0.000976562 is too low: it is the gap after 1"),
        relative_to_1000=(1000 * 2.0**-10, "0.976562 is too high: it scales the gap after 1 by "
                                           "1000"),
        one=(1.0, "1 is too high: it takes k = 10"),
        other=(0.25, "0.25 is too low: write 1000 as (1 + m/2^10) x 2^k"),
    ),
    *right(nb05.check_sigmoid, two_branches=sigmoid_two_branches, masked=sigmoid_masked,
           logaddexp=sigmoid_from_logaddexp),  # a note: it calls logaddexp
    *wrong(
        nb05.check_sigmoid,
        # the libraries' sigmoids compute 1 / (1 + e^-d): 0 where e^-710 is a float64
        scipy_expit=(scipy.special.expit, "d = -710: e^-710 = 4.5e-309 is still a float64, though "
                                          "e^710 overflows: it computes 1 / (1 + e^-d) for every "
                                          "d"),
        scipy_expit_inside=(sigmoid_scipy_inside, "d = -710: e^-710 = 4.5e-309 is still a "
                                                  "float64"),
        torch_sigmoid=(sigmoid_torch, "d = -710: e^-710 = 4.5e-309 is still a float64"),
        naive=(sigmoid_naive, "d = 1000: the first score takes everything, 1: it computes e^d / "
                              "(e^d + 1): e^d overflows for d > 709, and inf / inf is nan"),
        one_branch=(sigmoid_one_branch, "d = -1000: the first score gets e^-1000, 0 in float64: "
                                        "right value, but it warned: overflow encountered in exp"),
        one_branch_why=(sigmoid_one_branch, "d = -710: e^-710 = 4.5e-309 is still a float64, "
                                            "though e^710 overflows: it computes 1 / (1 + e^-d) "
                                            "for every d: for d < -709, e^-d overflows to inf"),
        silenced=(sigmoid_silenced, "d = -710: e^-710 = 4.5e-309 is still a float64, though e^710 "
                                    "overflows: it computes 1 / (1 + e^-d) for every d"),
        where_both=(sigmoid_where_both, "d = 1000: the first score takes everything, 1: right "
                                        "value, but it warned: overflow encountered in exp"),
        clipped=(sigmoid_clipped, "d = -1000: the first score gets e^-1000, 0 in float64: "
                                  "values differ: expected [0.], got [9.85967654e-305]"),
        wrong_sign=(sigmoid_wrong_sign, "d and -d give q and 1 - q: its two forms are swapped"),
        e_power=(sigmoid_e_power, "d = -710: e^-710 = 4.5e-309 is still a float64, though e^710 "
                                  "overflows: it computes 1 / (1 + e^-d) for every d"),
        np_power=(sigmoid_np_power, "it computes 1 / (1 + e^-d) for every d"),
        exp2=(sigmoid_exp2, "it computes 1 / (1 + e^-d) for every d"),
        torch_exp=(sigmoid_torch_exp, "it computes 1 / (1 + e^-d) for every d"),
        math_exp=(sigmoid_math_exp, "d = -710: e^-710 = 4.5e-309 is still a float64, though "
                                    "e^710 overflows: raised OverflowError: math range error"),
    ),
    *right(nb05.check_softmax_fp16, worked=softmax_fp16_fixed,
           own_helper=softmax_fp16_own_helper, in_float32=softmax_fp16_in_float32_shifted,
           # the library's softmax, in float16 or through float32 or NumPy: a note
           functional=softmax_fp16_functional, float32_detour=softmax_fp16_float32_detour,
           numpy_detour=softmax_fp16_numpy_detour),
    *wrong(
        nb05.check_softmax_fp16,
        buggy=(softmax_fp16_buggy, "scores above 11.09: e^12 overflows float16: still the bug: "
                                   "e^z of unshifted scores overflows"),
        buggy_underflow=(softmax_fp16_buggy, "rows 32 apart: shift each row by its own maximum "
                                             "(e^-32 underflows float16): still the bug"),
        global_max=(softmax_fp16_global_max, "rows 32 apart: shift each row by its own maximum "
                                             "(e^-32 underflows float16): it shifts by the maximum "
                                             "of the whole tensor"),
        in_float32=(softmax_fp16_in_float32, "small scores [2, 1, 0.1]: dtype: expected "
                                             "torch.float16, got torch.float32"),
        float32_unshifted=(softmax_fp16_float32_unshifted, "scores near 1000: e^1000 overflows "
                                                           "float32 and float64 too: still the "
                                                           "bug"),
        float64_unshifted=(softmax_fp16_float64_unshifted, "scores near 1000: e^1000 overflows "
                                                           "float32 and float64 too: still the "
                                                           "bug"),
        min_shift=(softmax_fp16_min_shift, "scores 15 apart: the largest must become 0, not the "
                                           "smallest (e^15 overflows float16): it shifts by each "
                                           "row's minimum"),
    ),
    *right(nb05.check_log_softmax_along, worked=log_softmax_by_hand,
           stacked=log_softmax_stacked,
           scipy=log_softmax_scipy_checked,  # a note: it calls log_softmax
           scipy_logsumexp=log_softmax_logsumexp,  # a note: it calls logsumexp
           logaddexp_reduce=log_softmax_logaddexp),  # a note: it calls logaddexp
    *wrong(
        nb05.check_log_softmax_along,
        log_of_softmax=(log_of_softmax, "[0, -800]: -800, not -inf (no log of a softmax): it "
                                        "takes the log of a softmax: e^-800 rounds to 0"),
        log_of_softmax_by_hand=(log_of_softmax_by_hand, "[0, -800]: -800, not -inf (no log of a "
                                "softmax): it takes the log of a softmax"),
        last_axis_only=(log_softmax_last_axis, "a (3, 4) array down its columns (axis=0): it "
                                               "works along the last axis whatever `axis` says"),
        global_max=(log_softmax_global_max, "rows 2000 apart: each row's own maximum: it shifts "
                                            "by the maximum of the whole array"),
        no_check_by_hand=(log_softmax_no_check_by_hand, "a row with every entry masked: should "
                                                        "raise ValueError"),
    ),
]

test_checker = table_test(ROWS)

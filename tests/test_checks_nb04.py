"""Notebook 04's checkers: right answers pass, plausible mistakes fail with a reason."""

import bisect

import numpy as np
import torch
from checker_table import right, table_test, wrong

from course_utils.checks import nb04
from course_utils.stats import standardize


def score_variance(d_k, mean_q, var_q, mean_k, var_k):
    second_q, second_k = var_q + mean_q**2, var_k + mean_k**2  # E[q_i^2], E[k_i^2]
    return d_k * (second_q * second_k - (mean_q * mean_k) ** 2)


def standardize_fixed(x):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5)


def standardize_buggy(x):  # the notebook's function: the mean lines up with the wrong axis
    mean = x.mean(axis=-1)
    var = x.var(axis=-1)
    return (x - mean) / np.sqrt(var + 1e-5)


def standardize_2d_fix(x):  # [:, None] repairs a 2-D input only
    mean = x.mean(axis=-1)[:, None]
    var = x.var(axis=-1)[:, None]
    return (x - mean) / np.sqrt(var + 1e-5)


def standardize_no_eps(x):
    mean, var = x.mean(axis=-1, keepdims=True), x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var)


def standardize_sample_variance(x):
    mean, var = x.mean(axis=-1, keepdims=True), x.var(axis=-1, ddof=1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5)


def sample_by_counting(probs, u):
    below = (u[:, None] >= np.cumsum(probs)[None, :]).sum(axis=1)
    return np.minimum(below, len(probs) - 1)


def sample_by_argmax(probs, u):
    inside = u[:, None] < np.cumsum(probs)[None, :]
    inside[:, -1] = True  # rounding may leave the total just below u: the last category
    return inside.argmax(axis=1)


def sample_unclipped(probs, u):
    return (u[:, None] >= np.cumsum(probs)[None, :]).sum(axis=1)


def sample_argmax_unguarded(probs, u):
    return (u[:, None] < np.cumsum(probs)[None, :]).argmax(axis=1)


def sample_left_boundary(probs, u):  # u on a boundary goes to the left category
    below = (u[:, None] > np.cumsum(probs)[None, :]).sum(axis=1)
    return np.minimum(below, len(probs) - 1)


def sample_by_searchsorted(probs, u):
    cdf = np.cumsum(probs)
    return np.minimum(np.searchsorted(cdf, u, side="right"), len(probs) - 1)


def sample_by_plain_searchsorted(probs, u):  # np.asarray drops the checker's wrapper
    cdf = np.asarray(probs).cumsum()
    return np.minimum(np.searchsorted(cdf, np.asarray(u), side="right"), len(probs) - 1)


def sample_by_bucketize(probs, u):  # torch's interval search: a rule-breaker with right numbers
    cdf = torch.from_numpy(np.asarray(probs).cumsum())
    found = torch.bucketize(torch.from_numpy(np.asarray(u)), cdf, right=True)
    return np.minimum(found.numpy(), len(probs) - 1)


def sample_by_torch_searchsorted(probs, u):
    cdf = torch.from_numpy(np.asarray(probs).cumsum())
    found = torch.searchsorted(cdf, torch.from_numpy(np.asarray(u)), right=True)
    return np.minimum(found.numpy(), len(probs) - 1)


def score_variance_simulated(d_k, mean_q, var_q, mean_k, var_k):  # breaks the rule: simulates
    rng = np.random.default_rng(0)
    q = rng.normal(mean_q, np.sqrt(var_q), (100_000, d_k))
    k = rng.normal(mean_k, np.sqrt(var_k), (100_000, d_k))
    return float(np.var((q * k).sum(axis=1)))


def sample_by_loop(probs, u):
    cdf = list(np.cumsum(probs))
    out = []
    for value in u:
        out.append(min(bisect.bisect_right(cdf, value), len(cdf) - 1))
    return np.array(out)


ROWS = [
    *right(nb04.check_variance_of_difference, exact=35 / 6, rounded=5.83),
    *wrong(
        nb04.check_variance_of_difference,
        subtracted=(0.0, "expected about 5.83333 (within 2%), got 0"),
        one_die=(35 / 12, "got 2.91667"),
        std_not_variance=(float(np.sqrt(35 / 6)), "got 2.41523"),
    ),
    *right(nb04.check_score_variance, worked=score_variance),
    *wrong(
        nb04.check_score_variance,
        variances_only=(lambda d, mq, vq, mk, vk: d * vq * vk,
                        "keys with mean 1: E[k_i^2] = Var(k_i) + E[k_i]^2 = 2: values differ: "
                        "expected 128.0, got 64.0"),
        second_moments_only=(lambda d, mq, vq, mk, vk: d * (vq + mq**2) * (vk + mk**2),
                             "both means non-zero: (E[q_i k_i])^2 is no longer 0: values "
                             "differ: expected 40.0, got 72.0"),
        variances_added=(lambda d, mq, vq, mk, vk: d * (vq + vk),
                         "standard normal entries, d_k = 64: section 11's d_k: values differ: "
                         "expected 64.0, got 128.0"),
        no_d_k=(lambda d, mq, vq, mk, vk: score_variance(1, mq, vq, mk, vk),
                "expected 64.0, got 1.0"),
        simulated=(score_variance_simulated, "the rule is no simulation inside"),
    ),
    *right(nb04.check_standardize_tokens, worked=standardize_fixed,
           course_utils=lambda x: standardize(x, eps=1e-5)),
    *wrong(
        nb04.check_standardize_tokens,
        buggy=(standardize_buggy, "4 tokens of d = 4 (the bug runs silently here): each row its "
                                  "own mean: values differ"),
        buggy_shape=(standardize_buggy, "3 tokens of d = 8: raised ValueError: operands could "
                                        "not be broadcast"),
        fixed_for_2d_only=(standardize_2d_fix, "a (batch, seq, d) = (2, 3, 8) tensor: raised "
                                               "ValueError"),
        no_eps=(standardize_no_eps, "a constant token: the 1e-5 keeps it finite (all zeros): "
                                    "it leaves out the 1e-5"),
        sample_variance=(standardize_sample_variance, "3 tokens of d = 8: it divides by d - 1 "
                                                      "(ddof=1)"),
        eps_outside=(lambda x: (x - x.mean(axis=-1, keepdims=True))
                     / (x.std(axis=-1, keepdims=True) + 1e-5),
                     "epsilon goes inside the square root"),
    ),
    *right(nb04.check_sample_from_uniforms, counting=sample_by_counting,
           argmax=sample_by_argmax),
    *wrong(
        nb04.check_sample_from_uniforms,
        unclipped=(sample_unclipped, "rounds to 0.9999999999999999: the last category, 2: values "
                                     "differ: expected [2], got [3]"),
        argmax_unguarded=(sample_argmax_unguarded, "the last category, 2: values differ: "
                                                   "expected [2], got [0]"),
        left_boundary=(sample_left_boundary, "a u exactly on a boundary belongs to the category "
                                             "to its right: values differ"),
        searchsorted=(sample_by_searchsorted, "it uses a ready-made interval search "
                                              "(np.searchsorted, np.digitize, torch.searchsorted "
                                              "or torch.bucketize): this exercise finds the "
                                              "interval by comparing"),
        plain_searchsorted=(sample_by_plain_searchsorted, "it uses a ready-made interval search"),
        torch_bucketize=(sample_by_bucketize, "it uses a ready-made interval search"),
        torch_searchsorted=(sample_by_torch_searchsorted, "it uses a ready-made interval search"),
        loop=(sample_by_loop, "it loops over the draws"),
    ),
]

test_checker = table_test(ROWS)

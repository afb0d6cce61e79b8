"""Notebook 04's checkers: right answers pass, plausible mistakes fail with a reason."""

import bisect

import numpy as np
import torch
from checker_table import right, table_test, wrong
from numpy import searchsorted as find_interval

from course_utils.checks import nb04
from course_utils.stats import standardize


def score_variance(d_k, mean_q, var_q, mean_k, var_k):
    second_q, second_k = var_q + mean_q**2, var_k + mean_k**2  # E[q_i^2], E[k_i^2]
    return d_k * (second_q * second_k - (mean_q * mean_k) ** 2)


def standardize_fixed(x):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5)


def standardize_given(x):  # the notebook's function: ddof=1 and the epsilon outside the root
    centred = x - x.mean(axis=-1, keepdims=True)
    return centred / (x.std(axis=-1, ddof=1, keepdims=True) + 1e-5)


def standardize_ddof_fixed_only(x):  # the epsilon is still outside the root
    centred = x - x.mean(axis=-1, keepdims=True)
    return centred / (x.std(axis=-1, keepdims=True) + 1e-5)


def standardize_eps_fixed_only(x):  # the sample variance is still used
    centred = x - x.mean(axis=-1, keepdims=True)
    return centred / np.sqrt(x.var(axis=-1, ddof=1, keepdims=True) + 1e-5)


def standardize_torch(x):  # PyTorch's layer norm without a learned scale and shift
    t = torch.from_numpy(x)
    return torch.nn.functional.layer_norm(t, t.shape[-1:], eps=1e-5).numpy()


def standardize_without_keepdims(x):  # a broadcast that lines the means up with the features
    return (x - x.mean(axis=-1)) / np.sqrt(x.var(axis=-1) + 1e-5)


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


def sample_normalised_totals(probs, u):  # divides the totals by the last one: no cap needed
    totals = np.cumsum(probs)
    return (u[:, None] >= (totals / totals[-1])[None, :]).sum(axis=1)


def posterior_table(prior, likelihood):
    joint = prior[:, None] * likelihood
    evidence = joint.sum(axis=0)  # P(word), one per column
    if np.any(evidence == 0):
        raise ValueError("a word of probability 0 has no posterior")
    return joint / evidence


def posterior_by_matmul(prior, likelihood):  # P(word) as prior @ likelihood
    evidence = prior @ likelihood
    if not np.all(evidence > 0):
        raise ValueError("P(word) = 0")
    return likelihood * prior[:, None] / evidence[None, :]


def posterior_unchecked(prior, likelihood):
    joint = prior[:, None] * likelihood
    with np.errstate(invalid="ignore"):
        return joint / joint.sum(axis=0)


def sample_by_searchsorted(probs, u):  # the rule-breakers below get the numbers right
    cdf = np.cumsum(probs)
    return np.minimum(np.searchsorted(cdf, u, side="right"), len(probs) - 1)


def sample_by_plain_searchsorted(probs, u):
    cdf = np.asarray(probs).cumsum()
    return np.minimum(np.searchsorted(cdf, np.asarray(u), side="right"), len(probs) - 1)


def sample_by_bucketize(probs, u):  # torch's interval search
    cdf = torch.from_numpy(np.asarray(probs).cumsum())
    found = torch.bucketize(torch.from_numpy(np.asarray(u)), cdf, right=True)
    return np.minimum(found.numpy(), len(probs) - 1)


def sample_by_torch_searchsorted(probs, u):
    cdf = torch.from_numpy(np.asarray(probs).cumsum())
    found = torch.searchsorted(cdf, torch.from_numpy(np.asarray(u)), right=True)
    return np.minimum(found.numpy(), len(probs) - 1)


def sample_by_aliased_search(probs, u):  # an alias: the scan sees the object behind the name
    return np.minimum(find_interval(np.cumsum(probs), u, side="right"), len(probs) - 1)


def sample_by_digitize(probs, u):
    return np.minimum(np.digitize(u, np.cumsum(probs), right=False), len(probs) - 1)


def sample_by_helper_that_searches(probs, u):  # the learner's helper is scanned too
    return np.minimum(_search(np.cumsum(probs), u), len(probs) - 1)


def _search(totals, u):
    return np.searchsorted(totals, u, side="right")


def sample_by_map(probs, u):  # a loop hidden in map
    cdf = np.cumsum(probs)
    return np.array(list(map(lambda x: min(int((cdf <= x).sum()), len(cdf) - 1), u)))


def sample_by_vectorize(probs, u):  # np.vectorize is a Python loop too
    cdf = np.cumsum(probs)
    return np.vectorize(lambda x: min(int((cdf <= x).sum()), len(cdf) - 1))(u)


def sample_by_while(probs, u):
    cdf, out, j = np.cumsum(probs), np.zeros(len(u), dtype=np.int64), 0
    while j < len(u):
        out[j], j = min(int((cdf <= u[j]).sum()), len(cdf) - 1), j + 1
    return out


def searchsorted(totals, u):  # the learner's own function, under the library's name
    return (totals[None, :] <= u[:, None]).sum(axis=1)


def sample_with_own_searchsorted(probs, u):
    return np.minimum(searchsorted(np.cumsum(probs), u), len(probs) - 1)


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
        subtracted=(0.0, "0 is too low: it subtracts the variances"),
        one_die=(35 / 12, "2.91667 is too low: it is one die's variance"),
        std_not_variance=(float(np.sqrt(35 / 6)), "2.41523 is too low: it is a standard deviation"),
        other=(7.0, "7 is too high: write X - Y as X + (-1) Y"),
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
        simulated=(score_variance_simulated, "d_k = 32: exactly 32, which a formula gives and an "
                                             "average over random draws only approaches: values "
                                             "differ"),
    ),
    *right(nb04.check_standardize_tokens, worked=standardize_fixed,
           course_utils=lambda x: standardize(x, eps=1e-5), torch_layer_norm=standardize_torch),
    *wrong(
        nb04.check_standardize_tokens,
        given=(standardize_given, "3 tokens of d = 8: still the given function: ddof=1 and the "
                                  "1e-5 outside the root"),
        eps_still_outside=(standardize_ddof_fixed_only, "2 nearly constant tokens (spread about "
                                                        "0.001): the 1e-5 matters: it divides by "
                                                        "sigma + 1e-5"),
        ddof_still_one=(standardize_eps_fixed_only, "3 tokens of d = 8: it divides by d - 1 "
                                                    "(ddof=1)"),
        no_eps=(standardize_no_eps, "a constant token: all zeros: it leaves out the 1e-5"),
        sample_variance=(standardize_sample_variance, "4 tokens of d = 4: it divides by d - 1"),
        no_keepdims=(standardize_without_keepdims, "3 tokens of d = 8: raised ValueError: "
                                                   "operands could not be broadcast"),
        eps_outside=(lambda x: (x - x.mean(axis=-1, keepdims=True))
                     / (x.std(axis=-1, keepdims=True) + 1e-5),
                     "it divides by sigma + 1e-5: the 1e-5 goes inside the root"),
    ),
    *right(nb04.check_sample_from_uniforms, counting=sample_by_counting,
           argmax=sample_by_argmax, own_searchsorted=sample_with_own_searchsorted),
    *wrong(
        nb04.check_sample_from_uniforms,
        unclipped=(sample_unclipped, "rounds to 0.9999999999999999: the last category, 2: it does "
                                     "not cap the count at V - 1"),
        argmax_unguarded=(sample_argmax_unguarded, "the last category, 2: values differ: "
                                                   "expected [2], got [0]"),
        normalised_totals=(sample_normalised_totals, "u = 0.7 and u = cumsum[1] = "
                           "0.8999999999999999: each on a boundary, so dog and bird: a u on a "
                           "boundary lands left of it"),
        left_boundary=(sample_left_boundary, "a u exactly on a boundary belongs to the category "
                                             "to its right: a u on a boundary goes left"),
        # the rule, with the right numbers: the scan of the code refuses these
        searchsorted=(sample_by_searchsorted, "the rule: it calls searchsorted: the rule is no "
                                              "Python loop"),
        plain_searchsorted=(sample_by_plain_searchsorted, "it calls searchsorted"),
        aliased=(sample_by_aliased_search, "it calls searchsorted"),
        helper=(sample_by_helper_that_searches, "it calls searchsorted"),
        digitize=(sample_by_digitize, "it calls digitize"),
        torch_bucketize=(sample_by_bucketize, "it calls bucketize"),
        torch_searchsorted=(sample_by_torch_searchsorted, "it calls searchsorted"),
        loop=(sample_by_loop, "it has a for loop: the rule is no Python loop"),
        while_loop=(sample_by_while, "it has a while loop"),
        hidden_in_map=(sample_by_map, "it calls map"),
        hidden_in_vectorize=(sample_by_vectorize, "it calls vectorize"),
    ),
    *right(nb04.check_posterior_table, worked=posterior_table, by_matmul=posterior_by_matmul),
    *wrong(
        nb04.check_posterior_table,
        not_normalised=(lambda p, lik: posterior_table(p, lik) * (p @ lik),
                        "it does not divide by P(word): each column must sum to 1"),
        likelihood=(lambda p, lik: posterior_table(p, lik) * 0 + lik,
                    "it returns P(word | topic), the likelihood"),
        base_rate_neglect=(lambda p, lik: posterior_table(p * 0 + 1 / len(p), lik),
                           "a rare topic (prior 0.01): a likely word still leaves it unlikely: "
                           "it leaves out the prior (the base rate)"),
        rows_normalised=(lambda p, lik: posterior_table(p, lik) * 0
                         + (p[:, None] * lik) / (p[:, None] * lik).sum(axis=1, keepdims=True),
                         "it returns P(word | topic), the likelihood"),  # rows of lik sum to 1
        prior_on_columns=(lambda p, lik: (lik * p[None, :]) / (lik * p[None, :]).sum(axis=0),
                          "3 topics, 5 words: raised ValueError: operands could not be "
                          "broadcast"),
        no_zero_check=(posterior_unchecked, "a word no topic produces: P(word) = 0: should "
                                            "raise ValueError"),
    ),
]

test_checker = table_test(ROWS)

"""Checkers for notebook 04 (probability and statistics)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.checks import Case, CheckResult, Rule, check_function, check_number, exercise
from course_utils.stats import standardize


@exercise("predict")
def check_variance_of_difference(answer: object, *, show_answer: bool = False) -> CheckResult:
    """Var(X - Y) for two independent fair dice: Var(X) + (-1)^2 Var(Y) = 35/6."""
    return check_number(
        answer, 35 / 6, name="variance_of_difference", label="Var(X - Y) for two fair dice",
        rtol=0.02, show_answer=show_answer,
        hint="write X - Y as X + (-1) Y: section 6 scales a variance, section 8 adds two",
        mistakes={0.0: "it subtracts the variances: -Y spreads as much as Y (Var(cY) = c^2 Var(Y))",
                  35 / 12: "it is one die's variance: X and -Y each add their own spread",
                  (35 / 6) ** 0.5: "it is a standard deviation (a square root), not a variance"},
        explanation="Var(X - Y) = Var(X) + (-1)^2 Var(Y) = 35/12 + 35/12 = 35/6 = 5.83: the "
                    "variances of independent terms add even when the terms are subtracted.")


def _score_variance(d, mq, vq, mk, vk):
    return float(d * ((vq + mq**2) * (vk + mk**2) - mq**2 * mk**2))


@exercise("derive")
def check_score_variance(func: Callable) -> CheckResult:
    """``func(d_k, m_q, v_q, m_k, v_k)``: d_k ((v_q + m_q^2)(v_k + m_k^2) - m_q^2 m_k^2)."""
    cases = [Case((64, 0.0, 1.0, 0.0, 1.0), "standard normal entries, d_k = 64: section 11's d_k"),
             Case((32, 0.0, 1.0, 0.0, 1.0), "d_k = 32: exactly 32, which a formula gives and an "
                                            "average over random draws only approaches"),
             Case((16, 0.0, 4.0, 0.0, 0.25), "d_k = 16, Var(q_i) = 4, Var(k_i) = 0.25"),
             Case((64, 0.0, 1.0, 1.0, 1.0), "keys with mean 1: E[k_i^2] = Var(k_i) + E[k_i]^2 = 2"),
             Case((8, 1.0, 1.0, 2.0, 0.5), "both means non-zero: (E[q_i k_i])^2 is no longer 0"),
             Case((4, 1.0, 0.0, 2.0, 0.0), "constant entries (variance 0): q . k = 8 always")]
    return check_function(func, cases=cases, reference=_score_variance, rtol=1e-9)


def _variant(inside=True, ddof=0, eps=1e-5):
    def variant(x):
        centred, var = x - x.mean(axis=-1, keepdims=True), x.var(axis=-1, keepdims=True, ddof=ddof)
        with np.errstate(divide="ignore", invalid="ignore"):
            return centred / (np.sqrt(var + eps) if inside else np.sqrt(var) + eps)
    return variant


def _given(x):  # the colleague's function of Exercise 3: ddof=1 and the epsilon outside
    centred = x - x.mean(axis=-1, keepdims=True)
    return centred / (x.std(axis=-1, ddof=1, keepdims=True) + 1e-5)


@exercise("debug")
def check_standardize_tokens(func: Callable) -> CheckResult:
    """``func(x)``: (x - mean) / sqrt(var + 1e-5) along the last axis, the population variance
    (ddof = 0) as in LayerNorm, for (N, d) and (B, N, d); the given function divides by the
    sample standard deviation plus 1e-5."""
    rng = np.random.default_rng(41)
    cases = [Case((rng.normal(3.0, 2.0, (3, 8)),), "3 tokens of d = 8"),
             Case((rng.normal(3.0, 2.0, (4, 4)),), "4 tokens of d = 4"),
             Case((rng.normal(0.0, 5.0, (2, 3, 8)),), "a (batch, seq, d) = (2, 3, 8) tensor"),
             Case((5.0 + 1e-3 * rng.standard_normal((2, 8)),),
                  "2 nearly constant tokens (spread about 0.001): the 1e-5 matters"),
             Case((np.array([[1.0, 2, 3, 4], [5, 5, 5, 5]]),), "a constant token: all zeros")]
    mistakes = {"still the given function: ddof=1 and the 1e-5 outside the root": _given,
                "it divides by sigma + 1e-5: the 1e-5 goes inside the root": _variant(inside=False),
                "it divides by d - 1 (ddof=1): LayerNorm, and section 10, divide by d":
                _variant(ddof=1),
                "it leaves out the 1e-5: a constant token's 0 / 0 is NaN": _variant(eps=0.0)}
    return check_function(func, cases=cases, reference=lambda x: standardize(x, eps=1e-5),
                          rtol=1e-7, atol=1e-9, mistakes=mistakes,
                          shortcuts=("standardize", "layer_norm"))


_NO_SEARCH = Rule(
    says="no Python loop (map and np.vectorize loop too) and no ready-made interval search "
         "(searchsorted, digitize, bucketize): compare every u with every cumulative sum at once",
    names={"searchsorted", "digitize", "bucketize", "map", "vectorize", "apply_along_axis",
           "frompyfunc"}, loops=True)


def _counted(probs, u):  # how many running totals are <= u
    return (u[:, None] >= np.cumsum(probs)[None, :]).sum(axis=1)


@exercise("constrain")
def check_sample_from_uniforms(func: Callable) -> CheckResult:
    """``func(probs, u)``: for each u[j] the first i with u[j] < probs[0] + ... + probs[i] (the
    last category when rounding leaves the total below u[j]); the rule is read from the code."""
    rng = np.random.default_rng(44)
    cases = [Case((np.array([0.7, 0.2, 0.1]), np.array([0.1, 0.75, 0.95])),
                  "cat owns [0, 0.7), dog [0.7, 0.9), bird [0.9, 1)"),
             Case((np.array([0.5, 0.25, 0.25]), np.array([0.0, 0.3, 0.5, 0.6, 0.75, 0.9])),
                  "a u exactly on a boundary belongs to the category to its right"),
             Case((np.array([0.5, 0.0, 0.5]), np.array([0.25, 0.5, 0.75])),
                  "a category of probability 0 is never drawn"),
             Case((np.array([0.7, 0.2, 0.1]), np.array([1 - 2.0**-53])),
                  "the largest u below 1, while cumsum([0.7, 0.2, 0.1])[-1] rounds to "
                  "0.9999999999999999: the last category, 2"),
             Case((np.array([0.7, 0.2, 0.1]), np.array([0.7, np.cumsum([0.7, 0.2, 0.1])[1]])),
                  "u = 0.7 and u = cumsum[1] = 0.8999999999999999: each on a boundary, so dog "
                  "and bird"),
             Case((rng.dirichlet(np.ones(50)), rng.random(1_000)), "1,000 draws, 50 categories")]
    mistakes = {"it does not cap the count at V - 1: a u past the rounded total gets V": _counted,
                "a u on a boundary lands left of it: compare u with the running totals "
                "themselves, by <= (dividing them by the last one moves 0.7 to "
                "0.7000000000000001)":
                lambda p, u: (u[:, None] >= (p.cumsum() / p.cumsum()[-1])[None, :]).sum(1),
                "a u on a boundary goes left: count the totals <= u, not < u":
                lambda p, u: np.minimum((u[:, None] > p.cumsum()).sum(1), len(p) - 1)}
    return check_function(func, cases=cases, rule=_NO_SEARCH, mistakes=mistakes,
                          reference=lambda p, u: np.minimum(_counted(p, u), len(p) - 1))


def _posterior_table(prior, likelihood):
    joint = prior[:, None] * likelihood  # P(topic k and word w)
    return joint / joint.sum(axis=0, keepdims=True)  # divided by P(word w), a column sum


@exercise("extend")
def check_posterior_table(func: Callable) -> CheckResult:
    """``func(prior, likelihood)``: for a (K,) prior P(topic) and a (K, V) table whose row k is
    P(word | topic k), the (K, V) table whose column w is P(topic | word w), Bayes' rule for
    every word at once; ValueError when some word has probability 0 under every topic."""
    rng = np.random.default_rng(45)
    cases = [Case((np.array([0.1, 0.9]), np.array([[0.6, 0.4], [0.05, 0.95]])),
                  "section 3's topics: P(sport | goal) = 0.06 / 0.105 = 0.571"),
             Case((np.array([0.5, 0.3, 0.2]), rng.dirichlet(np.ones(5), size=3)),
                  "3 topics, 5 words"),
             Case((np.array([0.01, 0.99]), np.array([[0.9, 0.1], [0.09, 0.91]])),
                  "a rare topic (prior 0.01): a likely word still leaves it unlikely"),
             Case((np.array([0.2, 0.8]), rng.dirichlet(np.ones(2), size=2)),
                  "2 topics and 2 words, with unequal priors"),
             Case((np.array([0.5, 0.5]), np.array([[0.5, 0.5, 0.0], [0.2, 0.8, 0.0]])),
                  "a word no topic produces: P(word) = 0", raises=ValueError)]
    mistakes = {"it does not divide by P(word): each column must sum to 1":
                lambda p, lik: p[:, None] * lik,
                "it returns P(word | topic), the likelihood: Bayes' rule turns it round":
                lambda p, lik: lik,
                "it leaves out the prior (the base rate): P(topic | word) is not the "
                "likelihood normalised": lambda p, lik: lik / lik.sum(axis=0, keepdims=True)}
    return check_function(func, cases=cases, reference=_posterior_table, mistakes=mistakes)

"""Notebook 16's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import numpy as np
from checker_table import right, table_test, wrong

from course_utils import tiled
from course_utils.checks import nb16


def online_softmax_stats(x, start=-math.inf, rescale=True):
    m, ell = start, 0.0
    for value in x:
        m_new = max(m, float(value))
        ell = ell * (math.exp(m - m_new) if rescale else 1.0) + math.exp(value - m_new)
        m = m_new
    return m, ell


def online_softmax_stats_from_first(x):
    values = iter(x)
    m, ell = float(next(values)), 1.0
    for value in values:
        m, ell = tiled.merge_softmax_stats(m, ell, float(value), 1.0)
    return m, ell


def two_passes(x):
    m = max(x)
    return float(m), sum(math.exp(value - m) for value in x)


def as_array(x):
    x = np.asarray(x, dtype=np.float64)
    return float(x.max()), float(np.exp(x - x.max()).sum())


def merge_partials(out1, lse1, out2, lse2):
    lse = np.logaddexp(lse1, lse2)
    return np.exp(lse1 - lse)[:, None] * out1 + np.exp(lse2 - lse)[:, None] * out2, lse


def merge_partials_naively(out1, lse1, out2, lse2):
    w1, w2 = np.exp(lse1), np.exp(lse2)
    return (w1[:, None] * out1 + w2[:, None] * out2) / (w1 + w2)[:, None], np.log(w1 + w2)


def count_causal_tiles(lq, lk, block_q, block_k, align=None):
    count = 0
    for q_start in range(0, lq, block_q):
        last_key = min(q_start + block_q, lq) - 1 + (lk - lq if align is None else align)
        count += sum(1 for k_start in range(0, lk, block_k) if k_start <= last_key)
    return count


ROWS = [
    *right(nb16.check_online_softmax_stats, worked=online_softmax_stats,
           from_first=online_softmax_stats_from_first),
    *wrong(
        nb16.check_online_softmax_stats,
        two_passes=(two_passes, "it reads x a second time: x is a stream that can be read once"),
        as_an_array=(as_array, "it turns x into an array"),
        starts_at_zero=(lambda x: online_softmax_stats(x, start=0.0),
                        "all negative: m starts at -inf, not 0: m: values differ: expected -3.0, "
                        "got 0.0"),
        no_rescale=(lambda x: online_softmax_stats(x, rescale=False),
                    "increasing: the max changes every step: ℓ: values differ"),
        log_of_sum=(lambda x: (lambda m, ell: (m, math.log(ell)))(*online_softmax_stats(x)),
                    "ℓ: values differ"),
    ),
    *right(nb16.check_merge_partials, course_utils=tiled.merge_attention_partials,
           worked=merge_partials),
    *wrong(
        nb16.check_merge_partials,
        average=(lambda out1, lse1, out2, lse2: ((out1 + out2) / 2, np.logaddexp(lse1, lse2)),
                 "three rows, one with log-sum-exp 900: out: values differ"),
        overflows=(merge_partials_naively, "[nan, nan, nan, nan]]; 4 of 12 entries differ (4 are "
                   "nan), the worst at [2, 0]: expected -1.5244078842009887, got nan (it warned: "
                   "overflow encountered in exp)"),
        forgets_lse=(lambda *args: (merge_partials(*args)[0], np.maximum(args[1], args[3])),
                     "equal halves: same out, lse + log 2: lse: values differ: expected "
                     "[1.19314718], got [0.5]"),
    ),
    *right(nb16.check_count_causal_tiles, worked=count_causal_tiles),
    *wrong(
        nb16.check_count_causal_tiles,
        top_left=(lambda *args: count_causal_tiles(*args, align=0),
                  "Lq < Lk: bottom-right alignment: values differ"),
        about_half=(lambda lq, lk, bq, bk: math.ceil(lq / bq) * math.ceil(lk / bk) // 2,
                    "8×8 in 2×2 tiles: 10 of 16: values differ: expected 10, got 8"),
        triangle_formula=(lambda lq, lk, bq, bk: (n := math.ceil(lq / bq)) * (n + 1) / 2,
                          "8×8 in 2×2 tiles: 10 of 16: expected an integer, got float 10.0"),
    ),
]

test_checker = table_test(ROWS)

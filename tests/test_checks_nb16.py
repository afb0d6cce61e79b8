"""The notebook 16 checkers pass the reference solutions and catch plausible mistakes."""

from __future__ import annotations

import math

import numpy as np

from course_utils import tiled
from course_utils.checks import nb16


def stub(*args):
    raise NotImplementedError


def test_online_softmax_stats():
    assert nb16.check_online_softmax_stats(tiled.online_softmax_stats).passed

    def no_rescale(x):  # forgets to rescale the old sum when the max grows
        m, ell = -math.inf, 0.0
        for value in x:
            m = max(m, value)
            ell += math.exp(value - m)
        return m, ell

    def unshifted(x):  # the two-pass textbook form without the max: overflows near 1000
        return float(np.max(x)), float(np.sum(np.exp(x)) / np.exp(np.max(x)))

    assert nb16.check_online_softmax_stats(no_rescale).status == "failed"
    with np.errstate(over="ignore", invalid="ignore"):
        assert nb16.check_online_softmax_stats(unshifted).status == "failed"
    assert nb16.check_online_softmax_stats(stub).status == "not attempted"


def test_merge_partials():
    assert nb16.check_merge_partials(tiled.merge_attention_partials).passed

    def average(out1, lse1, out2, lse2):  # ignores how much each part weighs
        return (out1 + out2) / 2, np.logaddexp(lse1, lse2)

    def naive_exp(out1, lse1, out2, lse2):  # exponentiates 900 directly: overflow
        w1, w2 = np.exp(lse1), np.exp(lse2)
        total = w1 + w2
        return (w1[:, None] * out1 + w2[:, None] * out2) / total[:, None], np.log(total)

    assert nb16.check_merge_partials(average).status == "failed"
    with np.errstate(over="ignore", invalid="ignore"):
        assert nb16.check_merge_partials(naive_exp).status == "failed"
    assert nb16.check_merge_partials(stub).status == "not attempted"


def test_count_causal_tiles():
    def reference(lq, lk, bq, bk):
        return int(tiled.visited_tiles(lq, lk, bq, bk, causal=True).sum())

    def top_left(lq, lk, bq, bk):  # aligns the diagonal top-left
        return sum(
            1 for i in range(0, lq, bq) for j in range(0, lk, bk) if j <= min(i + bq, lq) - 1
        )

    def half(lq, lk, bq, bk):  # "about half" is not a count
        return math.ceil(lq / bq) * math.ceil(lk / bk) // 2

    assert nb16.check_count_causal_tiles(reference).passed
    assert nb16.check_count_causal_tiles(top_left).status == "failed"
    assert nb16.check_count_causal_tiles(half).status == "failed"
    assert nb16.check_count_causal_tiles(stub).status == "not attempted"

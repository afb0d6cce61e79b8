"""Checkers for notebook 16: online softmax, merging partial attention, causal tile counting."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils import tiled
from course_utils.checks import Case, CheckResult, check_function


def check_online_softmax_stats(func: Callable[[np.ndarray], tuple[float, float]]) -> CheckResult:
    """``func(x)`` must return ``(m, ℓ)``: the max of x and ``Σ e^(x_i − m)``, in one pass."""
    cases = [
        Case((np.array([2.0, 1.0, 0.1]),), "softmax([2, 1, 0.1]) statistics"),
        Case((np.array([0.0, 5.0, -3.0, 5.0]),), "the maximum appears twice"),
        Case((np.array([1000.0, 999.0, 998.0]),), "logits near 1000 must not overflow"),
        Case((np.array([-4.0, -2.0, 0.0, 2.0, 4.0]),), "increasing: the max changes every step"),
        Case((np.array([7.5]),), "one element: (7.5, 1.0)"),
    ]
    return check_function(
        func, cases=cases, reference=tiled.online_softmax_stats, name="online_softmax_stats"
    )


def check_merge_partials(
    func: Callable[..., tuple[np.ndarray, np.ndarray]],
) -> CheckResult:
    """``func(out1, lse1, out2, lse2)`` must merge two partial attention results."""
    rng = np.random.default_rng(15)
    out1, out2 = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    lse1, lse2 = np.array([0.5, 2.0, -1.0]), np.array([1.5, -3.0, 900.0])
    cases = [
        Case((out1, lse1, out2, lse2), "three rows, one with log-sum-exp 900"),
        Case((out1[:1], lse1[:1], out1[:1], lse1[:1]), "equal halves: same out, lse + log 2"),
        Case(
            (out1[:1], np.array([-np.inf]), out2[:1], np.array([0.3])),
            "an empty first part (lse = -inf) contributes nothing",
        ),
    ]
    return check_function(
        func, cases=cases, reference=tiled.merge_attention_partials, name="merge_partials"
    )


def _causal_tiles(lq: int, lk: int, block_q: int, block_k: int) -> int:
    return int(tiled.visited_tiles(lq, lk, block_q, block_k, causal=True).sum())


def check_count_causal_tiles(func: Callable[[int, int, int, int], int]) -> CheckResult:
    """``func(lq, lk, block_q, block_k)`` must count the tiles a causal tiled loop visits."""
    cases = [
        Case((8, 8, 2, 2), "8×8 in 2×2 tiles: 10 of 16"),
        Case((1024, 1024, 128, 128), "the lower triangle of an 8×8 grid: 36"),
        Case((10, 10, 4, 4), "lengths that are not multiples of the block"),
        Case((4, 12, 2, 4), "Lq < Lk: bottom-right alignment"),
        Case((12, 4, 4, 2), "Lq > Lk: the first rows see nothing"),
        Case((1, 100, 1, 16), "decoding: one query sees all 7 tiles"),
    ]
    return check_function(func, cases=cases, reference=_causal_tiles, name="count_causal_tiles")

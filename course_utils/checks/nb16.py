"""Checkers for notebook 16: online softmax, merging partial attention, causal tile counting."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils import tiled
from course_utils.checks import Case, CheckResult, RuleBroken, check_function


class Stream:
    """Scores that arrive one at a time and can be read only once, like the key tiles of a long
    sequence: ``for value in x`` works; a second pass, or turning x into an array, raises
    :class:`RuleBroken`."""

    def __init__(self, values: list[float]) -> None:
        self._values = np.asarray(values, dtype=np.float64)
        self._next = 0
        self._ended = False

    def __iter__(self) -> Stream:
        if self._ended:
            raise RuleBroken("it reads x a second time: x is a stream that can be read once, "
                             "so update m and ℓ together as each value arrives (one pass)")
        return self

    def __next__(self) -> np.float64:
        if self._next == len(self._values):
            self._ended = True
            raise StopIteration
        self._next += 1
        return self._values[self._next - 1]

    def __array__(self, dtype=None, copy=None):
        raise RuleBroken("it turns x into an array: x is a stream that can be read once, value "
                         "by value (`for value in x`), without keeping the values")

    def __repr__(self) -> str:
        return f"Stream({len(self._values) - self._next} of {len(self._values)} values left)"


def check_online_softmax_stats(func: Callable[[Stream], tuple[float, float]]) -> CheckResult:
    """``func(x)`` must return ``(m, ℓ)``: the max of x and ``Σ e^(x_i − m)``, reading the
    :class:`Stream` x once."""
    scores = [
        ([2.0, 1.0, 0.1], "softmax([2, 1, 0.1]) statistics"),
        ([0.0, 5.0, -3.0, 5.0], "the maximum appears twice"),
        ([1000.0, 999.0, 998.0], "logits near 1000 must not overflow"),
        ([-4.0, -2.0, 0.0, 2.0, 4.0], "increasing: the max changes every step"),
        ([-5.0, -3.0, -4.0], "all negative: m starts at -inf, not 0"),
        ([7.5], "one element: (7.5, 1.0)"),
    ]
    cases = [Case((Stream(x),), label, expected=tiled.online_softmax_stats(np.array(x)))
             for x, label in scores]
    return check_function(func, cases=cases, name="online_softmax_stats", names=("m", "ℓ"))


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
    return check_function(func, cases=cases, reference=tiled.merge_attention_partials,
                          name="merge_partials", names=("out", "lse"))


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

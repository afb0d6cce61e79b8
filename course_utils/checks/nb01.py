"""Checkers for notebook 01 (scalars, vectors, matrices, tensors)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.checks import Case, CheckResult, Rule, check_function, check_number, exercise
from course_utils.linalg import broadcast_shape


def _padded(lengths: list[int], seq: int, d: int, seed: int, dtype=np.int64) -> tuple:
    x = np.random.default_rng(seed).standard_normal((len(lengths), seq, d))
    x[np.arange(seq) >= np.array(lengths)[:, None]] = 0.0
    return x, np.array(lengths, dtype=dtype)


@exercise("extend")
def check_last_real_token(func: Callable) -> CheckResult:
    """``func(x, lengths)``: row b is ``x[b, lengths[b] - 1]``, (batch, seq, d) and (batch,) ->
    (batch, d); ValueError for an x that is not 3-D and for a length outside 1..seq."""
    x = np.arange(24).reshape(2, 3, 4)
    cases = [
        Case((x, np.array([3, 1])), "lengths [3, 1] in a (2, 3, 4) array -> rows x[0, 2], x[1, 0]"),
        Case(_padded([5, 2, 1, 4], 5, 3, seed=0), "a padded (4, 5, 3) batch, lengths [5, 2, 1, 4]"),
        Case((x, np.array([3, 3])), "every sequence full: the same as x[:, -1]"),
        Case((np.arange(5.0).reshape(1, 1, 5), np.array([1])), "one sequence of one token"),
        Case(_padded([2, 4, 3], 4, 2, seed=1, dtype=np.int32), "int32 lengths"),
        Case((x, np.array([2, 0])), "length 0 has no last token", raises=ValueError),
        Case((x, np.array([4, 1])), "length 4 in a sequence of 3", raises=ValueError),
        Case((np.zeros((3, 4)), np.ones(3, int)), "x of shape (3, 4) is 2-D", raises=ValueError)]
    mistakes = {"it takes the last position, x[:, -1], padding and all": lambda x, n: x[:, -1],
                "it counts from the end, x[b, -length]": lambda x, n: x[np.arange(len(x)), -n]}
    return check_function(func, cases=cases, reference=lambda x, n: x[np.arange(len(x)), n - 1],
                          name="last_real_token", mistakes=mistakes)


@exercise("constrain")
def check_broadcast_shape(func: Callable) -> CheckResult:
    """``func(shape_a, shape_b)``: the broadcast shape (a tuple), ValueError when they clash. Rule
    (a scan): no broadcasting helper; building arrays fails on the axes of 2**50."""
    rule = Rule("to apply the three rules to the tuples yourself, without a ready-made helper",
                names={"broadcast_shapes", "broadcast_to", "broadcast_arrays", "broadcast_shape"})
    cases = [
        Case(((32, 128, 768), (768,)), "add a bias vector to every token: (32, 128, 768)"),
        Case(((3, 1), (1, 4)), "a column and a row make a table: (3, 4)"),
        Case(((8, 1, 6, 1), (7, 1, 5)), "different numbers of axes: (8, 7, 6, 5)"),
        Case(((), (2, 3)), "a scalar broadcasts to anything"),
        Case(((5, 4), (5, 4)), "equal shapes stay as they are"),
        Case(((2, 0), (1,)), "an axis of size 0 stretches a 1 to 0, not 0 to 1: (2, 0)"),
        Case(((2**50, 1), (1, 2**50)), "sizes of 2**50: only tuples, no arrays, can hold them",
             expected=(2**50, 2**50)),
        Case(((32, 128, 768), (128, 512)), "768 against 512 clashes", raises=ValueError),
        Case(((2, 3), (2,)), "shapes align on the right: 3 against 2", raises=ValueError)]
    return check_function(func, cases=cases, reference=broadcast_shape, name="broadcast_shape",
                          rule=rule)


_MIB = 1000 * 1000 * 768 * 4 / 2**20  # (1000, 1000, 768) float32 numbers


@exercise("predict")
def check_broadcast_memory(answer, *, show_answer: bool = False) -> CheckResult:
    """``answer``: MiB of X[:, None, :] - X[None, :, :], X (1000, 768) float32 (within 1%)."""
    mistakes = {_MIB * 2**20: "that is the count in bytes", _MIB / 1024: "that is GiB, not MiB",
                _MIB * 2: "that is float64; a float32 number takes 4 bytes, not 8",
                _MIB / 4: "that counts numbers, not bytes", _MIB / 768: "it drops the d_model "
                "axis, which the 3-D result keeps", _MIB * 2**20 / 1e6: "that is MB (10**6 bytes), "
                "not MiB (2**20)", _MIB / 1000: "that is one (1000, 768) array, not the result"}
    return check_number(
        answer, _MIB, name="broadcast_memory", rtol=0.01, mistakes=mistakes,
        label="MiB of X[:, None, :] - X[None, :, :] for X (1000, 768) float32",
        hint="write down the shape the two operands broadcast to, count its numbers, then bytes",
        explanation="X[:, None, :] is (1000, 1, 768) and X[None, :, :] is (1, 1000, 768); they "
        "broadcast to (1000, 1000, 768), 768,000,000 numbers of 4 bytes: 3.07e9 bytes = 2929.7 "
        "MiB, about 2.9 GiB, from a 3 MiB input.", show_answer=show_answer)


def _mean_pool(x, lengths):
    real = np.arange(x.shape[1])[None, :] < lengths[:, None]  # (batch, seq), True = real token
    return (x * real[:, :, None]).sum(axis=1) / lengths[:, None]


@exercise("debug")
def check_mean_pool(func: Callable) -> CheckResult:
    """``func(x, lengths)``: the mean of each sequence's real token vectors, (batch, seq, d) and
    (batch,) -> (batch, d); the padding is not zero, and the bug runs where batch = seq = d."""
    g = np.random.default_rng(5).standard_normal
    cases = [Case((np.arange(27.0).reshape(3, 3, 3), np.array([3, 1, 2])), "(3, 3, 3) of 0..26, "
                  "lengths [3, 1, 2] -> [[3, 4, 5], [9, 10, 11], [19.5, 20.5, 21.5]]"),
             Case((g((2, 4, 3)) + 1, np.array([4, 2])), "(2, 4, 3), lengths [4, 2]: batch, seq "
                  "and d differ"),
             Case((g((4, 4, 4)), np.array([1, 4, 2, 3])), "(4, 4, 4), lengths [1, 4, 2, 3]"),
             Case((g((3, 5, 2)), np.array([5, 5, 5])), "(3, 5, 2), no padding: the plain mean"),
             Case((g((1, 6, 3)), np.array([2], dtype=np.int32)), "one sequence of 2 real tokens "
                  "out of 6, int32 lengths"),
             Case((g((100, 4, 3)), np.arange(100) % 4 + 1), "a batch of 100 sequences")]
    mistakes = {"still the bug: the mask and the lengths do not line up with the batch axis":
                lambda x, n: (x * (np.arange(x.shape[1]) < n)).sum(axis=1) / n,
                "it averages the padding too": lambda x, n: x.sum(axis=1) / n[:, None],
                "it takes the plain mean over all seq positions": lambda x, n: x.mean(axis=1)}
    return check_function(func, cases=cases, reference=_mean_pool, name="mean_pool",
                          mistakes=mistakes)

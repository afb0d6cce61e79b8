"""Checkers for notebook 01 (scalars, vectors, matrices, tensors)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.checks import Case, CheckResult, check_function
from course_utils.linalg import broadcast_shape


def _require_3d(x) -> None:
    if x.ndim != 3:
        raise ValueError(f"x must be (batch, seq, d_model), got shape {tuple(x.shape)}")


def _last_real_token(x, lengths):
    _require_3d(x)
    lengths = np.asarray(lengths)
    if lengths.shape != (x.shape[0],):
        raise ValueError(f"lengths must have one entry per sequence, got shape {lengths.shape}")
    if lengths.min() < 1 or lengths.max() > x.shape[1]:
        raise ValueError(f"lengths must lie in 1..{x.shape[1]}, got {lengths.tolist()}")
    return x[np.arange(x.shape[0]), lengths - 1]


def _flatten_tokens(x):
    _require_3d(x)
    return x.reshape(x.shape[0] * x.shape[1], x.shape[2])


def _padded(batch: int, seq: int, d: int, lengths: list[int], seed: int) -> np.ndarray:
    """A random (batch, seq, d) batch whose padding positions (t >= lengths[b]) hold zeros."""
    x = np.random.default_rng(seed).standard_normal((batch, seq, d))
    x[np.arange(seq) >= np.array(lengths)[:, None]] = 0.0
    return x


def check_last_real_token(func: Callable) -> CheckResult:
    """``func(x, lengths)``: row ``b`` is ``x[b, lengths[b] - 1]``, the last real token of padded
    sequence ``b``, (batch, seq, d) and (batch,) -> (batch, d). ValueError for an ``x`` that is
    not 3-D and for a length outside 1..seq (length 0 has no last token; ``x[b, -1]`` would pick
    padding)."""
    x = np.arange(2 * 3 * 4).reshape(2, 3, 4)
    cases = [
        Case((x, np.array([3, 1])), "lengths [3, 1] in a (2, 3, 4) array -> rows x[0, 2], x[1, 0]"),
        Case((_padded(4, 5, 3, [5, 2, 1, 4], seed=0), np.array([5, 2, 1, 4])),
             "a padded (4, 5, 3) batch, lengths [5, 2, 1, 4]"),
        Case((x, np.array([3, 3])), "every sequence full: the same as x[:, -1]"),
        Case((np.arange(5.0).reshape(1, 1, 5), np.array([1])), "one sequence of one token"),
        Case((_padded(3, 4, 2, [2, 4, 3], seed=1), np.array([2, 4, 3], dtype=np.int32)),
             "int32 lengths"),
        Case((x, np.array([2, 0])), "length 0 has no last token", raises=ValueError),
        Case((x, np.array([4, 1])), "length 4 in a sequence of 3", raises=ValueError),
        Case((np.zeros((3, 4)), np.array([1, 1, 1])), "a 2-D input is not (batch, seq, d)",
             raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=_last_real_token, name="last_real_token")


def check_broadcast_shape(func: Callable) -> CheckResult:
    """``func(shape_a, shape_b)``: the broadcast shape as a tuple, ValueError when they clash."""
    cases = [
        Case(((32, 128, 768), (768,)), "add a bias vector to every token: (32, 128, 768)"),
        Case(((3, 1), (1, 4)), "a column and a row make a table: (3, 4)"),
        Case(((8, 1, 6, 1), (7, 1, 5)), "different numbers of axes: (8, 7, 6, 5)"),
        Case(((), (2, 3)), "a scalar broadcasts to anything"),
        Case(((5, 4), (5, 4)), "equal shapes stay as they are"),
        Case(((2, 0), (1,)), "an axis of size 0 stretches a 1 to 0, not 0 to 1: (2, 0)"),
        Case(((32, 128, 768), (128, 512)), "768 against 512 clashes", raises=ValueError),
        Case(((2, 3), (2,)), "shapes align on the right: 3 against 2", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=broadcast_shape, name="broadcast_shape")


def check_flatten_tokens(func: Callable) -> CheckResult:
    """``func(x)``: (batch, seq, d) -> (batch * seq, d), row ``b * seq + t`` being ``x[b, t]``."""
    cases = [
        Case((np.arange(2 * 3 * 4).reshape(2, 3, 4),), "a (2, 3, 4) array -> (6, 4)"),
        Case((np.random.default_rng(1).standard_normal((3, 5, 2)),), "a (3, 5, 2) array"),
        Case((np.ones((1, 1, 7)),), "one token"),
        Case((np.zeros((6, 4)),), "a 2-D input is not (batch, seq, d)", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=_flatten_tokens, name="flatten_tokens")

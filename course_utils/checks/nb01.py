"""Checkers for notebook 01 (scalars, vectors, matrices, tensors)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.checks import Case, CheckResult, check_function
from course_utils.linalg import broadcast_shape


def _require_3d(x) -> None:
    if x.ndim != 3:
        raise ValueError(f"x must be (batch, seq, d_model), got shape {tuple(x.shape)}")


def _last_token(x):
    _require_3d(x)
    return x[:, -1, :]


def _flatten_tokens(x):
    _require_3d(x)
    return x.reshape(x.shape[0] * x.shape[1], x.shape[2])


def check_last_token(func: Callable) -> CheckResult:
    """``func(x)``: the last token's vector of every sequence, (batch, seq, d) -> (batch, d).

    Works for NumPy arrays and torch tensors alike; a tensor that is not 3-D raises ValueError.
    """
    import torch

    x = np.arange(2 * 3 * 4).reshape(2, 3, 4)
    cases = [
        Case((x,), "a (2, 3, 4) array -> (2, 4): rows x[0, 2] and x[1, 2]"),
        Case((np.arange(5.0).reshape(1, 1, 5),), "one sequence of one token"),
        Case((np.random.default_rng(0).standard_normal((4, 6, 3)),), "a (4, 6, 3) array"),
        Case((torch.arange(24.0).reshape(3, 2, 4),), "a torch tensor (3, 2, 4) -> tensor (3, 4)"),
        Case((np.zeros((3, 4)),), "a 2-D input is not (batch, seq, d)", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=_last_token, name="last_token")


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

"""Checkers for notebook 09: the encoding without a loop, the dot product of two encodings as a
formula in the offset, positions added to a batch, and the length of an encoding."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable

import numpy as np

from course_utils import positional
from course_utils.checks import (
    Case,
    CheckResult,
    RuleBroken,
    check_function,
    check_number,
    exercise,
    wraps_answer,
)

_LINE_BUDGET = 200  # lines of the learner's file per call: a loop over 1000 positions runs more


def _lines_run(func: Callable, *args) -> tuple[object, int]:
    """``func(*args)`` and how many lines of its own source file ran (a loop repeats lines)."""
    code = getattr(inspect.unwrap(func), "__code__", None)
    count = 0

    def count_lines(frame, event, arg):
        nonlocal count
        count += event == "line"
        return count_lines

    def trace(frame, event, arg):
        return count_lines if code and frame.f_code.co_filename == code.co_filename else None

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        return func(*args), count
    finally:
        sys.settrace(previous)


@exercise("constrain")
def check_sinusoidal_encoding(func: Callable) -> CheckResult:
    """``func(n_positions, d_model)``: float64 (n_positions, d_model) with interleaved
    ``PE[pos, 2i] = sin(pos / 10000^(2i/d_model))`` and ``PE[pos, 2i+1] = cos(...)``, without a
    Python loop over the positions; ValueError for an odd d_model."""

    @wraps_answer(func)
    def vectorized(n_positions, d_model):
        pe, lines = _lines_run(func, n_positions, d_model)
        if lines > _LINE_BUDGET:
            raise RuleBroken(f"it loops over the positions ({lines} lines of Python ran for "
                             f"{n_positions} of them): compute all the angles as one array, "
                             "positions[:, None] * frequencies[None, :]")
        return pe

    cases = [
        Case((3, 2), "d_model = 2: [sin(pos), cos(pos)]"),
        Case((1, 8), "position 0 is [0, 1, 0, 1, ...]"),
        Case((10, 4), "10 positions, d_model = 4"),
        Case((1000, 16), "1000 positions, d_model = 16: interleaved, and no loop over positions"),
        Case((4, 5), "odd d_model", raises=ValueError),
    ]
    return check_function(vectorized, cases=cases, reference=positional.sinusoidal_encoding,
                          name="sinusoidal_encoding", rtol=1e-9, atol=1e-12)


def _pe_dot_measured(k: np.ndarray, d_model: int) -> np.ndarray:
    """PE(p)·PE(p + k) measured from the table at p = 300 (any p gives the same)."""
    table = positional.sinusoidal_encoding(700, d_model)
    return np.array([table[300] @ table[300 + int(offset)] for offset in np.ravel(k)]).reshape(
        np.shape(k))


_TABLE_RULE = ("the rule is a formula in k: {name} was called, which measures the dot products "
               "instead of deriving them")


@exercise("derive")
def check_pe_dot(func: Callable) -> CheckResult:
    """``func(k, d_model)``: PE(p)·PE(p + k) = sum_i cos(k ω_i) for an array of offsets, checked
    against dot products measured at several p; ``positional.sinusoidal_encoding`` and
    ``relative_position_matrix`` raise :class:`RuleBroken` while ``func`` runs."""

    @wraps_answer(func)
    def formula(k: np.ndarray, d_model: int) -> object:
        saved = {name: getattr(positional, name)
                 for name in ("sinusoidal_encoding", "relative_position_matrix")}

        def forbid(name: str) -> Callable:
            def refuse(*args: object, **kwargs: object) -> object:
                raise RuleBroken(_TABLE_RULE.format(name=f"positional.{name}"))
            return refuse

        try:
            for name in saved:
                setattr(positional, name, forbid(name))
            return func(k, d_model)
        finally:
            for name, original in saved.items():
                setattr(positional, name, original)

    for p in (0, 137):  # the measurement itself does not depend on p
        table = positional.sinusoidal_encoding(400, 16)
        assert abs(table[p] @ table[p + 50] - _pe_dot_measured(np.array([50]), 16)[0]) < 1e-9
    cases = [
        Case((np.array([0]), 8), "k = 0: every pair gives 1, so d_model / 2 = 4",
             expected=_pe_dot_measured(np.array([0]), 8)),
        Case((np.array([1, 2, 3]), 2), "d_model = 2: one pair, the dot product is cos(k)",
             expected=_pe_dot_measured(np.array([1, 2, 3]), 2)),
        Case((np.array([-10, 10]), 128), "k = ±10, d_model = 128: symmetric in k",
             expected=_pe_dot_measured(np.array([-10, 10]), 128)),
        Case((np.arange(0, 300, 25), 64), "k = 0, 25, ..., 275 with d_model = 64",
             expected=_pe_dot_measured(np.arange(0, 300, 25), 64)),
    ]
    return check_function(formula, cases=cases, name="pe_dot", rtol=1e-9, atol=1e-9)


def _add_positions(X: np.ndarray) -> np.ndarray:
    return X + positional.sinusoidal_encoding(X.shape[1], X.shape[2])


@exercise("debug")
def check_add_positions(func: Callable) -> CheckResult:
    """``func(X)`` for X of shape (B, N, d_model): X + PE_{0:N} for every sentence, X unchanged."""
    rng = np.random.default_rng(9)
    cases = [
        Case((np.zeros((2, 5, 8)),), "2 sentences of 5 tokens, all zero: the output is PE twice"),
        Case((rng.normal(size=(3, 4, 6)),), "3 sentences of 4 tokens, d_model = 6"),
        Case((rng.normal(size=(5, 5, 4)),), "B = N = 5: the shapes cannot tell B from N"),
        Case((rng.normal(size=(1, 7, 2)),), "one sentence of 7 tokens"),
    ]
    return check_function(func, cases=cases, reference=_add_positions, name="add_positions",
                          rtol=1e-12, atol=1e-12)


_NORM_EXPLANATION = (
    "Each of the 256 pairs contributes sin² + cos² = 1 to the squared length, whatever the "
    "position: ||PE(pos)||² = d_model / 2 = 256, so ||PE(pos)|| = 16 at every position. (The paper "
    "multiplies the embeddings by sqrt(d_model) ≈ 22.6 without saying why; one reading: embedding "
    "entries of size about 1/sqrt(d_model) give rows of length about 1, which PE's 16 would drown.)"
)


@exercise("predict")
def check_pe_norm(answer: object) -> CheckResult:
    """||PE(1000)|| for d_model = 512: sqrt(256) = 16."""
    return check_number(answer, 16.0, name="pe_norm", rtol=0.01,
                        label="||PE(1000)|| for d_model = 512", explanation=_NORM_EXPLANATION)

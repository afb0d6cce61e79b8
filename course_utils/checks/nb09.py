"""Checkers for notebook 09 (embeddings and positional encoding)."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable

import numpy as np

from course_utils import positional
from course_utils.checks import Case, CheckResult, RuleBroken, check_function, wraps_answer

_LINE_BUDGET = 200  # lines of the learner's file per call: a loop over 1000 positions runs more
_VOCAB = {"<pad>": 0, "<unk>": 1, "a": 2, "bites": 3, "dog": 4, "man": 5, "the": 6}


def _encode(text: str, vocab: dict[str, int]) -> list[int]:
    return [vocab.get(word, vocab["<unk>"]) for word in text.lower().split()]


def _one_hot(ids: np.ndarray, vocab_size: int) -> np.ndarray:
    ids = np.asarray(ids)
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        raise ValueError(f"ids must lie in [0, {vocab_size})")
    return np.eye(vocab_size)[ids]


def check_encode(func: Callable) -> CheckResult:
    """``func(text, vocab)``: the list of token ids of the lower-cased, whitespace-split words,
    unknown words mapped to ``vocab["<unk>"]``."""
    cases = [
        Case(("a dog bites a man", _VOCAB), "a dog bites a man -> [2, 4, 3, 2, 5]",
             expected=[2, 4, 3, 2, 5]),
        Case(("A Man bites THE dog", _VOCAB), "upper case is lowered"),
        Case(("a cat bites a dog", _VOCAB), "'cat' is not in the vocabulary: <unk>"),
        Case(("  the   dog  ", _VOCAB), "extra spaces"),
    ]
    return check_function(func, cases=cases, reference=_encode, name="encode")


def check_one_hot(func: Callable) -> CheckResult:
    """``func(ids, vocab_size)``: float64 (N, V) with a single 1 per row at column ``ids[n]``;
    ValueError for an id outside [0, vocab_size)."""
    cases = [
        Case((np.array([2, 0, 1]), 3), "ids [2, 0, 1] with V = 3"),
        Case((np.array([2, 4, 3, 2, 5]), 7), "a dog bites a man"),
        Case((np.array([0]), 1), "a vocabulary of one"),
        Case((np.array([1, 7]), 7), "id 7 with V = 7 is out of range", raises=ValueError),
        Case((np.array([-1]), 4), "a negative id", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=_one_hot, name="one_hot")


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


def check_relative_position_matrix(func: Callable) -> CheckResult:
    """``func(k, d_model)``: the block-diagonal (d_model, d_model) float64 matrix ``M_k`` with
    ``PE(pos + k) = M_k @ PE(pos)``; ValueError for an odd d_model."""
    cases = [
        Case((0, 4), "k = 0: the identity"),
        Case((1, 2), "k = 1, d_model = 2: one rotation block"),
        Case((3, 8), "k = 3, d_model = 8"),
        Case((-5, 6), "a negative offset"),
        Case((2, 3), "odd d_model", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=positional.relative_position_matrix,
                          name="relative_position_matrix", rtol=1e-9, atol=1e-12)

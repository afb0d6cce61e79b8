"""Checkers for notebook 01 (scalars, vectors, matrices, tensors)."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from course_utils.checks import (
    Case,
    CheckResult,
    RuleBroken,
    check_function,
    check_number,
    exercise,
    lines_run,
    wraps_answer,
)
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


def _padded(batch: int, seq: int, d: int, lengths: list[int], seed: int) -> np.ndarray:
    """A random (batch, seq, d) batch whose padding positions (t >= lengths[b]) hold zeros."""
    x = np.random.default_rng(seed).standard_normal((batch, seq, d))
    x[np.arange(seq) >= np.array(lengths)[:, None]] = 0.0
    return x


@exercise("extend")
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


_HELPERS = {"np.broadcast_shapes": np.broadcast_shapes, "np.broadcast_to": np.broadcast_to,
            "np.broadcast_arrays": np.broadcast_arrays,
            "linalg.broadcast_shape": broadcast_shape}


def _helper_codes() -> dict:
    """The code objects of the ready-made broadcasting helpers, named (torch's when imported)."""
    helpers = dict(_HELPERS)
    if "torch" in sys.modules:
        helpers["torch.broadcast_shapes"] = sys.modules["torch"].broadcast_shapes
    codes = {}
    for name, helper in helpers.items():
        target: Any = getattr(helper, "_implementation", helper)  # NumPy's dispatch wrapper
        function = inspect.unwrap(target)
        if hasattr(function, "__code__"):
            codes[function.__code__] = name
    return codes


def _tuples_only(func: Callable) -> Callable:
    """``func`` run under the exercise's rule: work the shape out from the tuples, without a
    ready-made broadcasting helper (any call to one is seen, however it was imported) and
    without building arrays of those shapes (the huge case cannot be allocated)."""
    codes = _helper_codes()

    @wraps_answer(func)
    def checked(shape_a, shape_b):
        used: list[str] = []

        def watch(frame, event, arg):
            if event == "call" and frame.f_code in codes and not used:
                used.append(codes[frame.f_code])

        previous = sys.getprofile()
        sys.setprofile(watch)
        try:
            result = func(shape_a, shape_b)
        except Exception as error:
            if used:
                raise RuleBroken(f"it calls {used[0]}: the rule is to apply the three rules "
                                 "yourself, without a ready-made broadcasting helper") from error
            if isinstance(error, MemoryError) or "too large" in str(error):
                why = "MemoryError" if isinstance(error, MemoryError) else str(error).strip(". ")
                raise RuleBroken(f"it builds arrays of these shapes ({why}): the rule is to work "
                                 "on the shape tuples only, as the three rules do") from error
            raise
        finally:
            sys.setprofile(previous)
        if used:
            raise RuleBroken(f"it calls {used[0]}: the rule is to apply the three rules "
                             "yourself, without a ready-made broadcasting helper")
        return result

    return checked


@exercise("constrain")
def check_broadcast_shape(func: Callable) -> CheckResult:
    """``func(shape_a, shape_b)``: the broadcast shape as a tuple, ValueError when they clash,
    worked out from the tuples alone: a call to np.broadcast_shapes, np.broadcast_to,
    np.broadcast_arrays, linalg.broadcast_shape or torch.broadcast_shapes breaks the rule, and
    an answer that builds arrays fails on shapes with 2**50 entries along an axis."""
    huge = 2**50
    cases = [
        Case(((32, 128, 768), (768,)), "add a bias vector to every token: (32, 128, 768)"),
        Case(((3, 1), (1, 4)), "a column and a row make a table: (3, 4)"),
        Case(((8, 1, 6, 1), (7, 1, 5)), "different numbers of axes: (8, 7, 6, 5)"),
        Case(((), (2, 3)), "a scalar broadcasts to anything"),
        Case(((5, 4), (5, 4)), "equal shapes stay as they are"),
        Case(((2, 0), (1,)), "an axis of size 0 stretches a 1 to 0, not 0 to 1: (2, 0)"),
        Case(((huge, 1), (1, huge)), "sizes of 2**50: only tuples, no arrays, can hold them",
             expected=(huge, huge)),
        Case(((32, 128, 768), (128, 512)), "768 against 512 clashes", raises=ValueError),
        Case(((2, 3), (2,)), "shapes align on the right: 3 against 2", raises=ValueError),
    ]
    return check_function(_tuples_only(func), cases=cases, reference=broadcast_shape,
                          name="broadcast_shape")


_MIB = 2**20
_DIFF_MIB = 1000 * 1000 * 768 * 4 / _MIB  # (1000, 1000, 768) float32 numbers


@exercise("predict")
def check_broadcast_memory(answer) -> CheckResult:
    """``answer``: the MiB taken by ``X[:, None, :] - X[None, :, :]`` for a float32 X of shape
    (1000, 768): (1000, 1000, 768) numbers of 4 bytes, 2929.7 MiB (within 1%: 3072, the count
    in MB of 10**6 bytes, is 5% off and is refused with a note)."""
    notes = []
    if isinstance(answer, (int, float)) and not isinstance(answer, bool) and answer > 0:
        for factor, why in [(_MIB, "that is the count in bytes; divide by 2**20 for MiB"),
                            (1 / 1024, "that is GiB; multiply by 1024 for MiB"),
                            (2, "that is float64 (8 bytes a number); float32 takes 4"),
                            (1 / 4, "that counts numbers, not bytes: each float32 is 4 bytes"),
                            (2**20 / 1e6, "that is MB (10**6 bytes); a MiB is 2**20 bytes"),
                            (1 / 1000, "that is one (1000, 768) array, not the broadcast result"),
                            (1 / 768, "the result keeps the d_model axis: it is 3-D")]:
            if abs(answer / (_DIFF_MIB * factor) - 1) <= 0.015:
                notes.append(f"Your number: {why}.")
                break
    explanation = " ".join(notes + [
        "X[:, None, :] is (1000, 1, 768) and X[None, :, :] is (1, 1000, 768); they broadcast to "
        "(1000, 1000, 768), 768,000,000 numbers of 4 bytes: 3.07e9 bytes = 2929.7 MiB, about "
        "2.9 GiB, from a 3 MiB input."])
    return check_number(answer, _DIFF_MIB, name="broadcast_memory",
                        label="MiB of X[:, None, :] - X[None, :, :] for X (1000, 768) float32",
                        explanation=explanation, rtol=0.01)


def _mean_pool(x, lengths):
    lengths = np.asarray(lengths)
    real = np.arange(x.shape[1])[None, :] < lengths[:, None]  # (batch, seq), True = real token
    return (x * real[:, :, None]).sum(axis=1) / lengths[:, None]


_POOL_LINE_BUDGET = 30  # the fixed version runs about 4 lines; a loop over 100 runs 100 or more


@exercise("debug")
def check_mean_pool(func: Callable) -> CheckResult:
    """``func(x, lengths)``: the mean of the real (not padding) token vectors of each sequence,
    (batch, seq, d) and (batch,) -> (batch, d). The padding positions hold non-zero numbers, as
    real padding embeddings do; batch = seq = d in two cases (where the buggy version runs).
    The rule is enforced: no Python loop over the batch (counted with lines_run on a batch of
    100 sequences)."""

    @wraps_answer(func)
    def no_batch_loop(x, lengths):
        result, lines = lines_run(func, x, lengths)
        if lines > _POOL_LINE_BUDGET:
            raise RuleBroken(f"it loops over the batch in Python ({lines} lines of Python ran "
                             f"for {len(x)} sequences): the rule is no Python loop over the "
                             "batch; line the shapes up with new axes ([:, None]) instead")
        return result

    rng = np.random.default_rng(5)
    x3 = np.arange(27.0).reshape(3, 3, 3)
    cases = [
        Case((x3, np.array([3, 1, 2])),
             "(3, 3, 3) of 0..26, lengths [3, 1, 2] -> "
             "[[3, 4, 5], [9, 10, 11], [19.5, 20.5, 21.5]]"),
        Case((rng.standard_normal((2, 4, 3)) + 1.0, np.array([4, 2])),
             "(2, 4, 3), lengths [4, 2]: batch, seq and d differ"),
        Case((rng.standard_normal((4, 4, 4)), np.array([1, 4, 2, 3])),
             "(4, 4, 4), lengths [1, 4, 2, 3]"),
        Case((rng.standard_normal((3, 5, 2)), np.array([5, 5, 5])),
             "(3, 5, 2), no padding: the plain mean over the tokens"),
        Case((rng.standard_normal((1, 6, 3)), np.array([2], dtype=np.int32)),
             "one sequence of 2 real tokens out of 6, int32 lengths"),
        Case((rng.standard_normal((100, 4, 3)), rng.integers(1, 5, size=100)),
             "a batch of 100 sequences, without a Python loop over them"),
    ]
    return check_function(no_batch_loop, cases=cases, reference=_mean_pool, name="mean_pool")

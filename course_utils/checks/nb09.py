"""Checkers for notebook 09: the encoding without a loop, the dot product of two encodings as a
formula in the offset, positions added to a batch, and the length of an input row."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from course_utils import positional
from course_utils.checks import (
    Case,
    CheckResult,
    RuleBroken,
    check_function,
    check_number,
    exercise,
    lines_run,
    names_used,
    wraps_answer,
)

_LINE_BUDGET = 200  # lines of the learner's file per call: a loop over 1000 positions runs more


@contextlib.contextmanager
def _forbidden(rule: str, *names: str) -> Iterator[None]:
    """While inside, calling ``positional.<name>`` raises :class:`RuleBroken` with ``rule``."""
    saved = {name: getattr(positional, name) for name in names}

    def forbid(name: str) -> Callable:
        def refuse(*args: object, **kwargs: object) -> object:
            raise RuleBroken(rule.format(name=f"positional.{name}"))
        return refuse

    try:
        for name in saved:
            setattr(positional, name, forbid(name))
        yield
    finally:
        for name, original in saved.items():
            setattr(positional, name, original)


_LIBRARY_RULE = ("{name} was called: the exercise is to build the table yourself, from np.sin, "
                 "np.cos and the angles pos * omega_i")


def _library_names(func: Callable, names: set[str]) -> list[str]:
    """Which of ``names`` ``func``'s code uses, leaving out a function of that name the learner
    wrote next to ``func`` (a helper of theirs called ``sin`` is no library's)."""
    inner = inspect.unwrap(func)
    scope = getattr(inner, "__globals__", {})

    def own(name: str) -> bool:
        value = scope.get(name)
        return inspect.isfunction(value) and value.__module__ == getattr(inner, "__module__", None)

    return sorted(name for name in names_used(func) & names if not own(name))


_HIDDEN_LOOPS = {"map", "starmap", "vectorize", "frompyfunc", "apply_along_axis"}
_HIDDEN_LOOP_RULE = ("it uses {name}, which runs a Python loop over its items (here the "
                     "positions) where the line count cannot see it: compute all the angles as "
                     "one array, positions[:, None] * frequencies[None, :]")


@exercise("constrain")
def check_sinusoidal_encoding(func: Callable) -> CheckResult:
    """``func(n_positions, d_model)``: float64 (n_positions, d_model) with interleaved
    ``PE[pos, 2i] = sin(pos / 10000^(2i/d_model))`` and ``PE[pos, 2i+1] = cos(...)``, without a
    Python loop over the positions (``map``, ``np.vectorize`` and the like included) and without
    calling ``positional.sinusoidal_encoding``; ValueError for an odd d_model."""
    hidden_loops = _library_names(func, _HIDDEN_LOOPS)

    @wraps_answer(func)
    def vectorized(n_positions, d_model):
        if hidden_loops:
            raise RuleBroken(_HIDDEN_LOOP_RULE.format(name=hidden_loops[0]))
        with _forbidden(_LIBRARY_RULE, "sinusoidal_encoding"):
            pe, lines = lines_run(func, n_positions, d_model)
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


_SINE_RULE = ("the rule is a formula in k and the ω_i: {name} was called, which computes the "
              "encodings themselves, PE(p) and PE(p + k), and their dot product is the "
              "measurement of section 6 again, at another p; the derived formula needs no sine")


@contextlib.contextmanager
def _no_sine(rule: str) -> Iterator[None]:
    """While inside, ``np.sin``, ``math.sin`` and ``torch.sin`` raise :class:`RuleBroken`."""
    import torch

    modules = {"np": np, "math": math, "torch": torch}
    saved = {name: module.sin for name, module in modules.items()}

    def forbid(name: str) -> Callable:
        def refuse(*args: object, **kwargs: object) -> object:
            raise RuleBroken(rule.format(name=f"{name}.sin"))
        return refuse

    try:
        for name, module in modules.items():
            setattr(module, "sin", forbid(name))  # noqa: B010 (mypy: any module)
        yield
    finally:
        for name, module in modules.items():
            setattr(module, "sin", saved[name])  # noqa: B010


_COMPLEX_RULE = ("the rule is a formula in k and the ω_i: {name} was given a complex argument, and "
                 "a complex exponential holds a sine as its imaginary part (e^(ix) = cos x + "
                 "i sin x), so the rule counts it as one; the derived formula needs only cosines")


@contextlib.contextmanager
def _no_complex_exp(rule: str) -> Iterator[None]:
    """While inside, ``np.exp``, ``torch.exp`` and ``cmath.exp`` raise :class:`RuleBroken` when
    given a complex argument."""
    import cmath

    import torch

    owners = [(np, "np"), (torch, "torch"), (cmath, "cmath")]
    saved = [owner.exp for owner, _ in owners]

    def watch(original: Callable, name: str) -> Callable:
        def exp(x: Any, *args: object, **kwargs: object) -> object:
            if name == "cmath" or np.iscomplexobj(x) or (
                    isinstance(x, torch.Tensor) and x.is_complex()):
                raise RuleBroken(rule.format(name=f"{name}.exp"))
            return original(x, *args, **kwargs)
        return exp

    try:
        for (owner, name), original in zip(owners, saved, strict=True):
            setattr(owner, "exp", watch(original, name))  # noqa: B010
        yield
    finally:
        for (owner, _), original in zip(owners, saved, strict=True):
            setattr(owner, "exp", original)  # noqa: B010


_TABLE_RULE = ("the rule is a formula in k: {name} was called, which measures the dot products "
               "instead of deriving them")
_NAMED_RULE = ("the rule is a formula in k and the ω_i: your code uses {name}, {why}; the "
               "derived formula needs neither a sine nor an encoding")
_NAMED_WHY = {
    "sin": "a sine, which only the encodings PE(p) and PE(p + k) themselves need (np.sin, "
           "math.sin, a tensor's .sin() and every other spelling count)",
    "sinusoidal_encoding": "which computes the encodings, so their dot product is the "
                           "measurement of section 6 again",
    "relative_position_matrix": "the rotation M_k of section 5, whose entries are the cosines "
                                "and sines of k·ω_i: reading the answer off it skips the "
                                "derivation",
}


def _shifted_angle(angles: object, k: np.ndarray, d_model: int) -> float | None:
    """An angle among ``angles`` that is none of 0 and ±k_j·ω_i, modulo π (a cosine may be
    negated, cos(x - π) = -cos x, but cos(x - π/2) is sin x); None if every one is."""
    import torch

    if isinstance(angles, torch.Tensor):
        angles = angles.detach().cpu().numpy()
    try:
        x = np.abs(np.asarray(angles, dtype=np.float64).ravel())
    except (TypeError, ValueError):
        return None
    allowed = np.outer(np.ravel(k).astype(np.float64), positional.angular_frequencies(d_model))
    ref = np.sort(np.concatenate([allowed.ravel() % np.pi, -allowed.ravel() % np.pi, [0.0]]))
    ref = np.concatenate([ref - np.pi, ref, ref + np.pi])        # the circle of angles mod π
    reduced = x % np.pi
    at = np.clip(np.searchsorted(ref, reduced), 1, len(ref) - 1)
    gap = np.minimum(np.abs(reduced - ref[at - 1]), np.abs(ref[at] - reduced))
    off = np.flatnonzero(~(gap <= 1e-6))
    return float(x[off[0]]) if off.size else None


_COSINE_RULE = ("the values are right, but a cosine was given the angle {angle:.6g}, which is none "
                "of the k·ω_i: a shifted cosine is a sine (cos(x - π/2) = sin x) and the rule "
                "counts it as one; the derived formula takes the cosine of k·ω_i itself")


@contextlib.contextmanager
def _plain_cosines(k: np.ndarray, d_model: int, foreign: list[float]) -> Iterator[None]:
    """While inside, ``np.cos``, ``math.cos``, ``torch.cos`` and ``Tensor.cos`` append to
    ``foreign`` each angle they are given that is not ±k_j·ω_i (modulo π)."""
    import torch

    umath = importlib.import_module("numpy._core.umath")  # np.core.umath.cos reads it from here
    owners = [(np, "cos"), (umath, "cos"), (math, "cos"), (torch, "cos"), (torch.Tensor, "cos")]
    saved = [getattr(owner, "cos") for owner, _ in owners]  # noqa: B009
    own = ["cos" in vars(owner) for owner, _ in owners]

    def watch(original: Callable) -> Callable:
        def cos(x: object, *args: object, **kwargs: object) -> object:
            angle = _shifted_angle(x, k, d_model)
            if angle is not None:
                foreign.append(angle)
            return original(x, *args, **kwargs)
        return cos

    try:
        for (owner, name), original in zip(owners, saved, strict=True):
            setattr(owner, name, watch(original))
        yield
    finally:
        for (owner, name), original, had in zip(owners, saved, own, strict=True):
            if had:
                setattr(owner, name, original)
            else:  # Tensor.cos is inherited: remove the watch, the base class's is back
                delattr(owner, name)


_OFF_TABLE = np.array([2.5, -0.5, 100_000.0])  # offsets that no table of whole positions holds


@exercise("derive")
def check_pe_dot(func: Callable) -> CheckResult:
    """``func(k, d_model)``: PE(p)·PE(p + k) = sum_i cos(k ω_i) for an array of offsets, checked
    against dot products measured at p = 300, and at real offsets no table holds. Code that names
    ``sin``, ``sinusoidal_encoding`` or ``relative_position_matrix`` is refused; while ``func``
    runs, those functions and a sine (``np.sin``, ``math.sin``, ``torch.sin``) raise
    :class:`RuleBroken`, and so does a complex exponential (``np.exp``, ``torch.exp`` of a
    complex argument, ``cmath.exp``); right values from a cosine given an angle other than ±k·ω_i
    (a shifted cosine, cos(x - π/2), is a sine) are refused too."""
    named = _library_names(func, set(_NAMED_WHY))

    import torch

    @wraps_answer(func)
    def formula(k: np.ndarray, d_model: int) -> object:
        foreign: list[float] = []
        if named:
            raise RuleBroken(_NAMED_RULE.format(name=named[0], why=_NAMED_WHY[named[0]]))
        with _forbidden(_TABLE_RULE, "sinusoidal_encoding", "relative_position_matrix"), \
                _no_sine(_SINE_RULE), _no_complex_exp(_COMPLEX_RULE), \
                _plain_cosines(k, d_model, foreign):
            try:
                got = func(k, d_model)
            except IndexError as error:
                raise RuleBroken(f"it looked k up in a table ({error}): the rule asks for a "
                                 "formula in k, which holds at any offset, 2.5 or 100 000 "
                                 "included") from None
        right = np.cos(np.outer(k, positional.angular_frequencies(d_model))).sum(-1)
        values = got.detach().cpu().numpy() if isinstance(got, torch.Tensor) else got
        with contextlib.suppress(TypeError, ValueError):
            if foreign and np.allclose(np.asarray(values, dtype=np.float64), right, rtol=1e-9,
                                       atol=1e-9):
                raise RuleBroken(_COSINE_RULE.format(angle=foreign[0]))
        return got

    for p in (0, 137):  # the measurement itself does not depend on p
        table = positional.sinusoidal_encoding(400, 16)
        assert abs(table[p] @ table[p + 50] - _pe_dot_measured(np.array([50]), 16)[0]) < 1e-9
    off_table = np.cos(_OFF_TABLE[:, None] * positional.angular_frequencies(16)).sum(-1)
    cases = [
        Case((np.array([0]), 8), "k = 0: every pair gives 1, so d_model / 2 = 4",
             expected=_pe_dot_measured(np.array([0]), 8)),
        Case((np.array([1, 2, 3]), 2), "d_model = 2: one pair, the dot product is cos(k)",
             expected=_pe_dot_measured(np.array([1, 2, 3]), 2)),
        Case((np.array([-10, 10]), 128), "k = ±10, d_model = 128: symmetric in k",
             expected=_pe_dot_measured(np.array([-10, 10]), 128)),
        Case((np.arange(0, 300, 25), 64), "k = 0, 25, ..., 275 with d_model = 64",
             expected=_pe_dot_measured(np.arange(0, 300, 25), 64)),
        Case((_OFF_TABLE.copy(), 16), "k = 2.5, -0.5 and 100 000, d_model = 16: offsets that no "
             "table of positions holds, and a formula in k does", expected=off_table),
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


_D = 512
_INPUT_LENGTH = math.sqrt(_D + _D / 2)  # ||sqrt(d) e||^2 ≈ d, ||PE||^2 = d / 2, cross term ≈ 0
_INPUT_MISTAKES = {
    math.sqrt(_D) + math.sqrt(_D / 2): "the two lengths added, 22.6 + 16: lengths add only for "
    "vectors that point the same way; for two unrelated vectors the squared lengths add",
    math.sqrt(_D / 2): "the length of PE(1000) alone (or of an embedding left without its "
    "sqrt(d_model) factor, sqrt(1 + 256))",
    math.sqrt(_D): "the length of the scaled embedding alone; PE(1000) adds its own 256 to the "
    "squared length",
    1 + math.sqrt(_D / 2): "1 + 16: the embedding without its sqrt(d_model) factor, and the "
    "lengths added rather than the squared lengths",
}
_INPUT_EXPLANATION = (
    "||a + b||² = ||a||² + ||b||² + 2 a·b with a = sqrt(512)·x and b = PE(1000). a has 512 "
    "entries of variance 512 · (1/512) = 1, so ||a||² ≈ 512 (give or take about 32); ||b||² = 256 "
    "exactly (256 pairs, each sin² + cos² = 1); a·b has mean 0, because x has mean 0 and PE(1000) "
    "is fixed. So ||a + b||² ≈ 768 and ||a + b|| ≈ 27.7. With the sqrt(d_model) factor the "
    "token's part (≈ 22.6) and the position's part (16) are of similar size; without it the "
    "token's part (≈ 1) would be a small change to the position's"
)


@exercise("predict")
def check_input_length(answer: object) -> CheckResult:
    """||sqrt(512) W_E[id] + PE(1000)|| for W_E entries of mean 0 and variance 1/512:
    about sqrt(512 + 256) ≈ 27.7 (one draw lands within about 3%)."""
    label = "length of sqrt(d_model) x + PE(1000), d_model = 512"
    hint = ("work with squared lengths, ||a + b||² = ||a||² + ||b||² + 2 a·b: what is each of the "
            "three terms on average?")
    return check_number(answer, _INPUT_LENGTH, name="input_length", rtol=0.05, label=label,
                        explanation=_INPUT_EXPLANATION, hint=hint, mistakes=_INPUT_MISTAKES)

"""Checkers for notebook 09: the encoding without a loop, PE·PE in the offset, positions, a row."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from course_utils import positional
from course_utils.checks import Case, CheckResult, Rule, check_function, check_number, exercise

_NO_LOOP = Rule("no Python loop (no for, while or comprehension, nor map, np.vectorize, "
                "np.frompyfunc or np.apply_along_axis, which loop for you) and no "
                "positional.sinusoidal_encoding: compute all the angles as one array, "
                "positions[:, None] * frequencies[None, :]",
                names={"map", "starmap", "vectorize", "frompyfunc", "apply_along_axis",
                       "sinusoidal_encoding"}, loops=True)


def _omega(d_model: int, exponent: int = 2) -> np.ndarray:
    return 10000.0 ** (-exponent * np.arange(d_model // 2) / d_model)


def _table(n_positions: int, d_model: int, exponent: int = 2, layout: str = "",
           start: int = 0) -> np.ndarray:
    angles = np.outer(np.arange(start, start + n_positions), _omega(d_model, exponent))
    first, second = (np.sin(angles), np.cos(angles))[::-1 if layout == "swapped" else 1]
    if layout == "concatenated":
        return np.concatenate([first, second], axis=1)
    if layout == "column exponent":  # each column's own index in the exponent, 2i + 1 for cos
        columns = 10000.0 ** (-np.arange(d_model) / d_model)
        second = np.cos(np.outer(np.arange(n_positions), columns[1::2]))
    return np.stack([first, second], axis=-1).reshape(n_positions, d_model)


@exercise("constrain")
def check_sinusoidal_encoding(func: Callable) -> CheckResult:
    """``func(n, d_model)``: float64 (n, d_model), ``PE[pos, 2i] = sin(pos ω_i)``, ``PE[pos, 2i+1] =
    cos(pos ω_i)``, ω_i = 10000^(-2i/d_model); ValueError for an odd d_model."""
    cases = [Case(args, label) for args, label in [
        ((3, 2), "d_model = 2: [sin(pos), cos(pos)]"), ((1, 8), "position 0 is [0, 1, 0, 1, ...]"),
        ((10, 4), "10 positions, d_model = 4"), ((1000, 16), "1000 positions, d_model = 16")]]
    cases += [Case((4, 5), "odd d_model", raises=ValueError),
              Case((0, 5), "0 positions and an odd d_model: a reshape of an empty table raises "
                           "nothing, so the ValueError must be your own check", raises=ValueError)]
    mistakes = {
        "sines in the first half and cosines in the second: the table interleaves them, a sine "
        "in each even column and a cosine in the odd one after it":
            lambda n, d: _table(n, d, layout="concatenated"),
        "sin and cos swapped: the sines go to the even columns 0, 2, ...":
            lambda n, d: _table(n, d, layout="swapped"),
        "the frequencies are 10000^(-i/d_model): the exponent is 2i/d_model, i counting pairs":
            lambda n, d: _table(n, d, exponent=1),
        "the cosine columns use their own index 2i + 1 in the exponent: both columns of pair i "
        "share one frequency, 10000^(-2i/d_model)": lambda n, d: _table(n, d, layout="column "
                                                                         "exponent"),
        "the positions start at 1: the first row is position 0, [0, 1, 0, 1, ...]":
            lambda n, d: _table(n, d, start=1)}
    return check_function(func, cases=cases, reference=positional.sinusoidal_encoding,
                          name="sinusoidal_encoding", rtol=1e-9, atol=1e-12, rule=_NO_LOOP,
                          mistakes=mistakes)


def _pe_dot(k: np.ndarray, d_model: int, exponent: int = 2, wave: Callable = np.cos) -> np.ndarray:
    return wave(np.multiply.outer(np.asarray(k, dtype=float), _omega(d_model, exponent))).sum(-1)


def _measured(k: np.ndarray, d_model: int) -> np.ndarray:
    """PE(300)·PE(300 + k), measured from the table (section 6: any p gives the same)."""
    table = positional.sinusoidal_encoding(700, d_model)
    return np.array([table[300] @ table[300 + int(offset)] for offset in k])


@exercise("derive")
def check_pe_dot(func: Callable) -> CheckResult:
    """``func(k, d_model)``: PE(p)·PE(p + k) = sum_i cos(k ω_i) for an array of offsets, against
    dot products measured at p = 300, and at real offsets (2.5, 100 000) that no table holds."""
    cases = [Case((np.array(k), d), label, expected=_measured(np.array(k), d)) for k, d, label in [
        ([0], 8, "k = 0: every pair gives 1, so d_model / 2 = 4"),
        ([1, 2, 3], 2, "d_model = 2: one pair, the dot product is cos(k)"),
        ([-10, 10], 128, "k = ±10, d_model = 128: symmetric in k"),
        (range(0, 300, 25), 64, "k = 0, 25, ..., 275 with d_model = 64")]]
    cases += [Case((np.array([2.5, -0.5]), 16), "k = 2.5 and -0.5, d_model = 16: offsets that "
                   "no table of whole positions holds, and a formula in k does"),
              Case((np.array([100_000.0]), 16), "k = 100 000: far beyond any table")]
    mistakes = {"it sums sines: pair i gives sin a sin b + cos a cos b = cos(a - b), a cosine "
                "of k ω_i": lambda k, d: _pe_dot(k, d, wave=np.sin),
                "it counts d_model terms: there are d_model / 2 pairs, one cosine each":
                    lambda k, d: 2 * _pe_dot(k, d),
                "the frequencies are 10000^(-i/d_model): ω_i = 10000^(-2i/d_model), i counting "
                "pairs": lambda k, d: _pe_dot(k, d, exponent=1),
                "it reads k as a whole offset, as a table of positions does: the formula holds "
                "at any real k": lambda k, d: _pe_dot(np.trunc(k), d),
                "it sums a cosine for each of the d_model columns, 10000^(-j/d_model): there are "
                "d_model / 2 pairs, one frequency 10000^(-2i/d_model) each":
                    lambda k, d: _pe_dot(k, 2 * d, exponent=2),
                "it averages the cosines: the dot product is their sum over the d_model / 2 "
                "pairs": lambda k, d: _pe_dot(k, d) / (d // 2)}
    return check_function(func, cases=cases, reference=_pe_dot, name="pe_dot", rtol=1e-9,
                          atol=1e-9, mistakes=mistakes,
                          shortcuts=("sinusoidal_encoding", "relative_position_matrix"))


@exercise("debug")
def check_add_positions(func: Callable) -> CheckResult:
    """``func(X)`` for X of shape (B, N, d_model): X + PE_{0:N} for every sentence, X unchanged."""
    rng = np.random.default_rng(9)
    cases = [Case((x,), label) for x, label in [
        (np.zeros((2, 5, 8)), "2 sentences of 5 tokens, all zero: the output is PE twice"),
        (rng.normal(size=(3, 4, 6)), "3 sentences of 4 tokens, d_model = 6"),
        (rng.normal(size=(5, 5, 4)), "B = N = 5: the shapes cannot tell B from N"),
        (rng.normal(size=(1, 7, 2)), "one sentence of 7 tokens")]]
    mistakes = {"still the bug: sentence b gets PE(b) on every token (len(X) is the batch size B, "
                "and pe[:, None, :] lays the rows along the batch axis); positions are axis 1":
                lambda X: X + positional.sinusoidal_encoding(len(X), X.shape[-1])[:, None, :]}
    return check_function(func, cases=cases, name="add_positions", rtol=1e-12, atol=1e-12,
                          reference=lambda X: X + positional.sinusoidal_encoding(*X.shape[1:]),
                          mistakes=mistakes)


_D = 512
_INPUT_MISTAKES = {
    math.sqrt(_D) + math.sqrt(_D / 2): "the two lengths added, 22.6 + 16: lengths add only for "
    "vectors that point the same way; for two unrelated vectors the squared lengths add",
    math.sqrt(_D / 2): "the length of PE(1000) alone (or of an embedding left without its "
    "sqrt(d_model) factor, sqrt(1 + 256))",
    math.sqrt(_D): "the length of the scaled embedding alone; PE(1000) is part of the row too, "
    "and it adds to the squared length",
    1 + math.sqrt(_D / 2): "1 + 16: the embedding without its sqrt(d_model) factor, and the "
    "lengths added rather than the squared lengths",
    _D + _D / 2: "768 is the squared length ||a + b||²: the length is its square root",
    math.sqrt(2 * _D): "it takes ||PE(1000)||² = 512: each of the 256 pairs of columns adds "
    "sin² + cos² = 1, so ||PE(1000)||² = 256"}


@exercise("predict")
def check_input_length(answer: object, *, show_answer: bool = False) -> CheckResult:
    """||sqrt(512) W_E[id] + PE(1000)|| for W_E entries of mean 0 and variance 1/512:
    sqrt(512 + 256) ≈ 27.7 (one draw lands within about 3%)."""
    explanation = (
        "||a + b||² = ||a||² + ||b||² + 2 a·b with a = sqrt(512)·x and b = PE(1000): ||a||² ≈ "
        "512 (512 entries of variance 1, give or take about 32), ||b||² = 256 exactly (256 pairs, "
        "each sin² + cos² = 1), and a·b has mean 0, because x has mean 0 and PE(1000) is fixed. "
        "So ||a + b||² ≈ 768 and ||a + b|| ≈ 27.7. With the sqrt(d_model) factor the token's "
        "part (≈ 22.6) and the position's (16) are of similar size; without it the token's "
        "part (≈ 1) would be a small change to the position's")
    hint = ("work with squared lengths, ||a + b||² = ||a||² + ||b||² + 2 a·b: what is each of the "
            "three terms on average, and what length do they give?")
    return check_number(answer, math.sqrt(_D + _D / 2), name="input_length", rtol=0.05,
                        label="length of sqrt(d_model) x + PE(1000), d_model = 512",
                        explanation=explanation, hint=hint, mistakes=_INPUT_MISTAKES,
                        show_answer=show_answer)

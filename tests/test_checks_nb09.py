"""Notebook 09's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import numpy as np
import torch
from checker_table import right, table_test, wrong

from course_utils import positional
from course_utils.checks import nb09


def sinusoidal(n_positions, d_model, exponent=2, layout="interleaved"):
    if d_model % 2:
        raise ValueError(f"d_model must be even, got {d_model}")
    omega = 10000.0 ** (-exponent * np.arange(d_model // 2) / d_model)
    angles = np.arange(n_positions)[:, None] * omega[None, :]
    if layout == "concatenated":
        return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)
    pe = np.zeros((n_positions, d_model))
    pe[:, 0::2], pe[:, 1::2] = (np.cos(angles), np.sin(angles)) if layout == "swapped" else (
        np.sin(angles), np.cos(angles))
    return pe


def sinusoidal_by_positions(n_positions, d_model):
    if d_model % 2:
        raise ValueError("odd d_model")
    omega = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((n_positions, d_model))
    for pos in range(n_positions):
        pe[pos, 0::2] = np.sin(pos * omega)
        pe[pos, 1::2] = np.cos(pos * omega)
    return pe


def sinusoidal_by_map(n_positions, d_model):
    """The angles one position at a time through map: no line of the learner's runs per
    position, but map is a Python loop all the same."""
    if d_model % 2:
        raise ValueError("odd d_model")
    omega = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    angles = np.concatenate(list(map(np.outer, range(n_positions), [omega] * n_positions)))
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(n_positions, d_model)


def sinusoidal_by_vectorize(n_positions, d_model):
    """Each entry through np.vectorize: a Python loop inside NumPy."""
    if d_model % 2:
        raise ValueError("odd d_model")
    pos, col = np.meshgrid(np.arange(n_positions), np.arange(d_model), indexing="ij")
    angle = np.vectorize(lambda p, c: p * 10000.0 ** (-(c - c % 2) / d_model))(pos, col)
    return np.where(col % 2, np.cos(angle), np.sin(angle))


def sinusoidal_by_stack(n_positions, d_model):
    """Right: the sines and cosines stacked on a last axis and reshaped, as the worked solution."""
    if d_model % 2:
        raise ValueError("odd d_model")
    angles = np.outer(np.arange(n_positions), positional.angular_frequencies(d_model))
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(n_positions, d_model)


def sinusoidal_no_guard(n_positions, d_model):
    """No check of d_model: NumPy's reshape raises for an odd d_model, except on an empty table."""
    angles = np.outer(np.arange(n_positions), positional.angular_frequencies(d_model - d_model % 2))
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(n_positions, d_model)


def sinusoidal_column_exponent(n_positions, d_model):
    """Each column's own index j in 10000^(-j/d_model): the cosine of pair i gets 2i + 1."""
    if d_model % 2:
        raise ValueError("odd d_model")
    columns = 10000.0 ** (-np.arange(d_model) / d_model)
    angles = np.outer(np.arange(n_positions), columns)
    return np.where(np.arange(d_model) % 2, np.cos(angles), np.sin(angles))


def sinusoidal_by_course(n_positions, d_model):
    return positional.sinusoidal_encoding(n_positions, d_model)


def sinusoidal_by_comprehension(n_positions, d_model):
    return np.array([sinusoidal(pos + 1, d_model)[pos] for pos in range(n_positions)])


def sinusoidal_encoding(n_positions, d_model):  # the learner's own, named like the course's
    return sinusoidal(n_positions, d_model)


def sinusoidal_by_own_helper(n_positions, d_model):
    return sinusoidal_encoding(n_positions, d_model)


def pe_dot(k, d_model):
    omega = positional.angular_frequencies(d_model)
    return np.cos(np.asarray(k, dtype=np.float64)[..., None] * omega).sum(axis=-1)


def pe_dot_by_table(k, d_model):
    table = positional.sinusoidal_encoding(700, d_model)
    return np.array([table[0] @ table[abs(int(offset))] for offset in k])


def pe_dot_by_hand(k, d_model):
    """The formula with the frequencies written out by hand, and math.cos per offset."""
    omega = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    return np.array([sum(math.cos(offset * w) for w in omega) for offset in np.ravel(k)])


def pe_dot_own_encodings(k, d_model, p=7.3):
    """PE(p) and PE(p + k) built with np.sin and np.cos and dotted: right at every k, but a
    measurement at one more p, not the derived formula."""
    omega = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    k = np.asarray(k, dtype=np.float64)[:, None]
    here = np.concatenate([np.sin(p * omega), np.cos(p * omega)])
    there = np.concatenate([np.sin((p + k) * omega), np.cos((p + k) * omega)], axis=1)
    return there @ here


def pe_dot_with_pi(k, d_model):
    """Right: the frequencies written with pi nowhere near a sine, cos(k·ω) reduced modulo 2π."""
    omega = positional.angular_frequencies(d_model)
    return np.cos(np.mod(np.asarray(k, dtype=np.float64)[:, None] * omega, 2 * np.pi)).sum(-1)


def pe_dot_torch(k, d_model):
    """Right: the formula in torch, with a tensor's .cos()."""
    omega = torch.from_numpy(positional.angular_frequencies(d_model))
    return (torch.as_tensor(np.asarray(k), dtype=torch.float64)[:, None] * omega).cos().sum(-1)


def pe_dot_by_rotation(k, d_model):
    """The trace of section 5's rotation M_k, at real k: twice the sum of cos(k ω_i)."""
    return np.array([np.trace(positional.relative_position_matrix(o, d_model)) / 2
                     for o in np.ravel(k)])


def pe_dot_own_table(k, d_model):
    """Dot products looked up in a table the learner built: right at whole offsets only."""
    omega = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    angles = np.outer(np.arange(700), omega)
    table = np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(700, d_model)
    return np.array([table[300] @ table[300 + int(offset)] for offset in np.ravel(k)])


def add_positions(X):
    return X + positional.sinusoidal_encoding(X.shape[1], X.shape[2])


def add_positions_in_place(X):
    X += positional.sinusoidal_encoding(X.shape[1], X.shape[2])
    return X


ROWS = [
    *right(nb09.check_sinusoidal_encoding, worked=sinusoidal,
           own_function_named_sinusoidal_encoding=sinusoidal_encoding,
           own_helper_named_sinusoidal_encoding=sinusoidal_by_own_helper,
           np_stack=sinusoidal_by_stack),
    *wrong(
        nb09.check_sinusoidal_encoding,
        library_call=(sinusoidal_by_course, "the rule: it calls sinusoidal_encoding: the rule is "
                      "no Python loop"),
        comprehension_over_positions=(sinusoidal_by_comprehension, "the rule: it has a "
                                      "comprehension: the rule is no Python loop"),
        concatenated=(lambda n, d: sinusoidal(n, d, layout="concatenated"),
                      "position 0 is [0, 1, 0, 1, ...]: sines in the first half and cosines in "
                      "the second: the table interleaves them"),
        sin_cos_swapped=(lambda n, d: sinusoidal(n, d, layout="swapped"),
                         "sin and cos swapped: the sines go to the even columns 0, 2, ...; "
                         "values differ"),
        exponent_i=(lambda n, d: sinusoidal(n, d, exponent=1), "10 positions, d_model = 4: "
                    "the frequencies are 10000^(-i/d_model): the exponent is 2i/d_model"),
        loops_over_positions=(sinusoidal_by_positions, "the rule: it has a for loop"),
        map_over_positions=(sinusoidal_by_map, "the rule: it calls map"),
        vectorize=(sinusoidal_by_vectorize, "the rule: it calls vectorize"),
        float32=(lambda n, d: sinusoidal(n, d).astype(np.float32),
                 "dtype: expected float64, got float32"),
        no_guard=(sinusoidal_no_guard, "0 positions and an odd d_model: a reshape of an empty "
                                       "table raises nothing, so the ValueError must be your own "
                                       "check: should raise ValueError"),
        column_exponent=(sinusoidal_column_exponent, "the cosine columns use their own index "
                                                     "2i + 1 in the exponent"),
        positions_from_1=(lambda n, d: sinusoidal(n + 1, d)[1:], "position 0 is [0, 1, 0, 1, "
                          "...]: the positions start at 1: the first row is position 0"),
    ),
    *right(nb09.check_pe_dot, worked=pe_dot, by_hand=pe_dot_by_hand, with_pi=pe_dot_with_pi,
           in_torch=lambda k, d: pe_dot_torch(k, d).numpy(),
           own_encodings_at_7_3=pe_dot_own_encodings, rotation_trace_at_real_k=pe_dot_by_rotation),
    *wrong(
        nb09.check_pe_dot,
        sines_only=(lambda k, d: np.sin(np.asarray(k)[:, None]
                                        * positional.angular_frequencies(d)).sum(1),
                    "k = 0: every pair gives 1, so d_model / 2 = 4: it sums sines"),
        all_columns=(lambda k, d: 2 * pe_dot(k, d), "expected [4.], got [8.]"),
        wrong_frequencies=(lambda k, d: np.cos(np.asarray(k)[:, None]
                                               * 10000.0 ** (-np.arange(d // 2) / d)).sum(1),
                           "k = ±10, d_model = 128: symmetric in k: the frequencies are "
                           "10000^(-i/d_model)"),
        measured=(pe_dot_by_table, "offsets that no table of whole positions holds, and a "
                  "formula in k does: it reads k as a whole offset, as a table of positions does"),
        own_table=(pe_dot_own_table, "k = 100 000: far beyond any table: raised IndexError"),
        rotation_trace=(lambda k, d: np.array([np.trace(positional.relative_position_matrix(
            int(o), d)) / 2 for o in np.ravel(k)]), "it reads k as a whole offset"),
        every_column=(lambda k, d: np.cos(np.asarray(k, dtype=float)[:, None]
                                          * 10000.0 ** (-np.arange(d) / d)).sum(1),
                      "d_model = 2: one pair, the dot product is cos(k): it sums a cosine for "
                      "each of the d_model columns"),
        averaged=(lambda k, d: pe_dot(k, d) / (d // 2), "k = 0: every pair gives 1, so d_model "
                  "/ 2 = 4: it averages the cosines"),
    ),
    *right(nb09.check_add_positions, worked=add_positions,
           explicit_broadcast=lambda X: X + positional.sinusoidal_encoding(
               X.shape[1], X.shape[2])[None, :, :]),
    *wrong(
        nb09.check_add_positions,
        batch_as_positions=(lambda X: X + positional.sinusoidal_encoding(
            len(X), X.shape[-1])[:, None, :],
            "2 sentences of 5 tokens, all zero: the output is PE twice: still the bug"),
        in_place=(add_positions_in_place, "changed its argument `X` in place"),
        pe_of_batch_rows=(lambda X: X + positional.sinusoidal_encoding(len(X), X.shape[-1]),
                          "raised ValueError: operands could not be broadcast"),
    ),
    *right(nb09.check_input_length, worked=(512 + 256) ** 0.5, rounded=28, one_draw=27.0),
    *wrong(
        nb09.check_input_length,
        lengths_added=(512**0.5 + 16, "the two lengths added"),
        pe_only=(16, "the length of PE(1000) alone"),
        embedding_only=(512**0.5, "the length of the scaled embedding alone"),
        unscaled=(17, "the embedding without its sqrt(d_model) factor"),
        squared=(768, "768 is too high: 768 is the squared length ||a + b||²"),
        pe_length_512=(32, "32 is too high: it takes ||PE(1000)||² = 512"),
    ),
]

test_checker = table_test(ROWS)

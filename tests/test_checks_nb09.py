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


def pe_dot_complex_exp(k, d_model, p=7.3):
    """PE(p) and PE(p + k) built from complex exponentials, sines as imaginary parts."""
    omega = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    k = np.asarray(k, dtype=np.float64)[:, None]
    here, there = np.exp(1j * p * omega), np.exp(1j * (p + k) * omega)
    return (there.imag * here.imag + there.real * here.real).sum(axis=1)


def pe_dot_own_encodings_math(k, d_model, p=7.3):
    """The same with math.sin, one offset at a time."""
    omega = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    return np.array([sum(math.sin(p * w) * math.sin((p + o) * w)
                         + math.cos(p * w) * math.cos((p + o) * w) for w in omega)
                     for o in np.ravel(k)])


def pe_dot_tensor_sin(k, d_model, p=300.0):
    """The encodings built with a tensor's .sin() and .cos() methods, then dotted."""
    omega = torch.from_numpy(positional.angular_frequencies(d_model))
    here = p * omega
    there = (p + torch.as_tensor(np.asarray(k), dtype=torch.float64))[:, None] * omega
    return (here.sin() * there.sin() + here.cos() * there.cos()).sum(-1).numpy()


def pe_dot_umath_sin(k, d_model, p=300.0):
    """The encodings built with NumPy's sine under another name, np.core.umath.sin."""
    sine = np.core.umath.sin
    omega = positional.angular_frequencies(d_model)
    there = (p + np.asarray(k, dtype=np.float64))[:, None] * omega
    return (sine(p * omega) * sine(there) + np.cos(p * omega) * np.cos(there)).sum(-1)


def pe_dot_shifted_cosine(k, d_model, p=300.0):
    """The encodings built from cosines alone, the sines as cos(x - π/2), then dotted."""
    omega = positional.angular_frequencies(d_model)
    there = (p + np.asarray(k, dtype=np.float64))[:, None] * omega
    return (np.cos(p * omega - np.pi / 2) * np.cos(there - np.pi / 2)
            + np.cos(p * omega) * np.cos(there)).sum(-1)


def pe_dot_with_pi(k, d_model):
    """Right: the frequencies written with pi nowhere near a sine, cos(k·ω) reduced modulo 2π."""
    omega = positional.angular_frequencies(d_model)
    return np.cos(np.mod(np.asarray(k, dtype=np.float64)[:, None] * omega, 2 * np.pi)).sum(-1)


def pe_dot_torch(k, d_model):
    """Right: the formula in torch, with a tensor's .cos()."""
    omega = torch.from_numpy(positional.angular_frequencies(d_model))
    return (torch.as_tensor(np.asarray(k), dtype=torch.float64)[:, None] * omega).cos().sum(-1)


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
    *right(nb09.check_sinusoidal_encoding, worked=sinusoidal),
    *wrong(
        nb09.check_sinusoidal_encoding,
        library_call=(lambda n, d: positional.sinusoidal_encoding(n, d),
                      "positional.sinusoidal_encoding was called: the exercise is to build the "
                      "table yourself"),
        comprehension_over_positions=(
            lambda n, d: np.array([sinusoidal(pos + 1, d)[pos] for pos in range(n)]),
            "no loop over positions: it loops over the positions"),
        concatenated=(lambda n, d: sinusoidal(n, d, layout="concatenated"),
                      "position 0 is [0, 1, 0, 1, ...]: values differ: expected [[0., 1., 0., "
                      "1., 0., 1., 0., 1.]], got [[0., 0., 0., 0., 1., 1., 1., 1.]]"),
        sin_cos_swapped=(lambda n, d: sinusoidal(n, d, layout="swapped"),
                         "the worst at [0, 0]: expected 0.0, got 1.0"),
        exponent_i=(lambda n, d: sinusoidal(n, d, exponent=1), "10 positions, d_model = 4: "
                    "values differ"),
        loops_over_positions=(sinusoidal_by_positions,
                              "1000 positions, d_model = 16: interleaved, and no loop over "
                              "positions: it loops over the positions"),
        map_over_positions=(sinusoidal_by_map, "it uses map, which runs a Python loop over its "
                            "items (here the positions)"),
        float32=(lambda n, d: sinusoidal(n, d).astype(np.float32),
                 "dtype: expected float64, got float32"),
    ),
    *right(nb09.check_pe_dot, worked=pe_dot, by_hand=pe_dot_by_hand, with_pi=pe_dot_with_pi,
           in_torch=lambda k, d: pe_dot_torch(k, d).numpy()),
    *wrong(
        nb09.check_pe_dot,
        sines_only=(lambda k, d: np.sin(np.asarray(k)[:, None]
                                        * positional.angular_frequencies(d)).sum(1),
                    "k = 0: every pair gives 1, so d_model / 2 = 4: the rule is a formula in k and "
                    "the ω_i: your code uses sin"),
        all_columns=(lambda k, d: 2 * pe_dot(k, d), "expected [4.], got [8.]"),
        wrong_frequencies=(lambda k, d: np.cos(np.asarray(k)[:, None]
                                               * 10000.0 ** (-np.arange(d // 2) / d)).sum(1),
                           "k = ±10, d_model = 128: symmetric in k: values differ"),
        measured=(pe_dot_by_table, "your code uses sinusoidal_encoding, which computes the "
                                   "encodings"),
        own_table=(pe_dot_own_table, "your code uses sin, a sine, which only the encodings"),
        own_encodings_at_7_3=(pe_dot_own_encodings, "the rule is a formula in k and the ω_i: "
                              "your code uses sin"),
        own_encodings_math=(pe_dot_own_encodings_math, "your code uses sin"),
        tensor_sin_method=(pe_dot_tensor_sin, "your code uses sin, a sine"),
        umath_sin=(pe_dot_umath_sin, "your code uses sin, a sine"),
        rotation_trace=(lambda k, d: np.array([np.trace(positional.relative_position_matrix(
            int(o), d)) / 2 for o in np.ravel(k)]), "your code uses relative_position_matrix"),
        complex_exponential_encodings=(pe_dot_complex_exp, "np.exp was given a complex "
                                       "argument, and a complex exponential holds a sine"),
        shifted_cosine=(pe_dot_shifted_cosine, "a shifted cosine is a sine (cos(x - π/2) = sin x) "
                        "and the rule counts it as one"),
    ),
    *right(nb09.check_add_positions, worked=add_positions,
           explicit_broadcast=lambda X: X + positional.sinusoidal_encoding(
               X.shape[1], X.shape[2])[None, :, :]),
    *wrong(
        nb09.check_add_positions,
        batch_as_positions=(lambda X: X + positional.sinusoidal_encoding(
            len(X), X.shape[-1])[:, None, :],
            "2 sentences of 5 tokens, all zero: the output is PE twice: values differ"),
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
        squared=(768, "768 is too high: work with squared lengths"),
    ),
]

test_checker = table_test(ROWS)

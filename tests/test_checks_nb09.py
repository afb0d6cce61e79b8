"""Notebook 09's checkers: right answers pass, plausible mistakes fail with a reason."""

import numpy as np
from checker_table import right, table_test, wrong

from course_utils import positional
from course_utils.checks import nb09


def encode(text, vocab, lower=True, split=str.split):
    words = split(text.lower() if lower else text)
    return [vocab.get(word, vocab["<unk>"]) for word in words]


def one_hot(ids, vocab_size, lowest=0):
    ids = np.asarray(ids)
    if ids.min() < lowest or ids.max() >= vocab_size:
        raise ValueError(f"ids must lie in [0, {vocab_size})")
    out = np.zeros((ids.size, vocab_size))
    out[np.arange(ids.size), ids] = 1.0
    return out


def one_hot_by_eye(ids, vocab_size):
    if not np.all((0 <= ids) & (ids < vocab_size)):
        raise ValueError("id out of range")
    return np.eye(vocab_size)[ids]


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


def rotation_blocks(k, d_model):
    if d_model % 2:
        raise ValueError(f"d_model must be even, got {d_model}")
    m = np.zeros((d_model, d_model))
    for i in range(d_model // 2):
        angle = k * 10000.0 ** (-2 * i / d_model)
        c, s = np.cos(angle), np.sin(angle)
        m[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[c, s], [-s, c]]
    return m


ROWS = [
    *right(nb09.check_encode, worked=encode),
    *wrong(
        nb09.check_encode,
        keeps_case=(lambda text, vocab: encode(text, vocab, lower=False),
                    "upper case is lowered: values differ"),
        drops_unknown=(lambda text, vocab: [vocab[w] for w in text.lower().split() if w in vocab],
                       "'cat' is not in the vocabulary: <unk>: shape: expected (5,), got (4,)"),
        single_spaces=(lambda text, vocab: encode(text, vocab, split=lambda t: t.split(" ")),
                       "extra spaces: shape: expected (2,), got (8,)"),
        an_array=(lambda text, vocab: np.array(encode(text, vocab)),
                  "expected a list, got numpy.ndarray"),
    ),
    *right(nb09.check_one_hot, worked=one_hot, rows_of_eye=one_hot_by_eye),
    *wrong(
        nb09.check_one_hot,
        negative_wraps=(lambda ids, v: one_hot(ids, v, lowest=-v),
                        "a negative id: should raise ValueError, returned "
                        "array([[0., 0., 0., 1.]])"),
        transposed=(lambda ids, v: one_hot(ids, v).T, "shape: expected (5, 7), got (7, 5)"),
        integers=(lambda ids, v: one_hot(ids, v).astype(int), "dtype: expected float64, got int64"),
        booleans=(lambda ids, v: one_hot(ids, v) > 0, "dtype: expected float64, got bool"),
    ),
    *right(nb09.check_sinusoidal_encoding, course_utils=positional.sinusoidal_encoding,
           worked=sinusoidal),
    *wrong(
        nb09.check_sinusoidal_encoding,
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
        float32=(lambda n, d: sinusoidal(n, d).astype(np.float32),
                 "dtype: expected float64, got float32"),
    ),
    *right(nb09.check_relative_position_matrix, course_utils=positional.relative_position_matrix,
           worked=rotation_blocks),
    *wrong(
        nb09.check_relative_position_matrix,
        transposed=(lambda k, d: rotation_blocks(k, d).T,
                    "k = 1, d_model = 2: one rotation block: values differ"),
        ignores_sign=(lambda k, d: rotation_blocks(abs(k), d), "a negative offset: values differ"),
    ),
]

test_checker = table_test(ROWS)

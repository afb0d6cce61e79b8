"""The notebook 09 checkers accept the reference solutions and catch plausible mistakes."""

from __future__ import annotations

import numpy as np

from course_utils import positional
from course_utils.checks import nb09


def stub(*args):
    raise NotImplementedError


def test_encode() -> None:
    def good(text, vocab):
        return [vocab.get(w, vocab["<unk>"]) for w in text.lower().split()]

    def no_lower(text, vocab):
        return [vocab.get(w, vocab["<unk>"]) for w in text.split()]

    def drops_unknown(text, vocab):
        return [vocab[w] for w in text.lower().split() if w in vocab]

    def splits_on_single_space(text, vocab):
        return [vocab.get(w, vocab["<unk>"]) for w in text.lower().split(" ")]

    assert nb09.check_encode(good).passed
    assert nb09.check_encode(stub).status == "not attempted"
    for wrong in (no_lower, drops_unknown, splits_on_single_space):
        assert nb09.check_encode(wrong).status == "failed", wrong.__name__


def test_one_hot() -> None:
    def good(ids, vocab_size):
        ids = np.asarray(ids)
        if ids.min() < 0 or ids.max() >= vocab_size:
            raise ValueError("out of range")
        return np.eye(vocab_size)[ids]

    def negative_wraps(ids, vocab_size):  # NumPy indexing accepts -1 silently
        if np.max(ids) >= vocab_size:
            raise ValueError("out of range")
        return np.eye(vocab_size)[ids]

    def transposed(ids, vocab_size):
        return good(ids, vocab_size).T

    def integers(ids, vocab_size):
        return good(ids, vocab_size).astype(int)

    assert nb09.check_one_hot(good).passed
    assert nb09.check_one_hot(stub).status == "not attempted"
    for wrong in (negative_wraps, transposed, integers):
        assert nb09.check_one_hot(wrong).status == "failed", wrong.__name__


def test_sinusoidal_encoding() -> None:
    assert nb09.check_sinusoidal_encoding(positional.sinusoidal_encoding).passed
    assert nb09.check_sinusoidal_encoding(stub).status == "not attempted"

    def concatenated(n, d):
        if d % 2:
            raise ValueError("odd")
        angles = np.arange(n)[:, None] * positional.angular_frequencies(d)
        return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)

    def swapped(n, d):
        return positional.sinusoidal_encoding(n, d)[:, np.arange(d) ^ 1]

    def exponent_i_not_2i(n, d):
        if d % 2:
            raise ValueError("odd")
        angles = np.arange(n)[:, None] * 10000.0 ** (-np.arange(d // 2) / d)
        pe = np.zeros((n, d))
        pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles)
        return pe

    for wrong in (concatenated, swapped, exponent_i_not_2i):
        assert nb09.check_sinusoidal_encoding(wrong).status == "failed", wrong.__name__


def test_relative_position_matrix() -> None:
    assert nb09.check_relative_position_matrix(positional.relative_position_matrix).passed
    assert nb09.check_relative_position_matrix(stub).status == "not attempted"

    def transposed(k, d):
        return positional.relative_position_matrix(k, d).T

    def ignores_sign(k, d):
        return positional.relative_position_matrix(abs(k), d)

    for wrong in (transposed, ignores_sign):
        assert nb09.check_relative_position_matrix(wrong).status == "failed", wrong.__name__

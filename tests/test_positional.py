"""Tests for course_utils.positional against direct trigonometry and the paper's formula."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import positional

even_d = st.integers(1, 32).map(lambda n: 2 * n)


def test_matches_the_paper_formula_entry_by_entry() -> None:
    pe = positional.sinusoidal_encoding(7, 6)
    for pos in range(7):
        for i in range(3):
            angle = pos / 10000 ** (2 * i / 6)
            assert pe[pos, 2 * i] == pytest.approx(math.sin(angle), abs=1e-15)
            assert pe[pos, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-15)


def test_shape_dtype_and_position_zero() -> None:
    pe = positional.sinusoidal_encoding(50, 16)
    assert pe.shape == (50, 16) and pe.dtype == np.float64
    np.testing.assert_array_equal(pe[0], np.tile([0.0, 1.0], 8))
    assert positional.sinusoidal_encoding(0, 4).shape == (0, 4)


def test_interleaved_is_a_column_permutation_of_concatenated() -> None:
    d = 8
    pe = positional.sinusoidal_encoding(20, d)
    pos = np.arange(20)[:, None]
    omega = 1.0 / 10000 ** (np.arange(0, d, 2) / d)
    concatenated = np.concatenate([np.sin(pos * omega), np.cos(pos * omega)], axis=1)
    order = np.ravel(np.column_stack([np.arange(d // 2), np.arange(d // 2) + d // 2]))
    np.testing.assert_allclose(pe, concatenated[:, order], atol=1e-15)


def test_frequencies_and_wavelengths() -> None:
    omega = positional.angular_frequencies(512)
    assert omega.shape == (256,) and omega[0] == 1.0
    assert np.all(np.diff(omega) < 0)
    lam = positional.wavelengths(512)
    assert lam[0] == pytest.approx(2 * np.pi)
    assert lam[-1] == pytest.approx(2 * np.pi * 10000 ** (510 / 512))
    np.testing.assert_allclose(lam[1:] / lam[:-1], 10000 ** (2 / 512))


def test_base_changes_the_frequencies() -> None:
    np.testing.assert_allclose(positional.angular_frequencies(4, base=100.0), [1.0, 0.1])


@settings(max_examples=40, deadline=None)
@given(d=even_d, k=st.integers(-60, 60), pos=st.integers(60, 260))
def test_shift_by_k_is_the_rotation_m_k(d: int, k: int, pos: int) -> None:
    pe = positional.sinusoidal_encoding(pos + 61, d)
    m = positional.relative_position_matrix(k, d)
    np.testing.assert_allclose(m @ pe[pos], pe[pos + k], atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(d=even_d, k=st.floats(-100, 100))
def test_m_k_is_orthogonal_block_diagonal_and_composes(d: int, k: float) -> None:
    m = positional.relative_position_matrix(k, d)
    np.testing.assert_allclose(m @ m.T, np.eye(d), atol=1e-12)
    np.testing.assert_allclose(positional.relative_position_matrix(-k, d), m.T, atol=1e-12)
    np.testing.assert_allclose(
        positional.relative_position_matrix(2 * k, d), m @ m, atol=1e-9
    )
    block = np.kron(np.eye(d // 2), np.ones((2, 2)))
    assert np.all(m[block == 0] == 0)


def test_m_zero_is_identity() -> None:
    np.testing.assert_array_equal(positional.relative_position_matrix(0, 10), np.eye(10))


@settings(max_examples=30, deadline=None)
@given(d=even_d, k=st.integers(0, 30), p=st.integers(0, 100), q=st.integers(0, 100))
def test_dot_product_depends_only_on_the_offset(d: int, k: int, p: int, q: int) -> None:
    pe = positional.sinusoidal_encoding(140, d)
    assert pe[p] @ pe[p + k] == pytest.approx(pe[q] @ pe[q + k], abs=1e-9)
    omega = positional.angular_frequencies(d)
    assert pe[p] @ pe[p + k] == pytest.approx(np.cos(k * omega).sum(), abs=1e-9)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: positional.sinusoidal_encoding(5, 7), ValueError, "even"),
        (lambda: positional.sinusoidal_encoding(5, 0), ValueError, "even"),
        (lambda: positional.sinusoidal_encoding(-1, 4), ValueError, "n_positions"),
        (lambda: positional.sinusoidal_encoding(2.0, 4), TypeError, "n_positions"),
        (lambda: positional.sinusoidal_encoding(3, 4.0), TypeError, "d_model"),
        (lambda: positional.sinusoidal_encoding(3, 4, base=1.0), ValueError, "base"),
        (lambda: positional.relative_position_matrix(1, 5), ValueError, "even"),
        (lambda: positional.relative_position_matrix(np.inf, 4), ValueError, "finite"),
        (lambda: positional.relative_position_matrix("1", 4), TypeError, "k must"),
    ],
)
def test_bad_inputs(call, error, match) -> None:
    with pytest.raises(error, match=match):
        call()

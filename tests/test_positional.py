"""Tests for course_utils.positional against direct trigonometry and the paper's formula."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
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
        (lambda: positional.sinusoidal_encoding(5, 0), ValueError, "d_model must be at least 1"),
        (lambda: positional.sinusoidal_encoding(-1, 4), ValueError, "n_positions"),
        (lambda: positional.sinusoidal_encoding(2.0, 4), TypeError, "n_positions"),
        (lambda: positional.sinusoidal_encoding(3, 4.0), TypeError, "d_model"),
        (lambda: positional.sinusoidal_encoding(3, 4, base=1.0), ValueError, "base"),
        (lambda: positional.relative_position_matrix(1, 5), ValueError, "even"),
        (lambda: positional.relative_position_matrix(np.inf, 4), ValueError, "k must be a finite"),
        (lambda: positional.relative_position_matrix("1", 4), TypeError, "k must"),
    ],
)
def test_bad_inputs(call, error, match) -> None:
    with pytest.raises(error, match=match):
        call()


# ----------------------------------------------------------------------- rotary (RoPE)


def rope_complex(x, positions, base=10000.0):
    """Meta's original Llama formulation: pairs as complex numbers times e^(i·pos·θ)."""
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    rotation = torch.polar(torch.ones(len(positions), d // 2, dtype=torch.float64),
                           torch.as_tensor(positions, dtype=torch.float64)[:, None] * theta)
    pairs = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], d // 2, 2))
    return torch.view_as_real(pairs * rotation).flatten(-2).to(x.dtype)


def rope_half_split(x, positions, base=10000.0):
    """The Llama-style layout of Hugging Face code: x[i] pairs with x[i + d/2] (rotate_half)."""
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = torch.as_tensor(positions, dtype=torch.float64)[:, None] * theta
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("shape", "base"), [((5, 2), 10000.0), ((2, 3, 7, 8), 10000.0),
                                             ((4, 16), 500.0)])
def test_rope_equals_complex_rotation(dtype, shape, base) -> None:
    g = torch.Generator().manual_seed(sum(shape))
    x = torch.randn(*shape, dtype=dtype, generator=g)
    positions = torch.randint(0, 5000, (shape[-2],), generator=g)
    out = positional.apply_rope(x, positions, base)
    assert out.dtype == dtype and out.shape == x.shape
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == torch.float32 else {"rtol": 1e-12, "atol": 1e-12}
    torch.testing.assert_close(out, rope_complex(x, positions, base), **tol)


def test_rope_is_the_transpose_of_m_pos() -> None:
    x = torch.randn(6, 10, dtype=torch.float64)
    positions = [0, 1, 2, 7, 40, 999]
    out = positional.apply_rope(x, positions)
    for row, pos in enumerate(positions):  # R_pos = M_pos^T, so (R_pos x)^T = x^T M_pos
        expected = x[row].numpy() @ positional.relative_position_matrix(pos, 10)
        np.testing.assert_allclose(out[row].numpy(), expected, atol=1e-12)


def test_rope_half_split_is_a_permutation_of_interleaved() -> None:
    d = 12
    x = torch.randn(2, 9, d, dtype=torch.float64)
    positions = torch.arange(3, 12)
    perm = torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])  # evens, then odds
    torch.testing.assert_close(positional.apply_rope(x, positions)[..., perm],
                               rope_half_split(x[..., perm], positions))
    assert not torch.allclose(positional.apply_rope(x, positions), rope_half_split(x, positions))


@settings(max_examples=40, deadline=None)
@given(d=even_d, m=st.integers(0, 2000), n=st.integers(0, 2000), shift=st.integers(0, 2000),
       seed=st.integers(0, 2**16))
def test_rope_scores_depend_only_on_the_offset(d, m, n, shift, seed) -> None:
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(1, d, dtype=torch.float64, generator=g), torch.randn(1, d, generator=g,
                                                                            dtype=torch.float64)
    score = (positional.apply_rope(q, [m]) @ positional.apply_rope(k, [n]).T).item()
    shifted = (positional.apply_rope(q, [m + shift]) @ positional.apply_rope(k, [n + shift]).T)
    relative = (q @ positional.apply_rope(k, [n - m]).T).item()  # q · R_{n-m} k
    assert shifted.item() == pytest.approx(score, abs=1e-9)
    assert relative == pytest.approx(score, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(d=even_d, n=st.integers(1, 6), seed=st.integers(0, 2**16))
def test_rope_preserves_norms_is_identity_at_zero_and_inverts(d, n, seed) -> None:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, dtype=torch.float64, generator=g)
    positions = torch.randint(-500, 5000, (n,), generator=g)
    out = positional.apply_rope(x, positions)
    torch.testing.assert_close(out.reshape(n, d // 2, 2).norm(dim=-1),  # each pair keeps its
                               x.reshape(n, d // 2, 2).norm(dim=-1))   # length
    assert torch.equal(positional.apply_rope(x, [0] * n), x)
    torch.testing.assert_close(positional.apply_rope(out, -positions), x)


def test_rope_gradient_is_the_inverse_rotation() -> None:
    x = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    upstream = torch.randn(4, 6, dtype=torch.float64)
    positions = torch.tensor([3, 1, 4, 1])
    (positional.apply_rope(x, positions) * upstream).sum().backward()
    torch.testing.assert_close(x.grad, positional.apply_rope(upstream, -positions))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: positional.apply_rope(torch.randn(3, 5), [0, 1, 2]), ValueError, "d even"),
        (lambda: positional.apply_rope(torch.randn(4), [0]), ValueError, r"\(\.\.\., L, d\)"),
        (lambda: positional.apply_rope(np.ones((2, 4)), [0, 1]), TypeError, "torch.Tensor"),
        (lambda: positional.apply_rope(torch.ones(2, 4, dtype=torch.long), [0, 1]), TypeError,
         "floating"),
        (lambda: positional.apply_rope(torch.randn(2, 4), [0.0, 1.0]), TypeError, "integers"),
        (lambda: positional.apply_rope(torch.randn(2, 4), [0, 1, 2]), ValueError, "positions"),
        (lambda: positional.apply_rope(torch.randn(2, 4), [0, 1], base=1.0), ValueError, "base"),
    ],
)
def test_rope_bad_inputs(call, error, match) -> None:
    with pytest.raises(error, match=match):
        call()

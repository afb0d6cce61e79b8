"""Tests for course_utils.positional against direct trigonometry, the paper's formula and
Hugging Face ``transformers`` (its RoPE frequencies and Llama's ``apply_rotary_pos_emb``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

from course_utils import positional

_LAYOUTS = ("half", "interleaved")
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
    torch.testing.assert_close(positional.apply_rope(x, positions, layout="half"),
                               rope_half_split(x, positions))
    assert not torch.allclose(positional.apply_rope(x, positions), rope_half_split(x, positions))


def test_layout_permutation_values_and_inverse() -> None:
    assert positional.layout_permutation(8).tolist() == [0, 2, 4, 6, 1, 3, 5, 7]
    assert positional.layout_permutation(8, "interleaved").tolist() == [0, 4, 1, 5, 2, 6, 3, 7]
    to_half, to_interleaved = (positional.layout_permutation(20, to) for to in _LAYOUTS)
    assert to_half.dtype == torch.int64
    assert torch.equal(to_half[to_interleaved], torch.arange(20))
    assert torch.equal(to_interleaved[to_half], torch.arange(20))
    x = torch.randn(3, 5, 20, dtype=torch.float64)
    positions = torch.tensor([0, 4, 9, 100, 2000])
    torch.testing.assert_close(positional.apply_rope(x, positions)[..., to_half],
                               positional.apply_rope(x[..., to_half], positions, layout="half"))
    torch.testing.assert_close(
        positional.apply_rope(x, positions, layout="half")[..., to_interleaved],
        positional.apply_rope(x[..., to_interleaved], positions))


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


# ------------------------------------------- frequencies, scaling, batches: against transformers

LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 8192}


def hf_config(head_dim: int, base: float, scaling: dict | None, n_heads: int = 2):
    """A Hugging Face Llama configuration with these RoPE settings."""
    parameters = {"rope_type": "default"} if scaling is None else dict(scaling)
    return LlamaConfig(
        hidden_size=head_dim * n_heads, num_attention_heads=n_heads, num_key_value_heads=n_heads,
        head_dim=head_dim, max_position_embeddings=16384,
        rope_parameters={**parameters, "rope_theta": base},
    )


def test_default_frequencies_are_the_sinusoidal_ones() -> None:
    omega = positional.rope_frequencies(64, 500.0)
    assert omega.dtype == torch.float64 and omega.shape == (32,)
    np.testing.assert_array_equal(omega.numpy(), positional.angular_frequencies(64, 500.0))
    assert torch.equal(positional.rope_frequencies(64, 500.0, {"rope_type": "default"}), omega)


@pytest.mark.parametrize(("head_dim", "base", "scaling"), [
    (64, 10000.0, {"rope_type": "linear", "factor": 4.0}),
    (128, 500000.0, {"rope_type": "linear", "factor": 2.5}),
    (128, 500000.0, LLAMA3),  # Llama 3.1's settings
    (64, 500000.0, {**LLAMA3, "factor": 32.0, "original_max_position_embeddings": 4096}),
    (32, 10000.0, {**LLAMA3, "low_freq_factor": 2.0, "original_max_position_embeddings": 512}),
])
def test_frequencies_match_transformers(head_dim, base, scaling) -> None:
    kind = scaling["rope_type"]
    theirs, _ = ROPE_INIT_FUNCTIONS[kind](hf_config(head_dim, base, scaling))  # float32
    ours = positional.rope_frequencies(head_dim, base, scaling)
    torch.testing.assert_close(ours, theirs.to(torch.float64), rtol=2e-6, atol=0)
    unscaled = positional.rope_frequencies(head_dim, base)
    if kind == "llama3":  # every case has all three bands: unchanged, divided, interpolated
        changed = ours / unscaled
        assert (changed == 1).any() and (changed == 1 / scaling["factor"]).any()
        assert ((changed > 1 / scaling["factor"]) & (changed < 1)).any()
    else:
        torch.testing.assert_close(ours, unscaled / scaling["factor"], rtol=1e-15, atol=0)


def test_llama3_frequencies_change_continuously_across_the_band() -> None:
    # 2048 pairs whose wavelengths 2π/θ_i run densely from 2π to ~3·10^6 positions, so many fall
    # inside Llama 3.1's band 2048 < λ < 8192, where the factor goes smoothly from 1 to 1/8
    ratio = (positional.rope_frequencies(4096, 500000.0, LLAMA3)
             / positional.rope_frequencies(4096, 500000.0)).numpy()
    lam = 2 * np.pi / positional.angular_frequencies(4096, 500000.0)
    np.testing.assert_array_equal(ratio[lam < 2048], 1.0)
    np.testing.assert_allclose(ratio[lam > 8192], 1 / 8, rtol=1e-15)
    inside = (lam > 2048) & (lam < 8192)
    assert inside.sum() > 50
    assert np.all(np.diff(ratio) <= 0) and np.abs(np.diff(ratio)).max() < 0.01


@pytest.mark.parametrize("scaling", [None, LLAMA3, {"rope_type": "linear", "factor": 4.0}])
def test_half_layout_matches_transformers_llama(scaling) -> None:
    b, h, length, d = 2, 3, 7, 16
    config = hf_config(d, 10000.0, scaling, n_heads=h)
    g = torch.Generator().manual_seed(7)
    q, k = (torch.randn(b, h, length, d, generator=g) for _ in range(2))
    position_ids = torch.stack([torch.arange(length), torch.arange(length) + 120])  # (B, L)
    cos, sin = LlamaRotaryEmbedding(config)(q, position_ids)
    q_hf, k_hf = apply_rotary_pos_emb(q, k, cos, sin)
    for mine, theirs in ((q, q_hf), (k, k_hf)):
        out = positional.apply_rope(mine, position_ids, scaling=scaling, layout="half")
        torch.testing.assert_close(out, theirs, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(positional.apply_rope(q, position_ids, scaling=scaling), q_hf,
                              atol=1e-3)  # the interleaved layout is not Hugging Face's


def test_hf_weights_permuted_into_the_interleaved_layout_give_the_same_scores() -> None:
    b, h, length, d, d_model = 2, 2, 6, 8, 12
    g = torch.Generator().manual_seed(3)
    w_q, w_k = (torch.randn(h * d, d_model, dtype=torch.float64, generator=g) for _ in range(2))
    x = torch.randn(b, length, d_model, dtype=torch.float64, generator=g)
    position_ids = torch.stack([torch.arange(length), torch.arange(length) + 50])

    def heads(w):  # (B, L, d_model) -> (B, H, L, d)
        return (x @ w.T).view(b, length, h, d).transpose(1, 2)

    cos, sin = LlamaRotaryEmbedding(hf_config(d, 10000.0, None, n_heads=h))(x, position_ids)
    q_hf, k_hf = apply_rotary_pos_emb(heads(w_q), heads(w_k), cos, sin)  # Llama's layout
    perm = positional.layout_permutation(d, "interleaved")
    ours = [positional.apply_rope(heads(w.view(h, d, d_model)[:, perm].reshape(h * d, d_model)),
                                  position_ids) for w in (w_q, w_k)]
    to_half = positional.layout_permutation(d, "half")
    tol = {"rtol": 1e-5, "atol": 1e-5}  # Hugging Face computes the angles in float32
    torch.testing.assert_close(ours[0][..., to_half], q_hf, **tol)
    torch.testing.assert_close(ours[1][..., to_half], k_hf, **tol)
    torch.testing.assert_close(ours[0] @ ours[1].transpose(-1, -2),
                               q_hf @ k_hf.transpose(-1, -2), **tol)
    unpermuted = positional.apply_rope(heads(w_q), position_ids)
    assert not torch.allclose(unpermuted[..., to_half], q_hf, atol=1e-2)


def test_linear_scaling_divides_the_positions() -> None:
    x = torch.randn(2, 5, 10, dtype=torch.float64)
    positions = torch.tensor([0, 3, 8, 100, 4096])
    out = positional.apply_rope(x, positions, scaling={"rope_type": "linear", "factor": 4.0})
    torch.testing.assert_close(out, rope_complex(x, positions / 4.0))


@pytest.mark.parametrize("layout", _LAYOUTS)
@pytest.mark.parametrize("shape", [(3, 6, 8), (3, 2, 6, 8)])
def test_batched_positions_rotate_each_sequence_by_its_own_row(shape, layout) -> None:
    x = torch.randn(*shape, dtype=torch.float64)
    positions = torch.tensor([[0, 1, 2, 3, 4, 5], [0, 0, 0, 0, 1, 2], [7, 8, 9, 10, 11, 12]])
    out = positional.apply_rope(x, positions, layout=layout, scaling=LLAMA3)
    assert out.shape == x.shape
    for row in range(3):
        alone = positional.apply_rope(x[row], positions[row], layout=layout, scaling=LLAMA3)
        torch.testing.assert_close(out[row], alone, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_result_keeps_the_dtype(dtype) -> None:
    x = torch.randn(4, 8, dtype=torch.float64)
    positions = [0, 10, 1000, 30000]
    out = positional.apply_rope(x.to(dtype), positions, layout="half")
    assert out.dtype == dtype
    reference = positional.apply_rope(x, positions, layout="half")
    torch.testing.assert_close(out.double(), reference, rtol=0.02, atol=0.05)


@pytest.mark.parametrize(
    ("scaling", "error", "match"),
    [
        ([("rope_type", "linear")], TypeError, "scaling must be a dict"),
        ({"factor": 2.0}, ValueError, "'rope_type'"),
        ({"rope_type": "yarn", "factor": 2.0}, ValueError, r"scaling\['rope_type'\] must be one"),
        ({"rope_type": 3}, TypeError, r"scaling\['rope_type'\]"),
        ({"rope_type": "linear"}, ValueError, "must have the key 'factor'"),
        ({"rope_type": "linear", "factor": 0.0}, ValueError, r"scaling\['factor'\]"),
        ({"rope_type": "linear", "factor": "2"}, TypeError, r"scaling\['factor'\]"),
        ({"rope_type": "linear", "factor": 2.0, "low_freq_factor": 1.0}, ValueError,
         "'low_freq_factor', unknown"),
        ({"rope_type": "default", "factor": 2.0}, ValueError, "'factor', unknown"),
        ({k: v for k, v in LLAMA3.items() if k != "high_freq_factor"}, ValueError,
         "'high_freq_factor'"),
        ({**LLAMA3, "high_freq_factor": 1.0}, ValueError, "greater than"),
        ({**LLAMA3, "original_max_position_embeddings": 8192.0}, TypeError,
         "original_max_position_embeddings"),
        ({**LLAMA3, "original_max_position_embeddings": 0}, ValueError,
         "original_max_position_embeddings"),
    ],
)
def test_bad_scaling(scaling, error, match) -> None:
    with pytest.raises(error, match=match):
        positional.rope_frequencies(8, scaling=scaling)
    with pytest.raises(error, match=match):
        positional.apply_rope(torch.randn(2, 8), [0, 1], scaling=scaling)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: positional.rope_frequencies(7), ValueError, "head_dim must be even"),
        (lambda: positional.rope_frequencies(8.0), TypeError, "head_dim"),
        (lambda: positional.rope_frequencies(8, base=0.5), ValueError, "base"),
        (lambda: positional.layout_permutation(6, "halves"), ValueError, "to must be one of"),
        (lambda: positional.layout_permutation(5), ValueError, "head_dim must be even"),
        (lambda: positional.apply_rope(torch.randn(2, 4), [0, 1], layout="split"), ValueError,
         "layout"),
        (lambda: positional.apply_rope(torch.randn(3, 2, 4), torch.zeros(2, 2, dtype=torch.long)),
         ValueError, r"\(B, L\) = \(3, 2\)"),
        (lambda: positional.apply_rope(torch.randn(2, 3, 5, 2, 4), torch.zeros(2, 2).long()),
         ValueError, r"positions must have shape \(L,\) = \(2,\)"),
    ],
)
def test_more_bad_inputs(call, error, match) -> None:
    with pytest.raises(error, match=match):
        call()

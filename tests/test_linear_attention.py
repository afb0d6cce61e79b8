"""Linear attention against a dense reference that builds the Lq × Lk kernel matrix explicitly."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils import linear_attention as la


def qkv(lead, lq, lk, d=8, d_v=5, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*lead, lq, d, generator=g, dtype=torch.float64)
    k = torch.randn(*lead, lk, d, generator=g, dtype=torch.float64)
    v = torch.randn(*lead, lk, d_v, generator=g, dtype=torch.float64)
    return q.to(dtype), k.to(dtype), v.to(dtype)


def dense(q, k, v, causal, phi=lambda x: torch.where(x > 0, x + 1, torch.exp(x))):
    """Σ_j A_ij v_j / Σ_j A_ij with A_ij = φ(q_i)·φ(k_j) as a full matrix (bottom-right mask);
    a row with Σ_j A_ij = 0 gives 0. elu(x) + 1 is written out here from its definition."""
    weights = phi(q) @ phi(k).transpose(-1, -2)  # (..., Lq, Lk)
    if causal:
        lq, lk = q.shape[-2], k.shape[-2]
        weights = weights * torch.ones(lq, lk, dtype=torch.bool).tril(lk - lq)
    total = weights.sum(dim=-1, keepdim=True)
    return torch.where(total > 0, weights @ v / torch.where(total > 0, total, 1.0), 0.0)


def test_elu_feature_map_is_elu_plus_one():
    x = torch.linspace(-5, 5, 101, dtype=torch.float64)
    torch.testing.assert_close(la.elu_feature_map(x), torch.nn.ELU()(x) + 1)
    assert (la.elu_feature_map(x) > 0).all()


@pytest.mark.parametrize(("lead", "lq", "lk"), [((2, 3), 17, 17), ((1,), 9, 300), ((2,), 260, 5)])
def test_non_causal_equals_the_dense_kernel_matrix(lead, lq, lk):
    q, k, v = qkv(lead, lq, lk)
    torch.testing.assert_close(la.linear_attention(q, k, v), dense(q, k, v, causal=False))


@pytest.mark.parametrize(
    ("lead", "lq", "lk"),
    [
        ((2, 2), 300, 300),  # three chunks, the last one short
        ((3,), 128, 128),  # exactly one chunk
        ((1,), 70, 333),  # Lq < Lk: the first 263 keys are seen by every query
        ((2,), 333, 70),  # Lq > Lk: the first 263 rows see nothing
        ((1,), 1, 50),  # decoding: one query sees every key
    ],
)
def test_causal_prefix_sums_equal_the_masked_kernel_matrix(lead, lq, lk):
    q, k, v = qkv(lead, lq, lk, seed=1)
    got = la.linear_attention(q, k, v, causal=True)
    torch.testing.assert_close(got, dense(q, k, v, causal=True))
    if lq > lk:
        assert torch.equal(got[..., : lq - lk, :], torch.zeros_like(got[..., : lq - lk, :]))


def test_the_recurrent_step_equals_the_causal_form():
    q, k, v = qkv((2, 3), 40, 40, seed=2)
    state, outs = None, []
    for t in range(40):
        out, state = la.linear_attention_step(q[..., t, :], k[..., t, :], v[..., t, :], state)
        outs.append(out)
        assert state[0].shape == (2, 3, 8, 5) and state[1].shape == (2, 3, 8)  # r × d_v: fixed
    torch.testing.assert_close(torch.stack(outs, dim=-2), la.linear_attention(q, k, v, causal=True))


def test_a_feature_map_of_zeros_gives_zero_rows_not_nan():
    q, k, v = qkv((1,), 6, 6, seed=3)
    relu = F.relu
    q[0, 0] = -1.0  # φ(q_0) = 0: no weight on any key
    got = la.linear_attention(q, k, v, causal=True, feature_map=relu)
    torch.testing.assert_close(got, dense(q, k, v, causal=True, phi=relu))
    assert torch.equal(got[0, 0], torch.zeros(5, dtype=torch.float64))
    torch.testing.assert_close(la.linear_attention(q, k, v, feature_map=torch.exp),
                               dense(q, k, v, causal=False, phi=torch.exp))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.booleans(), st.integers(0, 2**30))
def test_outputs_are_weighted_averages_of_the_values(lq, lk, causal, seed):
    q, k, v = qkv((2,), lq, lk, seed=seed)
    out = la.linear_attention(q, k, v, causal=causal)
    seen = torch.ones(lq, lk, dtype=torch.bool).tril(lk - lq).any(-1) if causal else (
        torch.ones(lq, dtype=torch.bool))
    low, high = v.min(dim=-2).values.unsqueeze(-2), v.max(dim=-2).values.unsqueeze(-2)
    assert ((out[:, seen] >= low - 1e-12) & (out[:, seen] <= high + 1e-12)).all()
    assert (out[:, ~seen] == 0).all()


def test_half_precision_is_computed_in_float32():
    q, k, v = qkv((2,), 50, 50, dtype=torch.float16, seed=4)
    got = la.linear_attention(q, k, v, causal=True)
    assert got.dtype == torch.float16
    expected = dense(q.double(), k.double(), v.double(), causal=True)
    torch.testing.assert_close(got.double(), expected, atol=2e-3, rtol=2e-3)


def test_bad_arguments_are_named():
    q, k, v = qkv((1,), 4, 4)
    with pytest.raises(TypeError, match="feature_map must be a function"):
        la.linear_attention(q, k, v, feature_map="elu")
    with pytest.raises(ValueError, match="non-negative"):
        la.linear_attention(q, k, v, feature_map=lambda x: x)
    with pytest.raises(ValueError, match="feature_map must return a tensor of shape"):
        la.linear_attention(q, k, v, feature_map=lambda x: x.sum())
    with pytest.raises(ValueError, match="same width r"):  # r = the length: 4 for q, 3 for k
        la.linear_attention(q, k[:, :3], v[:, :3], feature_map=lambda x: x[..., : x.shape[-2]] ** 2)
    with pytest.raises(ValueError, match="same last axis d"):
        la.linear_attention(q, k[..., :3], v)
    with pytest.raises(TypeError, match="q must be a floating-point tensor"):
        la.linear_attention(q.long(), k, v)
    with pytest.raises(ValueError, match="state must be"):
        la.linear_attention_step(q[:, 0], k[:, 0], v[:, 0], (torch.zeros(8, 5), torch.zeros(8)))

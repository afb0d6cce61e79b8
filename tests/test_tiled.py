"""Tiled attention against torch.nn.functional.scaled_dot_product_attention, torch.logsumexp,
scipy.special.softmax and torch.autograd."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp, softmax
from torch.nn.attention.bias import causal_lower_right

from course_utils import tiled


def bottom_right(lq: int, lk: int) -> torch.Tensor:
    """True = attend; equals torch's causal_lower_right (checked below) and also covers Lq > Lk."""
    return torch.ones(lq, lk, dtype=torch.bool).tril(lk - lq)


def reference(q, k, v, causal, scale=None):
    """(out, lse) in float32 from torch's SDPA and torch.logsumexp (masked rows: 0 and -inf)."""
    q, k, v = (t.float() for t in (q, k, v))
    lq, lk = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    mask = bottom_right(lq, lk) if causal else None
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    scores = (q @ k.transpose(-1, -2)) * scale
    if causal:
        scores = scores.masked_fill(~mask, -math.inf)
    return out, torch.logsumexp(scores, dim=-1)


def qkv(shape_q, lk, d_v=None, dtype=torch.float32, seed=0, magnitude=1.0):
    g = torch.Generator().manual_seed(seed)
    *lead, lq, d = shape_q
    q = torch.randn(*lead, lq, d, generator=g) * magnitude
    k = torch.randn(*lead, lk, d, generator=g)
    v = torch.randn(*lead, lk, d_v or d, generator=g)
    return q.to(dtype), k.to(dtype), v.to(dtype)


def test_bottom_right_mask_is_torchs_causal_lower_right():
    for lq, lk in [(5, 5), (3, 7), (1, 9)]:
        torch_mask = causal_lower_right(lq, lk)._materialize()
        assert torch.equal(torch_mask, bottom_right(lq, lk))


# ------------------------------------------------------------------------------ cost formulas
def test_flops_and_bytes():
    assert tiled.attention_flops(1024, 1024, 64) == 4 * 1024**2 * 64
    assert tiled.attention_flops(3, 5, 8, d_v=2) == 2 * 3 * 5 * (8 + 2)
    assert tiled.naive_attention_bytes(16_384, 16_384) == 2 * 2**30
    with pytest.raises(ValueError, match="lq must be at least 1"):
        tiled.attention_flops(0, 4, 8)
    with pytest.raises(TypeError, match="itemsize must be an int"):
        tiled.naive_attention_bytes(4, 4, 4.0)


# ------------------------------------------------------------------------------ online softmax
@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1000, 1000), min_size=1, max_size=30))
def test_online_softmax_matches_scipy(values):
    x = np.array(values)
    m, ell = tiled.online_softmax_stats(x)
    assert m == x.max()
    np.testing.assert_allclose(m + math.log(ell), logsumexp(x), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(tiled.online_softmax(x), softmax(x), rtol=1e-9, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-50, 50), min_size=2, max_size=30), st.integers(1, 29))
def test_merging_chunks_equals_one_pass(values, cut):
    x = np.array(values)
    cut = min(cut, len(x) - 1)
    m, ell = tiled.merge_softmax_stats(
        *tiled.online_softmax_stats(x[:cut]), *tiled.online_softmax_stats(x[cut:])
    )
    np.testing.assert_allclose(m + math.log(ell), logsumexp(x), rtol=1e-12, atol=1e-12)
    assert tiled.merge_softmax_stats(-math.inf, 0.0, -math.inf, 0.0) == (-math.inf, 0.0)


def test_online_softmax_rejects_bad_input():
    with pytest.raises(ValueError, match="non-empty 1-D"):
        tiled.online_softmax_stats(np.array([]))
    with pytest.raises(ValueError, match="non-empty 1-D"):
        tiled.online_softmax(np.ones((2, 2)))
    with pytest.raises(ValueError, match="finite"):
        tiled.online_softmax_stats(np.array([1.0, np.nan]))


def test_merge_attention_partials_equals_attention_over_all_keys():
    q, k, v = qkv((2, 6, 8), 10)
    out, lse = reference(q, k, v, causal=False)
    parts = [reference(q, k[:, a:b], v[:, a:b], causal=False) for a, b in [(0, 4), (4, 10)]]
    merged_out, merged_lse = tiled.merge_attention_partials(
        parts[0][0].numpy(), parts[0][1].numpy(), parts[1][0].numpy(), parts[1][1].numpy()
    )
    np.testing.assert_allclose(merged_out, out.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(merged_lse, lse.numpy(), rtol=1e-5, atol=1e-5)
    empty = tiled.merge_attention_partials(np.zeros((1, 2)), [-np.inf], np.zeros((1, 2)), [-np.inf])
    assert np.array_equal(empty[0], np.zeros((1, 2))) and empty[1][0] == -np.inf
    with pytest.raises(ValueError, match="lse1 and lse2 must have shape"):
        tiled.merge_attention_partials(np.zeros((3, 2)), np.zeros(2), np.zeros((3, 2)), np.zeros(3))


# ------------------------------------------------------------------------------ block skipping
@settings(max_examples=50, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 9), st.integers(1, 9))
def test_visited_tiles_are_exactly_the_tiles_with_a_visible_pair(lq, lk, bq, bk):
    mask = bottom_right(lq, lk).numpy()
    grid = tiled.visited_tiles(lq, lk, bq, bk, causal=True)
    expected = np.array(
        [[mask[i : i + bq, j : j + bk].any() for j in range(0, lk, bk)] for i in range(0, lq, bq)]
    )
    assert np.array_equal(grid, expected)
    assert tiled.visited_tiles(lq, lk, bq, bk).all()


def test_causal_skips_about_half_of_the_tiles():
    grid = tiled.visited_tiles(4096, 4096, 256, 256, causal=True)
    assert grid.size == 256 and grid.sum() == 16 * 17 // 2  # the lower triangle with diagonal


# ------------------------------------------------------------------------------ forward
CASES = [  # (shape of q, Lk, causal, block_q, block_k)
    ((2, 3, 37, 48), 53, True, 16, 16),  # Lq < Lk, lengths not multiples of the blocks
    ((2, 3, 53, 72), 37, True, 16, 8),  # Lq > Lk: 16 fully masked rows
    ((1, 2, 64, 80), 64, False, 7, 13),
    ((3, 1, 50, 32), 50, True, 64, 64),  # one block holds everything
    ((4, 1, 40), 29, False, 8, 8),  # leading axes other than (batch, heads)
]


@pytest.mark.parametrize(("shape", "lk", "causal", "bq", "bk"), CASES)
def test_forward_equals_torch_sdpa_and_logsumexp(shape, lk, causal, bq, bk):
    q, k, v = qkv(shape, lk)
    out, lse = reference(q, k, v, causal)
    got, got_lse = tiled.tiled_attention_forward(q, k, v, causal=causal, block_q=bq, block_k=bk)
    torch.testing.assert_close(got, out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got_lse, lse, atol=1e-5, rtol=1e-5)
    np_out, np_lse = tiled.tiled_attention_numpy(
        q.numpy(), k.numpy(), v.numpy(), causal=causal, block_q=bq, block_k=bk
    )
    np.testing.assert_allclose(np_out, out.numpy(), atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(np_lse, lse.numpy(), atol=1e-5, rtol=1e-5)


def test_fully_masked_rows_give_zero_and_minus_inf():
    q, k, v = qkv((1, 7, 16), 3)
    out, lse = tiled.tiled_attention_forward(q, k, v, causal=True, block_q=2, block_k=2)
    assert torch.equal(out[:, :4], torch.zeros(1, 4, 16))
    assert torch.isneginf(lse[:, :4]).all() and torch.isfinite(lse[:, 4:]).all()
    np_out, np_lse = tiled.tiled_attention_numpy(q.numpy(), k.numpy(), v.numpy(), causal=True)
    assert np.array_equal(np_out[:, :4], np.zeros((1, 4, 16))) and np.isneginf(np_lse[:, :4]).all()


def test_decoding_a_single_query_sees_every_key():
    q, k, v = qkv((2, 4, 1, 64), 300)
    out, lse = reference(q, k, v, causal=False)
    got, got_lse = tiled.tiled_attention_forward(q, k, v, causal=True, block_q=64, block_k=64)
    torch.testing.assert_close(got, out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got_lse, lse, atol=1e-5, rtol=1e-5)


def test_large_logits_do_not_overflow():
    q, k, v = qkv((1, 2, 33, 16), 70, magnitude=250.0)  # scores of magnitude ~1000
    mask = bottom_right(33, 70)
    exact = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=mask)
    _, lse = reference(q.double(), k.double(), v.double(), causal=True)
    got, got_lse = tiled.tiled_attention_forward(q, k, v, causal=True, block_q=8, block_k=16)
    assert lse.abs().max() > 500 and torch.isfinite(got).all()
    # float32 scores near 1000 carry rounding errors near 1e-4 (ulp(1000) = 6e-5), so compare with
    # the float64 answer at that level; torch's own float32 kernel is no closer
    fused32 = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(fused32.double(), exact, atol=1e-4, rtol=0)
    torch.testing.assert_close(got.double(), exact, atol=1e-4, rtol=0)
    torch.testing.assert_close(got_lse, lse.float(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("rising", [True, False])
def test_lazy_rescaling_matches_sdpa_when_the_max_keeps_rising_or_not(rising):
    # scores ≈ 2·j along the keys j: each 8-key tile raises the row max by about 16/ln 2 ≈ 23
    # bits, more than the 8 that trigger a rescale, and 182 bits in all: 2^182 would overflow
    # float32 without the rescale. Reversed, the first tile holds the max (no rescale).
    q, k, v = qkv((2, 24, 16), 64)
    direction = F.normalize(torch.randn(16, generator=torch.Generator().manual_seed(1)), dim=0)
    q = q * 0.1 + direction * 8.0
    steps = torch.arange(64.0) if rising else torch.arange(63.0, -1.0, -1.0)
    k = k * 0.1 + steps[:, None] * direction  # score ≈ 8·j/√16 = 2·j
    out, lse = reference(q, k, v, causal=False)
    got, got_lse = tiled.tiled_attention_forward(q, k, v, block_q=8, block_k=8)
    tile_max = (q @ k.transpose(-1, -2) / 4).unflatten(-1, (8, 8)).amax(dim=-1)  # per row
    growth_bits = tile_max.diff(dim=-1) / math.log(2)
    assert (growth_bits > 8).all() if rising else (growth_bits < 0).all()
    torch.testing.assert_close(got, out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got_lse, lse, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_accumulates_in_float32(dtype):
    q, k, v = qkv((2, 2, 45, 64), 45, dtype=dtype)
    out, lse = reference(q, k, v, causal=True)
    got, got_lse = tiled.tiled_attention_forward(q, k, v, causal=True, block_q=16, block_k=16)
    assert got.dtype == dtype and got_lse.dtype == torch.float32
    torch.testing.assert_close(got.float(), out, atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(got_lse, lse, atol=1e-2, rtol=1e-2)


def test_value_dimension_may_differ_and_scale_is_used():
    q, k, v = qkv((2, 9, 8), 11, d_v=5)
    out, lse = reference(q, k, v, causal=False, scale=0.3)
    got, got_lse = tiled.tiled_attention_forward(q, k, v, scale=0.3, block_q=4, block_k=4)
    torch.testing.assert_close(got, out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got_lse, lse, atol=1e-5, rtol=1e-5)


def test_forward_rejects_bad_input():
    q, k, v = qkv((2, 4, 8), 4)
    with pytest.raises(ValueError, match="same last axis d"):
        tiled.tiled_attention_forward(q, k[..., :4], v)
    with pytest.raises(ValueError, match="same length Lk"):
        tiled.tiled_attention_forward(q, k, v[:, :3])
    with pytest.raises(ValueError, match="leading"):
        tiled.tiled_attention_forward(q, k[:1], v[:1])
    with pytest.raises(ValueError, match="must not be empty"):
        tiled.tiled_attention_forward(q[:, :0], k, v)
    with pytest.raises(TypeError, match="share a dtype"):
        tiled.tiled_attention_forward(q, k.double(), v)
    with pytest.raises(TypeError, match="float16, bfloat16, float32 or float64"):
        tiled.tiled_attention_forward(q.int(), k, v)
    with pytest.raises(ValueError, match="block_q must be at least 1"):
        tiled.tiled_attention_forward(q, k, v, block_q=0)
    with pytest.raises(TypeError, match="float32 or float64 array"):
        tiled.tiled_attention_numpy(q.numpy().astype(np.int64), k.numpy(), v.numpy())


# ------------------------------------------------------------------------------ backward
@pytest.mark.parametrize(("lq", "lk", "causal"), [(7, 7, True), (7, 4, True), (3, 8, False)])
def test_gradcheck_float64(lq, lk, causal):
    q, k, v = (t.double().requires_grad_() for t in qkv((1, lq, 4), lk, d_v=3))
    assert torch.autograd.gradcheck(
        lambda q, k, v: tiled.tiled_attention(q, k, v, causal=causal, block_q=3, block_k=2),
        (q, k, v),
    )


def test_gradients_equal_autograd_through_torch_sdpa():
    q, k, v = (t.requires_grad_() for t in qkv((2, 3, 41, 24), 57))
    grad_out = torch.randn(2, 3, 41, 24, generator=torch.Generator().manual_seed(1))
    expected_out, _ = reference(q, k, v, causal=True)
    expected = torch.autograd.grad(expected_out, (q, k, v), grad_out)
    out = tiled.tiled_attention(q, k, v, causal=True, block_q=16, block_k=8)
    got = torch.autograd.grad(out, (q, k, v), grad_out)
    torch.testing.assert_close(out, expected_out, atol=1e-5, rtol=1e-5)
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e, atol=1e-5, rtol=1e-5)


def test_backward_checks_shapes():
    q, k, v = qkv((3, 4), 5)
    out, lse = tiled.tiled_attention_forward(q, k, v)
    with pytest.raises(ValueError, match="out and grad_out must have shape"):
        tiled.tiled_attention_backward(q, k, v, out, lse, out[:2])
    with pytest.raises(ValueError, match="lse must have shape"):
        tiled.tiled_attention_backward(q, k, v, out, lse[:2], out)


# ------------------------------------------------------------------------------ memory
def test_peak_extra_memory_rejects_unknown_methods():
    with pytest.raises(ValueError, match="method must be"):
        tiled.peak_extra_memory("flash", 1024)
    with pytest.raises(ValueError, match="n must be at least 1"):
        tiled.peak_extra_memory("tiled", 0)


def test_naive_attention_needs_the_n_by_n_matrices_and_tiled_does_not():
    n = 1536  # naive: two 1536² float32 matrices = 18 MiB; tiled: one 1024 × 512 tile, 2 MiB
    with ThreadPoolExecutor(2) as pool:  # two fresh processes side by side
        naive, tiled_bytes = pool.map(
            lambda m: tiled.peak_extra_memory(m, n, threads=1), ["naive", "tiled"]
        )
    assert 0.95 <= naive / tiled.naive_attention_bytes(n, n) <= 1.2
    assert tiled_bytes < naive / 4


def test_peak_extra_memory_falls_back_where_the_peak_cannot_be_reset(monkeypatch, tmp_path):
    # as on macOS or in a sandbox without /proc/self/clear_refs: ru_maxrss, one process per n
    monkeypatch.setattr(tiled, "_CLEAR_REFS", str(tmp_path / "no" / "clear_refs"))
    with pytest.warns(RuntimeWarning, match="clear_refs is not writable"):
        naive, small = tiled.peak_extra_memory("naive", [1536, 64], threads=1)
    assert 0.9 <= naive / tiled.naive_attention_bytes(1536, 1536) <= 1.3
    assert small < naive / 4

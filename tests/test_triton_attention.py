"""The Triton kernel against torch.nn.functional.scaled_dot_product_attention and torch.logsumexp.

On a machine without CUDA the kernel runs in Triton's interpreter (course_utils.triton_attention
sets TRITON_INTERPRET=1 before importing triton), so the sizes here are small.
"""

from __future__ import annotations

import math
import os

import pytest
import torch
import torch.nn.functional as F

# Imported before triton itself: on a CPU-only machine the module sets TRITON_INTERPRET=1 first.
from course_utils.triton_attention import (
    interpreter_mode,
    triton_attention_forward,
    triton_available,
)

pytest.importorskip("triton")

DEVICE = "cpu" if interpreter_mode() else "cuda"


def reference(q, k, v, causal, window=None):
    """(out, lse) in float32: torch's SDPA with a bottom-right mask (a band of width ``window``
    with one), and torch.logsumexp."""
    q, k, v = (t.float() for t in (q, k, v))
    lq, lk = q.shape[-2], k.shape[-2]
    ones = torch.ones(lq, lk, dtype=torch.bool, device=q.device)
    mask = ones.tril(lk - lq) if causal else None
    if window is not None:
        mask = mask & ones.triu(lk - lq - window + 1)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        scores = scores.masked_fill(~mask, -math.inf)
    return out, torch.logsumexp(scores, dim=-1)


def qkv(lead, lq, lk, d, dtype=torch.float32, magnitude=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*lead, lq, d, generator=g) * magnitude
    k, v = (torch.randn(*lead, lk, d, generator=g) for _ in range(2))
    return (t.to(device=DEVICE, dtype=dtype) for t in (q, k, v))


def test_triton_is_found_and_the_mode_matches_the_machine():
    assert triton_available()
    if not torch.cuda.is_available():  # the interpreter was chosen before triton was imported
        assert interpreter_mode() and os.environ["TRITON_INTERPRET"] == "1"


@pytest.mark.parametrize(
    ("lead", "lq", "lk", "d", "causal"),
    [
        ((1, 2), 37, 53, 48, True),  # Lq < Lk, ragged blocks, d not a power of two
        ((2,), 53, 37, 72, True),  # Lq > Lk: 16 fully masked rows
        ((1, 1), 45, 45, 80, False),
        ((3,), 1, 50, 64, True),  # decoding: one query sees every key
        ((1,), 64, 64, 16, True),  # exact multiples of the blocks
    ],
)
def test_float32_equals_torch(lead, lq, lk, d, causal):
    q, k, v = qkv(lead, lq, lk, d)
    out, lse = reference(q, k, v, causal)
    got, got_lse = triton_attention_forward(q, k, v, causal=causal)
    assert got.shape == out.shape and got_lse.shape == lse.shape and got_lse.dtype == torch.float32
    torch.testing.assert_close(got, out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got_lse, lse, atol=1e-5, rtol=1e-5)  # -inf rows must match too


@pytest.mark.parametrize(
    ("lq", "lk", "window", "block_q", "block_k"),
    [
        (37, 53, 7, 16, 16),  # Lq < Lk, a window narrower than a block
        (53, 37, 20, 16, 16),  # Lq > Lk: 16 fully masked rows
        (64, 64, 1, 16, 32),  # each query sees itself only
        (70, 70, 40, 16, 16),  # blocks wholly inside the band run without masks
    ],
)
def test_sliding_window_equals_torch_with_the_band_mask(lq, lk, window, block_q, block_k):
    q, k, v = qkv((2,), lq, lk, 32, seed=lq)
    out, lse = reference(q, k, v, causal=True, window=window)
    got, got_lse = triton_attention_forward(q, k, v, causal=True, window=window, block_q=block_q,
                                    block_k=block_k)
    torch.testing.assert_close(got, out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got_lse, lse, atol=1e-5, rtol=1e-5)


def test_fully_masked_rows_give_zero_and_minus_inf():
    q, k, v = qkv((1,), 40, 8, 32)
    got, got_lse = triton_attention_forward(q, k, v, causal=True, block_q=16, block_k=16)
    assert torch.equal(got[:, :32], torch.zeros(1, 32, 32, device=DEVICE))
    assert torch.isneginf(got_lse[:, :32]).all() and torch.isfinite(got_lse[:, 32:]).all()


def test_large_logits():
    q, k, v = qkv((1,), 20, 40, 16, magnitude=250.0)  # scores of magnitude ~1000
    out, lse = reference(q.double(), k.double(), v.double(), causal=False)
    got, got_lse = triton_attention_forward(q, k, v, block_q=16, block_k=16)
    assert lse.abs().max() > 500
    torch.testing.assert_close(got, out.float(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got_lse, lse.float(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision(dtype):
    q, k, v = qkv((2,), 33, 47, 64, dtype=dtype)
    out, lse = reference(q, k, v, causal=True)
    got, got_lse = triton_attention_forward(q, k, v, causal=True)
    assert got.dtype == dtype
    torch.testing.assert_close(got.float(), out, atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(got_lse, lse, atol=1e-2, rtol=1e-2)


def test_block_sizes_do_not_change_the_result():
    q, k, v = qkv((1,), 50, 70, 24)
    a, lse_a = triton_attention_forward(q, k, v, causal=True, block_q=16, block_k=32)
    b, lse_b = triton_attention_forward(q, k, v, causal=True, block_q=64, block_k=16)
    torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(lse_a, lse_b, atol=1e-6, rtol=1e-6)


def test_bad_input():
    q, k, v = qkv((1,), 8, 8, 16)
    with pytest.raises(ValueError, match="block_q must be a power of two"):
        triton_attention_forward(q, k, v, block_q=24)
    with pytest.raises(ValueError, match="same last axis"):
        triton_attention_forward(q, k, v[..., :8])
    with pytest.raises(TypeError, match="float16, bfloat16 or float32"):
        triton_attention_forward(q.double(), k.double(), v.double())
    with pytest.raises(ValueError, match="window needs causal=True"):
        triton_attention_forward(q, k, v, window=4)
    if interpreter_mode():
        with pytest.raises(ValueError, match="must be on the cpu device"):
            triton_attention_forward(q.to("meta"), k.to("meta"), v.to("meta"))

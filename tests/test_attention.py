"""Tests for course_utils.attention against torch.nn.functional and nn.MultiheadAttention."""

from __future__ import annotations

import inspect
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.nn.attention.bias import causal_lower_right

from course_utils import attention

DTYPES = [torch.float32, torch.float64]
TOL = {torch.float32: {"rtol": 1e-5, "atol": 1e-6}, torch.float64: {"rtol": 1e-10, "atol": 1e-12}}


def reference_weights(q, k, mask=None, **kwargs):
    """PyTorch's attention weights: its output when V is the identity matrix (A @ I = A)."""
    eye = torch.eye(k.shape[-2], dtype=q.dtype)
    return F.scaled_dot_product_attention(q, k, eye, attn_mask=mask, **kwargs)


def lower_right(lq: int, lk: int):
    """PyTorch's bottom-right causal mask; it warns (rightly) that rows are empty when lq > lk."""
    if lq <= lk:
        return causal_lower_right(lq, lk)
    with pytest.warns(UserWarning, match="seq_len_q > seq_len_kv"):
        return causal_lower_right(lq, lk)


# ----------------------------------------------------------------------------- masks


@pytest.mark.parametrize(("lq", "lk"), [(1, 1), (4, 4), (3, 7), (7, 3), (1, 5), (5, 1), (0, 3)])
def test_causal_mask_is_bottom_right(lq: int, lk: int) -> None:
    mask = attention.causal_mask(lq, lk)
    assert mask.dtype == torch.bool and mask.shape == (lq, lk)
    for i in range(lq):
        for j in range(lk):
            assert bool(mask[i, j]) == (j <= i + lk - lq)


@pytest.mark.parametrize(("lq", "lk"), [(3, 3), (2, 5), (5, 2)])
def test_causal_mask_equals_pytorch_lower_right(lq: int, lk: int) -> None:
    q, k = torch.randn(lq, 4), torch.randn(lk, 4)
    torch.testing.assert_close(
        attention.softmax_attention(q, k, torch.eye(lk), causal=True)[0],
        F.scaled_dot_product_attention(q, k, torch.eye(lk), attn_mask=lower_right(lq, lk)),
    )


def test_causal_mask_square_equals_pytorch_square_subsequent_mask() -> None:
    float_mask = nn.Transformer.generate_square_subsequent_mask(6)  # 0 = attend, -inf = masked
    torch.testing.assert_close(attention.causal_mask(6, 6), float_mask == 0)


def test_mask_helper_errors() -> None:
    with pytest.raises(ValueError, match="lq must be at least 0"):
        attention.causal_mask(-1, 3)
    with pytest.raises(TypeError, match="lk must be an int"):
        attention.causal_mask(2, 3.0)
    with pytest.raises(ValueError, match="lengths must be >= 0"):
        attention.token_mask([2, -1])
    with pytest.raises(TypeError, match="sequence of ints"):
        attention.token_mask([2.0, 1.0])
    with pytest.raises(ValueError, match="shorter than the longest"):
        attention.token_mask([2, 5], max_len=4)


def test_token_mask() -> None:
    mask = attention.token_mask([3, 1, 0], max_len=4)
    expected = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]], dtype=torch.bool)
    torch.testing.assert_close(mask, expected)
    assert attention.token_mask(torch.tensor([2, 5])).shape == (2, 5)


# ------------------------------------------------------------- scaled dot-product attention


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("batch", "lq", "lk", "d_k", "d_v"),
    [((), 4, 4, 8, 8), ((2,), 3, 6, 5, 7), ((2, 3), 6, 2, 4, 3), ((1, 2), 1, 9, 16, 2)],
)
def test_sdpa_equals_pytorch(dtype, batch, lq, lk, d_k, d_v) -> None:
    g = torch.Generator().manual_seed(lq * 100 + lk)
    q = torch.randn(*batch, lq, d_k, dtype=dtype, generator=g)
    k = torch.randn(*batch, lk, d_k, dtype=dtype, generator=g)
    v = torch.randn(*batch, lk, d_v, dtype=dtype, generator=g)
    out, weights = attention.softmax_attention(q, k, v)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), **TOL[dtype])
    torch.testing.assert_close(weights, reference_weights(q, k), **TOL[dtype])
    assert out.dtype == weights.dtype == dtype

    mask = torch.rand(*batch, lq, lk, generator=g) < 0.6  # some rows may be fully masked
    out, weights = attention.softmax_attention(q, k, v, mask=mask)
    torch.testing.assert_close(
        out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), **TOL[dtype]
    )
    torch.testing.assert_close(weights, reference_weights(q, k, mask), **TOL[dtype])

    out, weights = attention.softmax_attention(q, k, v, causal=True)
    bottom_right = lower_right(lq, lk)
    torch.testing.assert_close(
        out, F.scaled_dot_product_attention(q, k, v, attn_mask=bottom_right), **TOL[dtype]
    )
    torch.testing.assert_close(weights, reference_weights(q, k, bottom_right), **TOL[dtype])

    out, _ = attention.softmax_attention(q, k, v, mask=mask, causal=True)
    both = mask & attention.causal_mask(lq, lk)
    torch.testing.assert_close(
        out, F.scaled_dot_product_attention(q, k, v, attn_mask=both), **TOL[dtype]
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_square_causal_equals_is_causal(dtype) -> None:
    q, k, v = (torch.randn(2, 3, 5, 4, dtype=dtype) for _ in range(3))
    out, _ = attention.softmax_attention(q, k, v, causal=True)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True),
                               **TOL[dtype])


def test_broadcast_mask_and_scale() -> None:
    q, k, v = torch.randn(2, 4, 3, 8), torch.randn(2, 4, 5, 8), torch.randn(2, 4, 5, 6)
    key_mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)[:, None, None]
    out, _ = attention.softmax_attention(q, k, v, mask=key_mask, scale=0.3)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask, scale=0.3)
    torch.testing.assert_close(out, expected)


def test_fully_masked_row_gives_zeros_and_finite_gradients() -> None:
    q = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    k = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    v = torch.randn(5, 2, dtype=torch.float64, requires_grad=True)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1] = False
    out, weights = attention.softmax_attention(q, k, v, mask=mask)
    assert torch.all(out[1] == 0) and torch.all(weights[1] == 0)
    assert torch.all(out[[0, 2]] != 0)
    out.sum().backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()
    assert torch.all(q.grad[1] == 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gradients_equal_pytorch(dtype) -> None:
    g = torch.Generator().manual_seed(1)
    shapes = [(2, 3, 4), (2, 6, 4), (2, 6, 3)]
    base = [torch.randn(*shape, dtype=dtype, generator=g) for shape in shapes]
    mask = torch.rand(2, 3, 6, generator=g) < 0.7
    mask[..., 0] = True
    grads = []
    for fn in (
        lambda q, k, v: attention.softmax_attention(q, k, v, mask=mask)[0],
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
    ):
        inputs = [t.clone().requires_grad_() for t in base]
        (fn(*inputs) ** 2).sum().backward()
        grads.append([t.grad for t in inputs])
    for mine, theirs in zip(*grads, strict=True):
        torch.testing.assert_close(mine, theirs, **TOL[dtype])


def test_dropout_scales_kept_weights() -> None:
    q, k, v = torch.randn(4, 6, 8), torch.randn(6, 8), torch.randn(6, 3)
    _, plain = attention.softmax_attention(q, k, v)
    torch.manual_seed(0)
    out, dropped = attention.softmax_attention(q, k, v, dropout_p=0.5)
    kept = dropped != 0
    assert kept.any() and (~kept).any()
    torch.testing.assert_close(dropped[kept], 2 * plain[kept])
    torch.testing.assert_close(out, dropped @ v)


@settings(max_examples=30, deadline=None)
@given(
    lq=st.integers(1, 6), lk=st.integers(1, 6), d=st.integers(1, 8), seed=st.integers(0, 2**16),
    causal=st.booleans(),
)
def test_rows_sum_to_one_or_zero_and_permutation_equivariance(lq, lk, d, seed, causal) -> None:
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(lq, d, generator=g, dtype=torch.float64), torch.randn(lk, d, generator=g,
                                                                            dtype=torch.float64)
    v = torch.randn(lk, 3, generator=g, dtype=torch.float64)
    mask = torch.rand(lq, lk, generator=g) < 0.5
    out, weights = attention.softmax_attention(q, k, v, mask=mask, causal=causal)
    visible = mask & attention.causal_mask(lq, lk) if causal else mask
    sums = weights.sum(-1)
    torch.testing.assert_close(sums, visible.any(-1).to(sums.dtype))
    assert torch.all(weights[~visible] == 0)
    if not causal:  # permuting queries permutes outputs; permuting keys with values changes nothing
        pq, pk = torch.randperm(lq, generator=g), torch.randperm(lk, generator=g)
        out2, _ = attention.softmax_attention(q[pq], k[pk], v[pk], mask=mask[pq][:, pk])
        torch.testing.assert_close(out2, out[pq])


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"q": torch.randn(3, 4), "k": torch.randn(5, 3), "v": torch.randn(5, 2)}, ValueError,
         "same last axis d_k"),
        ({"q": torch.randn(3, 4), "k": torch.randn(5, 4), "v": torch.randn(6, 2)}, ValueError,
         "length Lk"),
        ({"q": torch.randn(4), "k": torch.randn(5, 4), "v": torch.randn(5, 2)}, ValueError,
         "at least 2"),
        ({"q": torch.randn(2, 3, 4), "k": torch.randn(3, 5, 4), "v": torch.randn(3, 5, 2)},
         ValueError, "broadcast"),
        ({"q": torch.randn(3, 4), "k": torch.randn(5, 4).double(), "v": torch.randn(5, 2)},
         TypeError, "dtype"),
        ({"q": torch.ones(3, 4, dtype=torch.long), "k": torch.randn(5, 4), "v": torch.randn(5, 2)},
         TypeError, "floating"),
        ({"q": [[1.0]], "k": torch.randn(5, 1), "v": torch.randn(5, 2)}, TypeError, "torch.Tensor"),
        ({"q": torch.randn(3, 4), "k": torch.randn(5, 4), "v": torch.randn(5, 2),
          "mask": torch.ones(3, 5)}, TypeError, "boolean"),
        ({"q": torch.randn(3, 4), "k": torch.randn(5, 4), "v": torch.randn(5, 2),
          "mask": torch.ones(5, 3, dtype=torch.bool)}, ValueError, "does not broadcast"),
        ({"q": torch.randn(3, 4), "k": torch.randn(5, 4), "v": torch.randn(5, 2),
          "mask": torch.ones(2, 3, 5, dtype=torch.bool)}, ValueError, "does not broadcast"),
        ({"q": torch.randn(3, 4), "k": torch.randn(5, 4), "v": torch.randn(5, 2),
          "dropout_p": 1.0}, ValueError, "dropout_p"),
        ({"q": torch.randn(3, 4), "k": torch.randn(5, 4), "v": torch.randn(5, 2),
          "scale": float("nan")}, ValueError, "scale"),
    ],
)
def test_sdpa_bad_inputs(kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        attention.softmax_attention(**kwargs)


# ------------------------------------------------------------------------- heads


@settings(max_examples=30, deadline=None)
@given(b=st.integers(1, 3), n=st.integers(1, 5), h=st.integers(1, 4), d_k=st.integers(1, 4))
def test_split_merge_round_trip_and_slices(b, n, h, d_k) -> None:
    x = torch.randn(b, n, h * d_k)
    heads = attention.split_heads(x, h)
    assert heads.shape == (b, h, n, d_k)
    for i in range(h):
        torch.testing.assert_close(heads[:, i], x[..., i * d_k:(i + 1) * d_k])
    torch.testing.assert_close(attention.merge_heads(heads), x)
    torch.testing.assert_close(attention.merge_heads(heads),
                               torch.cat([heads[:, i] for i in range(h)], dim=-1))


def test_head_errors() -> None:
    with pytest.raises(ValueError, match="not divisible"):
        attention.split_heads(torch.randn(2, 3, 10), 4)
    with pytest.raises(ValueError, match=r"\(B, N, d_model\)"):
        attention.split_heads(torch.randn(3, 8), 2)
    with pytest.raises(ValueError, match=r"\(B, h, N, d_k\)"):
        attention.merge_heads(torch.randn(3, 8, 2))
    with pytest.raises(ValueError, match="n_heads"):
        attention.split_heads(torch.randn(2, 3, 8), 0)


# ------------------------------------------------------------------- multi-head attention


def make_pair(d_model, n_heads, dtype, bias=True):
    torch_mha = nn.MultiheadAttention(d_model, n_heads, bias=bias, batch_first=True, dtype=dtype)
    if bias:  # PyTorch initialises biases to 0; random ones make the comparison meaningful
        with torch.no_grad():
            torch_mha.in_proj_bias.normal_()
            torch_mha.out_proj.bias.normal_()
    torch_mha.eval()
    return torch_mha, attention.MultiHeadAttention.from_torch(torch_mha)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("d_model", "n_heads", "bias"), [(8, 2, True), (12, 3, False), (6, 1, True)]
)
def test_mha_equals_pytorch(dtype, d_model, n_heads, bias) -> None:
    torch.manual_seed(d_model)
    theirs, mine = make_pair(d_model, n_heads, dtype, bias)
    b, lq, lk = 3, 4, 6
    x = torch.randn(b, lq, d_model, dtype=dtype)
    mem = torch.randn(b, lk, d_model, dtype=dtype)
    tol = TOL[dtype] if dtype == torch.float64 else {"rtol": 1e-5, "atol": 1e-5}

    def compare(q, kv, mine_kwargs, theirs_kwargs):
        out, w = mine(q, kv, kv, **mine_kwargs)
        ref_out, ref_w = theirs(q, kv, kv, average_attn_weights=False, **theirs_kwargs)
        torch.testing.assert_close(out, ref_out, **tol)
        torch.testing.assert_close(w, ref_w, **tol)

    compare(x, x, {}, {})  # self-attention
    compare(x, mem, {}, {})  # cross-attention, Lq != Lk
    keep = attention.token_mask([6, 4, 1], max_len=lk)
    compare(x, mem, {"key_mask": keep}, {"key_padding_mask": ~keep})
    allowed = torch.rand(lq, lk) < 0.7
    allowed[:, 0] = True
    compare(x, mem, {"mask": allowed}, {"attn_mask": ~allowed})
    per_batch = torch.rand(b, lq, lk) < 0.7
    per_batch[..., 0] = True
    per_head = per_batch.repeat_interleave(n_heads, dim=0)  # PyTorch wants (B·h, Lq, Lk)
    compare(x, mem, {"mask": per_batch}, {"attn_mask": ~per_head})
    compare(x, mem, {"mask": per_batch[:, None].expand(b, n_heads, lq, lk),
                     "key_mask": keep},
            {"attn_mask": ~per_head, "key_padding_mask": ~keep})
    causal = attention.causal_mask(lq, lq)
    compare(x, x, {"causal": True}, {"attn_mask": ~causal})


def test_mha_gradients_equal_pytorch() -> None:
    torch.manual_seed(3)
    theirs, mine = make_pair(8, 4, torch.float64)
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    (mine(x, x, x)[0] ** 2).sum().backward()
    (theirs(x, x, x)[0] ** 2).sum().backward()
    w_in = torch.cat([mine.q_proj.weight.grad, mine.k_proj.weight.grad, mine.v_proj.weight.grad])
    torch.testing.assert_close(w_in, theirs.in_proj_weight.grad)
    torch.testing.assert_close(mine.out_proj.weight.grad, theirs.out_proj.weight.grad)


@settings(max_examples=20, deadline=None)
@given(h=st.integers(1, 4), d_k=st.integers(1, 6), bias=st.booleans())
def test_mha_parameter_count(h, d_k, bias) -> None:
    d = h * d_k
    mine = attention.MultiHeadAttention(d, h, bias=bias)
    count = sum(p.numel() for p in mine.parameters())
    assert count == 4 * d * d + (4 * d if bias else 0)
    theirs = nn.MultiheadAttention(d, h, bias=bias, batch_first=True)
    assert count == sum(p.numel() for p in theirs.parameters())


def test_mha_dropout_only_in_training() -> None:
    torch.manual_seed(0)
    mha = attention.MultiHeadAttention(8, 2, dropout=0.5)
    x = torch.randn(2, 6, 8)
    mha.eval()
    out_eval, w_eval = mha(x, x, x)
    torch.testing.assert_close(mha(x, x, x)[0], out_eval)
    mha.train()
    _, w_train = mha(x, x, x)
    kept = w_train != 0
    assert (~kept).any()
    torch.testing.assert_close(w_train[kept], 2 * w_eval[kept])


def test_from_torch_keeps_dropout_and_mode() -> None:
    theirs = nn.MultiheadAttention(8, 2, dropout=0.25, batch_first=True)
    mine = attention.MultiHeadAttention.from_torch(theirs)
    assert mine.dropout == 0.25 and mine.training


def test_mha_bad_inputs() -> None:
    with pytest.raises(ValueError, match="not divisible"):
        attention.MultiHeadAttention(10, 3)
    with pytest.raises(ValueError, match="batch_first"):
        attention.MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2))
    with pytest.raises(TypeError, match="nn.MultiheadAttention"):
        attention.MultiHeadAttention.from_torch(nn.Linear(2, 2))
    mha = attention.MultiHeadAttention(8, 2)
    x = torch.randn(2, 3, 8)
    with pytest.raises(ValueError, match="d_model=8"):
        mha(torch.randn(2, 3, 6), x, x)
    with pytest.raises(ValueError, match="batch size"):
        mha(x, torch.randn(1, 3, 8), torch.randn(1, 3, 8))
    with pytest.raises(ValueError, match="same shape"):
        mha(x, x, torch.randn(2, 4, 8))
    with pytest.raises(TypeError, match="boolean"):
        mha(x, x, x, key_mask=torch.ones(2, 3))
    with pytest.raises(ValueError, match=r"key_mask must have shape \(B, Lk\)"):
        mha(x, x, x, key_mask=torch.ones(3, 2, dtype=torch.bool))
    with pytest.raises(ValueError, match="mask must have shape"):
        mha(x, x, x, mask=torch.ones(3, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match="boolean"):
        mha(x, x, x, mask=torch.zeros(3, 3))


def test_mha_has_no_parameter_named_like_pytorch_with_another_meaning() -> None:
    # PyTorch's key_padding_mask and boolean attn_mask mean True = masked out; ours True = attend
    params = inspect.signature(attention.MultiHeadAttention.forward).parameters
    assert {"key_mask", "mask"} <= set(params)
    assert not {"key_padding_mask", "attn_mask"} & set(params)
    mha = attention.MultiHeadAttention(8, 2)
    x = torch.randn(1, 3, 8)
    with pytest.raises(TypeError, match="key_padding_mask"):
        mha(x, x, x, key_padding_mask=torch.ones(1, 3, dtype=torch.bool))


def test_scale_is_one_over_sqrt_dk() -> None:
    q, k, v = torch.randn(2, 16), torch.randn(3, 16), torch.randn(3, 1)
    _, w = attention.softmax_attention(q, k, v)
    torch.testing.assert_close(w, torch.softmax(q @ k.T / math.sqrt(16), dim=-1))


# ------------------------------------------------------------- grouped-query attention


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("h_q", "h_kv", "lq", "lk"),
                         [(4, 2, 5, 5), (6, 3, 2, 7), (8, 1, 1, 9), (4, 4, 3, 3), (6, 2, 4, 6)])
def test_gqa_equals_pytorch_enable_gqa(dtype, h_q, h_kv, lq, lk) -> None:
    g = torch.Generator().manual_seed(h_q * 10 + h_kv)
    q = torch.randn(2, h_q, lq, 8, dtype=dtype, generator=g)
    k = torch.randn(2, h_kv, lk, 8, dtype=dtype, generator=g)
    v = torch.randn(2, h_kv, lk, 5, dtype=dtype, generator=g)
    out, weights = attention.softmax_attention(q, k, v, enable_gqa=True)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
                               **TOL[dtype])
    assert out.shape == (2, h_q, lq, 5) and weights.shape == (2, h_q, lq, lk)
    out, _ = attention.softmax_attention(q, k, v, causal=True, enable_gqa=True)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=lower_right(lq, lk),
                                              enable_gqa=True)
    torch.testing.assert_close(out, expected, **TOL[dtype])
    mask = torch.rand(2, 1, lq, lk, generator=g) < 0.7
    out, _ = attention.softmax_attention(q, k, v, mask=mask, enable_gqa=True)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    torch.testing.assert_close(out, expected, **TOL[dtype])


@settings(max_examples=25, deadline=None)
@given(h_kv=st.integers(1, 4), group=st.integers(1, 4), changed=st.integers(0, 3),
       seed=st.integers(0, 2**16))
def test_gqa_query_head_h_reads_kv_head_h_over_group(h_kv, group, changed, seed) -> None:
    g = torch.Generator().manual_seed(seed)
    changed %= h_kv
    q = torch.randn(1, h_kv * group, 3, 4, dtype=torch.float64, generator=g)
    k, v = (torch.randn(1, h_kv, 5, 4, dtype=torch.float64, generator=g) for _ in range(2))
    out, _ = attention.softmax_attention(q, k, v, enable_gqa=True)
    for h in range(h_kv * group):  # each query head alone against its K/V head
        alone, _ = attention.softmax_attention(q[:, h], k[:, h // group],
                                                          v[:, h // group])
        torch.testing.assert_close(out[:, h], alone)
    v2 = v.clone()
    v2[:, changed] += 1.0  # moves exactly the outputs of the query heads of that group
    out2, _ = attention.softmax_attention(q, k, v2, enable_gqa=True)
    moved = (out2 - out).abs().amax(dim=(0, 2, 3)) > 1e-9
    assert moved.tolist() == [h // group == changed for h in range(h_kv * group)]


def test_gqa_gradients_equal_pytorch() -> None:
    g = torch.Generator().manual_seed(3)
    base = [torch.randn(2, h, 4, 6, dtype=torch.float64, generator=g) for h in (6, 2, 2)]
    grads = []
    for fn in (
        lambda q, k, v: attention.softmax_attention(q, k, v, causal=True,
                                                               enable_gqa=True)[0],
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
    ):
        inputs = [t.clone().requires_grad_() for t in base]
        (fn(*inputs) ** 2).sum().backward()
        grads.append([t.grad for t in inputs])
    for mine, theirs in zip(*grads, strict=True):
        torch.testing.assert_close(mine, theirs)


@pytest.mark.parametrize(
    ("shapes", "match"),
    [
        (((1, 6, 3, 4), (1, 4, 3, 4), (1, 4, 3, 4)), "H_q a multiple of H_kv"),
        (((1, 4, 3, 4), (1, 2, 3, 4), (1, 1, 3, 4)), "same number of heads"),
        (((3, 4), (3, 4), (3, 4)), r"\(\.\.\., heads, L, d\)"),
        (((1, 4, 3, 4), (1, 0, 3, 4), (1, 0, 3, 4)), "k must not be empty"),
    ],
)
def test_gqa_bad_inputs(shapes, match) -> None:
    q, k, v = (torch.randn(*shape) for shape in shapes)
    with pytest.raises(ValueError, match=match):
        attention.softmax_attention(q, k, v, enable_gqa=True)


def test_mismatched_heads_need_enable_gqa() -> None:
    q, k = torch.randn(1, 4, 3, 8), torch.randn(1, 2, 3, 8)
    with pytest.raises(ValueError, match="do not broadcast"):
        attention.softmax_attention(q, k, k)

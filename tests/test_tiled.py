"""Tiled attention against torch.nn.functional.scaled_dot_product_attention, torch.logsumexp,
scipy.special.softmax and torch.autograd."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn.attention.bias import causal_lower_right

from course_utils import tiled


def bottom_right(lq: int, lk: int) -> torch.Tensor:
    """True = attend; equals torch's causal_lower_right (checked below) and also covers Lq > Lk."""
    return torch.ones(lq, lk, dtype=torch.bool).tril(lk - lq)


def sliding_window(lq: int, lk: int, window: int) -> torch.Tensor:
    """The bottom-right causal band of width W: the W most recent keys, by torch.tril/triu."""
    ones = torch.ones(lq, lk, dtype=torch.bool)
    return ones.tril(lk - lq) & ones.triu(lk - lq - window + 1)


def expand_blocks(block_mask: np.ndarray, lq: int, lk: int, bq: int, bk: int) -> torch.Tensor:
    """Each entry of the block mask as a bq × bk block of the pair mask (numpy.kron), cropped."""
    dense = np.kron(block_mask, np.ones((bq, bk), dtype=bool))[:lq, :lk]
    return torch.from_numpy(dense)


def reference(q, k, v, causal, scale=None, mask=None):
    """(out, lse) in float32 from torch's SDPA and torch.logsumexp (masked rows: 0 and -inf);
    ``mask`` (True = attend) replaces the causal one when given."""
    q, k, v = (t.float() for t in (q, k, v))
    lq, lk = q.shape[-2], k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    if mask is None and causal:
        mask = bottom_right(lq, lk)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    scores = (q @ k.transpose(-1, -2)) * scale
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
        out = out.masked_fill(~mask.any(-1, keepdim=True), 0.0)  # torch < 2.5 gave NaN there
    return out, torch.logsumexp(scores, dim=-1)


@pytest.fixture
def two_threads():
    """Run the test with two torch threads (``make test`` runs with one): the grid's workers."""
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    assert torch.get_num_threads() == 2, "the tiled functions must restore the thread count"
    torch.set_num_threads(threads)


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


def brute_force_tiles(mask: np.ndarray, bq: int, bk: int) -> tuple[np.ndarray, np.ndarray]:
    """(visited, masked) grids from the pair mask: some pair allowed; some allowed, some not."""
    blocks = [[mask[i : i + bq, j : j + bk] for j in range(0, mask.shape[1], bk)]
              for i in range(0, mask.shape[0], bq)]
    visited = np.array([[b.any() for b in row] for row in blocks])
    return visited, visited & np.array([[not b.all() for b in row] for row in blocks])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 9), st.integers(1, 9),
       st.integers(1, 45), st.integers(0, 2**30))
def test_window_and_block_mask_tiles_are_exactly_those_with_a_visible_pair(lq, lk, bq, bk,
                                                                            window, seed):
    block_mask = np.random.default_rng(seed).random((-(-lq // bq), -(-lk // bk))) < 0.6
    for causal, w, blocks in [(True, window, None), (False, None, block_mask),
                              (True, window, block_mask)]:
        mask = (sliding_window(lq, lk, w) if w else torch.ones(lq, lk, dtype=torch.bool)).numpy()
        if not causal:
            assert w is None
        if blocks is not None:
            mask &= expand_blocks(blocks, lq, lk, bq, bk).numpy()
        tile_map = tiled.TileMap.build(lq, lk, bq, bk, causal=causal, window=w, block_mask=blocks)
        visited, masked = tile_map.visit, tile_map.masked
        expected_visited, expected_masked = brute_force_tiles(mask, bq, bk)
        assert np.array_equal(visited, expected_visited)
        assert np.array_equal(masked, expected_masked)
        assert np.array_equal(tiled.visited_tiles(lq, lk, bq, bk, causal=causal, window=w,
                                                  block_mask=blocks), visited)
        pairs = tiled.dense_mask(lq, lk, causal=causal, window=w, block_mask=blocks,
                                 block_q=bq, block_k=bk)
        assert torch.equal(pairs, torch.from_numpy(mask))


def test_a_sliding_window_visits_a_band_of_tiles():
    n, w, b = 4096, 512, 256
    grid = tiled.visited_tiles(n, n, b, b, causal=True, window=w)
    assert grid.sum() == 16 + 15 + 14  # the diagonal and two tiles below it (W = 2 tiles)
    per_row = grid.sum(axis=1)
    assert per_row.max() == w // b + 1  # O(N·W) tiles in all, not O(N²)


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


SPARSE_CASES = [  # (shape of q, Lk, window, block-mask density, causal, block_q, block_k)
    ((2, 3, 37, 16), 53, 5, None, True, 16, 16),  # Lq < Lk, ragged blocks
    ((2, 53, 24), 37, 9, None, True, 16, 8),  # Lq > Lk: 16 fully masked rows
    ((1, 2, 64, 32), 64, 1, None, True, 8, 8),  # each query sees itself only
    ((1, 1, 70, 16), 70, 20, None, True, 64, 64),  # rows hidden in their first key tile
    ((2, 40, 16), 57, None, 0.5, False, 16, 16),  # block-sparse, Lq < Lk
    ((1, 2, 61, 16), 45, None, 0.4, True, 8, 16),  # block-sparse and causal, Lq > Lk
    ((1, 50, 16), 50, 12, 0.7, True, 8, 8),  # all three
]


@pytest.mark.parametrize(("shape", "lk", "window", "density", "causal", "bq", "bk"),
                         SPARSE_CASES)
def test_window_and_block_sparse_equal_dense_attention_with_the_same_mask(
    shape, lk, window, density, causal, bq, bk
):
    q, k, v = qkv(shape, lk, seed=3)
    lq = shape[-2]
    blocks = None
    mask = sliding_window(lq, lk, window) if window else bottom_right(lq, lk) if causal else (
        torch.ones(lq, lk, dtype=torch.bool))
    if density is not None:
        blocks = np.random.default_rng(lq).random((-(-lq // bq), -(-lk // bk))) < density
        blocks[0] = False  # a whole query block without keys: its rows are fully masked
        mask = mask & expand_blocks(blocks, lq, lk, bq, bk)
    out, lse = reference(q, k, v, causal, mask=mask)
    options = {"causal": causal, "window": window, "block_mask": blocks, "block_q": bq,
               "block_k": bk}
    got, got_lse = tiled.tiled_attention_forward(q, k, v, **options)
    torch.testing.assert_close(got, out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got_lse, lse, atol=1e-5, rtol=1e-5)
    hidden = ~mask.any(-1)
    assert hidden.any() == (density is not None or lq > lk)
    assert (got[..., hidden, :] == 0).all() and torch.isneginf(got_lse[..., hidden]).all()
    np_out, np_lse = tiled.tiled_attention_numpy(q.numpy(), k.numpy(), v.numpy(), **options)
    np.testing.assert_allclose(np_out, out.numpy(), atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(np_lse, lse.numpy(), atol=1e-5, rtol=1e-5)
    grad_out = torch.randn(out.shape, generator=torch.Generator().manual_seed(2))
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    expected = torch.autograd.grad(reference(q, k, v, causal, mask=mask)[0], (q, k, v), grad_out)
    got = torch.autograd.grad(tiled.tiled_attention(q, k, v, **options), (q, k, v), grad_out)
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e, atol=1e-5, rtol=1e-5)


def test_a_row_hidden_in_its_first_key_tile_keeps_very_negative_scores():
    # Window 8, one query block, key tiles of 16: rows 23 on see nothing in the first key tile.
    # Every score is about -150 (base 2: -216), far below a running max started at 0: 2^-216
    # underflows in float32, so a row must take its own max when it first sees a key.
    g = torch.Generator().manual_seed(0)
    u = F.normalize(torch.randn(16, generator=g), dim=0)
    q = -30.0 * u + 0.1 * torch.randn(64, 16, generator=g)
    k = 20.0 * u + 0.1 * torch.randn(64, 16, generator=g)
    v = torch.randn(64, 16, generator=g)
    mask = sliding_window(64, 64, 8)
    exact = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=mask)
    scores = (q @ k.T / 4).masked_fill(~mask, -math.inf)
    assert scores.max(-1).values.max() < -100
    got, lse = tiled.tiled_attention_forward(q, k, v, causal=True, window=8, block_q=64,
                                             block_k=16)
    torch.testing.assert_close(got.double(), exact, atol=1e-4, rtol=0)
    assert torch.isfinite(lse).all() and (lse < -100).all()


def test_sparsity_options_are_checked():
    q, k, v = qkv((2, 4, 8), 4)
    with pytest.raises(ValueError, match="window needs causal=True"):
        tiled.tiled_attention_forward(q, k, v, window=2)
    with pytest.raises(ValueError, match="window must be at least 1"):
        tiled.tiled_attention_forward(q, k, v, causal=True, window=0)
    with pytest.raises(TypeError, match="window must be an int"):
        tiled.visited_tiles(4, 4, 2, 2, causal=True, window=2.5)
    with pytest.raises(ValueError, match=r"block_mask must have shape \(2, 2\)"):
        tiled.tiled_attention_forward(q, k, v, block_mask=np.ones((2, 3), bool), block_q=2,
                                      block_k=2)
    with pytest.raises(TypeError, match="block_mask must be a boolean array"):
        tiled.tiled_attention(q, k, v, block_mask=np.ones((1, 1)))
    with pytest.raises(ValueError, match="window needs causal=True"):
        tiled.dense_mask(4, 4, window=2)


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
    with pytest.raises(TypeError, match="q must be a floating-point tensor"):
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


@pytest.mark.parametrize("causal", [False, True])
def test_the_grid_of_workers_gives_the_same_bits_on_every_run(two_threads, causal):
    q, k, v = (t.requires_grad_() for t in qkv((1, 1, 700, 32), 700))
    grad_out = torch.randn(1, 1, 700, 32, generator=torch.Generator().manual_seed(1))

    def run():
        out = tiled.tiled_attention(q, k, v, causal=causal, block_q=64, block_k=64)
        return (out, *torch.autograd.grad(out, (q, k, v), grad_out))

    first = run()
    assert torch.get_num_threads() == 2
    for _ in range(3):  # the order of dQ's additions does not depend on timing
        assert all(torch.equal(a, b) for a, b in zip(first, run(), strict=True))
    expected_out, _ = reference(q, k, v, causal)
    expected = torch.autograd.grad(expected_out, (q, k, v), grad_out)
    torch.testing.assert_close(first[0], expected_out, atol=1e-5, rtol=1e-5)
    for g, e in zip(first[1:], expected, strict=True):
        torch.testing.assert_close(g, e, atol=1e-5, rtol=1e-5)
    torch.set_num_threads(1)  # one batch·head: the same calls on one thread, the same bits
    assert all(torch.equal(a, b) for a, b in zip(first, run(), strict=True))
    torch.set_num_threads(2)


def test_workers_share_batch_heads_when_there_is_one_query_block(two_threads):
    q, k, v = qkv((3, 5, 20, 16), 30)  # one query block, 15 batch·heads over two workers
    out, lse = reference(q, k, v, causal=True)
    got, got_lse = tiled.tiled_attention_forward(q, k, v, causal=True)
    torch.testing.assert_close(got, out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got_lse, lse, atol=1e-5, rtol=1e-5)
    q, k, v = (t.double().requires_grad_() for t in qkv((3, 5, 4), 4, d_v=2))
    assert torch.autograd.gradcheck(
        lambda q, k, v: tiled.tiled_attention(q, k, v, causal=True, block_q=4, block_k=2),
        (q, k, v))


def test_a_failing_worker_does_not_leave_the_others_waiting(two_threads, monkeypatch):
    q, k, v = qkv((1, 1, 256, 16), 256)
    options = {"causal": True, "window": 100, "block_q": 64, "block_k": 64}
    out, lse = tiled.tiled_attention_forward(q, k, v, **options)
    real = tiled.TileMap._hidden

    def hidden(self, rows, keys, *args):  # key block 0, which the others wait for, fails
        if keys.start == 0 and rows.start == 64:
            raise MemoryError("simulated")
        return real(self, rows, keys, *args)

    monkeypatch.setattr(tiled.TileMap, "_hidden", hidden)
    raised = []

    def backward():
        try:
            tiled.tiled_attention_backward(q, k, v, out, lse, torch.ones_like(out), **options)
        except (MemoryError, RuntimeError) as error:
            raised.append(error)

    thread = threading.Thread(target=backward)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive() and raised, "the backward pass hung or did not raise"


def test_backward_checks_shapes():
    q, k, v = qkv((3, 4), 5)
    out, lse = tiled.tiled_attention_forward(q, k, v)
    with pytest.raises(ValueError, match="out and grad_out must have shape"):
        tiled.tiled_attention_backward(q, k, v, out, lse, out[:2])
    with pytest.raises(ValueError, match="lse must have shape"):
        tiled.tiled_attention_backward(q, k, v, out, lse[:2], out)


def test_the_backward_map_is_the_forward_map_retiled():
    forward = tiled.TileMap.build(40, 48, 16, 8, causal=True, window=10)
    backward = forward.retiled(8, 16)
    assert (backward.causal, backward.window, backward.block_q, backward.block_k) == (
        True, 10, 8, 16)
    assert np.array_equal(backward.visit, tiled.visited_tiles(40, 48, 8, 16, causal=True,
                                                              window=10))
    sparse = tiled.TileMap.build(4, 4, 2, 2, block_mask=np.eye(2, dtype=bool))
    assert sparse.retiled(1, 1) is sparse  # a block mask is drawn on the forward's tiles

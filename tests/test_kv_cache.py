"""Tests for course_utils.kv_cache: every kind of cache holds, in position order, the keys and
values written into it (compared with the concatenation of what was written), the preallocated
and rolling ones in place and in bounded memory, the paged one through its block tables.
The model-level equalities (the same logits as a full forward) are in test_language_model.py."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from course_utils.kv_cache import KVCache, PagedKVCache
from course_utils.language_model import kv_cache_bytes

N_LAYERS, BATCH, HEADS, HEAD_DIM = 2, 3, 2, 4


def chunks_of(length: int, cuts: list[int], seed: int = 0) -> list[tuple[torch.Tensor, ...]]:
    """Random keys and values ``(B, H_kv, ·, head_dim)`` for each layer, cut into chunks."""
    g = torch.Generator().manual_seed(seed)
    full = torch.randn(N_LAYERS, 2, BATCH, HEADS, length, HEAD_DIM, generator=g,
                       dtype=torch.float64)
    bounds = [0, *sorted(c for c in set(cuts) if 0 < c < length), length]
    return [full[..., a:b, :] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def make(kind: str, window: int = 5, max_len: int = 40) -> KVCache | PagedKVCache:
    dims = (N_LAYERS, BATCH, HEADS, HEAD_DIM)
    if kind == "paged":
        return PagedKVCache(*dims, n_blocks=40, block_size=3, dtype=torch.float64)
    options = {"grow": {}, "preallocated": {"max_len": max_len}, "rolling": {"window": window}}
    return KVCache(*dims, **options[kind], dtype=torch.float64)


def fill(cache: KVCache | PagedKVCache, pieces) -> list[list[tuple[torch.Tensor, ...]]]:
    """Write each chunk into every layer; return what each update returned, per chunk."""
    returned = []
    for piece in pieces:
        returned.append([cache.update(layer, piece[layer, 0], piece[layer, 1])
                         for layer in range(N_LAYERS)])
    return returned


@settings(max_examples=30, deadline=None)
@given(kind=st.sampled_from(["grow", "preallocated", "rolling", "paged"]),
       length=st.integers(1, 30), cuts=st.lists(st.integers(1, 29), max_size=6),
       window=st.integers(1, 8), seed=st.integers(0, 2**16))
def test_every_cache_returns_what_was_written(kind, length, cuts, window, seed) -> None:
    pieces = chunks_of(length, cuts, seed)
    full = torch.cat(pieces, dim=-2)  # (layers, 2, B, H, length, d)
    cache = make(kind, window)
    written = 0
    for piece in pieces:  # checked at once: an in-place cache returns views it later rewrites
        written += piece.shape[-2]
        for layer, (keys, values, positions) in enumerate(fill(cache, [piece])[0]):
            # attention reads a key at each returned position, and it is the one written there
            torch.testing.assert_close(keys, full[layer, 0, ..., positions, :], rtol=0, atol=0)
            torch.testing.assert_close(values, full[layer, 1, ..., positions, :], rtol=0, atol=0)
            first = written - piece.shape[-2]
            needed = set(range(max(0, first - window + 1) if kind == "rolling" else 0, written))
            assert needed <= set(positions.tolist()), "a query would miss a key it sees"
    assert cache.length == length
    kept = slice(max(0, length - window), length) if kind == "rolling" else slice(0, length)
    for layer in range(N_LAYERS):  # the properties: in position order
        torch.testing.assert_close(cache.keys[layer], full[layer, 0, ..., kept, :], rtol=0, atol=0)
        torch.testing.assert_close(cache.values[layer], full[layer, 1, ..., kept, :], rtol=0,
                                   atol=0)


def test_the_grown_cache_copies_and_the_preallocated_one_writes_in_place() -> None:
    pieces = chunks_of(12, list(range(1, 12)))
    grown, pre = make("grow"), make("preallocated", max_len=12)
    buffer = pre._k[0].data_ptr()
    tensors, sizes = [], []
    for piece in pieces:
        fill(grown, [piece])
        fill(pre, [piece])
        tensors.append(grown._k[0])  # kept alive, so a new tensor cannot reuse its memory
        sizes.append(grown.nbytes)
        assert pre._k[0].data_ptr() == buffer  # the same storage, written in place
        assert pre.nbytes == kv_cache_bytes(N_LAYERS, HEADS, HEAD_DIM, 12, 8, BATCH)
    assert len({t.data_ptr() for t in tensors}) == 12  # a new tensor, a full copy, every step
    assert sizes == [kv_cache_bytes(N_LAYERS, HEADS, HEAD_DIM, n, 8, BATCH) for n in range(1, 13)]
    with pytest.raises(ValueError, match="room for 0"):
        fill(pre, chunks_of(1, []))


def test_the_rolling_cache_stays_at_the_window() -> None:
    cache = make("rolling", window=4)
    expected = kv_cache_bytes(N_LAYERS, HEADS, HEAD_DIM, 4, 8, BATCH)
    pieces = chunks_of(50, list(range(1, 50)))
    for n, piece in enumerate(pieces, start=1):
        (keys, _, positions), _ = fill(cache, [piece])[0]
        assert cache.nbytes == expected and keys.shape[-2] == min(n, 4)
        assert sorted(positions.tolist()) == list(range(max(0, n - 4), n))
    assert cache.keys[0].shape == (BATCH, HEADS, 4, HEAD_DIM) and cache.length == 50


def test_paged_blocks_come_from_one_pool_and_reserve_what_is_used() -> None:
    cache = PagedKVCache(N_LAYERS, BATCH, HEADS, HEAD_DIM, n_blocks=12, block_size=4,
                         dtype=torch.float64)
    assert cache.reserved_slots == 0
    pieces = chunks_of(13, [5, *range(6, 13)])  # a prompt of 5, then one token at a time
    for n, piece in zip((5, *range(6, 14)), pieces, strict=True):
        fill(cache, [piece])
        assert cache.reserved_slots == BATCH * 4 * math.ceil(n / 4)
        assert cache.reserved_slots - BATCH * n < BATCH * 4  # less than a block per sequence
    tables = cache.block_tables
    assert sorted(b for table in tables for b in table) == list(range(12))  # the whole pool
    assert tables[0] == [0, 1, 6, 9]  # the prompt's 2 blocks, then 1 per sequence in turn
    # a cache preallocated to max_len = 64 per sequence reserves 64 slots each
    assert BATCH * 64 - cache.reserved_slots == BATCH * (64 - 16)
    with pytest.raises(ValueError, match="room for 3"):  # 13 of 16 slots used, no free block
        fill(cache, chunks_of(4, []))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: KVCache(2, 1, 2, 4, max_len=8, window=4), ValueError, "not both"),
        (lambda: KVCache(2, 1, 2, 4, max_len=0), ValueError, "max_len"),
        (lambda: KVCache(2, 1, 2, 4, window=2.0), TypeError, "window"),
        (lambda: KVCache(2, 1, 2, 4, dtype="float32"), TypeError, "dtype"),
        (lambda: KVCache(2, 1, 2, 4, dtype=torch.int64), TypeError, "dtype"),
        (lambda: KVCache(0, 1, 2, 4), ValueError, "n_layers"),
        (lambda: PagedKVCache(2, 1, 2, 4, n_blocks=4, block_size=0), ValueError, "block_size"),
        (lambda: KVCache(2, 1, 2, 4).update(2, *torch.zeros(2, 1, 2, 1, 4)), ValueError, "layer"),
        (lambda: KVCache(2, 1, 2, 4).update(0, *torch.zeros(2, 1, 3, 1, 4)), ValueError, "k "),
        (lambda: KVCache(2, 1, 2, 4).update(0, torch.zeros(1, 2, 1, 4), torch.zeros(1, 2, 2, 4)),
         ValueError, "one shape"),
        (lambda: KVCache(2, 1, 2, 4).update(0, *torch.zeros(2, 1, 2, 1, 4).double()), TypeError,
         "float32"),
    ],
)
def test_bad_arguments(call, error, match) -> None:
    with pytest.raises(error, match=match):
        call()

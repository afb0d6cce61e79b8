"""Checkers for notebook 16: online softmax, merging partial attention, causal tile counting, the
forward pass of one query block and the backward pass of one tile."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from course_utils import tiled
from course_utils.checks import Case, CheckResult, RuleBroken, check_function, randn


class Stream:
    """Items that arrive one at a time and can be read only once, like the key tiles of a long
    sequence: ``for item in x`` works; a second pass, or turning x into an array, raises
    :class:`RuleBroken`. ``name`` and ``what`` word the messages (the argument, its items)."""

    def __init__(self, items: Sequence[Any], name: str = "x", what: str = "value") -> None:
        self._items = list(items)
        self._next = 0
        self._ended = False
        self._name, self._what = name, what

    def __iter__(self) -> Stream:
        if self._ended:
            raise RuleBroken(f"it reads {self._name} a second time: {self._name} is a stream that "
                             f"can be read once, so update m and ℓ together as each {self._what} "
                             "arrives (one pass)")
        return self

    def __next__(self) -> Any:
        if self._next == len(self._items):
            self._ended = True
            raise StopIteration
        self._next += 1
        return self._items[self._next - 1]

    def __array__(self, dtype=None, copy=None):
        raise RuleBroken(f"it turns {self._name} into an array: {self._name} is a stream that can "
                         f"be read once, {self._what} by {self._what} (`for item in "
                         f"{self._name}`), without keeping them")

    def __repr__(self) -> str:
        left = len(self._items) - self._next
        return f"Stream({left} of {len(self._items)} {self._what}s left)"


def check_online_softmax_stats(func: Callable[[Stream], tuple[float, float]]) -> CheckResult:
    """``func(x)`` must return ``(m, ℓ)``: the max of x and ``Σ e^(x_i − m)``, reading the
    :class:`Stream` x once."""
    scores = [
        ([2.0, 1.0, 0.1], "softmax([2, 1, 0.1]) statistics"),
        ([0.0, 5.0, -3.0, 5.0], "the maximum appears twice"),
        ([1000.0, 999.0, 998.0], "logits near 1000 must not overflow"),
        ([-4.0, -2.0, 0.0, 2.0, 4.0], "increasing: the max changes every step"),
        ([-5.0, -3.0, -4.0], "all negative: m starts at -inf, not 0"),
        ([7.5], "one element: (7.5, 1.0)"),
    ]
    cases = [Case((Stream([np.float64(v) for v in x]),), label,
                  expected=tiled.online_softmax_stats(np.array(x))) for x, label in scores]
    return check_function(func, cases=cases, name="online_softmax_stats", names=("m", "ℓ"))


def check_merge_partials(
    func: Callable[..., tuple[np.ndarray, np.ndarray]],
) -> CheckResult:
    """``func(out1, lse1, out2, lse2)`` must merge two partial attention results."""
    rng = np.random.default_rng(15)
    out1, out2 = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    lse1, lse2 = np.array([0.5, 2.0, -1.0]), np.array([1.5, -3.0, 900.0])
    empty = np.array([-np.inf])
    cases = [
        Case((out1, lse1, out2, lse2), "three rows, one with log-sum-exp 900"),
        Case((out1[:1], lse1[:1], out1[:1], lse1[:1]), "equal halves: same out, lse + log 2"),
        Case((out1[:1], empty, out2[:1], np.array([0.3])),
             "an empty first part (lse = -inf) contributes nothing"),
        Case((np.zeros((1, 4)), empty, np.zeros((1, 4)), empty),
             "a row empty in both parts: out 0 and lse -inf, not NaN"),
    ]
    return check_function(func, cases=cases, reference=tiled.merge_attention_partials,
                          name="merge_partials", names=("out", "lse"), no_warnings=True)


def _causal_tiles(lq: int, lk: int, block_q: int, block_k: int) -> int:
    return int(tiled.visited_tiles(lq, lk, block_q, block_k, causal=True).sum())


def check_count_causal_tiles(func: Callable[[int, int, int, int], int]) -> CheckResult:
    """``func(lq, lk, block_q, block_k)`` must count the tiles a causal tiled loop visits."""
    cases = [
        Case((8, 8, 2, 2), "8×8 in 2×2 tiles: 10 of 16"),
        Case((1024, 1024, 128, 128), "the lower triangle of an 8×8 grid: 36"),
        Case((10, 10, 4, 4), "lengths that are not multiples of the block"),
        Case((4, 12, 2, 4), "Lq < Lk: bottom-right alignment"),
        Case((12, 4, 4, 2), "Lq > Lk: the first rows see nothing"),
        Case((1, 100, 1, 16), "decoding: one query sees all 7 tiles"),
    ]
    return check_function(func, cases=cases, reference=_causal_tiles, name="count_causal_tiles")


def check_block_forward(func: Callable[..., tuple[np.ndarray, np.ndarray]]) -> CheckResult:
    """``func(q, blocks)`` must return ``(out (B_q, d_v), lse (B_q,))`` of one query block,
    ``blocks`` being a :class:`Stream` of ``(k_blk, v_blk)`` pairs read once."""
    rng = np.random.default_rng(16)

    def case(q, k, v, sizes, label):
        cuts = np.cumsum(sizes)[:-1]
        blocks = list(zip(np.split(k, cuts), np.split(v, cuts), strict=True))
        expected = tiled.tiled_attention_numpy(q, k, v, block_q=len(q), block_k=len(k))
        return Case((q, Stream(blocks, "blocks", "block")), label, expected=expected)

    q, k, v = rng.normal(size=(3, 4)), rng.normal(size=(12, 4)), rng.normal(size=(12, 2))
    direction = np.array([1.0, 0.0, 0.0, 0.0])
    rising = np.outer(np.repeat(np.arange(4.0), 3), direction) * 4  # scores +8 per block
    cases = [
        case(q, k, v, [4, 4, 4], "3 queries, 12 keys in blocks of 4"),
        case(q[:2] * 0.1 + 2 * direction, k * 0.1 + rising, v, [3, 3, 3, 3],
             "the max rises in every block: rescale ℓ and the output"),
        case(q * 40 + 80 * direction, k + 25 * direction, v, [5, 5, 2],
             "scores near 1000, the last block shorter: no overflow"),
        case(q[:1], k[:5], v[:5], [5], "one block: softmax attention"),
    ]
    return check_function(func, cases=cases, name="block_forward", names=("out", "lse"),
                          no_warnings=True)


def _tile_gradients(q, k, v, grad_out, tile: slice):
    """``(dq, dk, dv)`` of one key tile, by autograd: the scores of the tile's keys use their
    own copy of q, so that q's gradient through that copy is the tile's share of dq."""
    import torch

    q_tile, q_rest = q.clone().requires_grad_(), q.clone().requires_grad_()
    k, v = k.clone().requires_grad_(), v.clone().requires_grad_()
    in_tile = torch.zeros(k.shape[0], dtype=torch.bool)
    in_tile[tile] = True
    scores = torch.where(in_tile, q_tile @ k.T, q_rest @ k.T) / math.sqrt(q.shape[-1])
    out = torch.softmax(scores, dim=-1) @ v
    dq, dk, dv = torch.autograd.grad(out, (q_tile, k, v), grad_out)
    return dq, dk[tile], dv[tile]


def check_tile_backward(func: Callable[..., tuple]) -> CheckResult:
    """``func(q, k, v, out, lse, grad_out)`` must return one tile's ``(dq, dk, dv)``: q, out,
    lse and grad_out of a query block, k and v of one key tile (float64 tensors)."""
    import torch

    def case(q, k, tile, label, seed):
        v, grad_out = randn(k.shape[0], 3, seed=seed), randn(q.shape[0], 3, seed=seed + 1)
        scores = q @ k.T / 2
        out = torch.softmax(scores, dim=-1) @ v
        lse = torch.logsumexp(scores, dim=-1)
        expected = _tile_gradients(q, k, v, grad_out, tile)
        return Case((q, k[tile], v[tile], out, lse, grad_out), label, expected=expected)

    cases = [
        case(randn(3, 4, seed=1), randn(5, 4, seed=2), slice(0, 5),
             "one tile holding every key: the whole gradient", seed=3),
        case(randn(4, 4, seed=4), randn(7, 4, seed=5), slice(4, 7),
             "the second of two key tiles: P = exp(S - lse), not a softmax over the tile", seed=6),
        case(randn(2, 4, seed=7, shift=400.0), randn(6, 4, seed=8, scale=0.001, shift=1.0),
             slice(0, 3), "scores near 800: exp(S) alone overflows", seed=9),
    ]
    return check_function(func, cases=cases, name="tile_backward", names=("dq", "dk", "dv"),
                          no_warnings=True)

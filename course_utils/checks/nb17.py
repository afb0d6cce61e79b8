"""Checkers for notebook 17: online softmax, skipped tiles, causal blocks, FA-1's M, tile grads."""

import math
from collections.abc import Callable
from functools import partial

import numpy as np
import torch

from course_utils import costs, online_softmax, tiled
from course_utils.checks import check_function, check_number, randn
from course_utils.checks.results import Case, CheckResult, exercise
from course_utils.checks.rules import Rule, Stream

OWN_UPDATE = Rule("to write the chunk-by-chunk update yourself, without the course's online_softmax"
                  " functions", names={"online_softmax", "online_softmax_stats",
                                       "merge_softmax_stats", "merge_attention_partials"})


@exercise("constrain")
def check_online_softmax_stats(func: Callable[[Stream], tuple[float, float]]) -> CheckResult:
    """``func(chunks)`` → ``(m, ℓ)``: ``m = max x``, ``ℓ = Σ e^(x − m)`` over a :class:`Stream`
    of 1-D chunks read once; the rule (:data:`OWN_UPDATE`) is checked by a scan of the code."""
    chunked = [
        ([[2.0, 1.0], [0.1]], "softmax([2, 1, 0.1]) in chunks [2, 1] and [0.1]"),
        ([[0.0, 5.0], [-3.0, 5.0]], "the maximum appears in both chunks"),
        ([[1000.0, 999.0], [998.0, 1001.0, 997.0]], "scores near 1000 must not overflow"),
        ([[-4.0], [-2.0, 0.0], [2.0, 1.0, 4.0]], "the max rises with every chunk: rescale ℓ"),
        ([[-5.0, -3.0], [-4.0]], "all negative: m starts at -inf, not 0"),
        ([[7.5]], "one chunk of one score: (7.5, 1.0)"),
        (list(3 * np.random.default_rng(16).normal(size=(40, 1024)) + np.linspace(-20, 20, 40)[
            :, None]), "40 chunks of 1,024 scores, each used as it arrives")]
    cases = [Case((Stream([np.array(c, dtype=float) for c in chunks], "chunk"),), label,
                  expected=online_softmax.online_softmax_stats(np.concatenate(chunks)))
             for chunks, label in chunked]
    kept = ("it keeps the chunks for later: each arrives in the same reused buffer, so a kept "
            "chunk shows the last chunk's numbers; update m and ℓ as each chunk arrives")
    mistakes = {kept: lambda chunks: online_softmax.online_softmax_stats(np.concatenate([*chunks]))}
    return check_function(func, cases=cases, name="online_softmax_stats", names=("m", "ℓ"),
                          no_warnings=True, rule=OWN_UPDATE, mistakes=mistakes)


@exercise("predict")
def check_skipped_tiles(answer: object, *, show_answer: bool = False) -> CheckResult:
    """``answer``: the 128 × 128 tiles of 1,024 queries after 3,072 cached keys that a causal loop
    skips, the mask aligned bottom-right: ``Σ_i (7 − i)``."""
    grid = tiled.visited_tiles(1024, 4096, 128, 128, causal=True)
    skipped, (n_q, n_k) = int(grid.size - grid.sum()), grid.shape
    explanation = (
        "The new queries sit at positions 3,072 to 4,095. Query block i (i = 0…7) ends at 3,072 + "
        "128 i + 127, so it sees key blocks 0 to 24 + i and skips the last 7 - i: 7 + 6 + … + 0 = "
        f"{skipped} of {grid.size} tiles. Half go only when the queries start at position 0.")
    mistakes: dict[float, str] = {
        sum(n_k - 1 - i for i in range(n_q)): "that aligns the mask top-left, as if the new "
        "queries started at position 0; they come after the 3,072 cached keys: bottom-right.",
        int(grid.sum()): "that counts visited tiles, not skipped ones.",
        grid.size / 2: "that is half the tiles, as when the queries start at position 0."}
    return check_number(answer, skipped, name="skipped_tiles", label="tiles skipped, 1,024 "
                        "queries after 3,072 cached, 128 × 128 tiles", explanation=explanation,
                        rtol=0, atol=0.5, mistakes=mistakes, show_answer=show_answer,
                        hint="for each of the 8 query blocks, find the last key block it can "
                             "see; the blocks after that one are skipped.")


@exercise("predict")
def check_fa1_break_even(answer: object, *, show_answer: bool = False) -> CheckResult:
    """``answer``: the smallest ``M`` (rows of ``4d``) with FlashAttention-1's ``3Nd + 2N +
    T_c(3Nd + 4N)``, ``T_c = ⌈N/(M/4d)⌉``, below ``4Nd + 4N²``, ``N = 32,768``, ``d = 64``."""
    n, d = 32_768, 64

    def fa1(fast: int, per_step: int = 3 * n * d + 4 * n) -> int:
        return 3 * n * d + 2 * n + math.ceil(n / math.ceil(fast / (4 * d))) * per_step

    def least(moves: Callable[[int], float], standard: float) -> int:  # M: whole rows of 4d
        return next(rows * 4 * d for rows in range(1, n + 1) if moves(rows * 4 * d) < standard)

    standard = costs.standard_attention_io(n, d)
    expected = least(fa1, standard)
    rows, steps = expected // (4 * d), math.floor((4 * n + d - 2) / (3 * d + 4))
    explanation = (
        f"Divided by N, FlashAttention-1 moves fewer when T_c < (4N + d - 2)/(3d + 4), at most "
        f"{steps} outer steps, and ⌈N/B_c⌉ ≤ {steps} once B_c ≥ {n:,}/{steps} = {n / steps:.2f}: "
        f"B_c = {rows} rows, M = 4d·B_c = {expected:,}. It moves {fa1(expected) / 1e6:,.2f} "
        f"million numbers there, standard attention {standard / 1e6:,.2f} million: the margin is "
        f"less than one outer step ({(3 * n * d + 4 * n) / 1e6:.2f} million): every term counts.")
    mistakes: dict[float, str] = {
        rows: "that is B_c, in rows of keys; the question asks for M, in numbers.",
        least(fa1, 4 * n * n): "that drops standard attention's 4Nd (reading Q, K, V and writing "
        "O): the counts differ by less than one outer step, so every term counts.",
        least(lambda fast: costs.tiled_attention_io(n, d, fast) + n, standard): "that is where "
        "section 6's FlashAttention-2 order (2Nd + N + T_r·2Nd) wins; FlashAttention-1 reads and "
        "writes O, ℓ and m at every outer step.",
        least(fa1, 2 * n * n + 4 * n * d): "that counts S and P once each (2N²); standard "
        "attention writes S, reads it back, writes P and reads P again: 4N².",
        least(partial(fa1, per_step=2 * n * d + 4 * n), standard): "that leaves out Q, read at "
        "every outer step: each step reads Q, O, ℓ, m and writes O, ℓ, m, 3Nd + 4N numbers.",
        expected - 4 * d: "at that M FlashAttention-1 still moves more than standard attention: "
        "count its outer steps ⌈N/B_c⌉ there against the largest T_c that wins.",
        2 * expected: "that is in bytes, 2 per float16 number; the question counts M in numbers.",
        expected - 4 * d + 1: "M is a whole number of rows of 4d numbers here, B_c = M/4d."}
    return check_number(answer, expected, name="fa1_break_even", label="the smallest M at which "
                        "FlashAttention-1 moves fewer numbers than standard attention, N = "
                        "32,768, d = 64", explanation=explanation, rtol=0, atol=0.5,
                        mistakes=mistakes, show_answer=show_answer,
                        hint="write both counts, find the most outer steps T_c that keep "
                             "FlashAttention-1 below standard attention, then the smallest B_c "
                             "that needs no more steps than that; M = 4d·B_c.")


def _causal_reference(q: np.ndarray, q_start: int, k: np.ndarray, v: np.ndarray):
    s = q @ k.T / math.sqrt(q.shape[1])
    s = np.where(np.arange(len(k))[None, :] <= q_start + np.arange(len(q))[:, None], s, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return p @ v / p.sum(axis=1, keepdims=True), s.max(axis=1) + np.log(p.sum(axis=1))


def _kept_blocks(q: np.ndarray, q_start: int, blocks: Stream):
    """Blocks kept up to the last query's, then one softmax: views of the one buffer, stale."""
    kept: list = []
    for block in blocks:
        kept.append(block)
        if sum(len(k) for k, _ in kept) > q_start + len(q) - 1:
            break
    return _causal_reference(q, q_start, *map(np.concatenate, zip(*kept, strict=True)))


@exercise("extend")
def check_causal_block_forward(func: Callable[..., tuple]) -> CheckResult:
    """``func(q, q_start, blocks)``: causal ``(out, lse)`` of ``q`` ``(B_q, d)`` at positions
    ``q_start …``, keys and values a :class:`Stream` of ``(k_blk, v_blk)`` from position 0."""
    rng = np.random.default_rng(16)

    def case(q, q_start, k, v, size, label, unwritten=False):
        cuts = list(range(size, len(k), size))
        blocks = list(zip(np.split(k, cuts), np.split(v, cuts), strict=True))
        last = (q_start + len(q) - 1) // size  # the block of the last query's own key
        if unwritten:  # the blocks wholly after the last query: not written yet
            blocks[last + 1 :] = [(a * np.nan, b * np.nan) for a, b in blocks[last + 1 :]]
        return Case((q, q_start, Stream(blocks, "block")), label,
                    expected=_causal_reference(q, q_start, k, v))

    q, k, v = rng.normal(size=(4, 4)), rng.normal(size=(16, 4)), rng.normal(size=(16, 2))
    up, long = np.array([1.0, 0.0, 0.0, 0.0]), rng.normal(size=(2, 7680, 8))
    cases = [case(q, 8, k, v, 4, "queries 8-11, blocks of 4: blocks 0, 1 and the diagonal 2; block "
                  "3 is not written yet (NaN): a causal loop stops before it", unwritten=True),
             case(q, 0, k, v, 4, "queries 0-3: only the diagonal block, masked inside"),
             case(q[:3], 5, k, v, 4, "queries 5-7 (not a whole block): the diagonal cuts block 1"),
             case(q, 5, k, v, 4, "queries 5-8: the next block starts at the last query (key 8), so "
                  "the loop must read it", unwritten=True),
             case(q * 0.1 + 2 * up, 10, k * 0.1 + np.outer(np.arange(16.0), up) * 3, v, 3,
                  "the max rises in every block: rescale ℓ and the accumulator"),
             case(q * 40 + 80 * up, 12, k + 25 * up, v, 5,
                  "scores near 1000, the last block shorter: no overflow"),
             case(rng.normal(size=(4, 8)), 7676, long[0], long[1], 256,
                  "30 blocks of 256 keys, each used as it arrives")]
    kept = ("it keeps the blocks for later: each arrives in the same reused buffer, so a kept "
            "block shows the last one's numbers; update m, ℓ and the accumulator as each arrives")
    return check_function(func, cases=cases, name="causal_block_forward", names=("out", "lse"),
                          no_warnings=True, mistakes={kept: _kept_blocks})


def _tile_gradients(q, k, v, grad_out, tile: slice):
    """One key tile's ``(dq, dk, dv)`` by autograd, the tile's scores with their own copy of q."""
    q_tile, q_rest, k, v = (x.clone().requires_grad_() for x in (q, q, k, v))
    in_tile = torch.zeros(k.shape[0], dtype=torch.bool)
    in_tile[tile] = True
    scores = torch.where(in_tile, q_tile @ k.T, q_rest @ k.T) / math.sqrt(q.shape[-1])
    dq, dk, dv = torch.autograd.grad(torch.softmax(scores, dim=-1) @ v, (q_tile, k, v), grad_out)
    return dq, dk[tile], dv[tile]


def tile_backward_given(q, k, v, out, lse, grad_out):
    """A copy of Exercise 5's given function, bug included: the mistake "still the bug"."""
    scale = 1 / math.sqrt(q.shape[1])
    p = torch.softmax(q @ k.T * scale, dim=1)   # this tile's probabilities
    dv = p.T @ grad_out
    dp = grad_out @ v.T
    d_row = (grad_out * out).sum(dim=1, keepdim=True)
    ds = p * (dp - d_row)
    return ds @ k * scale, ds.T @ q * scale, dv


@exercise("debug")
def check_tile_backward(func: Callable[..., tuple]) -> CheckResult:
    """``func(q, k, v, out, lse, grad_out)`` → one tile's ``(dq, dk, dv)``: q, out, lse and
    grad_out of a query block, k and v of one key tile (float64 tensors)."""
    def case(q, k, tile, label, seed):
        v, grad_out = randn(k.shape[0], 3, seed=seed), randn(q.shape[0], 3, seed=seed + 1)
        out, lse = torch.softmax(q @ k.T / 2, dim=-1) @ v, torch.logsumexp(q @ k.T / 2, dim=-1)
        return Case((q, k[tile], v[tile], out, lse, grad_out), label,
                    expected=_tile_gradients(q, k, v, grad_out, tile))

    cases = [
        case(randn(3, 4, seed=1), randn(5, 4, seed=2), slice(0, 5),
             "one tile holding every key: the whole gradient", seed=3),
        case(randn(4, 4, seed=4), randn(7, 4, seed=5), slice(4, 7),
             "the second of two key tiles: the tile holds only some of each row's keys", seed=6),
        case(randn(2, 4, seed=7, shift=400.0), randn(6, 4, seed=8, scale=0.001, shift=1.0),
             slice(0, 3), "scores near 800: exp(S) alone overflows", seed=9)]
    bug = ("still the bug: P is a softmax over this tile's keys alone; rebuild it from the saved "
           "lse, normalised over all keys")
    return check_function(func, cases=cases, name="tile_backward", names=("dq", "dk", "dv"),
                          no_warnings=True, mistakes={bug: tile_backward_given})

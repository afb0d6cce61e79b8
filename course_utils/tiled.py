"""Tiled (FlashAttention-style) attention: exact attention that never builds the N×N scores.

Naive attention materialises ``S = Q Kᵀ / √d`` and ``P = softmax(S)``, two ``Lq × Lk`` matrices.
The tiled algorithm (FlashAttention-2 order) walks over query blocks (outer loop) and key/value
blocks (inner loop) and keeps, per query row, only three running quantities:

    m   the running maximum of the scores seen so far
    ℓ   the running sum  Σ_j exp(s_j − m)
    acc the unnormalised output  Σ_j exp(s_j − m) v_j

When a new block raises the maximum from m_old to m_new, ``ℓ`` and ``acc`` are rescaled by
``exp(m_old − m_new)``; at the end ``out = acc / ℓ`` and the log-sum-exp is ``lse = m + log ℓ``.

Semantics shared by every function here (and by :mod:`course_utils.triton_attention`):

* shapes ``q: (..., Lq, d)``, ``k: (..., Lk, d)``, ``v: (..., Lk, d_v)``; output ``(..., Lq, d_v)``
  and log-sum-exp ``(..., Lq)``; the scale defaults to ``1/√d``;
* ``causal=True`` aligns the mask bottom-right: query ``i`` sees keys ``j ≤ i + Lk − Lq`` (as
  PyTorch's ``causal_lower_right`` and FlashAttention); when ``Lq > Lk`` the first ``Lq − Lk``
  rows see no key at all — such a fully masked row gives output 0 and log-sum-exp ``−inf``;
* ``window=W`` (with ``causal=True``): sliding-window (local) attention, query ``i`` sees only
  the ``W`` most recent keys, ``i + Lk − Lq − W < j ≤ i + Lk − Lq``;
* ``block_mask``: block-sparse attention, a boolean ``(⌈Lq/block_q⌉, ⌈Lk/block_k⌉)`` grid of
  the tiles to visit (True = visit); the pairs of an unvisited tile are masked out;
* tiles that hold no allowed (query, key) pair are never visited (:func:`visited_tiles`), so
  causal attention costs about half of dense, and sliding-window attention ``O(N·W·d)``;
* sequence lengths need not be multiples of the block sizes (the last block is shorter);
* float16 and bfloat16 inputs are computed (and accumulated) in float32, the output is cast back
  to the input dtype and the log-sum-exp stays float32.

``tiled_attention_numpy`` is written for reading; ``tiled_attention_forward`` is the PyTorch
version for speed (in base 2, with the max subtracted inside the matrix product, lazy rescaling,
and the query blocks spread over the CPU's cores like a GPU grid: see its docstring);
``tiled_attention`` adds a backward pass that recomputes the probabilities tile by tile from the
saved output and log-sum-exp.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np
import torch

from course_utils.validation import check_int

_HALF = (torch.float16, torch.bfloat16)
_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


# ----------------------------------------------------------------------------------- the cost
def attention_flops(lq: int, lk: int, d: int, d_v: int | None = None) -> int:
    """Floating-point operations of one attention head's forward pass: ``2·Lq·Lk·(d + d_v)``.

    ``Q Kᵀ`` costs ``2·Lq·Lk·d`` (a multiply and an add per term) and ``P V`` costs ``2·Lq·Lk·d_v``;
    with ``d_v = d`` and ``Lq = Lk = N`` that is the familiar ``4·N²·d``. Softmax (``O(N²)``) is
    not counted, as is customary.
    """
    d_v = d if d_v is None else d_v
    for name, value in (("lq", lq), ("lk", lk), ("d", d), ("d_v", d_v)):
        check_int(value, name)
    return 2 * lq * lk * (d + d_v)


def naive_attention_bytes(lq: int, lk: int, itemsize: int = 4) -> int:
    """Bytes of the two ``Lq × Lk`` matrices naive attention keeps: scores and probabilities.

    ``2·Lq·Lk·itemsize``: about 2 GiB for ``N = 16,384`` in float32 (itemsize 4).
    """
    for name, value in (("lq", lq), ("lk", lk), ("itemsize", itemsize)):
        check_int(value, name)
    return 2 * lq * lk * itemsize


def standard_attention_io(n: int, d: int) -> int:
    """Elements standard attention moves between slow and fast memory: ``4·N·d + 4·N²``.

    Read Q and K, write S; read S, write P; read P and V, write O (Dao et al. 2022, Algorithm 0):
    ``Θ(N·d + N²)``.
    """
    check_int(n, "n")
    check_int(d, "d")
    return 4 * n * d + 4 * n * n


def tiled_attention_io(n: int, d: int, m: int) -> int:
    """Elements tiled attention moves with a fast memory of ``M`` elements: ``2·N·d + T·2·N·d``.

    A query block of ``B = ⌊M / 4d⌋`` rows (its queries, its accumulator and one key and one value
    block fill the fast memory) reads Q and writes O once and streams K and V once per query
    block: ``T = ⌈N / B⌉`` passes, ``≈ 8·N²·d²/M`` elements, the ``Θ(N²·d²/M)`` of FlashAttention's
    Theorem 2. ``M`` must hold at least one row of each, ``M ≥ 4·d``.
    """
    check_int(n, "n")
    check_int(d, "d")
    check_int(m, "m", minimum=4 * d)
    rows = m // (4 * d)
    return 2 * n * d + -(-n // rows) * 2 * n * d


# ------------------------------------------------------------------- the machine: the roofline
_CACHE_DIR = "/sys/devices/system/cpu/cpu0/cache"


def cache_sizes() -> dict[str, int]:
    """This CPU's data caches in bytes, ``{"L1": …, "L2": …, "L3": …}`` as one core sees them
    (L3 is usually shared by all cores), read from Linux's ``/sys/devices/system/cpu``; an
    empty dict where that is not readable (macOS, Windows, some containers)."""
    sizes: dict[str, int] = {}
    try:
        for index in sorted(os.listdir(_CACHE_DIR)):
            if not index.startswith("index"):
                continue
            path = os.path.join(_CACHE_DIR, index)
            with open(os.path.join(path, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(path, "level")) as f:
                level = f"L{f.read().strip()}"
            with open(os.path.join(path, "size")) as f:
                size = f.read().strip()
            if kind in ("Data", "Unified") and size:
                unit = {"K": 2**10, "M": 2**20, "G": 2**30}.get(size[-1], 1)
                sizes[level] = int(size.rstrip("KMG")) * unit
    except (OSError, ValueError):
        return {}
    return sizes


def copy_bandwidth(nbytes: int, repeats: int = 3) -> float:
    """Bytes per second of ``dst.copy_(src)`` for float32 tensors of ``nbytes``: each copy reads
    and writes ``nbytes`` (``2·nbytes`` moved). Small arrays stay in cache between copies, so
    the result climbs the memory hierarchy as ``nbytes`` shrinks. Each timing repeats the copy
    until about 64 MiB have moved; the best of ``repeats`` timings."""
    check_int(nbytes, "nbytes", minimum=4)
    src = torch.ones(nbytes // 4)
    dst = torch.empty_like(src)
    copies = max(1, 2**26 // nbytes)
    return 2 * src.numel() * 4 * copies / best_time(
        lambda: [dst.copy_(src) for _ in range(copies)], repeats)


def matmul_flops(n: int = 1024, repeats: int = 3) -> float:
    """FLOP/s of an ``n × n`` float32 matrix product (``2·n³`` FLOPs), best of ``repeats``."""
    check_int(n, "n")
    a, b = torch.randn(n, n), torch.randn(n, n)
    return 2 * n**3 / best_time(lambda: a @ b, repeats)


def best_time(call: Callable[[], object], repeats: int = 3) -> float:
    """The shortest wall time (seconds) of ``repeats`` calls of ``call()``, after one warm-up
    call: the least disturbed by other work on the machine."""
    check_int(repeats, "repeats")
    call()
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


# ------------------------------------------------------------------------------ online softmax
def online_softmax_stats(x: np.ndarray) -> tuple[float, float]:
    """One pass over ``x`` keeping the running max ``m`` and the running sum ``ℓ = Σ e^(x_i − m)``.

    For each new element: ``m_new = max(m, x_i)``, ``ℓ ← ℓ·e^(m − m_new) + e^(x_i − m_new)``.
    Returns ``(m, ℓ)``, so that ``softmax(x)_i = e^(x_i − m) / ℓ`` and ``logsumexp(x) = m + log ℓ``.
    ``x`` is a non-empty 1-D array of finite numbers.
    """
    x = _as_float_vector("x", x)
    m, ell = -math.inf, 0.0
    for value in x.tolist():
        m_new = max(m, value)
        ell = ell * math.exp(m - m_new) + math.exp(value - m_new)
        m = m_new
    return m, ell


def online_softmax(x: np.ndarray) -> np.ndarray:
    """Softmax of a 1-D array from the one-pass statistics: ``e^(x − m) / ℓ`` (float64)."""
    m, ell = online_softmax_stats(x)
    return np.exp(np.asarray(x, dtype=np.float64) - m) / ell


def merge_softmax_stats(m1: float, l1: float, m2: float, l2: float) -> tuple[float, float]:
    """Combine the statistics of two chunks: ``m = max(m1, m2)``, ``ℓ = ℓ1·e^(m1−m) + ℓ2·e^(m2−m)``.

    A chunk with no element is ``(−inf, 0)``; merging two of them gives ``(−inf, 0)``.
    """
    m = max(m1, m2)
    if m == -math.inf:
        return -math.inf, 0.0
    return m, l1 * math.exp(m1 - m) + l2 * math.exp(m2 - m)


def merge_attention_partials(
    out1: np.ndarray, lse1: np.ndarray, out2: np.ndarray, lse2: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Merge attention computed over two disjoint sets of keys into attention over their union.

    Each partial result is normalised over its own keys: ``out_k (..., Lq, d_v)`` and its
    log-sum-exp ``lse_k (..., Lq)``. Then ``lse = log(e^lse1 + e^lse2)`` and
    ``out = e^(lse1 − lse)·out1 + e^(lse2 − lse)·out2``. A row empty in both parts stays
    ``(0, −inf)``.
    """
    out1, out2 = np.asarray(out1), np.asarray(out2)
    lse1, lse2 = np.asarray(lse1), np.asarray(lse2)
    if out1.shape != out2.shape:
        raise ValueError(
            f"out1 and out2 must have the same shape, got {out1.shape} and {out2.shape}"
        )
    if lse1.shape != out1.shape[:-1] or lse2.shape != out1.shape[:-1]:
        raise ValueError(
            f"lse1 and lse2 must have shape {out1.shape[:-1]} (out without its last axis), "
            f"got {lse1.shape} and {lse2.shape}"
        )
    lse = np.logaddexp(lse1, lse2)
    safe = np.where(np.isneginf(lse), 0.0, lse)
    w1 = np.exp(lse1 - safe)[..., None]
    w2 = np.exp(lse2 - safe)[..., None]
    return w1 * out1 + w2 * out2, lse


# ---------------------------------------------------------------------------- block skipping
def _tile_grid(
    lq: int, lk: int, block_q: int, block_k: int, causal: bool, window: int | None,
    block_mask: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(visit, masked)``, two boolean ``(⌈Lq/block_q⌉, ⌈Lk/block_k⌉)`` grids: the one place
    that decides which tiles the loops visit.

    A tile of rows ``[q0, q1)`` and keys ``[k0, k1)`` is visited when some row sees some of its
    keys: with ``o = Lk − Lq``, row ``i`` sees ``i + o − W < j ≤ i + o``, so the rows that see
    at least one key of the tile are ``[k0 − o, k1 − 1 − o + W)`` and those that see all of them
    ``[k1 − 1 − o, k0 − o + W)`` (no bound where there is no mask). ``masked``: visited, but some
    pair of the tile is hidden, so the tile needs the element mask. ``block_mask`` removes whole
    tiles.
    """
    q_start = np.arange(0, lq, block_q)[:, None]
    q_end = np.minimum(q_start + block_q, lq)
    k_start = np.arange(0, lk, block_k)[None, :]
    k_end = np.minimum(k_start + block_k, lk)
    offset = lk - lq
    no_bound = np.full(k_start.shape, lq + lk + (window or 0))
    if causal:
        sees_from, sees_all_from = k_start - offset, k_end - 1 - offset
    else:
        sees_from = sees_all_from = -no_bound
    if window is None:
        sees_to = sees_all_to = no_bound
    else:
        sees_to, sees_all_to = k_end - 1 - offset + window, k_start - offset + window
    visit = np.maximum(q_start, sees_from) < np.minimum(q_end, sees_to)
    full = (q_start >= sees_all_from) & (q_end <= sees_all_to)
    if block_mask is not None:
        visit &= block_mask
    return visit, visit & ~full


def _tiles(
    lq: int, lk: int, block_q: int, block_k: int, causal: bool, window: int | None,
    block_mask: np.ndarray | None,
) -> Iterator[tuple[int, int, list[tuple[int, int, bool]]]]:
    """Query blocks ``(q_start, q_end, key_tiles)`` with ``key_tiles = [(k_start, k_end, masked)]``,
    the visited tiles of :func:`_tile_grid` in FlashAttention-2 order."""
    visit, masked = _tile_grid(lq, lk, block_q, block_k, causal, window, block_mask)
    for i, q_start in enumerate(range(0, lq, block_q)):
        key_tiles = [(j * block_k, min((j + 1) * block_k, lk), bool(masked[i, j]))
                     for j in np.flatnonzero(visit[i]).tolist()]
        yield q_start, min(q_start + block_q, lq), key_tiles


def visited_tiles(
    lq: int, lk: int, block_q: int, block_k: int, causal: bool = False, window: int | None = None,
    block_mask: np.ndarray | torch.Tensor | None = None,
) -> np.ndarray:
    """Boolean map ``(⌈Lq/block_q⌉, ⌈Lk/block_k⌉)``: True where the tiled loop visits a tile.

    A tile is visited exactly when at least one of its (query, key) pairs is allowed: every tile
    without a mask; about half with ``causal=True`` (the tiles above the diagonal are skipped); a
    band of about ``W/block_k + 1`` tiles per query block with ``window=W``; and only the tiles
    ``block_mask`` keeps.
    """
    for name, value in (("lq", lq), ("lk", lk), ("block_q", block_q), ("block_k", block_k)):
        check_int(value, name)
    window, block_mask = check_sparsity(causal, window, block_mask, lq, lk, block_q, block_k)
    return _tile_grid(lq, lk, block_q, block_k, causal, window, block_mask)[0]


def attention_mask(
    lq: int, lk: int, *, causal: bool = False, window: int | None = None,
    block_mask: np.ndarray | torch.Tensor | None = None, block_q: int | None = None,
    block_k: int | None = None,
) -> torch.Tensor:
    """The dense ``(Lq, Lk)`` boolean mask (True = attend) equal to these tiled options.

    ``j ≤ i + Lk − Lq`` (causal), ``j > i + Lk − Lq − W`` (window), and the pair's tile kept by
    ``block_mask`` (whose tiles are ``block_q × block_k``, the defaults of the tiled functions
    unless given). Builds all ``Lq·Lk`` entries: for references and pictures, not for speed.
    """
    block_q = BLOCK_Q if block_q is None else block_q
    block_k = BLOCK_K if block_k is None else block_k
    for name, value in (("lq", lq), ("lk", lk), ("block_q", block_q), ("block_k", block_k)):
        check_int(value, name)
    window, block_mask = check_sparsity(causal, window, block_mask, lq, lk, block_q, block_k)
    offset = torch.arange(lk)[None, :] - torch.arange(lq)[:, None] - (lk - lq)  # j − i − (Lk − Lq)
    allowed = offset <= 0 if causal else torch.ones(lq, lk, dtype=torch.bool)
    if window is not None:
        allowed &= offset > -window
    if block_mask is not None:
        tiles = torch.from_numpy(block_mask)
        allowed &= tiles.repeat_interleave(block_q, 0)[:lq].repeat_interleave(block_k, 1)[:, :lk]
    return allowed


def _hidden(
    q_start: int, q_end: int, k_start: int, k_end: int, lq: int, lk: int, window: int | None,
    device,
) -> torch.Tensor:
    """True where key ``j`` is hidden from query ``i`` in a masked tile: ``j > i + Lk − Lq``, or
    ``j ≤ i + Lk − Lq − W`` with a window."""
    offset = (torch.arange(k_start, k_end, device=device)
              - torch.arange(q_start, q_end, device=device).unsqueeze(-1) - (lk - lq))
    return offset > 0 if window is None else (offset > 0) | (offset <= -window)


# ------------------------------------------------------------------------- NumPy, for reading
def tiled_attention_numpy(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    *,
    causal: bool = False,
    window: int | None = None,
    block_mask: np.ndarray | None = None,
    block_q: int = 64,
    block_k: int = 64,
    scale: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Tiled attention in NumPy: ``(out (..., Lq, d_v), lse (..., Lq))`` without an Lq×Lk matrix.

    ``out = softmax(q kᵀ·scale [+ mask]) v`` and ``lse = logsumexp(q kᵀ·scale [+ mask])`` per
    row, computed block by block (FlashAttention-2 order). Float arrays only; the result has the
    dtype of ``q`` (float32 or float64). See the module docstring for the masks.
    """
    q, k, v = (np.asarray(t) for t in (q, k, v))
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dtype not in (np.float32, np.float64):
            raise TypeError(f"{name} must be a float32 or float64 array, got dtype {t.dtype}")
    lq, lk, d, scale = _check_shapes(q.shape, k.shape, v.shape, block_q, block_k, scale)
    window, block_mask = check_sparsity(causal, window, block_mask, lq, lk, block_q, block_k)
    dtype = np.result_type(q, k, v)
    out = np.zeros(q.shape[:-1] + v.shape[-1:], dtype=dtype)
    lse = np.full(q.shape[:-1], -np.inf, dtype=dtype)
    for q_start, q_end, key_tiles in _tiles(lq, lk, block_q, block_k, causal, window, block_mask):
        q_blk = q[..., q_start:q_end, :] * dtype.type(scale)
        m = np.full(q_blk.shape[:-1], -np.inf, dtype=dtype)  # running max
        ell = np.zeros(q_blk.shape[:-1], dtype=dtype)  # running sum of exp(s - m)
        acc = np.zeros(q_blk.shape[:-1] + v.shape[-1:], dtype=dtype)  # unnormalised output
        for k_start, k_end, masked in key_tiles:
            s = q_blk @ np.swapaxes(k[..., k_start:k_end, :], -1, -2)  # (..., bq, bk)
            if masked:  # a tile on the diagonal or the window's edge: hide its masked pairs
                hidden = _hidden(q_start, q_end, k_start, k_end, lq, lk, window, "cpu").numpy()
                s = np.where(hidden, -np.inf, s)
            m_new = np.maximum(m, s.max(axis=-1))
            m_safe = np.where(np.isneginf(m_new), 0.0, m_new)  # a row with nothing seen yet
            p = np.exp(s - m_safe[..., None])
            alpha = np.exp(m - m_safe)  # e^(m_old - m_new): rescales the old sum and output
            ell = alpha * ell + p.sum(axis=-1)
            acc = alpha[..., None] * acc + p @ v[..., k_start:k_end, :]
            m = m_new
        seen = ell > 0
        out[..., q_start:q_end, :] = np.where(
            seen[..., None], acc / np.where(seen, ell, 1)[..., None], 0
        )
        lse[..., q_start:q_end] = np.where(seen, m + np.log(np.where(seen, ell, 1)), -np.inf)
    return out, lse


# ---------------------------------------------------------------------- PyTorch, for speed
_LN_2 = math.log(2.0)
_RESCALE_ABOVE = 8.0  # lazy rescaling: move m only when a row's max rose more than 8 bits above it
# Default tiles (block_q × block_k), chosen with `python benchmarks/attention.py --tiles` and
# side-by-side runs on a 2-core AVX-512 CPU (1 MiB of L2 cache per core) at N = 2,048 … 16,384,
# d = 64. The forward pass alone holds one tile of scores per worker: 1024 × 256 float32 scores
# fill one L2 cache, with few calls per tile. Training (tiled_attention) is bound by memory: the
# backward pass holds two tiles per worker (P and dP), so it takes small ones, and the forward
# pass before it medium ones, so that forward + backward needs no more memory than PyTorch's
# fused kernel, at any N.
BLOCK_Q, BLOCK_K = 1024, 256
TRAIN_BLOCK_Q, TRAIN_BLOCK_K = 512, 256
BACKWARD_BLOCK_Q, BACKWARD_BLOCK_K = 256, 128


def _launch(program: Callable[[tuple, int], None], cells: list[tuple]) -> None:
    """Run ``program(cell, worker)`` for every cell, the way a GPU runs its grid of programs.

    A GPU starts one *program* per cell of its grid (a query block of one batch·head) and runs
    them independently on its streaming multiprocessors. Here ``torch.get_num_threads()`` worker
    threads, one per core, take the cells from a shared queue in the order given (each takes the
    next one as soon as it is free, so a worker slowed down by another process simply takes
    fewer) and run each one alone: its PyTorch calls run on one thread (set per thread, restored
    afterwards) and release the GIL, so the workers do not wait for each other until the end.
    One worker runs in the calling thread, the others in a pool kept between calls.
    """
    threads = torch.get_num_threads()
    workers = min(threads, len(cells))
    queue = iter(cells)
    lock = threading.Lock()

    def work(worker: int) -> None:
        if workers > 1:
            torch.set_num_threads(1)  # per thread: the other workers use the other cores
        with torch.no_grad():  # grad mode is per thread too
            while True:
                with lock:
                    cell = next(queue, None)
                if cell is None:
                    return
                program(cell, worker)

    if workers == 1:
        work(0)
        return
    started = [_pool(workers - 1).submit(work, worker) for worker in range(1, workers)]
    try:
        work(0)
    finally:
        wait(started)  # every worker is done before the thread count is restored
        torch.set_num_threads(threads)
    for future in started:
        future.result()  # raises a worker's error, if any


_POOL: list[tuple[int, ThreadPoolExecutor]] = []


def _pool(size: int) -> ThreadPoolExecutor:
    """The worker threads, started once and kept (like OpenMP's thread team), ``size`` or more."""
    if not _POOL or _POOL[0][0] < size:  # a bigger one replaces it (the old threads then exit)
        _POOL[:] = [(size, ThreadPoolExecutor(size, thread_name_prefix="tiled-attention"))]
    return _POOL[0][1]


def _batch_slices(batch: int) -> list[slice]:
    """The batch·head axis in ``min(batch, threads)`` slices, so that a grid of one query block
    still gives every worker a cell."""
    parts = min(batch, torch.get_num_threads())
    bounds = [batch * p // parts for p in range(parts + 1)]
    return [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def tiled_attention_forward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    window: int | None = None,
    block_mask: np.ndarray | torch.Tensor | None = None,
    block_q: int = BLOCK_Q,
    block_k: int = BLOCK_K,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Tiled attention forward in PyTorch: ``(out (..., Lq, d_v), lse (..., Lq))``.

    The same algorithm as :func:`tiled_attention_numpy`, with in-place tile updates into one
    reused score buffer per worker, so that the extra memory is
    ``O(threads·block_q·block_k + Lq·d_v)`` instead of ``O(Lq·Lk)``. Runs without recording an
    autograd graph (use :func:`tiled_attention` for gradients). ``lse`` is float32 for
    half-precision inputs, else the input dtype.

    Each tile costs two matrix products plus a few passes over its ``block_q × block_k`` scores,
    so three tricks that save passes make it fast on a CPU (the result is unchanged):

    * **base 2**: ``log2 e`` is folded into the scale, so scores ``s`` are in base-2 units and the
      tile uses ``exp2``, cheaper than ``exp`` (``e^x = 2^(x·log2 e)``); at the end
      ``lse = (m + log2 ℓ)·ln 2``. The Triton kernel does the same.
    * **the max is subtracted inside the matrix product**: ``baddbmm(m, q, kᵀ, beta=−1,
      alpha=scale·log2 e)`` computes ``q kᵀ·scale·log2 e − m`` in one call.
    * **lazy rescaling** (as in FlashAttention-4): ``m`` does not have to be the exact running
      max. Any reference value gives the same result, because ``acc`` and ``ℓ`` both carry the
      factor ``2^(−m)``, which cancels in ``out = acc / ℓ`` and is added back in
      ``lse = m + log2 ℓ``. So ``m`` is raised (and ``ℓ``, ``acc`` rescaled by
      ``2^(m_old − m_new)``) only when some row's max rose more than 8 above it; in between every
      ``p = 2^(s − m) ≤ 2^8``, far from overflowing, and most tiles skip the rescale. A row that
      has seen no key yet (its keys lie further on, as in a sliding window) has no reference
      value: it takes its first max exactly, whether above or below the placeholder 0.

    The query blocks are a grid of independent programs, run by one worker thread per core
    (:func:`_launch`): the parallelism of a GPU grid, with no synchronisation between tiles.
    The default tiles are :data:`BLOCK_Q` × :data:`BLOCK_K`.
    """
    lq, lk, d, scale = check_tensors(q, k, v, block_q, block_k, scale)
    window, block_mask = check_sparsity(causal, window, block_mask, lq, lk, block_q, block_k)
    visit, masked = _tile_grid(lq, lk, block_q, block_k, causal, window, block_mask)
    work = torch.float32 if q.dtype in _HALF else q.dtype
    d_v, device = v.shape[-1], q.device
    # flatten the leading axes: (batch·heads, length, dim) for torch.bmm; views when possible
    q3 = q.to(work).reshape(-1, lq, d)
    k_t = k.to(work).reshape(-1, lk, d).transpose(1, 2)  # (B, d, Lk), a view
    v3 = v.to(work).reshape(-1, lk, d_v)
    out = torch.empty(q3.shape[0], lq, d_v, dtype=work, device=device)
    lse = torch.empty(q3.shape[0], lq, dtype=work, device=device)
    slices = _batch_slices(q3.shape[0])
    size = max(b.stop - b.start for b in slices) * min(block_q, lq) * min(block_k, lk)
    buffers: dict[int, torch.Tensor] = {}  # one score tile per worker, reused by all its tiles

    def program(cell: tuple[slice, int], worker: int) -> None:
        batch, i = cell
        q_start, q_end = i * block_q, min((i + 1) * block_q, lq)
        shape = (batch.stop - batch.start, q_end - q_start)
        if worker not in buffers:
            buffers[worker] = torch.empty(size, dtype=work, device=device)
        m = torch.zeros(*shape, 1, dtype=work, device=device)  # reference value, see above
        ell = torch.zeros_like(m)
        acc = torch.zeros(*shape, d_v, dtype=work, device=device)
        fresh = True  # some row has seen no key yet
        for j in np.flatnonzero(visit[i]).tolist():
            k_start, k_end = j * block_k, min((j + 1) * block_k, lk)
            s = buffers[worker][: math.prod(shape) * (k_end - k_start)].view(*shape, -1)
            torch.baddbmm(m, q3[batch, q_start:q_end], k_t[batch, :, k_start:k_end], beta=-1,
                          alpha=scale / _LN_2, out=s)  # q kᵀ·scale·log2 e − m
            if masked[i, j]:
                s.masked_fill_(_hidden(q_start, q_end, k_start, k_end, lq, lk, window, device),
                               -math.inf)
            growth = s.amax(dim=-1, keepdim=True)  # how far each row's max lies above m
            if fresh:  # rows that saw nothing take their max exactly (−inf: still nothing)
                unseen = ell == 0
                step = torch.where(unseen, growth, growth.clamp(min=0.0))
                _rescale(s, m, ell, acc, step.masked_fill_(growth == -math.inf, 0.0), unseen)
            elif growth.max() > _RESCALE_ABOVE:  # lazy rescaling, see the docstring
                _rescale(s, m, ell, acc, growth.clamp_(min=0.0), None)
            p = s.exp2_()  # reuse the tile's memory
            ell.add_(p.sum(dim=-1, keepdim=True))
            acc.baddbmm_(p, v3[batch, k_start:k_end])
            fresh = fresh and not bool((ell > 0).all())
        seen = ell > 0
        ell_safe = torch.where(seen, ell, 1.0)
        out[batch, q_start:q_end] = (acc / ell_safe).masked_fill_(~seen, 0.0)
        lse_blk = (m + ell_safe.log2()) * _LN_2  # back from base 2 to the natural log
        lse[batch, q_start:q_end] = lse_blk.masked_fill_(~seen, -math.inf).squeeze(-1)

    cost = visit.sum(axis=1)  # tiles per query block; the longest run first
    _launch(program, [(batch, int(i)) for i in np.argsort(-cost, kind="stable")
                      for batch in slices])
    return out.reshape(q.shape[:-1] + (d_v,)).to(q.dtype), lse.reshape(q.shape[:-1])


def _rescale(s, m, ell, acc, step, unseen) -> None:
    """Raise the reference ``m`` by ``step`` per row: ``s −= step``, ``ℓ, acc ×= 2^(−step)``
    (rows in ``unseen`` hold ``ℓ = acc = 0`` and are left so: their factor could be ``inf``)."""
    s.sub_(step)
    m.add_(step)
    alpha = step.neg().exp2_()
    if unseen is not None:
        alpha.masked_fill_(unseen, 1.0)
    ell.mul_(alpha)
    acc.mul_(alpha)


def tiled_attention_backward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    out: torch.Tensor,
    lse: torch.Tensor,
    grad_out: torch.Tensor,
    *,
    causal: bool = False,
    window: int | None = None,
    block_mask: np.ndarray | torch.Tensor | None = None,
    block_q: int = BACKWARD_BLOCK_Q,
    block_k: int = BACKWARD_BLOCK_K,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients ``(dq, dk, dv)`` by recomputation, from the saved ``out`` and ``lse`` only.

    Per tile: ``P = exp(S − lse)`` (recomputed), ``dV += Pᵀ dO``, ``dP = dO Vᵀ``,
    ``dS = P ∘ (dP − D)`` with ``D = rowsum(dO ∘ O)``, ``dQ += dS K·scale``, ``dK += dSᵀ Q·scale``:
    five matrix products, one more than a backward that stored ``P``. As in the forward pass,
    ``lse`` (in base 2) and ``D`` are subtracted inside the matrix products (``baddbmm``).

    The grid's programs are key/value blocks (:func:`_launch`): each owns its rows of ``dK`` and
    ``dV`` and loops over the query blocks that see it (the tile map of :func:`visited_tiles`,
    with the masks of the forward pass). ``dQ``
    gathers a contribution from every key block, and two workers may want to add into the same
    rows at once. A GPU kernel uses atomic additions, whose order changes from run to run, and so
    do the last bits of ``dq``; here each query block takes its contributions in the order of
    the key blocks (a worker whose turn has not come waits), so ``dq`` is the same, bit for bit,
    on every run. The queue hands the key blocks out in increasing order, so the worker holding
    the lowest never waits: no deadlock.
    """
    lq, lk, d, scale = check_tensors(q, k, v, block_q, block_k, scale)
    window, block_mask = check_sparsity(causal, window, block_mask, lq, lk, block_q, block_k)
    if out.shape != q.shape[:-1] + v.shape[-1:] or grad_out.shape != out.shape:
        raise ValueError(
            f"out and grad_out must have shape {tuple(q.shape[:-1] + v.shape[-1:])}, "
            f"got {tuple(out.shape)} and {tuple(grad_out.shape)}"
        )
    if lse.shape != q.shape[:-1]:
        raise ValueError(f"lse must have shape {tuple(q.shape[:-1])}, got {tuple(lse.shape)}")
    visit, masked = _tile_grid(lq, lk, block_q, block_k, causal, window, block_mask)
    work, d_v, device = torch.float32 if q.dtype in _HALF else q.dtype, v.shape[-1], q.device
    with torch.no_grad():
        q3 = q.to(work).reshape(-1, lq, d)
        k3 = k.to(work).reshape(-1, lk, d)
        v3 = v.to(work).reshape(-1, lk, d_v)
        do = grad_out.to(work).reshape(-1, lq, d_v)
        out3 = out.to(work).reshape(do.shape)
        delta = torch.empty(*do.shape[:2], 1, dtype=work, device=device)  # D_i = Σ_c dO_ic O_ic
        for start in range(0, lq, block_q):  # by blocks: no Lq × d_v temporary
            rows = slice(start, start + block_q)
            delta[:, rows] = (do[:, rows] * out3[:, rows]).sum(dim=-1, keepdim=True)
        lse2 = lse.to(work).reshape(-1, lq, 1) / _LN_2  # natural log → base 2
        lse2.masked_fill_(lse2 == -math.inf, 0.0)  # a fully masked row: P = 0 anyway
        dq = torch.zeros_like(q3)
        dk, dv = torch.zeros_like(k3), torch.zeros_like(v3)
    slices = _batch_slices(q3.shape[0])
    turn = {(batch.start, i): 0 for batch in slices for i in range(visit.shape[0])}  # added so far
    rank = np.cumsum(visit, axis=1) - 1  # the turn of key block j in query block i
    ready = threading.Condition()
    size = max(b.stop - b.start for b in slices) * min(block_q, lq) * min(block_k, lk)
    buffers: dict[int, torch.Tensor] = {}  # per worker: the tiles of P and dP

    failed: list[BaseException] = []  # a worker's error: the others stop waiting for its turn

    def key_block(cell: tuple[slice, int], worker: int) -> None:
        batch, j = cell
        k_start, k_end = j * block_k, min((j + 1) * block_k, lk)
        if worker not in buffers:
            buffers[worker] = torch.empty(2, size, dtype=work, device=device)
        k_blk, v_blk = k3[batch, k_start:k_end], v3[batch, k_start:k_end]
        dk_blk, dv_blk = dk[batch, k_start:k_end], dv[batch, k_start:k_end]
        for i in np.flatnonzero(visit[:, j]).tolist():
            qs = slice(i * block_q, min((i + 1) * block_q, lq))
            shape = (batch.stop - batch.start, qs.stop - qs.start, k_end - k_start)
            s, dp = (b[: math.prod(shape)].view(shape) for b in buffers[worker])
            torch.baddbmm(lse2[batch, qs], q3[batch, qs], k_blk.transpose(1, 2), beta=-1,
                          alpha=scale / _LN_2, out=s)  # (S − lse)·log2 e
            if masked[i, j]:
                s.masked_fill_(_hidden(qs.start, qs.stop, k_start, k_end, lq, lk, window, device),
                               -math.inf)
            p = s.exp2_()
            dv_blk.baddbmm_(p.transpose(1, 2), do[batch, qs])
            torch.baddbmm(delta[batch, qs], do[batch, qs], v_blk.transpose(1, 2), beta=-1,
                          out=dp)  # dP − D
            ds = p.mul_(dp)
            dk_blk.baddbmm_(ds.transpose(1, 2), q3[batch, qs], alpha=scale)
            def my_turn(i: int = i) -> bool:  # this key block's turn to add to dQ of block i
                return bool(failed) or turn[batch.start, i] == rank[i, j]

            with ready:
                ready.wait_for(my_turn)
                if failed:
                    raise RuntimeError("another worker of the backward pass failed") from failed[0]
            dq[batch, qs].baddbmm_(ds, k_blk, alpha=scale)
            with ready:
                turn[batch.start, i] += 1
                ready.notify_all()

    def program(cell: tuple[slice, int], worker: int) -> None:
        try:
            key_block(cell, worker)
        except BaseException as error:
            with ready:
                failed.append(error)
                ready.notify_all()
            raise

    _launch(program, [(batch, j) for batch in slices for j in range(visit.shape[1])])
    return (dq.reshape(q.shape).to(q.dtype), dk.reshape(k.shape).to(k.dtype),
            dv.reshape(v.shape).to(v.dtype))


class TiledAttention(torch.autograd.Function):
    """Tiled attention with a memory-light backward: it saves only ``q, k, v, out, lse``.

    ``TiledAttention.apply(q, k, v, options, forward_tiles, backward_tiles)`` returns ``out``:
    ``options`` holds ``causal``, ``window``, ``block_mask`` and ``scale``, the tiles are
    ``{"block_q": …, "block_k": …}`` of each pass. The backward recomputes the probabilities tile
    by tile (:func:`tiled_attention_backward`).
    """

    @staticmethod
    def forward(ctx, q, k, v, options, forward_tiles, backward_tiles):
        out, lse = tiled_attention_forward(q, k, v, **options, **forward_tiles)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.options = {**options, **backward_tiles}
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = tiled_attention_backward(q, k, v, out, lse, grad_out, **ctx.options)
        return dq, dk, dv, None, None, None


def tiled_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    window: int | None = None,
    block_mask: np.ndarray | torch.Tensor | None = None,
    block_q: int | None = None,
    block_k: int | None = None,
    scale: float | None = None,
) -> torch.Tensor:
    """Differentiable tiled attention ``(..., Lq, d_v)``: forward and backward both tiled.

    ``block_q`` and ``block_k`` set the tiles of both passes; left out, each pass takes its own
    defaults (:data:`TRAIN_BLOCK_Q` × :data:`TRAIN_BLOCK_K` forward, :data:`BACKWARD_BLOCK_Q` ×
    :data:`BACKWARD_BLOCK_K` backward), except with a ``block_mask``, whose tiles are the
    forward's in both passes.
    """
    options = {"causal": causal, "window": window, "block_mask": block_mask, "scale": scale}
    def tiles(default_q: int, default_k: int) -> dict[str, int]:
        return {"block_q": default_q if block_q is None else block_q,
                "block_k": default_k if block_k is None else block_k}

    forward_tiles = tiles(TRAIN_BLOCK_Q, TRAIN_BLOCK_K)
    backward_tiles = forward_tiles if block_mask is not None else tiles(BACKWARD_BLOCK_Q,
                                                                       BACKWARD_BLOCK_K)
    return TiledAttention.apply(q, k, v, options, forward_tiles, backward_tiles)


# ------------------------------------------------------------------------ measuring memory
_CLEAR_REFS = "/proc/self/clear_refs"  # Linux: writing 5 resets the peak (VmHWM) to the RSS
_MEMORY_SCRIPT = textwrap.dedent(
    """
    import re, sys, threading, torch
    torch.set_num_threads({threads})
    from course_utils.tiled import _memory_methods
    run = _memory_methods({backward})[{method!r}]
    g = torch.Generator().manual_seed(0)
    def make(n):  # q, k, v and the gradient of the output
        return [torch.randn(1, 1, n, {d}, generator=g, requires_grad={backward} and i < 3)
                for i in range(4)]
    def status_kib(field):
        with open("/proc/self/status") as f:
            return int(re.search(field + r":\\s+(\\d+)", f.read()).group(1))
    def sampled_peak(call):  # the highest VmRSS a thread sees while call() runs (every 0.2 ms)
        peak, done = [0], threading.Event()
        def watch():
            while not done.wait(0.0002):
                peak[0] = max(peak[0], status_kib("VmRSS") * 1024)
        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            return call(), peak[0]
        finally:
            done.set()
            watcher.join()
    run(*make(2048))  # warm-up: load the libraries, start the threads, touch their buffers
    for n in {ns}:
        tensors = make(n)
        before = status_kib("VmRSS") * 1024
        if {reset}:
            with open({clear_refs!r}, "w") as f:
                f.write("5")  # reset the peak (VmHWM, what ru_maxrss reports) to the current RSS
            out = run(*tensors)
            peak = status_kib("VmHWM") * 1024
        else:  # no reset: sample the resident memory while the call runs (coarser)
            out, peak = sampled_peak(lambda: run(*tensors))
        print(max(0, peak - before))
        del tensors, out
    """
)


def _memory_methods(backward: bool = False) -> dict[str, Callable]:
    """The attention implementations :func:`peak_extra_memory` can measure, by name: each takes
    ``q, k, v, grad_out`` and returns the output, or with ``backward`` the gradients of q, k, v."""
    from course_utils.attention import scaled_dot_product_attention

    forward = {
        "naive": lambda q, k, v: scaled_dot_product_attention(q, k, v)[0],
        "tiled": lambda q, k, v: tiled_attention_forward(q, k, v)[0],
        "fused": torch.nn.functional.scaled_dot_product_attention,
    }
    if not backward:
        return {name: lambda q, k, v, grad_out, f=f: f(q, k, v) for name, f in forward.items()}
    forward["tiled"] = tiled_attention
    return {name: lambda q, k, v, grad_out, f=f: torch.autograd.grad(f(q, k, v), (q, k, v),
                                                                     grad_out)
            for name, f in forward.items()}


def peak_extra_memory(
    method: str, n: int | Sequence[int], d: int = 64, *, threads: int | None = None,
    backward: bool = False,
) -> int | list[int]:
    """Peak extra bytes one ``(1, 1, n, d)`` float32 attention call needs, in a fresh process.

    Given a list of lengths, one fresh process measures them one after the other (resetting the
    peak counter before each) and a list comes back. With ``backward=True`` the call is the
    forward pass and the backward pass (``torch.autograd.grad`` of the output with a given
    ``grad_out``): the gradients of q, k and v count as extra memory.

    ``method`` is ``"naive"`` (course_utils.attention), ``"tiled"``
    (:func:`tiled_attention_forward`; :func:`tiled_attention` with ``backward``) or ``"fused"``
    (``torch.nn.functional.scaled_dot_product_attention``). A new Python process runs the method
    once as a warm-up, builds q, k, v (and grad_out), reads its resident memory (VmRSS), resets
    the kernel's peak counter (VmHWM, the number behind ``ru_maxrss``), calls the method once
    and reports the new peak minus the reading (``tracemalloc`` cannot see PyTorch's
    allocations, and a fresh process keeps other peaks out). The output tensor (``n·d·4`` bytes)
    counts as extra memory. Where the peak cannot be reset (``/proc/self/clear_refs`` missing or
    read-only, as in some sandboxes), it warns and falls back to sampling VmRSS from a thread
    every 0.2 ms while the call runs: coarser, a short-lived peak can slip between two samples.
    Linux only (``/proc/self/status``).
    """
    if method not in ("naive", "tiled", "fused"):
        raise ValueError(f"method must be 'naive', 'tiled' or 'fused', got {method!r}")
    ns = [n] if isinstance(n, (int, np.integer)) or isinstance(n, bool) else list(n)
    for value in ns:
        check_int(value, "n")
    check_int(d, "d")
    if not os.path.exists("/proc/self/status"):
        raise RuntimeError("peak_extra_memory needs Linux (/proc/self/status)")
    threads = threads or torch.get_num_threads()
    reset = os.access(_CLEAR_REFS, os.W_OK)
    if not reset:
        warnings.warn(
            f"{_CLEAR_REFS} is not writable here: peak_extra_memory samples the resident memory "
            "while the call runs instead of reading the kernel's peak (coarser)",
            RuntimeWarning, stacklevel=2,
        )
    # A fixed mmap threshold makes glibc give every large tensor its own mapping, returned to
    # the system when freed: memory freed earlier cannot hide a peak by being reused.
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "131072"}
    script = _MEMORY_SCRIPT.format(method=method, ns=[int(x) for x in ns], d=d, threads=threads,
                                   backward=bool(backward), reset=reset, clear_refs=_CLEAR_REFS)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, env=env
    )
    if done.returncode != 0:
        raise RuntimeError(f"measuring {method} at n={n} failed:\n{done.stderr[-2000:]}")
    measured = [int(line) for line in done.stdout.split()]
    return measured if len(ns) != 1 or not isinstance(n, (int, np.integer)) else measured[0]


# ------------------------------------------------------------------------------ validation
def _as_float_vector(name: str, x: object) -> np.ndarray:
    array = np.asarray(x, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must hold finite numbers")
    return array


def check_sparsity(
    causal: bool, window: object, block_mask: object, lq: int, lk: int, block_q: int, block_k: int
) -> tuple[int | None, np.ndarray | None]:
    """Check ``window`` (an int ≥ 1, with ``causal=True``) and ``block_mask`` (a boolean
    ``(⌈Lq/block_q⌉, ⌈Lk/block_k⌉)`` array or tensor); return them as int and NumPy array."""
    if window is not None:
        window = check_int(window, "window")
        if not causal:
            raise ValueError("window needs causal=True: a sliding window holds the W most "
                             "recent keys of each query")
    if block_mask is None:
        return window, None
    if isinstance(block_mask, torch.Tensor):
        block_mask = block_mask.detach().cpu().numpy()
    block_mask = np.asarray(block_mask)
    if block_mask.dtype != bool:
        raise TypeError(f"block_mask must be a boolean array, got dtype {block_mask.dtype}")
    tiles = (-(-lq // block_q), -(-lk // block_k))
    if block_mask.shape != tiles:
        raise ValueError(f"block_mask must have shape {tiles} (⌈Lq/block_q⌉, ⌈Lk/block_k⌉), "
                         f"got {block_mask.shape}")
    return window, block_mask


def _check_shapes(
    q_shape, k_shape, v_shape, block_q, block_k, scale
) -> tuple[int, int, int, float]:
    """Check q (..., Lq, d), k (..., Lk, d), v (..., Lk, d_v); return Lq, Lk, d and the scale."""
    check_int(block_q, "block_q")
    check_int(block_k, "block_k")
    for name, shape in (("q", q_shape), ("k", k_shape), ("v", v_shape)):
        if len(shape) < 2:
            raise ValueError(f"{name} must have shape (..., length, dim), got {tuple(shape)}")
        if 0 in shape:
            raise ValueError(f"{name} must not be empty, got shape {tuple(shape)}")
    if tuple(q_shape[:-2]) != tuple(k_shape[:-2]) or tuple(k_shape[:-2]) != tuple(v_shape[:-2]):
        raise ValueError(
            f"q, k and v must share their leading (batch, head) axes, got {tuple(q_shape)}, "
            f"{tuple(k_shape)} and {tuple(v_shape)}"
        )
    if q_shape[-1] != k_shape[-1]:
        raise ValueError(
            f"q and k must have the same last axis d, got {q_shape[-1]} and {k_shape[-1]}"
        )
    if k_shape[-2] != v_shape[-2]:
        raise ValueError(
            f"k and v must have the same length Lk, got {k_shape[-2]} and {v_shape[-2]}"
        )
    d = int(q_shape[-1])
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    elif isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale):
        raise TypeError(f"scale must be a finite float or None, got {scale!r}")
    return int(q_shape[-2]), int(k_shape[-2]), d, float(scale)


def check_tensors(q, k, v, block_q, block_k, scale) -> tuple[int, int, int, float]:
    """The attention inputs of this module and of :mod:`course_utils.triton_attention` and
    :mod:`course_utils.linear_attention`: ``q (..., Lq, d)``, ``k (..., Lk, d)``,
    ``v (..., Lk, d_v)`` float tensors of one dtype and device with equal leading axes, tile sizes
    and the scale checked; returns ``Lq``, ``Lk``, ``d`` and the scale (``1/√d`` for None)."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype not in _FLOAT_DTYPES:
            raise TypeError(f"{name} must be float16, bfloat16, float32 or float64, got {t.dtype}")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"q, k and v must share a dtype, got {q.dtype}, {k.dtype} and {v.dtype}")
    if not q.device == k.device == v.device:
        raise ValueError(
            f"q, k and v must be on one device, got {q.device}, {k.device}, {v.device}"
        )
    return _check_shapes(q.shape, k.shape, v.shape, block_q, block_k, scale)

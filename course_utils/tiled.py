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
* sequence lengths need not be multiples of the block sizes (the last block is shorter);
* float16 and bfloat16 inputs are computed (and accumulated) in float32, the output is cast back
  to the input dtype and the log-sum-exp stays float32.

``tiled_attention_numpy`` is written for reading; ``tiled_attention_forward`` is the PyTorch
version for speed (in base 2, with the max subtracted inside the matrix product and lazy
rescaling: see its docstring); ``tiled_attention`` adds a backward pass that recomputes the
probabilities tile by tile from the saved output and log-sum-exp.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator, Sequence

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
def _key_end(q_start: int, q_end: int, lq: int, lk: int, causal: bool) -> int:
    """One past the last key that any query row in ``[q_start, q_end)`` may see."""
    if not causal:
        return lk
    return max(0, min(lk, q_end + lk - lq))


def _tiles(
    lq: int, lk: int, block_q: int, block_k: int, causal: bool
) -> Iterator[tuple[int, int, list[tuple[int, int, bool]]]]:
    """Query blocks ``(q_start, q_end, key_tiles)`` with ``key_tiles = [(k_start, k_end, masked)]``.

    Tiles entirely above the causal diagonal are left out; ``masked`` marks a tile that crosses
    it (some of its keys are hidden from some of its rows).
    """
    for q_start in range(0, lq, block_q):
        q_end = min(q_start + block_q, lq)
        key_end = _key_end(q_start, q_end, lq, lk, causal)
        first_row_limit = q_start + lk - lq  # the last key the block's first row may see
        key_tiles = [
            (
                k_start,
                min(k_start + block_k, key_end),
                causal and min(k_start + block_k, key_end) - 1 > first_row_limit,
            )
            for k_start in range(0, key_end, block_k)
        ]
        yield q_start, q_end, key_tiles


def visited_tiles(lq: int, lk: int, block_q: int, block_k: int, causal: bool = False) -> np.ndarray:
    """Boolean map ``(⌈Lq/block_q⌉, ⌈Lk/block_k⌉)``: True where the tiled loop visits a tile.

    Without a mask every tile is visited; with ``causal=True`` a tile is visited exactly when at
    least one of its (query, key) pairs is allowed, so the tiles above the diagonal (about half)
    are skipped.
    """
    for name, value in (("lq", lq), ("lk", lk), ("block_q", block_q), ("block_k", block_k)):
        check_int(value, name)
    grid = np.zeros((-(-lq // block_q), -(-lk // block_k)), dtype=bool)
    for q_start, _, key_tiles in _tiles(lq, lk, block_q, block_k, causal):
        for k_start, _, _ in key_tiles:
            grid[q_start // block_q, k_start // block_k] = True
    return grid


# ------------------------------------------------------------------------- NumPy, for reading
def tiled_attention_numpy(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    *,
    causal: bool = False,
    block_q: int = 64,
    block_k: int = 64,
    scale: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Tiled attention in NumPy: ``(out (..., Lq, d_v), lse (..., Lq))`` without an Lq×Lk matrix.

    ``out = softmax(q kᵀ·scale [+ causal mask]) v`` and ``lse = logsumexp(q kᵀ·scale)`` per row,
    computed block by block (FlashAttention-2 order). Float arrays only; the result has the
    dtype of ``q`` (float32 or float64). See the module docstring for the mask semantics.
    """
    q, k, v = (np.asarray(t) for t in (q, k, v))
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dtype not in (np.float32, np.float64):
            raise TypeError(f"{name} must be a float32 or float64 array, got dtype {t.dtype}")
    lq, lk, d, scale = _check_shapes(q.shape, k.shape, v.shape, block_q, block_k, scale)
    dtype = np.result_type(q, k, v)
    out = np.zeros(q.shape[:-1] + v.shape[-1:], dtype=dtype)
    lse = np.full(q.shape[:-1], -np.inf, dtype=dtype)
    for q_start, q_end, key_tiles in _tiles(lq, lk, block_q, block_k, causal):
        q_blk = q[..., q_start:q_end, :] * dtype.type(scale)
        rows = np.arange(q_start, q_end)[:, None]
        m = np.full(q_blk.shape[:-1], -np.inf, dtype=dtype)  # running max
        ell = np.zeros(q_blk.shape[:-1], dtype=dtype)  # running sum of exp(s - m)
        acc = np.zeros(q_blk.shape[:-1] + v.shape[-1:], dtype=dtype)  # unnormalised output
        for k_start, k_end, masked in key_tiles:
            s = q_blk @ np.swapaxes(k[..., k_start:k_end, :], -1, -2)  # (..., bq, bk)
            if masked:  # the diagonal tile: hide keys j > i + Lk - Lq
                s = np.where(np.arange(k_start, k_end)[None, :] <= rows + lk - lq, s, -np.inf)
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
# Default tiles of every PyTorch function here, forward and backward: 1024 query rows × 512 keys
# (2 MiB of float32 scores per batch·head), the fastest forward measured on a 2-core AVX2 CPU at
# N = 16,384, d = 64. The backward at N = 4,096 is within about 15% of its fastest tile with
# them (`python benchmarks/attention.py --tiles` prints both as ratios).
BLOCK_Q, BLOCK_K = 1024, 512


def tiled_attention_forward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    block_q: int = BLOCK_Q,
    block_k: int = BLOCK_K,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Tiled attention forward in PyTorch: ``(out (..., Lq, d_v), lse (..., Lq))``.

    The same algorithm as :func:`tiled_attention_numpy`, with in-place tile updates into one
    reused score buffer, so that the extra memory is ``O(block_q·block_k + Lq·d_v)`` instead of
    ``O(Lq·Lk)``. Runs without recording an autograd graph (use :func:`tiled_attention` for
    gradients). ``lse`` is float32 for half-precision inputs, else the input dtype.

    Each tile costs two matrix products plus a few passes over its ``block_q × block_k`` scores,
    so three tricks that save passes make it fast on a CPU (the result is unchanged):

    * **base 2**: ``log2 e`` is folded into the scale of ``q``, so scores ``s`` are in base-2 units
      and the tile uses ``exp2``, cheaper than ``exp`` (``e^x = 2^(x·log2 e)``); at the end
      ``lse = (m + log2 ℓ)·ln 2``. The Triton kernel does the same.
    * **the max is subtracted inside the matrix product**: ``baddbmm(m, q, kᵀ, beta=−1)``
      computes ``q kᵀ − m`` in one call, instead of a product and then a subtraction pass.
    * **lazy rescaling** (as in FlashAttention-4): ``m`` does not have to be the exact running
      max. Any reference value gives the same result, because ``acc`` and ``ℓ`` both carry the
      factor ``2^(−m)``, which cancels in ``out = acc / ℓ`` and is added back in
      ``lse = m + log2 ℓ``. So ``m`` is raised (and ``ℓ``, ``acc`` rescaled by
      ``2^(m_old − m_new)``) only when some row's max rose more than 8 above it; in between every
      ``p = 2^(s − m) ≤ 2^8``, far from overflowing, and most tiles skip the rescale.

    The default tiles are :data:`BLOCK_Q` × :data:`BLOCK_K` = 1024 × 512.
    """
    lq, lk, d, scale = _check_tensors(q, k, v, block_q, block_k, scale)
    work = torch.float32 if q.dtype in _HALF else q.dtype
    d_v = v.shape[-1]
    with torch.no_grad():  # flatten the leading axes: (batch·heads, length, dim) for torch.bmm
        q3 = q.to(work).reshape(-1, lq, d) * (scale / _LN_2)  # scores in base 2: s·log2 e
        batch = q3.shape[0]
        k_t = k.to(work).reshape(-1, lk, d).transpose(1, 2).contiguous()  # (B, d, Lk)
        v3 = v.to(work).reshape(-1, lk, d_v)
        out = torch.empty(batch, lq, d_v, dtype=work, device=q.device)
        lse = torch.empty(batch, lq, dtype=work, device=q.device)
        tile = torch.empty(  # one buffer, reused by every score tile
            batch * min(block_q, lq) * min(block_k, lk), dtype=work, device=q.device
        )
        for q_start, q_end, key_tiles in _tiles(lq, lk, block_q, block_k, causal):
            q_blk = q3[:, q_start:q_end]
            rows = q_end - q_start
            m = torch.zeros(batch, rows, 1, dtype=work, device=q.device)  # the first tile sets it
            ell = torch.zeros_like(m)
            acc = torch.zeros(batch, rows, d_v, dtype=work, device=q.device)
            for i, (k_start, k_end, masked) in enumerate(key_tiles):
                s = tile[: batch * rows * (k_end - k_start)].view(batch, rows, k_end - k_start)
                torch.baddbmm(m, q_blk, k_t[:, :, k_start:k_end], beta=-1, out=s)  # q kᵀ − m
                if masked:
                    s.masked_fill_(
                        _hidden(q_start, q_end, k_start, k_end, lq, lk, q.device), -math.inf
                    )
                growth = s.amax(dim=-1, keepdim=True)  # how far each row's max lies above m
                if i == 0:  # m = the first tile's max (0 for a row whose keys are all hidden)
                    m = growth.masked_fill_(growth == -math.inf, 0.0)
                    s.sub_(m)
                elif growth.max() > _RESCALE_ABOVE:  # lazy rescaling, see the docstring
                    growth.clamp_(min=0.0)  # m_new − m_old, per row
                    s.sub_(growth)
                    m.add_(growth)
                    alpha = growth.neg_().exp2_()  # 2^(m_old − m_new)
                    ell.mul_(alpha)
                    acc.mul_(alpha)
                p = s.exp2_()  # reuse the tile's memory
                ell.add_(p.sum(dim=-1, keepdim=True))
                acc.baddbmm_(p, v3[:, k_start:k_end])
            seen = ell > 0
            ell_safe = torch.where(seen, ell, 1.0)
            out[:, q_start:q_end] = (acc / ell_safe).masked_fill_(~seen, 0.0)
            lse_blk = (m + ell_safe.log2()) * _LN_2  # back from base 2 to the natural log
            lse[:, q_start:q_end] = lse_blk.masked_fill_(~seen, -math.inf).squeeze(-1)
    return out.reshape(q.shape[:-1] + (d_v,)).to(q.dtype), lse.reshape(q.shape[:-1])


def tiled_attention_backward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    out: torch.Tensor,
    lse: torch.Tensor,
    grad_out: torch.Tensor,
    *,
    causal: bool = False,
    block_q: int = BLOCK_Q,
    block_k: int = BLOCK_K,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients ``(dq, dk, dv)`` by recomputation, from the saved ``out`` and ``lse`` only.

    Per tile: ``P = exp(S − lse)`` (recomputed), ``dV += Pᵀ dO``, ``dP = dO Vᵀ``,
    ``dS = P ∘ (dP − D)`` with ``D = rowsum(dO ∘ O)``, ``dQ += dS K·scale``, ``dK += dSᵀ Q·scale``.
    Outer loop over key/value blocks (their gradients stay in one accumulator), inner over
    query blocks, the same tiles as the forward pass.
    """
    lq, lk, _, scale = _check_tensors(q, k, v, block_q, block_k, scale)
    if out.shape != q.shape[:-1] + v.shape[-1:] or grad_out.shape != out.shape:
        raise ValueError(
            f"out and grad_out must have shape {tuple(q.shape[:-1] + v.shape[-1:])}, "
            f"got {tuple(out.shape)} and {tuple(grad_out.shape)}"
        )
    if lse.shape != q.shape[:-1]:
        raise ValueError(f"lse must have shape {tuple(q.shape[:-1])}, got {tuple(lse.shape)}")
    work = torch.float32 if q.dtype in _HALF else q.dtype
    with torch.no_grad():
        q_w, k_w, v_w, do = (t.to(work) for t in (q, k, v, grad_out))
        delta = (do * out.to(work)).sum(dim=-1)  # D_i = Σ_c dO_ic O_ic
        lse_safe = lse.to(work).masked_fill(lse == -math.inf, 0.0)  # masked rows: P = 0 anyway
        dq, dk, dv = torch.zeros_like(q_w), torch.zeros_like(k_w), torch.zeros_like(v_w)
        by_key_block: dict[int, list[tuple[int, int, int, bool]]] = {}
        for q_start, q_end, key_tiles in _tiles(lq, lk, block_q, block_k, causal):
            for k_start, k_end, masked in key_tiles:
                by_key_block.setdefault(k_start, []).append((q_start, q_end, k_end, masked))
        for k_start, query_tiles in by_key_block.items():
            k_blk, v_blk = k_w[..., k_start:, :], v_w[..., k_start:, :]
            dk_blk = torch.zeros_like(k_w[..., k_start : k_start + block_k, :])
            dv_blk = torch.zeros_like(v_w[..., k_start : k_start + block_k, :])
            for q_start, q_end, k_end, masked in query_tiles:
                width = k_end - k_start
                qs = slice(q_start, q_end)
                s = (q_w[..., qs, :] * scale) @ k_blk[..., :width, :].transpose(-1, -2)
                if masked:
                    s.masked_fill_(
                        _hidden(q_start, q_end, k_start, k_end, lq, lk, q.device), -math.inf
                    )
                p = s.sub_(lse_safe[..., qs].unsqueeze(-1)).exp_()
                dv_blk[..., :width, :] += p.transpose(-1, -2) @ do[..., qs, :]
                dp = do[..., qs, :] @ v_blk[..., :width, :].transpose(-1, -2)
                ds = p.mul_(dp.sub_(delta[..., qs].unsqueeze(-1)))
                dq[..., qs, :] += (ds @ k_blk[..., :width, :]) * scale
                dk_blk[..., :width, :] += (ds.transpose(-1, -2) @ q_w[..., qs, :]) * scale
            dk[..., k_start : k_start + dk_blk.shape[-2], :] = dk_blk
            dv[..., k_start : k_start + dv_blk.shape[-2], :] = dv_blk
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype)


class TiledAttention(torch.autograd.Function):
    """Tiled attention with a memory-light backward: it saves only ``q, k, v, out, lse``.

    ``TiledAttention.apply(q, k, v, causal, block_q, block_k, scale)`` returns ``out``; the
    backward recomputes the probabilities tile by tile (:func:`tiled_attention_backward`).
    """

    @staticmethod
    def forward(ctx, q, k, v, causal, block_q, block_k, scale):  # type: ignore[override]
        out, lse = tiled_attention_forward(
            q, k, v, causal=causal, block_q=block_q, block_k=block_k, scale=scale
        )
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.options = {"causal": causal, "block_q": block_q, "block_k": block_k, "scale": scale}
        return out

    @staticmethod
    def backward(ctx, grad_out):  # type: ignore[override]
        q, k, v, out, lse = ctx.saved_tensors
        dq, dk, dv = tiled_attention_backward(q, k, v, out, lse, grad_out, **ctx.options)
        return dq, dk, dv, None, None, None, None


def tiled_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    block_q: int = BLOCK_Q,
    block_k: int = BLOCK_K,
    scale: float | None = None,
) -> torch.Tensor:
    """Differentiable tiled attention ``(..., Lq, d_v)``: forward and backward both tiled."""
    return TiledAttention.apply(q, k, v, causal, block_q, block_k, scale)


# ------------------------------------------------------------------------ measuring memory
_CLEAR_REFS = "/proc/self/clear_refs"  # Linux: writing 5 resets the peak (VmHWM) to the RSS
_MEMORY_SCRIPT = textwrap.dedent(
    """
    import re, sys, threading, torch
    torch.set_num_threads({threads})
    from course_utils.tiled import _memory_methods
    run = _memory_methods()[{method!r}]
    g = torch.Generator().manual_seed(0)
    def make(n):
        return [torch.randn(1, 1, n, {d}, generator=g) for _ in range(3)]
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
    run(*make(256))  # warm-up: load the libraries and start the thread pool
    for n in {ns}:
        q, k, v = make(n)
        before = status_kib("VmRSS") * 1024
        if {reset}:
            with open({clear_refs!r}, "w") as f:
                f.write("5")  # reset the peak (VmHWM, what ru_maxrss reports) to the current RSS
            out = run(q, k, v)
            peak = status_kib("VmHWM") * 1024
        else:  # no reset: sample the resident memory while the call runs (coarser)
            out, peak = sampled_peak(lambda: run(q, k, v))
        print(max(0, peak - before))
        del q, k, v, out
    """
)


def _memory_methods() -> dict:
    """The attention implementations :func:`peak_extra_memory` can measure, by name."""
    from course_utils.attention import scaled_dot_product_attention

    return {
        "naive": lambda q, k, v: scaled_dot_product_attention(q, k, v)[0],
        "tiled": lambda q, k, v: tiled_attention_forward(q, k, v)[0],
        "fused": torch.nn.functional.scaled_dot_product_attention,
    }


def peak_extra_memory(
    method: str, n: int | Sequence[int], d: int = 64, *, threads: int | None = None
) -> int | list[int]:
    """Peak extra bytes one ``(1, 1, n, d)`` float32 attention call needs, in a fresh process.

    Given a list of lengths, one fresh process measures them one after the other (resetting the
    peak counter before each) and a list comes back.

    ``method`` is ``"naive"`` (course_utils.attention), ``"tiled"``
    (:func:`tiled_attention_forward`) or ``"fused"``
    (``torch.nn.functional.scaled_dot_product_attention``). A new Python process runs the method
    once as a warm-up, builds q, k, v, reads its resident memory (VmRSS), resets the kernel's
    peak counter (VmHWM, the number behind ``ru_maxrss``), calls the method once and reports the
    new peak minus the reading (``tracemalloc`` cannot see PyTorch's allocations, and a fresh
    process keeps other peaks out). The output tensor (``n·d·4`` bytes) counts as extra memory.
    Where the peak cannot be reset (``/proc/self/clear_refs`` missing or read-only, as in some
    sandboxes), it warns and falls back to sampling VmRSS from a thread every 0.2 ms while the
    call runs: coarser, a short-lived peak can slip between two samples. Linux only
    (``/proc/self/status``).
    """
    if method not in ("naive", "tiled", "fused"):
        raise ValueError(f"method must be 'naive', 'tiled' or 'fused', got {method!r}")
    ns = [n] if isinstance(n, (int, np.integer)) and not isinstance(n, bool) else list(n)
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
    script = _MEMORY_SCRIPT.format(method=method, ns=[int(x) for x in ns], d=d,
                                   threads=threads, reset=reset, clear_refs=_CLEAR_REFS)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, env=env
    )
    if done.returncode != 0:
        raise RuntimeError(f"measuring {method} at n={n} failed:\n{done.stderr[-2000:]}")
    measured = [int(line) for line in done.stdout.split()]
    return measured if len(ns) != 1 or not isinstance(n, (int, np.integer)) else measured[0]


# ------------------------------------------------------------------------------ validation
def _hidden(
    q_start: int, q_end: int, k_start: int, k_end: int, lq: int, lk: int, device
) -> torch.Tensor:
    """True where key ``j`` is hidden from query ``i`` in a diagonal tile: ``j > i + Lk − Lq``."""
    rows = torch.arange(q_start, q_end, device=device).unsqueeze(-1)
    cols = torch.arange(k_start, k_end, device=device)
    return cols > rows + (lk - lq)


def _as_float_vector(name: str, x: object) -> np.ndarray:
    array = np.asarray(x, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must hold finite numbers")
    return array


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


def _check_tensors(q, k, v, block_q, block_k, scale) -> tuple[int, int, int, float]:
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

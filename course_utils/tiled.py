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

* shapes ``q: (..., Lq, d)``, ``k: (..., Lk, d)``, ``v: (..., Lk, d_v)`` with equal leading
  axes; output ``(..., Lq, d_v)`` and log-sum-exp ``(..., Lq)``; the scale defaults to ``1/√d``;
* ``causal=True`` aligns the mask bottom-right: query ``i`` sees keys ``j ≤ i + Lk − Lq`` (as
  PyTorch's ``causal_lower_right`` and FlashAttention); when ``Lq > Lk`` the first ``Lq − Lk``
  rows see no key at all — such a fully masked row gives output 0 and log-sum-exp ``−inf``;
* ``window=W`` (with ``causal=True``): sliding-window (local) attention, query ``i`` sees only
  the ``W`` most recent keys, ``i + Lk − Lq − W < j ≤ i + Lk − Lq``;
* ``block_mask``: block-sparse attention, a boolean ``(⌈Lq/block_q⌉, ⌈Lk/block_k⌉)`` grid of
  the tiles to visit (True = visit); the pairs of an unvisited tile are masked out;
* tiles that hold no allowed (query, key) pair are never visited (:class:`TileMap`), so causal
  attention costs about half of dense, and sliding-window attention ``O(N·W·d)``;
* sequence lengths need not be multiples of the block sizes (the last block is shorter);
* float16 and bfloat16 inputs are computed (and accumulated) in float32, the output is cast back
  to the input dtype and the log-sum-exp stays float32.

Return convention (as every attention function of the course): a forward function returns
``(out, softmax statistics)`` — here the log-sum-exp per row, for dense attention the weights;
the differentiable :func:`tiled_attention` returns ``out``. ``tiled_attention_numpy`` is written
for reading; ``tiled_attention_forward`` is the PyTorch version for speed (base 2, the max
subtracted inside the matrix product, lazy rescaling, the query blocks spread over the CPU's
cores like a GPU grid: see its docstring); ``tiled_attention`` adds a backward pass that
recomputes the probabilities tile by tile from the saved output and log-sum-exp. The online
softmax itself, and the merging of partial results, are in :mod:`course_utils.online_softmax`.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np
import torch

from course_utils.cpu_grid import batch_slices, run_grid
from course_utils.validation import (
    check_attention_inputs,
    check_int,
    check_window,
)

_HALF = (torch.float16, torch.bfloat16)
_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_LN_2 = math.log(2.0)
_RESCALE_ABOVE = 8.0  # lazy rescaling: move m only when a row's max rose more than 8 bits above it
# Default tiles (block_q × block_k), chosen with `python benchmarks/attention.py --tiles` and
# side-by-side runs on 2-core AVX2 and AVX-512 CPUs (512 KiB and 1 MiB of L2 cache per core) at
# N = 16,384, d = 64. The forward pass holds one tile of scores per worker, with few calls per
# tile. The backward pass holds one tile of P and half a tile of dP, so that forward + backward
# needs no more memory than PyTorch's fused kernel at that N.
BLOCK_Q, BLOCK_K = 1024, 256
BACKWARD_BLOCK_Q, BACKWARD_BLOCK_K = 256, 256


# ------------------------------------------------------------------------------ the tile map
@dataclass(frozen=True, eq=False)
class TileMap:
    """Which tiles the loops visit, built once from the tiling options (:meth:`build`).

    ``visit`` and ``masked`` are boolean ``(⌈Lq/block_q⌉, ⌈Lk/block_k⌉)`` grids: a tile is
    visited when some (query, key) pair of it is allowed, and ``masked`` when it is visited but
    some pair is hidden, so the tile needs the element mask (:meth:`hidden`).
    """

    lq: int
    lk: int
    block_q: int
    block_k: int
    causal: bool
    window: int | None
    block_mask: np.ndarray | None
    visit: np.ndarray
    masked: np.ndarray

    @classmethod
    def build(
        cls, lq: int, lk: int, block_q: int, block_k: int, *, causal: bool = False,
        window: int | None = None, block_mask: np.ndarray | torch.Tensor | None = None,
    ) -> TileMap:
        """The map of these options, checked (``window`` needs ``causal``; ``block_mask`` is a
        boolean grid of the tiles' shape)."""
        lq, lk, block_q, block_k = (check_int(value, name) for name, value in (
            ("lq", lq), ("lk", lk), ("block_q", block_q), ("block_k", block_k)))
        window = check_window(window, causal)
        tiles = (-(-lq // block_q), -(-lk // block_k))
        if block_mask is not None:
            if isinstance(block_mask, torch.Tensor):
                block_mask = block_mask.detach().cpu().numpy()
            block_mask = np.asarray(block_mask)
            if block_mask.dtype != bool:
                raise TypeError(f"block_mask must be a boolean array, got dtype "
                                f"{block_mask.dtype}")
            if block_mask.shape != tiles:
                raise ValueError(f"block_mask must have shape {tiles} (⌈Lq/block_q⌉, "
                                 f"⌈Lk/block_k⌉), got {block_mask.shape}")
        visit, masked = cls._grids(lq, lk, block_q, block_k, bool(causal), window, block_mask)
        return cls(lq, lk, block_q, block_k, bool(causal), window, block_mask, visit, masked)

    @staticmethod
    def _grids(lq, lk, block_q, block_k, causal, window, block_mask):
        """With ``o = Lk − Lq``, row ``i`` sees ``i + o − W < j ≤ i + o``, so the rows that see
        at least one key of the tile ``[k0, k1)`` are ``[k0 − o, k1 − 1 − o + W)`` and those
        that see all of them ``[k1 − 1 − o, k0 − o + W)`` (no bound where there is no mask)."""
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

    def rows(self, i: int) -> slice:
        """The query rows of query block ``i``."""
        return self._rows(check_int(i, "i", minimum=0, maximum=self.visit.shape[0] - 1))

    def keys(self, j: int) -> slice:
        """The keys of key block ``j``."""
        return self._keys(check_int(j, "j", minimum=0, maximum=self.visit.shape[1] - 1))

    def key_blocks(self, i: int) -> list[int]:
        """The visited key blocks of query block ``i``, in order."""
        i = check_int(i, "i", minimum=0, maximum=self.visit.shape[0] - 1)
        return np.flatnonzero(self.visit[i]).tolist()

    def query_blocks(self, j: int) -> list[int]:
        """The query blocks that visit key block ``j``, in order."""
        j = check_int(j, "j", minimum=0, maximum=self.visit.shape[1] - 1)
        return np.flatnonzero(self.visit[:, j]).tolist()

    def hidden(self, i: int, j: int, device: torch.device | str = "cpu") -> torch.Tensor:
        """``(rows, keys)`` of tile ``(i, j)``: True where key ``j`` is hidden from query ``i``,
        ``j > i + Lk − Lq``, or ``j ≤ i + Lk − Lq − W`` with a window."""
        return self._hidden(self.rows(i), self.keys(j), device)

    def retiled(self, block_q: int, block_k: int) -> TileMap:
        """The map of the same masks with tiles ``block_q × block_k`` (a ``block_mask`` is drawn
        on this map's tiles, so a map with one stays as it is)."""
        if self.block_mask is not None:
            return self
        return TileMap.build(self.lq, self.lk, block_q, block_k, causal=self.causal,
                             window=self.window)

    # the cores of the accessors, for the tiled loops (i and j come from the map itself)
    def _rows(self, i: int) -> slice:
        return slice(i * self.block_q, min((i + 1) * self.block_q, self.lq))

    def _keys(self, j: int) -> slice:
        return slice(j * self.block_k, min((j + 1) * self.block_k, self.lk))

    def _hidden(self, rows: slice, keys: slice, device: torch.device | str) -> torch.Tensor:
        offset = (torch.arange(keys.start, keys.stop, device=device)
                  - torch.arange(rows.start, rows.stop, device=device).unsqueeze(-1)
                  - (self.lk - self.lq))
        return offset > 0 if self.window is None else (offset > 0) | (offset <= -self.window)


def visited_tiles(
    lq: int, lk: int, block_q: int, block_k: int, *, causal: bool = False,
    window: int | None = None, block_mask: np.ndarray | torch.Tensor | None = None,
) -> np.ndarray:
    """Boolean map ``(⌈Lq/block_q⌉, ⌈Lk/block_k⌉)``: True where the tiled loop visits a tile.

    A tile is visited exactly when at least one of its (query, key) pairs is allowed: every tile
    without a mask; about half with ``causal=True`` (the tiles above the diagonal are skipped); a
    band of about ``W/block_k + 1`` tiles per query block with ``window=W``; and only the tiles
    ``block_mask`` keeps.
    """
    return TileMap.build(lq, lk, block_q, block_k, causal=causal, window=window,
                         block_mask=block_mask).visit


def dense_mask(
    lq: int, lk: int, *, causal: bool = False, window: int | None = None,
    block_mask: np.ndarray | torch.Tensor | None = None, block_q: int = BLOCK_Q,
    block_k: int = BLOCK_K,
) -> torch.Tensor:
    """The dense ``(Lq, Lk)`` boolean mask (True = attend) equal to these tiled options.

    ``j ≤ i + Lk − Lq`` (causal), ``j > i + Lk − Lq − W`` (window), and the pair's tile kept by
    ``block_mask`` (whose tiles are ``block_q × block_k``). Builds all ``Lq·Lk`` entries: for
    references and pictures, not for speed.
    """
    tiles = TileMap.build(lq, lk, block_q, block_k, causal=causal, window=window,
                          block_mask=block_mask)
    offset = torch.arange(lk)[None, :] - torch.arange(lq)[:, None] - (lk - lq)  # j − i − (Lk − Lq)
    allowed = offset <= 0 if causal else torch.ones(lq, lk, dtype=torch.bool)
    if window is not None:
        allowed &= offset > -window
    if tiles.block_mask is not None:
        kept = torch.from_numpy(tiles.block_mask)
        allowed &= kept.repeat_interleave(block_q, 0)[:lq].repeat_interleave(block_k, 1)[:, :lk]
    return allowed


# ------------------------------------------------------------------------- NumPy, for reading
def tiled_attention_numpy(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    *,
    causal: bool = False,
    window: int | None = None,
    block_mask: np.ndarray | None = None,
    block_q: int = BLOCK_Q,
    block_k: int = BLOCK_K,
    scale: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Tiled attention in NumPy: ``(out (..., Lq, d_v), lse (..., Lq))`` without an Lq×Lk matrix.

    ``out = softmax(q kᵀ·scale [+ mask]) v`` and ``lse = logsumexp(q kᵀ·scale [+ mask])`` per
    row, computed block by block (FlashAttention-2 order). Float arrays only; the result has the
    dtype of ``q`` (float32 or float64). See the module docstring for the masks.
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, np.ndarray) or t.dtype not in (np.float32, np.float64):
            what = f"dtype {t.dtype}" if isinstance(t, np.ndarray) else type(t).__name__
            raise TypeError(f"{name} must be a float32 or float64 array, got {what}")
    lq, lk, _, scale = check_attention_inputs(torch.from_numpy(q), torch.from_numpy(k),
                                              torch.from_numpy(v), scale)
    tiles = TileMap.build(lq, lk, block_q, block_k, causal=causal, window=window,
                          block_mask=block_mask)
    dtype = np.result_type(q, k, v)
    out = np.zeros(q.shape[:-1] + v.shape[-1:], dtype=dtype)
    lse = np.full(q.shape[:-1], -np.inf, dtype=dtype)
    for i in range(tiles.visit.shape[0]):
        rows = tiles._rows(i)
        q_blk = q[..., rows, :] * dtype.type(scale)
        m = np.full(q_blk.shape[:-1], -np.inf, dtype=dtype)  # running max
        ell = np.zeros(q_blk.shape[:-1], dtype=dtype)  # running sum of exp(s - m)
        acc = np.zeros(q_blk.shape[:-1] + v.shape[-1:], dtype=dtype)  # unnormalised output
        for j in np.flatnonzero(tiles.visit[i]).tolist():
            keys = tiles._keys(j)
            s = q_blk @ np.swapaxes(k[..., keys, :], -1, -2)  # (..., bq, bk)
            if tiles.masked[i, j]:  # a tile on the diagonal or the window's edge
                s = np.where(tiles._hidden(rows, keys, "cpu").numpy(), -np.inf, s)
            m_new = np.maximum(m, s.max(axis=-1))
            m_safe = np.where(np.isneginf(m_new), 0.0, m_new)  # a row with nothing seen yet
            p = np.exp(s - m_safe[..., None])
            alpha = np.exp(m - m_safe)  # e^(m_old - m_new): rescales the old sum and output
            ell = alpha * ell + p.sum(axis=-1)
            acc = alpha[..., None] * acc + p @ v[..., keys, :]
            m = m_new
        seen = ell > 0
        out[..., rows, :] = np.where(seen[..., None], acc / np.where(seen, ell, 1)[..., None], 0)
        lse[..., rows] = np.where(seen, m + np.log(np.where(seen, ell, 1)), -np.inf)
    return out, lse


# ---------------------------------------------------------------------- PyTorch, for speed
def _check(q, k, v, causal, window, block_mask, block_q, block_k, scale) -> tuple[TileMap, float]:
    """The door of the PyTorch functions: the inputs checked, the tile map and the scale."""
    lq, lk, _, scale = check_attention_inputs(q, k, v, scale, dtypes=_FLOAT_DTYPES)
    return TileMap.build(lq, lk, block_q, block_k, causal=causal, window=window,
                         block_mask=block_mask), scale


def _flat(t: torch.Tensor, work: torch.dtype) -> torch.Tensor:
    """``(..., length, dim)`` as ``(batch·heads, length, dim)`` in the working dtype (a view
    when possible), for ``torch.bmm``."""
    return t.to(work).reshape(-1, *t.shape[-2:])


def _work_dtype(q: torch.Tensor) -> torch.dtype:
    return torch.float32 if q.dtype in _HALF else q.dtype


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
    reused score buffer per worker and the output accumulated in place, so that the extra memory
    is ``O(block_q·block_k)`` per worker and head it takes at once, plus the output, instead of
    ``O(Lq·Lk)``. Runs without recording an autograd graph (use :func:`tiled_attention` for
    gradients). ``lse`` is float32 for half-precision inputs, else the input dtype.

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
    (:func:`course_utils.cpu_grid.run_grid`): the parallelism of a GPU grid, with no
    synchronisation between tiles. The default tiles are :data:`BLOCK_Q` × :data:`BLOCK_K`.
    """
    tiles, scale = _check(q, k, v, causal, window, block_mask, block_q, block_k, scale)
    return _forward(q, k, v, tiles, scale)


def _forward(q, k, v, tiles: TileMap, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    work, lq, d_v, device = _work_dtype(q), tiles.lq, v.shape[-1], q.device
    q3, v3 = _flat(q, work), _flat(v, work)
    k_t = _flat(k, work).transpose(1, 2)  # (B, d, Lk), a view
    out = torch.empty(q3.shape[0], lq, d_v, dtype=work, device=device)
    lse = torch.empty(q3.shape[0], lq, dtype=work, device=device)
    slices = batch_slices(q3.shape[0])
    size = (max(b.stop - b.start for b in slices) * min(tiles.block_q, lq)
            * min(tiles.block_k, tiles.lk))
    buffers: dict[int, torch.Tensor] = {}  # one score tile per worker, reused by all its tiles

    def program(cell: tuple[slice, int], worker: int) -> None:
        batch, i = cell
        rows = tiles._rows(i)
        shape = (batch.stop - batch.start, rows.stop - rows.start)
        if worker not in buffers:
            buffers[worker] = torch.empty(size, dtype=work, device=device)
        m = torch.zeros(*shape, 1, dtype=work, device=device)  # reference value, see above
        ell = torch.zeros_like(m)
        acc = out[batch, rows].zero_()  # the output's rows hold the accumulator
        fresh = True  # some row has seen no key yet
        for j in np.flatnonzero(tiles.visit[i]).tolist():
            keys = tiles._keys(j)
            s = buffers[worker][: math.prod(shape) * (keys.stop - keys.start)].view(*shape, -1)
            torch.baddbmm(m, q3[batch, rows], k_t[batch, :, keys], beta=-1,
                          alpha=scale / _LN_2, out=s)  # q kᵀ·scale·log2 e − m
            if tiles.masked[i, j]:
                s.masked_fill_(tiles._hidden(rows, keys, device), -math.inf)
            growth = s.amax(dim=-1, keepdim=True)  # how far each row's max lies above m
            if fresh:  # rows that saw nothing take their max exactly (−inf: still nothing)
                unseen = ell == 0
                step = torch.where(unseen, growth, growth.clamp(min=0.0))
                _rescale(s, m, ell, acc, step.masked_fill_(growth == -math.inf, 0.0), unseen)
            elif growth.max() > _RESCALE_ABOVE:  # lazy rescaling, see the docstring
                _rescale(s, m, ell, acc, growth.clamp_(min=0.0), None)
            p = s.exp2_()  # reuse the tile's memory
            ell.add_(p.sum(dim=-1, keepdim=True))
            acc.baddbmm_(p, v3[batch, keys])
            fresh = fresh and not bool((ell > 0).all())
        seen = ell > 0
        ell_safe = torch.where(seen, ell, 1.0)
        acc.div_(ell_safe).masked_fill_(~seen, 0.0)
        lse_blk = (m + ell_safe.log2()) * _LN_2  # back from base 2 to the natural log
        lse[batch, rows] = lse_blk.masked_fill_(~seen, -math.inf).squeeze(-1)

    cost = tiles.visit.sum(axis=1)  # tiles per query block; the longest run first
    run_grid(program, [(batch, int(i)) for i in np.argsort(-cost, kind="stable")
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
    ``dP`` is computed for half of the tile's query rows at a time, so that a worker holds one
    tile of ``P`` (then ``dS``) and half a tile of ``dP``.

    The grid's programs are key/value blocks (:func:`course_utils.cpu_grid.run_grid`): each owns
    its rows of ``dK`` and ``dV`` and loops over the query blocks that see it (the
    :class:`TileMap` of the forward pass's masks). ``dQ`` gathers a contribution from every key
    block, and two workers may want to add into the same rows at once. A GPU kernel uses atomic
    additions, whose order changes from run to run, and so do the last bits of ``dq``; here each
    query block takes its contributions in the order of the key blocks (a worker whose turn has
    not come waits), so ``dq`` is the same, bit for bit, on every run. The queue hands the key
    blocks out in increasing order, so the worker holding the lowest never waits: no deadlock.
    """
    tiles, scale = _check(q, k, v, causal, window, block_mask, block_q, block_k, scale)
    for name, t in (("out", out), ("lse", lse), ("grad_out", grad_out)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if out.shape != q.shape[:-1] + v.shape[-1:] or grad_out.shape != out.shape:
        raise ValueError(f"out and grad_out must have shape {tuple(q.shape[:-1] + v.shape[-1:])}"
                         f", got {tuple(out.shape)} and {tuple(grad_out.shape)}")
    if lse.shape != q.shape[:-1]:
        raise ValueError(f"lse must have shape {tuple(q.shape[:-1])}, got {tuple(lse.shape)}")
    lse_base2 = _base2(lse.to(_work_dtype(q), copy=True), tiles.lq)
    return _backward(q, k, v, out, lse_base2, grad_out, tiles, scale)


def _base2(lse: torch.Tensor, lq: int) -> torch.Tensor:
    """``lse (..., Lq)`` in place as ``(B, Lq, 1)`` in base 2; a row that saw no key gets 0 (its
    ``P`` is 0 anyway)."""
    lse = lse.view(-1, lq, 1).div_(_LN_2)
    return lse.masked_fill_(lse == -math.inf, 0.0)


def _backward(q, k, v, out, lse_base2, grad_out, tiles: TileMap, scale: float):
    work, lq, device = _work_dtype(q), tiles.lq, q.device
    with torch.no_grad():
        q3, k3, v3 = _flat(q, work), _flat(k, work), _flat(v, work)
        do, out3 = _flat(grad_out, work), _flat(out, work)
        delta = torch.empty(*do.shape[:2], 1, dtype=work, device=device)  # D_i = Σ_c dO_ic O_ic
        for start in range(0, lq, tiles.block_q):  # by blocks: no Lq × d_v temporary
            rows = slice(start, start + tiles.block_q)
            delta[:, rows] = (do[:, rows] * out3[:, rows]).sum(dim=-1, keepdim=True)
        dq, dk, dv = torch.zeros_like(q3), torch.zeros_like(k3), torch.zeros_like(v3)
    slices = batch_slices(q3.shape[0])
    n_query_blocks, n_key_blocks = tiles.visit.shape
    turn = {(batch.start, i): 0 for batch in slices for i in range(n_query_blocks)}  # added so far
    rank = np.cumsum(tiles.visit, axis=1) - 1  # the turn of key block j in query block i
    ready = threading.Condition()
    n_batch, n_keys = max(b.stop - b.start for b in slices), min(tiles.block_k, tiles.lk)
    half = -(-min(tiles.block_q, lq) // 2)  # dP is computed half a tile at a time
    buffers: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # per worker: P and half of dP
    failed: list[BaseException] = []  # a worker's error: the others stop waiting for its turn

    def key_block(cell: tuple[slice, int], worker: int) -> None:
        batch, j = cell
        keys = tiles._keys(j)
        if worker not in buffers:
            buffers[worker] = (torch.empty(n_batch * 2 * half * n_keys, dtype=work, device=device),
                               torch.empty(n_batch * half * n_keys, dtype=work, device=device))
        k_blk, v_blk = k3[batch, keys], v3[batch, keys]
        dk_blk, dv_blk = dk[batch, keys], dv[batch, keys]
        for i in np.flatnonzero(tiles.visit[:, j]).tolist():
            rows = tiles._rows(i)
            shape = (batch.stop - batch.start, rows.stop - rows.start, keys.stop - keys.start)
            s = buffers[worker][0][: math.prod(shape)].view(shape)
            torch.baddbmm(lse_base2[batch, rows], q3[batch, rows], k_blk.transpose(1, 2), beta=-1,
                          alpha=scale / _LN_2, out=s)  # (S − lse)·log2 e
            if tiles.masked[i, j]:
                s.masked_fill_(tiles._hidden(rows, keys, device), -math.inf)
            p = s.exp2_()
            dv_blk.baddbmm_(p.transpose(1, 2), do[batch, rows])
            for start in range(rows.start, rows.stop, half):  # dS = P ∘ (dP − D), by halves
                part = slice(start, min(start + half, rows.stop))
                n = part.stop - part.start
                dp = buffers[worker][1][: shape[0] * n * shape[2]].view(shape[0], n, shape[2])
                torch.baddbmm(delta[batch, part], do[batch, part], v_blk.transpose(1, 2),
                              beta=-1, out=dp)  # dP − D
                p[:, start - rows.start: part.stop - rows.start].mul_(dp)
            ds = p
            dk_blk.baddbmm_(ds.transpose(1, 2), q3[batch, rows], alpha=scale)

            def my_turn(i: int = i) -> bool:  # this key block's turn to add to dQ of block i
                return bool(failed) or turn[batch.start, i] == rank[i, j]

            with ready:
                ready.wait_for(my_turn)
                if failed:
                    raise RuntimeError("another worker of the backward pass failed") from failed[0]
            dq[batch, rows].baddbmm_(ds, k_blk, alpha=scale)
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

    run_grid(program, [(batch, j) for batch in slices for j in range(n_key_blocks)])
    return (dq.reshape(q.shape).to(q.dtype), dk.reshape(k.shape).to(k.dtype),
            dv.reshape(v.shape).to(v.dtype))


class TiledAttention(torch.autograd.Function):
    """Tiled attention with a memory-light backward: it saves only ``q, k, v, out, lse``.

    ``TiledAttention.apply(q, k, v, forward_tiles, backward_tiles, scale)`` returns ``out``; the
    two :class:`TileMap` values carry each pass's tiles and masks, checked by the caller
    (:func:`tiled_attention`). The backward recomputes the probabilities tile by tile.
    """

    @staticmethod
    def forward(ctx, q, k, v, forward_tiles, backward_tiles, scale):
        out, lse = _forward(q, k, v, forward_tiles, scale)
        ctx.save_for_backward(q, k, v, out, _base2(lse, forward_tiles.lq))  # no copy
        ctx.tiles, ctx.scale = backward_tiles, scale
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, out, lse_base2 = ctx.saved_tensors
        dq, dk, dv = _backward(q, k, v, out, lse_base2, grad_out, ctx.tiles, ctx.scale)
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
    defaults (:data:`BLOCK_Q` × :data:`BLOCK_K` forward, :data:`BACKWARD_BLOCK_Q` ×
    :data:`BACKWARD_BLOCK_K` backward). The backward's tile map is the forward's, retiled
    (:meth:`TileMap.retiled`; a ``block_mask`` keeps the forward's tiles in both passes).
    """
    forward_tiles, scale = _check(q, k, v, causal, window, block_mask,
                                  BLOCK_Q if block_q is None else block_q,
                                  BLOCK_K if block_k is None else block_k, scale)
    backward_tiles = forward_tiles.retiled(BACKWARD_BLOCK_Q if block_q is None else block_q,
                                           BACKWARD_BLOCK_K if block_k is None else block_k)
    return TiledAttention.apply(q, k, v, forward_tiles, backward_tiles, scale)

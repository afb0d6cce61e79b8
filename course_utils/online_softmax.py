"""The online softmax: softmax statistics in one pass, and partial results merged (NumPy).

Softmax needs the maximum ``m`` of its scores and the sum ``ℓ = Σ_i e^(x_i − m)``. Both can be
kept as running values over a stream of scores (Milakov & Gimelshein 2018): when a new score
raises the maximum from ``m_old`` to ``m_new``, the sum so far is rescaled by ``e^(m_old − m_new)``.
Two chunks' statistics merge by the same rule, and so do two attention results over disjoint sets
of keys (by their log-sum-exps): the step that tiled attention (:mod:`course_utils.tiled`) and
Flash-Decoding repeat block by block.
"""

from __future__ import annotations

import math

import numpy as np

from course_utils.validation import float_array

__all__ = ["merge_attention_partials", "merge_softmax_stats", "online_softmax_stats"]


def online_softmax_stats(x: np.ndarray) -> tuple[float, float]:
    """One pass over ``x`` keeping the running max ``m`` and the running sum ``ℓ = Σ e^(x_i − m)``.

    For each new element: ``m_new = max(m, x_i)``, ``ℓ ← ℓ·e^(m − m_new) + e^(x_i − m_new)``.
    Returns ``(m, ℓ)``, so that ``softmax(x)_i = e^(x_i − m) / ℓ`` and ``logsumexp(x) = m + log ℓ``.
    ``x`` is a non-empty 1-D array of finite numbers.
    """
    x = float_array(x, "x")
    if x.ndim != 1 or not np.isfinite(x).all():
        raise ValueError(f"x must be a 1-D array of finite numbers, got shape {x.shape}")
    m, ell = -math.inf, 0.0
    for value in x.tolist():
        m_new = max(m, value)
        ell = ell * math.exp(m - m_new) + math.exp(value - m_new)
        m = m_new
    return m, ell


def merge_softmax_stats(m1: float, l1: float, m2: float, l2: float) -> tuple[float, float]:
    """Combine the statistics of two chunks: ``m = max(m1, m2)``, ``ℓ = ℓ1·e^(m1−m) + ℓ2·e^(m2−m)``.

    A chunk with no element is ``(−inf, 0)``; merging two of them gives ``(−inf, 0)``.
    """
    m1, m2 = (_check_max(m, name) for name, m in (("m1", m1), ("m2", m2)))
    l1, l2 = (_check_sum(ell, name) for name, ell in (("l1", l1), ("l2", l2)))
    m = max(m1, m2)
    if m == -math.inf:
        return -math.inf, 0.0
    return m, l1 * math.exp(m1 - m) + l2 * math.exp(m2 - m)


def _check_max(m: object, name: str) -> float:
    if isinstance(m, bool) or not isinstance(m, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(m).__name__}")
    if math.isnan(m) or m == math.inf:
        raise ValueError(f"{name} must be finite or -inf (an empty chunk), got {m}")
    return float(m)


def _check_sum(ell: object, name: str) -> float:
    if isinstance(ell, bool) or not isinstance(ell, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(ell).__name__}")
    if not math.isfinite(ell) or ell < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {ell}")
    return float(ell)


def merge_attention_partials(
    out1: np.ndarray, lse1: np.ndarray, out2: np.ndarray, lse2: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Merge attention computed over two disjoint sets of keys into attention over their union.

    Each partial result is normalised over its own keys: ``out_k (..., Lq, d_v)`` and its
    log-sum-exp ``lse_k (..., Lq)``. Then ``lse = log(e^lse1 + e^lse2)`` and
    ``out = e^(lse1 − lse)·out1 + e^(lse2 − lse)·out2``. A row empty in both parts stays
    ``(0, −inf)``.
    """
    out1, lse1, out2, lse2 = (float_array(x, name) for name, x in
                              (("out1", out1), ("lse1", lse1), ("out2", out2), ("lse2", lse2)))
    if out1.ndim < 2 or out1.shape != out2.shape:
        raise ValueError(f"out1 and out2 must have one shape (..., Lq, d_v), got {out1.shape} "
                         f"and {out2.shape}")
    if lse1.shape != out1.shape[:-1] or lse2.shape != out1.shape[:-1]:
        raise ValueError(f"lse1 and lse2 must have shape {out1.shape[:-1]} (out without its "
                         f"last axis), got {lse1.shape} and {lse2.shape}")
    lse = np.logaddexp(lse1, lse2)
    safe = np.where(np.isneginf(lse), 0.0, lse)
    w1 = np.exp(lse1 - safe)[..., None]
    w2 = np.exp(lse2 - safe)[..., None]
    return w1 * out1 + w2 * out2, lse

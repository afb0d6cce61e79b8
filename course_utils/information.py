"""Entropy, cross-entropy, KL divergence and perplexity: how many nats a distribution costs.

    H(p)    = -sum_i p_i log p_i                      entropy
    H(p, q) = -sum_i p_i log q_i  = H(p) + KL(p || q)  cross-entropy
    KL(p||q) = sum_i p_i log(p_i / q_i)  >= 0          Kullback-Leibler divergence
    PPL     = exp(H(p, q))                            perplexity (cross-entropy in nats)

Distributions lie along ``axis`` (default: the last) of arrays of any shape; the result has
that axis removed. Logarithms are natural (nats) unless ``base`` is given (``base=2``: bits).
Edge semantics, the information-theory conventions:

- ``0 * log 0 = 0``: outcomes with p_i = 0 contribute nothing, whatever q_i is.
- ``p_i > 0 = q_i`` makes cross-entropy and KL ``inf`` (q calls certain-to-happen impossible).
- Probabilities must be finite, non-negative and sum to 1 along ``axis`` (to within
  ``max(1e-6, sqrt(machine epsilon))``); otherwise ``ValueError``.
- float16/32/64 inputs give results of their dtype (computed in float64, then rounded).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from course_utils.softmax import log_softmax
from course_utils.validation import check_axis, check_choice, check_int, check_real, float_array

__all__ = [
    "cross_entropy",
    "cross_entropy_from_logits",
    "entropy",
    "kl_divergence",
    "perplexity",
]


def _distribution(p: ArrayLike, name: str, axis: int) -> tuple[np.ndarray, int]:
    """Validated probabilities (in their own dtype) and the normalised axis."""
    array = float_array(p, name)
    axis = check_axis(axis, array.ndim)
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite probabilities, found inf")
    if (array < 0).any():
        raise ValueError(f"{name} must be non-negative probabilities, found {array.min():.4g}")
    totals = np.sum(array, axis=axis, dtype=np.float64)
    tolerance = max(1e-6, math.sqrt(np.finfo(array.dtype).eps))
    if not np.allclose(totals, 1.0, rtol=0, atol=tolerance):
        worst = totals.flat[np.argmax(np.abs(totals - 1.0))]
        raise ValueError(f"{name} must sum to 1 along axis {axis}, found a sum of {worst:.6g}")
    return array, axis


def _pair(p: ArrayLike, q: ArrayLike, axis: int) -> tuple[np.ndarray, np.ndarray, int, np.dtype]:
    """Validated p and q in float64, the axis, and the dtype the result is returned in."""
    p_arr, axis = _distribution(p, "p", axis)
    q_arr, _ = _distribution(q, "q", axis)
    if p_arr.shape != q_arr.shape:
        raise ValueError(f"p and q must have the same shape, got {p_arr.shape} and {q_arr.shape}")
    dtype = np.result_type(p_arr, q_arr)
    return p_arr.astype(np.float64), q_arr.astype(np.float64), axis, dtype


def _in_base(nats: np.ndarray, base: float | None, dtype: np.dtype) -> np.ndarray:
    """Float64 nats converted to ``base`` and rounded to the caller's ``dtype``."""
    if base is not None:
        if check_real(base, "base", low=0, low_open=True) == 1:
            raise ValueError(f"base must be a positive number other than 1 (or None), got {base}")
        nats = nats / math.log(base)
    return np.asarray(nats).astype(dtype)[()]


def _xlogy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x * log y`` with ``0 * log y = 0`` for every y (0 included)."""
    with np.errstate(divide="ignore"):
        logs = np.log(np.where(x > 0, y, 1))
    return np.where(x > 0, x * logs, 0)


def entropy(p: ArrayLike, axis: int = -1, base: float | None = None) -> np.ndarray:
    """Entropy ``H(p) = -sum_i p_i log p_i`` along ``axis``, in nats (or in ``base``).

    0 for a one-hot p, ``log n`` for the uniform distribution over n outcomes.
    """
    p_arr, axis = _distribution(p, "p", axis)
    p64 = p_arr.astype(np.float64)
    nats = -np.sum(_xlogy(p64, p64), axis=axis) + 0.0  # + 0.0 turns -0.0 into 0.0
    return _in_base(nats, base, p_arr.dtype)


def cross_entropy(
    p: ArrayLike, q: ArrayLike, axis: int = -1, base: float | None = None, clip: float = 0.0
) -> np.ndarray:
    """Cross-entropy ``H(p, q) = -sum_i p_i log q_i`` of prediction ``q`` against target ``p``.

    For a one-hot target it is ``-log q_target``. ``clip > 0`` first raises every q_i to at least
    ``clip`` (what training code does to keep the loss finite when q_i = 0); with the default
    ``clip=0`` the loss is ``inf`` where p_i > 0 = q_i.
    """
    p_arr, q_arr, axis, dtype = _pair(p, q, axis)
    clip = check_real(clip, "clip", low=0, high=1, high_open=True)
    if clip:
        q_arr = np.maximum(q_arr, clip)
    return _in_base(-np.sum(_xlogy(p_arr, q_arr), axis=axis) + 0.0, base, dtype)


def kl_divergence(
    p: ArrayLike, q: ArrayLike, axis: int = -1, base: float | None = None
) -> np.ndarray:
    """``KL(p || q) = sum_i p_i log(p_i / q_i)`` along ``axis``: >= 0, and 0 only when p = q.

    Not symmetric: ``KL(p || q) != KL(q || p)`` in general. ``inf`` where p_i > 0 = q_i.
    """
    p_arr, q_arr, axis, dtype = _pair(p, q, axis)
    counted = p_arr > 0
    with np.errstate(divide="ignore"):  # log 0 = -inf where q = 0 < p: KL is inf there
        log_ratio = np.log(np.where(counted, p_arr, 1)) - np.log(np.where(counted, q_arr, 1))
    return _in_base(np.sum(np.where(counted, p_arr * log_ratio, 0), axis=axis), base, dtype)


def cross_entropy_from_logits(
    logits: ArrayLike, targets: ArrayLike, ignore_index: int = -100, reduction: str = "mean"
) -> np.ndarray:
    """Mean negative log-likelihood ``-log softmax(logits)[target]`` over the counted positions.

    ``logits`` has shape ``(..., C)`` (classes last, as a language model outputs them) and
    ``targets`` holds class indices of shape ``(...)``. Positions whose target is
    ``ignore_index`` (padding) count for nothing. ``reduction``: ``"mean"`` (over the counted
    positions, as ``torch.nn.functional.cross_entropy``), ``"sum"``, or ``"none"`` (per position,
    0 where ignored). A mean over zero counted positions raises ``ValueError``.
    """
    log_probs = log_softmax(logits, axis=-1)
    ignore_index = check_int(ignore_index, "ignore_index", minimum=None)
    reduction = check_choice(reduction, "reduction", ("mean", "sum", "none"))
    target_arr = np.asarray(targets)
    if target_arr.dtype.kind not in "iu":
        raise TypeError(f"targets must be integer class indices, got dtype {target_arr.dtype}")
    if target_arr.shape != log_probs.shape[:-1]:
        raise ValueError(
            f"targets must have shape {log_probs.shape[:-1]} (logits without the class axis), "
            f"got {target_arr.shape}"
        )
    n_classes = log_probs.shape[-1]
    counted = target_arr != ignore_index
    bad = counted & ((target_arr < 0) | (target_arr >= n_classes))
    if bad.any():
        raise ValueError(
            f"targets must be class indices in [0, {n_classes}) or ignore_index={ignore_index}, "
            f"found {target_arr[bad].flat[0]}"
        )
    safe = np.where(counted, target_arr, 0)[..., None]
    picked = np.take_along_axis(log_probs, safe, axis=-1)[..., 0]
    losses = np.where(counted, -picked, 0).astype(log_probs.dtype)
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    if not counted.any():
        raise ValueError("every target equals ignore_index: a mean over no positions is undefined")
    return losses.sum() / losses.dtype.type(counted.sum())


def perplexity(cross_entropy_nats: ArrayLike) -> np.ndarray:
    """``exp(H)`` for a cross-entropy ``H`` in nats: the effective number of equally likely choices.

    A model as unsure as a uniform guess over V tokens has perplexity V.
    """
    h = float_array(cross_entropy_nats, "cross_entropy_nats")
    if (h < 0).any():
        raise ValueError(f"cross_entropy_nats must be >= 0, found {h.min():.4g}")
    with np.errstate(over="ignore"):  # exp of a huge loss is honestly inf
        return np.exp(h)

"""Softmax, log-softmax and logsumexp, computed stably (the max-shift trick).

    softmax(x)_i     = exp(x_i / T) / sum_j exp(x_j / T)
    logsumexp(x)     = m + log sum_j exp(x_j - m),        m = max_j x_j
    log_softmax(x)_i = x_i / T - logsumexp(x / T)

Every function works along one ``axis`` of an array of any shape (default: the last, where a
Transformer keeps its logits). Edge semantics:

- float16, float32 and float64 inputs keep their dtype (float16 is computed in float32 and
  rounded back); integers and booleans become float64.
- ``-inf`` entries are allowed and get probability exactly 0 (how attention masks work).
- A slice whose entries are all ``-inf`` has no distribution: ``softmax`` and ``log_softmax``
  raise ``ValueError``, ``logsumexp`` returns ``-inf`` (the log of an empty sum, log 0).
- NaN or ``+inf`` anywhere, empty arrays, and complex or non-numeric input raise an error.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from course_utils.validation import check_axis, check_bool, check_real, float_array

__all__ = ["log_softmax", "logsumexp", "softmax"]


def _scaled(x: ArrayLike, axis: int, temperature: float) -> tuple[np.ndarray, int, np.dtype]:
    """Validated ``x / T`` in the working dtype, the normalised axis, and the output dtype."""
    array = float_array(x, "x")
    axis = check_axis(axis, array.ndim)
    temperature = check_real(temperature, "temperature", low=0, low_open=True)
    if np.isposinf(array).any():
        raise ValueError("x contains +inf: softmax of +inf is undefined")
    out_dtype = array.dtype
    work = array.astype(np.float32) if array.dtype == np.float16 else array
    if temperature != 1:
        work = work / work.dtype.type(temperature)
    return work, axis, out_dtype


def _shifted(work: np.ndarray, axis: int) -> np.ndarray:
    """``x - max(x)`` along ``axis``; raises where a whole slice is ``-inf``."""
    peak = np.max(work, axis=axis, keepdims=True)
    if np.isneginf(peak).any():
        raise ValueError(
            f"x has a slice along axis {axis} whose entries are all -inf: "
            "no probability distribution puts weight on nothing"
        )
    return work - peak


def softmax(x: ArrayLike, axis: int = -1, temperature: float = 1.0) -> np.ndarray:
    """Probabilities ``exp(x_i / T) / sum_j exp(x_j / T)`` along ``axis``; same shape and dtype.

    Computed as ``exp(x - max x) / sum exp(x - max x)``, which never overflows. Small ``T``
    sharpens towards the one-hot argmax, large ``T`` flattens towards uniform.
    """
    work, axis, out_dtype = _scaled(x, axis, temperature)
    exps = np.exp(_shifted(work, axis))
    return (exps / np.sum(exps, axis=axis, keepdims=True)).astype(out_dtype, copy=False)


def log_softmax(x: ArrayLike, axis: int = -1, temperature: float = 1.0) -> np.ndarray:
    """``log softmax(x)`` computed as ``(x - m) - log sum exp(x - m)``; same shape and dtype.

    Exact where ``softmax`` would underflow to 0 (``log 0 = -inf`` is avoided); ``-inf`` inputs
    give ``-inf``.
    """
    work, axis, out_dtype = _scaled(x, axis, temperature)
    shifted = _shifted(work, axis)
    result = shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
    return result.astype(out_dtype, copy=False)


def logsumexp(x: ArrayLike, axis: int = -1, keepdims: bool = False) -> np.ndarray:
    """``log sum_j exp(x_j)`` along ``axis`` as ``m + log sum_j exp(x_j - m)``, m = max x.

    Shape: ``x`` without ``axis`` (kept with length 1 if ``keepdims``). A slice of all ``-inf``
    gives ``-inf``; ``+inf`` anywhere in a slice gives ``+inf``.
    """
    array = float_array(x, "x")
    axis, keepdims = check_axis(axis, array.ndim), check_bool(keepdims, "keepdims")
    work = array.astype(np.float32) if array.dtype == np.float16 else array
    peak = np.max(work, axis=axis, keepdims=True)
    safe_peak = np.where(np.isfinite(peak), peak, 0)  # all -inf or any +inf: the sum decides
    with np.errstate(divide="ignore"):  # log 0 = -inf for an all -inf slice, by design
        result = safe_peak + np.log(np.sum(np.exp(work - safe_peak), axis=axis, keepdims=True))
    if not keepdims:
        result = np.squeeze(result, axis=axis)
    return result.astype(array.dtype, copy=False)

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

__all__ = ["log_softmax", "logsumexp", "softmax"]


def _float_array(x: ArrayLike, name: str) -> np.ndarray:
    """``x`` as a non-empty real floating array (float16/32/64 kept, integers -> float64)."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor, without importing torch
        raise TypeError(f"{name} must be a NumPy array or list, got a torch tensor (use .numpy())")
    try:
        array = np.asarray(x)
    except ValueError as error:
        raise ValueError(f"{name} must be a rectangular array of numbers: {error}") from None
    if array.dtype.kind in "biu":
        array = array.astype(np.float64)
    if array.dtype.kind != "f":
        raise TypeError(f"{name} must hold real numbers, got dtype {array.dtype}")
    if array.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {array.shape}")
    if np.isnan(array).any():
        raise ValueError(f"{name} contains NaN")
    return array


def _check_axis(array: np.ndarray, axis: int, name: str) -> int:
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"axis must be an int, got {type(axis).__name__}")
    if array.ndim == 0:
        raise ValueError(f"{name} must have at least one dimension, got a scalar")
    if not -array.ndim <= axis < array.ndim:
        raise ValueError(f"axis {axis} is out of range for {name} with shape {array.shape}")
    return int(axis) % array.ndim


def _scaled(x: ArrayLike, axis: int, temperature: float) -> tuple[np.ndarray, int, np.dtype]:
    """Validated ``x / T`` in the working dtype, the normalised axis, and the output dtype."""
    array = _float_array(x, "x")
    axis = _check_axis(array, axis, "x")
    if np.isposinf(array).any():
        raise ValueError("x contains +inf: softmax of +inf is undefined")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float, np.floating)):
        raise TypeError(f"temperature must be a number, got {type(temperature).__name__}")
    if not (np.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a positive finite number, got {temperature}")
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
    array = _float_array(x, "x")
    axis = _check_axis(array, axis, "x")
    work = array.astype(np.float32) if array.dtype == np.float16 else array
    peak = np.max(work, axis=axis, keepdims=True)
    safe_peak = np.where(np.isfinite(peak), peak, 0)  # all -inf or any +inf: the sum decides
    with np.errstate(divide="ignore"):  # log 0 = -inf for an all -inf slice, by design
        result = safe_peak + np.log(np.sum(np.exp(work - safe_peak), axis=axis, keepdims=True))
    if not keepdims:
        result = np.squeeze(result, axis=axis)
    return result.astype(array.dtype, copy=False)

"""Derivatives by finite differences, a gradient check, and the softmax Jacobian.

    forward difference   f'(x) ~ (f(x + h) - f(x)) / h            error O(h)
    central difference   f'(x) ~ (f(x + h) - f(x - h)) / (2h)     error O(h^2)

Both also suffer round-off of about eps * |f| / h, so h can be too small as well as too large;
h = 1e-5 (central) is a good default in float64. All arithmetic here is float64.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from course_utils.softmax import softmax
from course_utils.validation import check_axis, check_choice, check_real, float_array, real_array

__all__ = [
    "derivative",
    "gradient_check",
    "numerical_gradient",
    "numerical_jacobian",
    "softmax_jacobian",
]


def _check_callable(f: object, name: str) -> None:
    if not callable(f):
        raise TypeError(f"{name} must be a function, got {type(f).__name__}")


def derivative(
    f: Callable[[float], float], x: float, h: float = 1e-5, method: str = "central"
) -> float:
    """``f'(x)`` of a scalar function by a ``"forward"`` or ``"central"`` difference of step h."""
    _check_callable(f, "f")
    x, h = check_real(x, "x"), check_real(h, "h", low=0, low_open=True)
    if check_choice(method, "method", ("forward", "central")) == "forward":
        return (float(f(x + h)) - float(f(x))) / h
    return (float(f(x + h)) - float(f(x - h))) / (2 * h)


def numerical_jacobian(
    f: Callable[[np.ndarray], ArrayLike], x: ArrayLike, h: float = 1e-5
) -> np.ndarray:
    """``J[i, j] = d f_i / d x_j`` by central differences, one input coordinate at a time.

    ``x`` of shape ``S_in`` and ``f(x)`` of shape ``S_out`` give ``J`` of shape ``S_out + S_in``.
    """
    h = check_real(h, "h", low=0, low_open=True)
    x = real_array(x, "x").astype(np.float64)
    columns = []
    for j in range(x.size):
        step = np.zeros(x.size)
        step[j] = h
        plus = np.asarray(f(x + step.reshape(x.shape)), dtype=np.float64)
        minus = np.asarray(f(x - step.reshape(x.shape)), dtype=np.float64)
        columns.append((plus - minus) / (2 * h))
    out_shape = columns[0].shape
    return np.stack(columns, axis=-1).reshape(out_shape + x.shape)


def numerical_gradient(
    f: Callable[[np.ndarray], float], x: ArrayLike, h: float = 1e-5
) -> np.ndarray:
    """The gradient ``df/dx`` (shape of ``x``) of a scalar-valued ``f`` by central differences."""
    x = real_array(x, "x").astype(np.float64)
    if np.ndim(f(x)) != 0:
        raise ValueError(f"f must return a scalar, got shape {np.shape(f(x))}")
    return numerical_jacobian(f, x, h)


def gradient_check(
    f: Callable[[np.ndarray], float],
    grad: Callable[[np.ndarray], ArrayLike],
    x: ArrayLike,
    h: float = 1e-5,
) -> float:
    """Relative error ``|g - n| / max(|g| + |n|, 1e-12)`` (Euclidean norms) between the analytic
    gradient ``g = grad(x)`` and the numerical gradient ``n``.

    Below about 1e-7 the two agree (float64, smooth f); above 1e-3 the analytic gradient is wrong.
    """
    _check_callable(f, "f")
    _check_callable(grad, "grad")
    x = real_array(x, "x").astype(np.float64)
    analytic = np.asarray(grad(x), dtype=np.float64)
    if analytic.shape != x.shape:
        raise ValueError(f"grad(x) must have the shape of x {x.shape}, got {analytic.shape}")
    numeric = numerical_gradient(f, x, h)
    scale = max(float(np.linalg.norm(analytic) + np.linalg.norm(numeric)), 1e-12)
    return float(np.linalg.norm(analytic - numeric) / scale)


def softmax_jacobian(z: ArrayLike, axis: int = -1) -> np.ndarray:
    """``d softmax(z)_i / d z_j = p_i (delta_ij - p_j)``, i.e. ``diag(p) - pᵀp`` (p a row).

    ``z`` of shape ``(..., n)`` (softmax along the last axis) gives ``(..., n, n)``; the rows of
    each Jacobian sum to 0 because the probabilities always sum to 1.
    """
    array = float_array(z, "z")
    if check_axis(axis, array.ndim) != array.ndim - 1:
        raise ValueError("softmax_jacobian works along the last axis: move it with np.moveaxis")
    p = softmax(array.astype(np.float64), axis=-1)
    return p[..., :, None] * (np.eye(p.shape[-1]) - p[..., None, :])

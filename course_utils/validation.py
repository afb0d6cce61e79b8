"""Argument checks shared by the course_utils modules: errors that name the argument."""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike


def check_int(value: object, name: str, minimum: int | None = 1) -> int:
    """``value`` as a Python int, or a clear error naming ``name``.

    ``TypeError`` unless ``value`` is an integer (Python or NumPy; ``bool`` is refused);
    ``ValueError`` if it is below ``minimum`` (``None``: no lower bound).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return int(value)


def real_array(x: ArrayLike, name: str, ndim: int | None = None, what: str = "array") -> np.ndarray:
    """``x`` as a finite, non-empty NumPy array of real numbers (integer or float), or a clear
    error naming ``name``; with ``ndim``, it must have exactly that many axes (a ``what``)."""
    article = "an" if what[0] in "aeiou" else "a"
    try:
        array = np.asarray(x)
    except (ValueError, TypeError) as error:  # ragged nested lists
        raise ValueError(f"{name} must be {article} {what} of numbers, got {x!r:.60}") from error
    if array.dtype.kind not in "iuf":
        raise TypeError(
            f"{name} must hold real numbers (integer or float), got dtype {array.dtype}"
        )
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name} must be {article} {what} ({ndim}-D), got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {array.shape}")
    if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must hold finite numbers, got NaN or inf")
    return array

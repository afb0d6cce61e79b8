"""Argument checks shared by the course_utils modules: errors that name the argument."""

from __future__ import annotations

import numbers


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

"""The package's argument contract: one guard per kind of argument, one call per argument.

Each guard returns the argument normalised (a Python ``int`` or ``float``, a NumPy array, an
axis in ``[0, ndim)``) or raises an error that names the argument: ``TypeError`` for a wrong
type, ``ValueError`` for a wrong value. NumPy scalars are accepted wherever Python numbers are,
and ``bool`` is never a number. Importing this module does not import torch; the tensor guards
import it when they are called.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    import torch

T = TypeVar("T")


def _a(noun: str) -> str:
    """``noun`` with its indefinite article: "a matrix", "an int64"."""
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


def check_int(value: object, name: str, minimum: int | None = 1, maximum: int | None = None) -> int:
    """``value`` as a Python int: ``TypeError`` unless it is an integer (Python or NumPy; not
    ``bool``), ``ValueError`` outside ``[minimum, maximum]`` (``None``: no bound)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    value = int(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        if maximum is None:
            rule = f"at least {minimum}"
        else:
            rule = f"at most {maximum}" if minimum is None else f"in [{minimum}, {maximum}]"
        raise ValueError(f"{name} must be {rule}, got {value}")
    return value


def check_real(
    value: object,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """``value`` as a finite Python float: ``TypeError`` unless it is a real number (Python or
    NumPy; not ``bool``), ``ValueError`` for NaN, ±inf, or outside the interval from ``low`` to
    ``high`` (each excluded when ``low_open``/``high_open``; ``None``: no bound)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        number = math.inf
    below = low is not None and (number <= low if low_open else number < low)
    above = high is not None and (number >= high if high_open else number > high)
    if below or above or not math.isfinite(number):
        if low is not None and high is not None:
            rule = f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        else:
            rule = "a finite number"
            if low is not None:
                rule += f" {'>' if low_open else '>='} {low:g}"
            if high is not None:
                rule += f" {'<' if high_open else '<='} {high:g}"
        raise ValueError(f"{name} must be {rule}, got {value}")
    return number


def check_bool(value: object, name: str) -> bool:
    """``value`` as a Python bool: ``TypeError`` unless it is ``bool`` or ``np.bool_``."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def check_choice(value: object, name: str, choices: Sequence[T]) -> T:
    """``value`` if it is one of ``choices``: ``TypeError`` if its type is none of theirs,
    ``ValueError`` if it is not among them."""
    if not any(isinstance(value, type(choice)) for choice in choices):
        raise TypeError(f"{name} must be one of {tuple(choices)}, got {type(value).__name__}")
    for choice in choices:
        if value == choice:
            return choice
    raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")


def check_axis(axis: object, ndim: int, name: str = "axis") -> int:
    """``axis`` of an array with ``ndim`` dimensions, normalised to ``[0, ndim)``: ``TypeError``
    unless it is an int, ``ValueError`` unless ``-ndim <= axis < ndim``."""
    axis = check_int(axis, name, minimum=None)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name} {axis} is out of range for an array with {ndim} dimensions")
    return axis % ndim


def check_rng(rng: object, name: str = "rng") -> np.random.Generator:
    """A NumPy Generator: ``rng`` itself, or ``np.random.default_rng(rng)`` for a seed (an int
    >= 0) or None (fresh entropy)."""
    if rng is None or isinstance(rng, np.random.Generator):
        return np.random.default_rng(rng)
    if isinstance(rng, bool) or not isinstance(rng, numbers.Integral):
        raise TypeError(f"{name} must be a NumPy Generator, an int seed or None, got "
                        f"{type(rng).__name__}")
    return np.random.default_rng(check_int(rng, name, minimum=0))


def check_generator(value: object, name: str = "generator") -> torch.Generator | None:
    """A ``torch.Generator`` or None (torch's global generator), else a TypeError naming
    ``name``."""
    import torch

    if value is not None and not isinstance(value, torch.Generator):
        raise TypeError(f"{name} must be a torch.Generator or None, got {type(value).__name__}")
    return value


def real_array(x: ArrayLike, name: str, ndim: int | None = None, what: str = "array") -> np.ndarray:
    """``x`` as a finite, non-empty NumPy array of real numbers (integer or float, dtype kept),
    or a clear error naming ``name``; with ``ndim``, it must have exactly that many axes (a
    ``what``)."""
    try:
        array = np.asarray(x)
    except (ValueError, TypeError) as error:  # ragged nested lists
        raise ValueError(f"{name} must be {_a(what)} of numbers, got {x!r:.60}") from error
    if array.dtype.kind not in "iuf":
        raise TypeError(
            f"{name} must hold real numbers (integer or float), got dtype {array.dtype}"
        )
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name} must be {_a(what)} ({ndim}-D), got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {array.shape}")
    if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must hold finite numbers, got NaN or inf")
    return array


def float_array(x: ArrayLike, name: str) -> np.ndarray:
    """``x`` as a non-empty floating NumPy array without NaN (±inf allowed): float16/32/64 kept,
    integers and booleans become float64; a torch tensor is refused (use ``.numpy()``)."""
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


def check_tensor(
    x: object,
    name: str,
    *,
    dtype: str | torch.dtype | None = "floating",
    min_ndim: int = 0,
    what: str = "tensor",
) -> torch.Tensor:
    """``x`` if it is a torch tensor of ``dtype`` (``"floating"``: any floating-point dtype, a
    ``torch.dtype``: exactly that one, ``None``: any) with at least ``min_ndim`` dimensions.
    ``what`` completes the dtype message, e.g. ``"tensor (True = attend)"``."""
    import torch

    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if dtype == "floating" and not x.dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating-point {what}, got {x.dtype}")
    if isinstance(dtype, torch.dtype) and x.dtype != dtype:
        wanted = "boolean" if dtype == torch.bool else str(dtype).removeprefix("torch.")
        raise TypeError(f"{name} must be {_a(wanted)} {what}, got {x.dtype}")
    if x.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimensions, got shape "
                         f"{tuple(x.shape)}")
    return x


def check_last_dim(value: object, size: int, name: str = "x") -> torch.Tensor:
    """``value`` if it is a floating-point tensor whose last dimension is ``size`` (the ``d_model``
    features of each token), else an error naming ``name``: ``TypeError`` for what is not one
    (as :func:`check_tensor`), ``ValueError`` for another last dimension."""
    x = check_tensor(value, name)
    if x.shape[-1:] != (size,):
        raise ValueError(f"{name} must have last dimension d_model={size}, got shape "
                         f"{tuple(x.shape)}")
    return x


def check_torch_module(module: object, torch_type: type[torch.nn.Module],
                       name: str = "module") -> Any:
    """``module`` if it is an instance of the PyTorch class ``torch_type`` (``nn.LayerNorm``, say:
    the module a ``from_torch`` copies), else a ``TypeError`` naming ``name``. Typed ``Any``: the
    attributes of PyTorch's modules are dynamic."""
    if not isinstance(module, torch_type):
        raise TypeError(f"{name} must be an nn.{torch_type.__name__}, got {type(module).__name__}")
    return module


def check_attention_inputs(
    q: object, k: object, v: object, scale: object, *, same_leading: bool = True,
    dtypes: Sequence[torch.dtype] | None = None,
) -> tuple[int, int, int, float]:
    """The inputs of every attention function: ``q (..., Lq, d)``, ``k (..., Lk, d)``,
    ``v (..., Lk, d_v)``, non-empty floating tensors of one dtype (one of ``dtypes`` if given) on
    one device; with ``same_leading`` their leading (batch, head) axes are equal (else they are
    the caller's to check: dense attention broadcasts them).

    Returns ``Lq``, ``Lk``, ``d`` and the scale: ``scale`` (a positive finite real, NumPy scalars
    too) or, for ``None``, ``1/√d``.
    """
    q, k, v = (check_tensor(t, name, min_ndim=2) for name, t in (("q", q), ("k", k), ("v", v)))
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"q, k and v must share a dtype, got {q.dtype}, {k.dtype} and {v.dtype}")
    if dtypes is not None and q.dtype not in dtypes:
        *rest, last = (str(t).removeprefix("torch.") for t in dtypes)
        names = f"{', '.join(rest)} or {last}" if rest else last
        raise TypeError(f"q, k and v must be {names}, got {q.dtype}")
    if not q.device == k.device == v.device:
        raise ValueError(f"q, k and v must be on one device, got {q.device}, {k.device} and "
                         f"{v.device}")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if 0 in t.shape:
            raise ValueError(f"{name} must not be empty, got shape {tuple(t.shape)}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same last axis d_k, got q {tuple(q.shape)} and "
                         f"k {tuple(k.shape)}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same length Lk (axis -2), got k "
                         f"{tuple(k.shape)} and v {tuple(v.shape)}")
    if same_leading and not q.shape[:-2] == k.shape[:-2] == v.shape[:-2]:
        raise ValueError(f"q, k and v must share their leading (batch, head) axes, got "
                         f"{tuple(q.shape)}, {tuple(k.shape)} and {tuple(v.shape)}")
    d = int(q.shape[-1])
    scale = 1.0 / math.sqrt(d) if scale is None else check_real(scale, "scale", low=0,
                                                                  low_open=True)
    return int(q.shape[-2]), int(k.shape[-2]), d, scale


def check_window(window: object, causal: object) -> int | None:
    """A sliding window: ``None``, or an int ``W ≥ 1`` with ``causal=True`` (query ``i`` sees its
    ``W`` most recent keys)."""
    check_bool(causal, "causal")
    if window is None:
        return None
    window = check_int(window, "window")
    if not causal:
        raise ValueError("window needs causal=True: a sliding window holds the W most recent "
                         "keys of each query")
    return window


def check_capability(capability: object) -> tuple[int, int] | None:
    """``capability`` as ``(major, minor)`` ints, or None (no GPU)."""
    if capability is None:
        return None
    if not isinstance(capability, (tuple, list)):
        raise TypeError("capability must be a (major, minor) tuple or None, got "
                        f"{type(capability).__name__}")
    if len(capability) != 2:
        raise ValueError(f"capability must be (major, minor), got {capability!r}")
    major, minor = (check_int(c, "capability", minimum=0) for c in capability)
    return major, minor

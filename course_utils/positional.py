"""Sinusoidal positional encoding and the rotation that shifts it by k positions.

The encoding of "Attention Is All You Need" (Vaswani et al., 2017), section 3.5, for position
``pos`` and pair index ``i`` (``0 <= i < d_model / 2``)::

    PE[pos, 2i]     = sin(pos * w_i)        w_i = base ** (-2i / d_model),  base = 10000
    PE[pos, 2i + 1] = cos(pos * w_i)

Sine and cosine are *interleaved* (even columns sin, odd columns cos), as in the paper. Some code
concatenates instead (all sines, then all cosines); that is the same set of numbers with the
columns permuted.

Because ``sin`` and ``cos`` of ``(pos + k) * w`` follow from those of ``pos * w`` by the angle
addition formulas, ``PE[pos + k] = M_k @ PE[pos]`` with a block-diagonal matrix ``M_k`` of 2x2
rotations that depends on ``k`` but not on ``pos`` (:func:`relative_position_matrix`).

Rotary position embedding (RoPE; Su et al., 2021, "RoFormer") uses the same rotations on queries
and keys instead of adding a vector to the input (:func:`apply_rope`). Importing this module does
not load torch; :func:`apply_rope`, which works on torch tensors, imports it when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from course_utils.validation import check_int, check_real, check_tensor

if TYPE_CHECKING:
    from torch import Tensor

__all__ = [
    "angular_frequencies",
    "apply_rope",
    "relative_position_matrix",
    "sinusoidal_encoding",
    "wavelengths",
]


def angular_frequencies(d_model: int, base: float = 10000.0) -> np.ndarray:
    """The angular frequency of each sin/cos pair: ``w_i = base ** (-2i / d_model)``.

    Returns float64 of shape ``(d_model // 2,)``, decreasing from ``w_0 = 1`` (wavelength 2π)
    towards ``1 / base``.
    """
    if check_int(d_model, "d_model") % 2:
        raise ValueError(f"d_model must be even (sin/cos come in pairs), got {d_model}")
    base = check_real(base, "base", low=1, low_open=True)
    two_i = np.arange(0, d_model, 2, dtype=np.float64)
    return base ** (-two_i / d_model)


def wavelengths(d_model: int, base: float = 10000.0) -> np.ndarray:
    """The wavelength (in positions) of each sin/cos pair: ``2π / w_i``, shape ``(d_model // 2,)``.

    A geometric progression from 2π up to ``2π · base ** ((d_model - 2) / d_model)``.
    """
    return 2 * np.pi / angular_frequencies(d_model, base)


def sinusoidal_encoding(n_positions: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """The sinusoidal positional encoding table, float64 of shape ``(n_positions, d_model)``.

    Row ``pos`` is the encoding of position ``pos`` (0-based); columns interleave
    ``PE[pos, 2i] = sin(pos * w_i)`` and ``PE[pos, 2i + 1] = cos(pos * w_i)`` with
    ``w_i = base ** (-2i / d_model)``. ``n_positions = 0`` gives an empty ``(0, d_model)`` table.
    """
    n_positions = check_int(n_positions, "n_positions", minimum=0)
    omega = angular_frequencies(d_model, base)
    angles = np.arange(n_positions, dtype=np.float64)[:, None] * omega[None, :]
    pe = np.empty((n_positions, d_model), dtype=np.float64)
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe


def relative_position_matrix(k: float, d_model: int, base: float = 10000.0) -> np.ndarray:
    """The matrix ``M_k`` with ``PE[pos + k] = M_k @ PE[pos]`` for every ``pos``.

    Block diagonal, float64 of shape ``(d_model, d_model)``; block ``i`` acts on the pair
    ``(sin(pos w_i), cos(pos w_i))`` and is the rotation::

        [[ cos(k w_i),  sin(k w_i)],
         [-sin(k w_i),  cos(k w_i)]]

    from ``sin(a + b) = sin a cos b + cos a sin b`` and ``cos(a + b) = cos a cos b - sin a sin b``.
    It depends on the offset ``k`` only (not on ``pos``); ``M_0`` is the identity, ``M_{-k}`` is
    the transpose (inverse) of ``M_k``, and ``k`` may be any real number.
    """
    k = check_real(k, "k")
    omega = angular_frequencies(d_model, base)
    c, s = np.cos(k * omega), np.sin(k * omega)
    m = np.zeros((d_model, d_model), dtype=np.float64)
    even = np.arange(0, d_model, 2)
    m[even, even] = c
    m[even, even + 1] = s
    m[even + 1, even] = -s
    m[even + 1, even + 1] = c
    return m


def apply_rope(x: Tensor, positions: Tensor | ArrayLike, base: float = 10000.0) -> Tensor:
    """Rotary position embedding: turn each pair ``(x[2i], x[2i+1])`` of the token at position
    ``pos`` by the angle ``pos · θ_i``, ``θ_i = base ** (-2i / d)`` (the ``w_i`` above)::

        out[2i]     = x[2i] cos(pos θ_i) - x[2i+1] sin(pos θ_i)
        out[2i + 1] = x[2i] sin(pos θ_i) + x[2i+1] cos(pos θ_i)

    In matrix form ``out = R_pos x`` with ``R_pos = M_pos^T`` (:func:`relative_position_matrix`),
    so ``(R_m q) · (R_n k) = q · R_{n-m} k`` depends on the offset ``n - m`` only. Pairs are
    interleaved, as in RoFormer and Meta's original Llama code; the "half-split" layout of other
    code pairs ``x[i]`` with ``x[i + d/2]`` instead, which is a fixed permutation of the features.

    Shapes: ``x`` a floating-point tensor ``(..., L, d)`` with ``d`` even; ``positions`` ``L``
    integers (a 1-D tensor, array or list; any integer, repeated or not). Returns a tensor of
    ``x``'s shape, dtype and device; the angles are computed in float64.
    """
    import torch

    x = check_tensor(x, "x")
    if x.ndim < 2 or x.shape[-1] == 0 or x.shape[-1] % 2:
        raise ValueError(f"x must have shape (..., L, d) with d even (the features are rotated "
                         f"in pairs), got {tuple(x.shape)}")
    pos = positions.detach().cpu().numpy() if isinstance(positions, torch.Tensor) else positions
    pos = np.asarray(pos)
    if pos.dtype.kind not in "iu":
        raise TypeError(f"positions must be integers, got dtype {pos.dtype}")
    if pos.shape != (x.shape[-2],):
        raise ValueError(f"positions must have shape (L,) = ({x.shape[-2]},), one per token, got "
                         f"{pos.shape}")
    angles = pos.astype(np.float64)[:, None] * angular_frequencies(x.shape[-1], base)
    cos = torch.as_tensor(np.cos(angles), dtype=x.dtype, device=x.device)  # (L, d/2)
    sin = torch.as_tensor(np.sin(angles), dtype=x.dtype, device=x.device)
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., L, d/2) each
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)

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
and keys instead of adding a vector to the input (:func:`apply_rope`), in either of two feature
layouts (:func:`layout_permutation` maps one onto the other), with frequencies that may be
rescaled for longer contexts as Hugging Face configurations do (:func:`rope_frequencies`).
Importing this module does not load torch; the functions on torch tensors import it when called.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from course_utils.validation import check_choice, check_int, check_real, check_tensor

if TYPE_CHECKING:
    import torch
    from torch import Tensor

__all__ = [
    "angular_frequencies",
    "apply_rope",
    "layout_permutation",
    "relative_position_matrix",
    "rope_frequencies",
    "sinusoidal_encoding",
    "wavelengths",
]

_LAYOUTS = ("interleaved", "half")


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


_SCALING_KEYS = {
    "default": (),
    "linear": ("factor",),
    "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"),
}


def _check_even(value: object, name: str) -> int:
    number = check_int(value, name)
    if number % 2:
        raise ValueError(f"{name} must be even (the features are rotated in pairs), got {number}")
    return number


def _check_scaling(scaling: object) -> dict[str, float] | None:
    """A Hugging Face ``rope_scaling`` dictionary, checked, as floats (None for no scaling)."""
    if scaling is None:
        return None
    if not isinstance(scaling, Mapping):
        raise TypeError(f"scaling must be a dict or None, got {type(scaling).__name__}")
    if "rope_type" not in scaling:
        raise ValueError(f"scaling must have the key 'rope_type' (one of {tuple(_SCALING_KEYS)})")
    kind = check_choice(scaling["rope_type"], "scaling['rope_type']", tuple(_SCALING_KEYS))
    keys = _SCALING_KEYS[kind]
    for key in scaling:
        if key != "rope_type" and key not in keys:
            raise ValueError(f"scaling has the key {key!r}, unknown for rope_type {kind!r} "
                             f"(its keys: {('rope_type', *keys)})")
    for key in keys:
        if key not in scaling:
            raise ValueError(f"scaling for rope_type {kind!r} must have the key {key!r}")
    if kind == "default":
        return None
    values = {"factor": check_real(scaling["factor"], "scaling['factor']", low=0, low_open=True)}
    if kind == "llama3":
        for key in ("low_freq_factor", "high_freq_factor"):
            values[key] = check_real(scaling[key], f"scaling[{key!r}]", low=0, low_open=True)
        if values["high_freq_factor"] <= values["low_freq_factor"]:
            raise ValueError(f"scaling['high_freq_factor'] must be greater than "
                             f"scaling['low_freq_factor'], got {values['high_freq_factor']} and "
                             f"{values['low_freq_factor']}")
        key = "original_max_position_embeddings"
        values[key] = check_int(scaling[key], f"scaling[{key!r}]")
    return values


def _frequencies(head_dim: int, base: float, scaling: dict[str, float] | None) -> np.ndarray:
    """The core of :func:`rope_frequencies` (arguments checked), as a float64 NumPy array."""
    omega = base ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    if scaling is None:
        return omega
    factor = scaling["factor"]
    if "low_freq_factor" not in scaling:  # "linear"
        return omega / factor
    original = scaling["original_max_position_embeddings"]
    low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    wavelength = 2 * np.pi / omega
    smooth = np.clip((original / wavelength - low) / (high - low), 0.0, 1.0)
    return (1 - smooth) * omega / factor + smooth * omega


def rope_frequencies(head_dim: int, base: float = 10000.0,
                     scaling: Mapping[str, object] | None = None) -> Tensor:
    """RoPE's inverse frequencies ``ω_i = base ** (-2i / head_dim)``, ``0 <= i < head_dim / 2``,
    float64 of shape ``(head_dim // 2,)``, optionally rescaled for longer contexts.

    ``scaling`` takes the ``rope_scaling`` dictionaries of Hugging Face configurations:

    * ``None`` or ``{"rope_type": "default"}``: no scaling;
    * ``{"rope_type": "linear", "factor": s}`` (position interpolation, Chen et al. 2023):
      ``ω_i / s``, the same as dividing every position by ``s``;
    * ``{"rope_type": "llama3", "factor": s, "low_freq_factor": a, "high_freq_factor": b,
      "original_max_position_embeddings": C}`` (Llama 3.1): with the wavelength
      ``λ_i = 2π / ω_i``, pairs with ``λ_i < C / b`` (fast rotations) are unchanged, pairs with
      ``λ_i > C / a`` get ``ω_i / s``, and between them
      ``ω_i' = (1 − t) ω_i / s + t ω_i`` with ``t = (C / λ_i − a) / (b − a)``, which runs from 0 to
      1 across that band, so the frequencies change continuously.

    Wrong type → TypeError naming ``scaling``; an unknown ``rope_type``, a missing, unknown or bad
    key → ValueError naming it.
    """
    import torch

    head_dim = _check_even(head_dim, "head_dim")
    base = check_real(base, "base", low=1, low_open=True)
    return torch.from_numpy(_frequencies(head_dim, base, _check_scaling(scaling)))


def layout_permutation(head_dim: int, to: str = "half") -> Tensor:
    """The feature order that turns one RoPE layout of a head into the other (int64 indices).

    ``to="half"``: ``[0, 2, 4, …, d − 2, 1, 3, …, d − 1]`` (``d = head_dim``): the pair
    ``(2i, 2i + 1)`` of the interleaved layout lands on ``(i, i + d/2)`` of the half layout, so
    ``apply_rope(x, p)[..., perm] == apply_rope(x[..., perm], p, layout="half")``.
    ``to="interleaved"``: the inverse ``[0, d/2, 1, d/2 + 1, …]``.

    Loading a Hugging Face Llama (half layout) into the interleaved layout: reorder the rows of
    ``W^Q`` and ``W^K`` inside each head, ``w.view(H, d, -1)[:, perm].reshape(H * d, -1)`` with
    ``perm = layout_permutation(d, "interleaved")``; ``W^V`` and ``W^O`` stay. The queries and keys
    are then those of the original model with their features permuted in the same way in every
    head, so every score ``q · k`` and everything after it is unchanged.
    """
    import torch

    half = _check_even(head_dim, "head_dim") // 2
    to = check_choice(to, "to", _LAYOUTS)
    if to == "half":
        return torch.cat((torch.arange(0, 2 * half, 2), torch.arange(1, 2 * half, 2)))
    return torch.stack((torch.arange(half), torch.arange(half, 2 * half)), dim=-1).flatten()


def _check_positions(positions: object, shape: tuple[int, ...]) -> np.ndarray:
    """``positions`` as integers of shape ``(L,)`` or ``(B, L)`` for ``x`` of ``shape``."""
    import torch

    pos = positions.detach().cpu().numpy() if isinstance(positions, torch.Tensor) else positions
    pos = np.asarray(pos)
    if pos.dtype.kind not in "iu":
        raise TypeError(f"positions must be integers, got dtype {pos.dtype}")
    length = shape[-2]
    if pos.shape == (length,):
        return pos
    if len(shape) in (3, 4) and pos.shape == (shape[0], length):
        return pos
    batched = f" or (B, L) = ({shape[0]}, {length}) with x (B, L, d) or (B, H, L, d)"
    raise ValueError(f"positions must have shape (L,) = ({length},), one per token"
                     f"{batched if len(shape) in (3, 4) else ''}; got {pos.shape} for x of "
                     f"shape {tuple(shape)}")


def apply_rope(
    x: Tensor,
    positions: Tensor | ArrayLike,
    base: float = 10000.0,
    *,
    scaling: Mapping[str, object] | None = None,
    layout: str = "interleaved",
) -> Tensor:
    """Rotary position embedding: turn each pair of features of the token at position ``pos`` by
    the angle ``pos · ω_i`` (:func:`rope_frequencies` ``(d, base, scaling)``). With
    ``layout="interleaved"`` (RoFormer, Meta's original Llama code) pair ``i`` is
    ``(x[2i], x[2i+1])``::

        out[2i]     = x[2i] cos(pos ω_i) - x[2i+1] sin(pos ω_i)
        out[2i + 1] = x[2i] sin(pos ω_i) + x[2i+1] cos(pos ω_i)

    With ``layout="half"`` (Hugging Face's ``rotate_half``) pair ``i`` is ``(x[i], x[i + d/2])``,
    rotated by the same formula; the two layouts differ by a fixed permutation of the features
    (:func:`layout_permutation`).

    In matrix form (interleaved, no scaling) ``out = R_pos x`` with ``R_pos = M_pos^T``
    (:func:`relative_position_matrix`), so ``(R_m q) · (R_n k) = q · R_{n-m} k`` depends on the
    offset ``n - m`` only.

    Shapes: ``x`` a floating-point tensor ``(..., L, d)`` with ``d`` even; ``positions``
    integers (a tensor, array or list; any integer, repeated or not) of shape ``(L,)``, or
    ``(B, L)`` — one row per sequence, e.g. for left-padded batches — when ``x`` is ``(B, L, d)``
    or ``(B, H, L, d)``. Returns a tensor of ``x``'s shape, dtype and device; the angles are
    computed in float64, then their cosines and sines are rounded to ``x``'s dtype.
    """
    x = check_tensor(x, "x")
    if x.ndim < 2 or x.shape[-1] == 0 or x.shape[-1] % 2:
        raise ValueError(f"x must have shape (..., L, d) with d even (the features are rotated "
                         f"in pairs), got {tuple(x.shape)}")
    pos = _check_positions(positions, tuple(x.shape))
    base = check_real(base, "base", low=1, low_open=True)
    omega = _frequencies(x.shape[-1], base, _check_scaling(scaling))
    layout = check_choice(layout, "layout", _LAYOUTS)
    return _rotate(x, *_rope_tables(pos, omega, x.ndim, x.dtype, x.device), layout)


def _rope_tables(pos: np.ndarray, omega: np.ndarray, x_ndim: int, dtype: torch.dtype,
                 device: torch.device) -> tuple[Tensor, Tensor]:
    """The cores of :func:`apply_rope` (arguments checked): ``cos`` and ``sin`` of the angles
    ``pos · ω`` computed in float64, then rounded to ``dtype``: ``(L, d/2)``, or ``(B, L, d/2)``
    for positions ``(B, L)`` (``(B, 1, L, d/2)`` when ``x_ndim`` is 4: every head alike). A
    model computes them once per forward pass and :func:`_rotate` uses them in every layer."""
    import torch

    angles = pos.astype(np.float64)[..., None] * omega
    if pos.ndim == 2 and x_ndim == 4:
        angles = angles[:, None]
    return (torch.as_tensor(np.cos(angles), dtype=dtype, device=device),
            torch.as_tensor(np.sin(angles), dtype=dtype, device=device))


def _rotate(x: Tensor, cos: Tensor, sin: Tensor, layout: str) -> Tensor:
    """Each pair of ``x``'s features turned by the angles whose ``cos`` and ``sin`` are given."""
    import torch

    if layout == "interleaved":
        first, second = x[..., 0::2], x[..., 1::2]  # (..., L, d/2) each
        return torch.stack((first * cos - second * sin, first * sin + second * cos),
                           dim=-1).flatten(-2)
    first, second = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((first * cos - second * sin, first * sin + second * cos), dim=-1)

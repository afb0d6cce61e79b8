"""Probability and statistics for notebook 04: mean, variance and standard deviation (with
``ddof``), standardisation (LayerNorm without its learned scale and shift), sampling from a
categorical distribution, empirical frequencies, and the simulation showing that the dot product
of two independent standard normal vectors in d_k dimensions has variance d_k.

Inputs are real numbers (integer or float, not bool or complex), finite and non-empty;
anything else raises ``TypeError`` or ``ValueError`` naming the argument.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from course_utils.validation import (
    check_axis,
    check_bool,
    check_int,
    check_real,
    check_rng,
    real_array,
)

__all__ = [
    "dot_product_samples",
    "dot_product_variance",
    "empirical_frequencies",
    "mean",
    "normal_pdf",
    "sample_categorical",
    "standardize",
    "std",
    "variance",
]

# Rows of (q, k) pairs drawn at once by the simulation: bounds its memory to a few MB.
_CHUNK_ELEMENTS = 1 << 18


def _count(array: np.ndarray, axis: int | None) -> tuple[int | None, int]:
    """The checked ``axis`` and how many numbers each statistic averages over (all of them when
    ``axis`` is None)."""
    if axis is None:
        return None, array.size
    axis = check_axis(axis, array.ndim)
    return axis, array.shape[axis]


def _result(value: np.ndarray | np.floating) -> float | np.ndarray:
    return float(value) if np.ndim(value) == 0 else np.asarray(value)


def mean(x: ArrayLike, axis: int | None = None) -> float | np.ndarray:
    r"""Arithmetic mean :math:`\mu = \frac{1}{n}\sum_{i=1}^n x_i`.

    Shapes: over all entries when ``axis`` is None (returns a ``float``), else over that axis
    (returns an array with the axis removed).
    """
    array = real_array(x, "x")
    axis, n = _count(array, axis)
    return _result(np.sum(array, axis=axis, dtype=np.float64) / n)


def variance(x: ArrayLike, ddof: int = 0, axis: int | None = None) -> float | np.ndarray:
    r"""Variance :math:`\sigma^2 = \frac{1}{n - \text{ddof}} \sum_{i=1}^n (x_i - \mu)^2`.

    ``ddof=0`` is the population variance (what LayerNorm and ``np.var`` use); ``ddof=1`` is the
    unbiased sample variance (``torch.var``'s default, ``statistics.variance``). ``n - ddof``
    must be positive. Shapes as in :func:`mean`.
    """
    array = real_array(x, "x")
    ddof = check_int(ddof, "ddof", 0)
    axis, n = _count(array, axis)
    if n - ddof <= 0:
        raise ValueError(f"ddof={ddof} needs more than {ddof} values per statistic, got n={n}")
    mu = np.mean(array, axis=axis, dtype=np.float64, keepdims=True)
    squares = np.sum((array - mu) ** 2, axis=axis)
    return _result(squares / (n - ddof))


def std(x: ArrayLike, ddof: int = 0, axis: int | None = None) -> float | np.ndarray:
    r"""Standard deviation :math:`\sigma = \sqrt{\sigma^2}`, the square root of :func:`variance`.

    It has the same unit as ``x``. Arguments and shapes as in :func:`variance`.
    """
    return _result(np.sqrt(variance(x, ddof=ddof, axis=axis)))


def standardize(x: ArrayLike, axis: int | None = -1, eps: float = 0.0) -> np.ndarray:
    r"""Shift and scale to mean 0 and variance 1 (LayerNorm without its learned gamma, beta):

    .. math:: \hat x = (x - \mu) / \sqrt{\sigma^2 + \epsilon}

    :math:`\mu` and the population variance :math:`\sigma^2` are taken over ``axis`` (the last
    one by default, the embedding axis of a (batch, seq, d_model) tensor, as in LayerNorm).
    Returns float64 of the same shape. A constant slice has no spread: with ``eps=0`` it raises
    ``ValueError``; pass ``eps > 0`` (LayerNorm uses 1e-5) to map it to zeros instead.
    """
    array = real_array(x, "x")
    eps = check_real(eps, "eps", low=0)
    var = np.asarray(variance(array, ddof=0, axis=axis))  # checks axis
    mu = np.mean(array, axis=axis, dtype=np.float64, keepdims=True)
    var = var.reshape(mu.shape)
    if eps == 0 and np.any(var == 0):
        raise ValueError("x has a constant slice (variance 0) along axis; pass eps > 0")
    return (array - mu) / np.sqrt(var + eps)


def _probabilities(probs: ArrayLike) -> np.ndarray:
    p = real_array(probs, "probs").astype(np.float64)
    if p.ndim != 1:
        raise ValueError(f"probs must be a vector (1-D), got shape {p.shape}")
    if np.any(p < 0):
        raise ValueError("probs must be non-negative")
    if not math.isclose(p.sum(), 1.0, abs_tol=1e-8):
        raise ValueError(f"probs must sum to 1, got sum {p.sum():.10g}")
    return p


def sample_categorical(
    probs: ArrayLike, n: int, rng: np.random.Generator | int | None = None
) -> np.ndarray:
    r"""Draw ``n`` category indices with :math:`P(i) = p_i`, by inverting the cumulative sum.

    Draw :math:`u \sim \mathcal{U}[0, 1)` and return the first i with
    :math:`u < p_1 + \dots + p_i`: category i owns an interval of length :math:`p_i`.
    Shapes: ``probs`` is (V,), non-negative and summing to 1 (within 1e-8); returns int64 (n,).
    ``rng`` is a NumPy Generator or a seed for ``np.random.default_rng``.
    """
    p = _probabilities(probs)
    n = check_int(n, "n", 1)
    cdf = np.cumsum(p)
    u = check_rng(rng).random(n) * cdf[-1]  # cdf[-1] is 1 up to rounding
    return np.searchsorted(cdf, u, side="right").astype(np.int64)


def empirical_frequencies(samples: ArrayLike, n_categories: int) -> np.ndarray:
    r"""The fraction of ``samples`` equal to each category: :math:`\hat p_i = \#\{s = i\} / n`.

    Shapes: ``samples`` is (n,) of integers in ``[0, n_categories)``; returns float64
    (n_categories,) summing to 1. By the law of large numbers it tends to the true
    probabilities as n grows.
    """
    s = real_array(samples, "samples")
    if s.dtype.kind == "f":
        raise TypeError(f"samples must be integer category indices, got dtype {s.dtype}")
    if s.ndim != 1:
        raise ValueError(f"samples must be a vector (1-D), got shape {s.shape}")
    n_categories = check_int(n_categories, "n_categories", 1)
    if s.min() < 0 or s.max() >= n_categories:
        raise ValueError(
            f"samples must lie in [0, {n_categories}), got values from {s.min()} to {s.max()}"
        )
    return np.bincount(s, minlength=n_categories) / s.size


def dot_product_samples(
    d_k: int,
    n_samples: int,
    *,
    rng: np.random.Generator | int | None = None,
    scaled: bool = False,
) -> np.ndarray:
    r"""Dot products :math:`q \cdot k` of independent :math:`q, k \sim \mathcal{N}(0, I_{d_k})`.

    Each term :math:`q_i k_i` has mean 0 and variance 1, so :math:`q \cdot k` has mean 0 and
    variance :math:`d_k`; with ``scaled=True`` it is divided by :math:`\sqrt{d_k}` (as in
    attention) and has variance 1. Returns float64 (n_samples,).
    """
    d_k = check_int(d_k, "d_k", 1)
    n_samples = check_int(n_samples, "n_samples", 1)
    scaled = check_bool(scaled, "scaled")
    generator = check_rng(rng)
    rows = max(1, _CHUNK_ELEMENTS // d_k)
    chunks = []
    for start in range(0, n_samples, rows):
        m = min(rows, n_samples - start)
        q = generator.standard_normal((m, d_k))
        k = generator.standard_normal((m, d_k))
        chunks.append(np.einsum("nd,nd->n", q, k))
    products = np.concatenate(chunks)
    return products / math.sqrt(d_k) if scaled else products


def dot_product_variance(
    d_ks: Sequence[int],
    n_samples: int,
    *,
    rng: np.random.Generator | int | None = None,
    scaled: bool = False,
) -> np.ndarray:
    """The sample variance (ddof=1) of :func:`dot_product_samples` for each ``d_k`` in ``d_ks``.

    Expect about ``d_ks`` unscaled and about 1 scaled; the relative standard error is
    roughly ``sqrt(2 / n_samples)``. Returns float64 (len(d_ks),).
    """
    if isinstance(d_ks, (str, bytes)) or not isinstance(d_ks, (Sequence, np.ndarray)):
        raise TypeError(f"d_ks must be a sequence of ints, got {type(d_ks).__name__}")
    if len(d_ks) == 0:
        raise ValueError("d_ks must not be empty")
    d_ks = [check_int(d, f"d_ks[{i}]") for i, d in enumerate(d_ks)]
    n_samples = check_int(n_samples, "n_samples", 2)
    generator = check_rng(rng)
    return np.array(
        [
            variance(dot_product_samples(d, n_samples, rng=generator, scaled=scaled), ddof=1)
            for d in d_ks
        ]
    )


def normal_pdf(x: ArrayLike, mean: float = 0.0, std: float = 1.0) -> float | np.ndarray:
    r"""The density of the normal distribution :math:`\mathcal{N}(\mu, \sigma^2)`, the bell curve:

    .. math:: f(x) = \frac{1}{\sigma\sqrt{2\pi}} \exp\!\Big(-\frac{(x - \mu)^2}{2\sigma^2}\Big).

    Shapes: ``x`` any shape (returns the same shape; a ``float`` for a scalar). ``std`` must be
    positive. The area under the curve is 1; a histogram of many draws with ``density=True``
    follows it.
    """
    array = real_array(x, "x").astype(np.float64)
    mean, std = check_real(mean, "mean"), check_real(std, "std", low=0, low_open=True)
    z = (array - mean) / std
    return _result(np.exp(-0.5 * z**2) / (std * math.sqrt(2 * math.pi)))

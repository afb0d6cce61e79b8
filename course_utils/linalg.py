"""Linear algebra written out by hand: matrix product by loops, dot product, cosine similarity,
broadcasting rules, the FLOP count of a matrix product, and power iteration.

These are the slow, readable versions of what NumPy and PyTorch do with BLAS. Notebooks 01-03
use them to show that the definitions give the same numbers as ``@``, ``np.dot`` and
``np.linalg.eigh``. Inputs are real numbers (integer or floating point, not bool or complex),
finite and non-empty; anything else raises ``TypeError`` or ``ValueError`` naming the argument.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from course_utils.validation import check_int, check_real, real_array

__all__ = [
    "PowerIterationResult",
    "broadcast_shape",
    "cosine_similarity",
    "dot",
    "matmul_flops",
    "matmul_loops",
    "power_iteration",
]


def matmul_loops(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    r"""Matrix product by the definition, three nested loops: ``C = A B``.

    .. math:: C_{ij} = \sum_{p=1}^{k} A_{ip} B_{pj}

    Shapes: ``a`` is (m, k), ``b`` is (k, n), the result is (m, n); the inner sizes must agree.
    The sums are taken in Python numbers (exact integers, double-precision floats); the result
    has the dtype ``a @ b`` would have (``np.result_type(a, b)``); an integer result too large
    for that dtype raises ``OverflowError`` where ``@`` would silently wrap around. Every size
    must be at least 1.
    """
    a = real_array(a, "a", 2, "matrix")
    b = real_array(b, "b", 2, "matrix")
    (m, k), (k_b, n) = a.shape, b.shape
    if k != k_b:
        raise ValueError(
            f"inner sizes differ: a is {a.shape} and b is {b.shape}; "
            f"a (m, k) @ b (k, n) needs a.shape[1] == b.shape[0] ({k} != {k_b})"
        )
    rows, cols = a.tolist(), b.tolist()
    c = [[0.0] * n for _ in range(m)]
    for i in range(m):
        for j in range(n):
            total = 0
            for p in range(k):
                total += rows[i][p] * cols[p][j]
            c[i][j] = total
    dtype = np.result_type(a, b)
    if dtype.kind in "iu":  # the sums are exact Python integers: refuse what dtype cannot hold
        info = np.iinfo(dtype)
        bad = next((x for row in c for x in row if not info.min <= x <= info.max), None)
        if bad is not None:
            raise OverflowError(
                f"the entry {bad} does not fit in {dtype} ({info.min} to {info.max}); "
                f"a @ b would silently wrap it around"
            )
    return np.array(c, dtype=dtype)


def matmul_flops(m: int, k: int, n: int) -> int:
    """Floating-point operations of an (m, k) @ (k, n) product: ``2 m k n``.

    Each of the m·n outputs takes k multiplications and k additions (counting the first
    addition to zero, the usual convention).
    """
    return 2 * check_int(m, "m") * check_int(k, "k") * check_int(n, "n")


def dot(a: ArrayLike, b: ArrayLike) -> float:
    r"""Dot product of two vectors of the same length: ``a · b = Σ_i a_i b_i``.

    Shapes: ``a`` and ``b`` are (d,). Returns a Python ``int`` for integer inputs (exact) and a
    ``float`` otherwise.
    """
    a = real_array(a, "a", 1, "vector")
    b = real_array(b, "b", 1, "vector")
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same length, got {a.shape} and {b.shape}")
    return sum(x * y for x, y in zip(a.tolist(), b.tolist(), strict=True))


def cosine_similarity(a: ArrayLike, b: ArrayLike) -> float:
    r"""Cosine of the angle between two vectors:

    .. math:: \cos\theta = \frac{a \cdot b}{\lVert a \rVert\, \lVert b \rVert} \in [-1, 1]

    Shapes: ``a`` and ``b`` are (d,). A zero vector has no direction: it raises ``ValueError``.
    Each vector is first divided by its largest absolute entry (which leaves the angle
    unchanged), so very large or very small entries neither overflow nor underflow.
    """
    a = real_array(a, "a", 1, "vector").astype(np.float64)
    b = real_array(b, "b", 1, "vector").astype(np.float64)
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same length, got {a.shape} and {b.shape}")
    for name, v in (("a", a), ("b", b)):
        if not np.any(v):
            raise ValueError(f"{name} is the zero vector, which has no direction")
    a, b = a / np.max(np.abs(a)), b / np.max(np.abs(b))
    cosine = dot(a, b) / math.sqrt(dot(a, a) * dot(b, b))
    return min(1.0, max(-1.0, cosine))


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape NumPy and PyTorch broadcast ``shapes`` to (like ``np.broadcast_shapes``).

    Rule: align the shapes on the right; missing leading axes count as size 1; on each axis the
    sizes must be equal or one of them 1, and the result takes the larger. A conflict raises
    ``ValueError`` naming the axis, e.g. (32, 128, 768) with (128, 512).
    """
    if not shapes:
        raise ValueError("shapes must hold at least one shape")
    checked = []
    for number, shape in enumerate(shapes):
        if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
            raise TypeError(f"shapes[{number}] must be a tuple of ints, got {shape!r:.60}")
        checked.append(tuple(check_int(size, f"shapes[{number}][{i}]", minimum=0)
                             for i, size in enumerate(shape)))
    ndim = max(len(shape) for shape in checked)
    result = []
    for axis in range(-ndim, 0):
        sizes = {shape[axis] for shape in checked if len(shape) >= -axis}
        sizes.discard(1)
        if len(sizes) > 1:
            in_order = list(dict.fromkeys(shape[axis] for shape in checked  # argument order
                                          if len(shape) >= -axis and shape[axis] != 1))
            raise ValueError(
                f"shapes {', '.join(map(str, checked))} do not broadcast: axis {axis} (counted "
                f"from the right) has sizes {in_order}; sizes must be equal or 1"
            )
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


@dataclass(frozen=True)
class PowerIterationResult:
    """What :func:`power_iteration` found.

    ``eigenvalue`` and unit ``eigenvector`` (largest-magnitude entry positive); ``n_iters``
    steps taken; ``converged`` whether the residual fell below the tolerance; ``history`` the
    eigenvalue estimate after each step, shape (n_iters,).
    """

    eigenvalue: float
    eigenvector: np.ndarray
    n_iters: int
    converged: bool
    history: np.ndarray


def power_iteration(
    a: ArrayLike,
    *,
    v0: ArrayLike | None = None,
    max_iters: int = 1000,
    tol: float = 1e-10,
    seed: int = 0,
) -> PowerIterationResult:
    r"""The dominant eigenpair of a square matrix by power iteration.

    Repeat :math:`w = A v`, :math:`\lambda = v^\top w` (the Rayleigh quotient of the unit vector
    v), :math:`v \leftarrow w / \lVert w \rVert`, until the residual
    :math:`\lVert A v - \lambda v \rVert \le \mathrm{tol} \cdot \lVert A \rVert_F`.
    The error shrinks like :math:`|\lambda_2 / \lambda_1|^t`.

    Shapes: ``a`` is (n, n); ``v0`` (the start vector, default a standard normal draw from
    ``np.random.default_rng(seed)``) is (n,). It converges when one real eigenvalue is strictly
    largest in magnitude and ``v0`` has a component along its eigenvector. Otherwise (e.g.
    eigenvalues 1 and -1, or a rotation with complex eigenvalues) it stops after ``max_iters``
    with ``converged=False``. If ``A v`` is exactly zero, v is an eigenvector with eigenvalue
    0 and is returned as converged (the dominant pair only when every eigenvalue is 0).
    """
    a = real_array(a, "a", 2, "square matrix").astype(np.float64)
    n = a.shape[0]
    if a.shape != (n, n):
        raise ValueError(f"a must be a square matrix (n, n), got shape {a.shape}")
    max_iters = check_int(max_iters, "max_iters")
    tol = check_real(tol, "tol", low=0, high=1, low_open=True, high_open=True)
    seed = check_int(seed, "seed", minimum=0)
    if v0 is None:
        v = np.random.default_rng(seed).standard_normal(size=(n,))
    else:
        v = real_array(v0, "v0", 1, "vector").astype(np.float64)
        if v.shape != (n,):
            raise ValueError(f"v0 must have shape ({n},) to match a, got {v.shape}")
        if not np.any(v):
            raise ValueError("v0 must not be the zero vector")
    v = v / np.linalg.norm(v)
    threshold = tol * np.linalg.norm(a)
    history = []
    converged = False
    eigenvalue = 0.0
    for _ in range(max_iters):
        w = a @ v
        eigenvalue = float(v @ w)
        history.append(eigenvalue)
        if np.linalg.norm(w - eigenvalue * v) <= threshold:
            converged = True
            break
        v = w / np.linalg.norm(w)
    if v[np.argmax(np.abs(v))] < 0:
        v = -v
    return PowerIterationResult(eigenvalue, v, len(history), converged, np.array(history))

"""Checkers for notebook 03 (eigenvalues and eigenvectors)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.checks import Case, CheckResult, check_function


def _is_eigenpair(a: np.ndarray, v: np.ndarray, lam: float) -> bool:
    if not np.any(v):
        raise ValueError("v is the zero vector, which is never an eigenvector")
    return bool(np.allclose(a @ v, lam * v, atol=1e-8))


def _explained_variance_ratio(x: np.ndarray) -> np.ndarray:
    # reference through the SVD of the centred data (singular values squared), not eigh
    if x.shape[0] < 2:
        raise ValueError("need at least 2 points")
    s = np.linalg.svd(x - x.mean(axis=0), compute_uv=False)
    variances = np.zeros(x.shape[1])
    variances[: s.size] = s**2
    if variances.sum() == 0:
        raise ValueError("every point is the same: no variance to explain")
    return variances / variances.sum()


def _symmetric_with_gap(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    eigenvalues = np.array([6.0, 2.5, -1.5, 1.0, 0.5][:n])
    return (q * eigenvalues) @ q.T


def check_is_eigenpair(func: Callable) -> CheckResult:
    """``func(a, v, lam)``: True when a @ v equals lam * v (``np.allclose``, atol 1e-8), else
    False; ValueError when v is the zero vector."""
    d = np.diag([2.0, 3.0])
    s = np.array([[2.0, 1.0], [1.0, 2.0]])
    upper = np.array([[2.0, 1.0], [0.0, 3.0]])
    cases = [
        Case((d, np.array([0.0, 1.0]), 3.0), "diag(2, 3), v = e2, lambda = 3", expected=True),
        Case((d, np.array([0.0, 1.0]), 2.0), "diag(2, 3), v = e2, lambda = 2", expected=False),
        Case((s, np.array([1.0, 1.0]), 3.0), "[[2, 1], [1, 2]], v = [1, 1], 3", expected=True),
        Case((s, np.array([1.0, -1.0]), 1.0), "[[2, 1], [1, 2]], v = [1, -1], 1", expected=True),
        Case((s, np.array([1.0, 0.0]), 2.0), "[1, 0] is not an eigenvector", expected=False),
        Case((upper, np.array([1.0, 1.0]), 3.0),
             "not symmetric: [[2, 1], [0, 3]], v = [1, 1], 3 (A v, not v A)", expected=True),
        Case((upper, np.array([1.0, 0.0]), 2.0), "not symmetric: v = [1, 0], 2", expected=True),
        Case((np.array([[0.1, 0.2], [0.0, 0.3]]), np.array([1.0, 1.0]), 0.3),
             "0.1 + 0.2 != 0.3 in floating point: compare with a tolerance", expected=True),
        Case((s, np.array([1.0, 1.0]), 3.0001), "lambda off by 1e-4 is too far for np.allclose",
             expected=False),
        Case((d, np.zeros(2), 0.0), "the zero vector", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=_is_eigenpair, name="is_eigenpair")


def check_power_iteration(func: Callable) -> CheckResult:
    """``func(a, num_iters)``: the dominant eigenvalue (largest in magnitude, with its sign)
    of a square matrix; ValueError when a is not square."""
    cases = [
        Case((np.diag([2.0, 3.0]), 200), "diag(2, 3): 3", expected=3.0),
        Case((np.array([[2.0, 1.0], [1.0, 2.0]]), 200), "[[2, 1], [1, 2]]: 3", expected=3.0),
        Case((np.diag([-4.0, 1.0, 2.0]), 200), "diag(-4, 1, 2): -4, sign kept", expected=-4.0),
        Case((_symmetric_with_gap(5, 0), 200), "a 5x5 symmetric matrix: 6", expected=6.0),
        Case((np.ones((2, 3)), 10), "a (2, 3) matrix is not square", raises=ValueError),
    ]
    return check_function(func, cases=cases, name="power_iteration", rtol=1e-6)


def check_explained_variance_ratio(func: Callable) -> CheckResult:
    """``func(x)``: for points x (n, d), the covariance eigenvalues sorted from largest to
    smallest, divided by their sum (d,); ValueError for fewer than 2 points or no variance."""
    rng = np.random.default_rng(4)
    cloud = rng.standard_normal((200, 3)) * [3.0, 1.0, 0.3] + [5.0, -2.0, 1.0]
    cross = np.array([[3.0, 0.0], [-3.0, 0.0], [0.0, 1.0], [0.0, -1.0]]) + 10.0
    line = np.outer(np.arange(6.0), [1.0, 2.0, 2.0])
    cases = [
        Case((cross,), "a cross of 4 points, variances 9:1 -> [0.9, 0.1]"),
        Case((cloud,), "a (200, 3) Gaussian cloud, off the origin"),
        Case((line,), "points on a line: [1, 0, 0]"),
        Case((np.ones((1, 3)),), "a single point", raises=ValueError),
        Case((np.ones((5, 2)),), "5 copies of one point: no variance", raises=ValueError),
    ]
    return check_function(
        func, cases=cases, reference=_explained_variance_ratio, name="explained_variance_ratio",
        atol=1e-9,
    )

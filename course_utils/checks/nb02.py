"""Checkers for notebook 02 (matrix multiplication and dot products)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.checks import Case, CheckResult, RuleBroken, check_function, wraps_answer
from course_utils.linalg import cosine_similarity, matmul_loops


def _batched_scores(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    if q.ndim < 2 or k.ndim < 2 or q.shape[:-2] != k.shape[:-2]:
        raise ValueError(f"q and k must be (..., n, d_k) with the same leading axes, got "
                         f"{q.shape} and {k.shape}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same d_k, got {q.shape} and {k.shape}")
    return q @ np.swapaxes(k, -1, -2)


_PRODUCTS = {"matmul", "vecdot", "matvec", "vecmat", "dot", "vdot", "inner", "tensordot",
             "einsum", "multi_dot"}  # NumPy's ready-made products (ufuncs and functions)


class _LoopsOnly(np.ndarray):
    """An array that refuses ready-made matrix products, so the exercise's loops are enforced."""

    def _refuse(self, *args, **kwargs):
        raise RuleBroken("it uses a ready-made product (`@`, np.dot, np.matmul, np.einsum or the "
                         "like): this exercise builds the product from loops")

    __matmul__ = __rmatmul__ = __imatmul__ = dot = _refuse

    def __array_ufunc__(self, ufunc, method, *inputs, out=(), **kwargs):
        if ufunc.__name__ in _PRODUCTS:
            self._refuse()
        if out:
            kwargs["out"] = tuple(_plain(x) for x in out)
        return getattr(ufunc, method)(*(_plain(x) for x in inputs), **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if func.__name__ in _PRODUCTS:
            self._refuse()
        return super().__array_function__(func, types, args, kwargs)


def _plain(x):
    return x.view(np.ndarray) if isinstance(x, _LoopsOnly) else x


def check_matmul(func: Callable) -> CheckResult:
    """``func(a, b)``: the (m, n) NumPy array ``a @ b`` for (m, k) and (k, n) inputs, computed
    with loops (``@``, np.dot, np.matmul and the like refuse to run), of dtype
    ``np.result_type(a, b)``; ValueError when the inner sizes differ."""

    @wraps_answer(func)
    def loops_only(a, b):
        return _plain(func(a.view(_LoopsOnly), b.view(_LoopsOnly)))

    rng = np.random.default_rng(2)
    cases = [
        Case((np.array([[1, 2], [3, 4]]), np.array([[5, 6], [7, 8]])),
             "[[19, 22], [43, 50]], integers in, integers out"),
        Case((rng.standard_normal((2, 3)), rng.standard_normal((3, 4))), "(2, 3) @ (3, 4)"),
        Case((np.array([[1.0, 2.0, 3.0]]), np.array([[4.0], [5.0], [6.0]])), "row @ column"),
        Case((np.array([[1.0], [2.0]]), np.array([[3.0, 4.0, 5.0]])), "column @ row: (2, 3)"),
        Case((np.array([[1, 2]], dtype=np.int32), np.array([[3], [4]], dtype=np.int32)),
             "int32 @ int32 is int32 (np.result_type)"),
        Case((np.array([[1, 2]]), np.array([[0.5], [0.25]])), "int @ float is float64"),
        Case((np.ones((2, 3)), np.ones((2, 3))), "(2, 3) @ (2, 3) must fail", raises=ValueError),
    ]
    return check_function(loops_only, cases=cases, reference=matmul_loops, name="matmul",
                          exact_dtype=True)


def check_cosine_similarity(func: Callable) -> CheckResult:
    """``func(a, b)``: a·b / (|a| |b|); ValueError for a zero vector."""
    cases = [
        Case((np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])), "[1, 2, 3] and [4, 5, 6]"),
        Case((np.array([1.0, 0.0]), np.array([0.0, 5.0])), "perpendicular: 0"),
        Case((np.array([1.0, -2.0]), np.array([-3.0, 6.0])), "opposite directions: -1"),
        Case((np.array([2.0, 2.0]), np.array([0.5, 0.5])), "same direction, other length: 1"),
        Case((np.array([1.0, 2.0]), np.array([0.0, 0.0])), "zero vector", raises=ValueError),
    ]
    return check_function(
        func, cases=cases, reference=cosine_similarity, name="cosine_similarity", rtol=1e-9
    )


def check_batched_scores(func: Callable) -> CheckResult:
    """``func(q, k)``: every score ``q[..., i, :] · k[..., j, :]`` for queries (..., n_q, d_k)
    and keys (..., n_k, d_k) with the same leading axes (none, batch, or batch and heads), i.e.
    ``q @ np.swapaxes(k, -1, -2)`` of shape (..., n_q, n_k); ValueError when the d_k differ."""
    rng = np.random.default_rng(3)
    q_small = np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [2.0, 0.0]]])
    k_small = np.arange(12.0).reshape(2, 3, 2)
    cases = [
        Case((q_small, k_small), "a batch of 2: (2, 2, 2) queries, (2, 3, 2) keys -> (2, 2, 3)"),
        Case((rng.standard_normal((3, 4, 5)), rng.standard_normal((3, 6, 5))),
             "(3, 4, 5) and (3, 6, 5) -> (3, 4, 6)"),
        Case((rng.standard_normal((3, 4)), rng.standard_normal((5, 4))),
             "no batch axis: (3, 4) and (5, 4) -> (3, 5), as in section 6"),
        Case((rng.standard_normal((2, 3, 4, 8)), rng.standard_normal((2, 3, 6, 8))),
             "batch and heads: (2, 3, 4, 8) and (2, 3, 6, 8) -> (2, 3, 4, 6)"),
        Case((rng.standard_normal((2, 1, 4)), rng.standard_normal((2, 7, 4))),
             "one query per sequence: (2, 1, 4) and (2, 7, 4) -> (2, 1, 7)"),
        Case((np.ones((2, 3, 4)), np.ones((2, 3, 5))), "d_k 4 against 5", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=_batched_scores, name="batched_scores")

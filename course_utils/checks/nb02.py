"""Checkers for notebook 02 (matrix multiplication and dot products)."""

from __future__ import annotations

import dis
import types
from collections.abc import Callable
from typing import NoReturn

import numpy as np

from course_utils.checks import (
    Case,
    CheckResult,
    RuleBroken,
    check_function,
    check_number,
    exercise,
    wraps_answer,
)
from course_utils.linalg import matmul_loops


def _batched_scores(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    if q.ndim < 2 or k.ndim < 2:
        raise ValueError(f"q and k must be (..., n, d_k), got {q.shape} and {k.shape}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same d_k, got {q.shape} and {k.shape}")
    if k.ndim == q.ndim - 1 and k.shape[:-2] == q.shape[:-3]:
        k = k[..., None, :, :]  # keys shared along q's axis -3 (the heads)
    elif k.shape[:-2] != q.shape[:-2]:
        raise ValueError(f"the leading axes of q {q.shape} and k {k.shape} do not match")
    return q @ np.swapaxes(k, -1, -2)


_PRODUCTS = {"matmul", "vecdot", "matvec", "vecmat", "dot", "vdot", "inner", "tensordot",
             "einsum", "multi_dot"}  # NumPy's ready-made products (ufuncs and functions)


def _refuse_product() -> NoReturn:
    raise RuleBroken("it uses a ready-made product (`@`, np.dot, np.matmul, np.einsum or the "
                     "like): the rule is to build each row of the product yourself")


class _RowsOnly(np.ndarray):
    """An array that enforces Exercise 1's rule: no ready-made product, no multiplication of more
    than one row of b at a time (all of b at once, or all rows at once, by broadcasting), no read
    of a whole column (a loop over the columns of b), and no more reads than a row-by-row product
    needs (entry by entry reads b far more often). Each multiplication of a row of b (role "b")
    is counted: a product computed on a plain copy of b (np.array(b), b + 0), which this array
    cannot watch, makes too few of them."""

    budget = {"reads": 0, "limit": 0, "row": 0, "row_products": 0}
    role = ""  # "a" or "b": the input this array is (a view of), passed on to its views

    def __array_finalize__(self, obj):
        self.role = getattr(obj, "role", "")

    def _refuse(self, *args, **kwargs):
        _refuse_product()

    __matmul__ = __rmatmul__ = __imatmul__ = dot = _refuse

    def __getitem__(self, index):
        budget = _RowsOnly.budget
        budget["reads"] += 1
        if budget["reads"] > budget["limit"]:
            raise RuleBroken("it reads the inputs entry by entry or column by column (more reads "
                             "than 2 m k + m): the rule is to build each row of the product from "
                             "whole rows of b, with no loop over the columns of b")
        part = super().__getitem__(index)
        if isinstance(part, np.ndarray) and part.ndim == 1 and not part.flags.c_contiguous:
            raise RuleBroken("it reads a whole column (b[:, j], or a loop over b.T): the rule is "
                             "no loop over the columns of b; build each row of the product from "
                             "whole rows of b")
        return part

    def __iter__(self):  # a loop over the rows reads each row once (no extra read at the end)
        return (self[i] for i in range(len(self)))

    def __array_ufunc__(self, ufunc, method, *inputs, out=(), **kwargs):
        if ufunc.__name__ in _PRODUCTS:
            self._refuse()
        if ufunc is np.multiply and method == "__call__":
            size = int(np.prod(np.broadcast_shapes(*(np.shape(x) for x in inputs))))
            if size > _RowsOnly.budget["row"]:
                raise RuleBroken(f"it multiplies {size} numbers at once, more than one row of "
                                 "b (all of b at once, or all rows at once, by broadcasting): "
                                 "the rule is one weight times one row of b, n numbers, per "
                                 "multiplication")
            if any(isinstance(x, _RowsOnly) and x.role == "b" for x in inputs):
                _RowsOnly.budget["row_products"] += 1
        if out:
            kwargs["out"] = tuple(_plain(x) for x in out)
        return getattr(ufunc, method)(*(_plain(x) for x in inputs), **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if func.__name__ in _PRODUCTS:
            self._refuse()
        return super().__array_function__(func, types, args, kwargs)


def _plain(x):
    return x.view(np.ndarray) if isinstance(x, _RowsOnly) else x


_UNWRAP = {"asarray", "ascontiguousarray", "asfortranarray", "view", "tolist"}


def _read_code(func: Callable) -> None:
    """Exercise 1's rule, read from the answer's own bytecode (nested functions included): the
    `@` operator and NumPy's product functions, also on inputs first turned into plain arrays
    (np.asarray, .view, .tolist), which the watching array above cannot see. (np.array(b) and
    b + 0 are common in right answers too, on other arrays: a copy of b made with them is caught
    afterwards, by the count of multiplications of the rows of b.)"""
    code = getattr(func, "__code__", None)
    todo = [code] if isinstance(code, types.CodeType) else []
    while todo:
        code = todo.pop()
        todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        if any(ins.opname == "BINARY_OP" and ins.argrepr in ("@", "@=")
               for ins in dis.get_instructions(code)) or _PRODUCTS & set(code.co_names):
            _refuse_product()
        unwrap = sorted(_UNWRAP & set(code.co_names))
        if unwrap:
            raise RuleBroken(f"it turns the inputs into plain arrays ({unwrap[0]}), out of the "
                             "checker's sight: the rule is to build each row of the product "
                             "yourself from a and b as they are given")


@exercise("constrain")
def check_matmul_rows(func: Callable) -> CheckResult:
    """``func(a, b)``: the (m, n) array ``a @ b`` for (m, k) and (k, n) inputs, of dtype
    ``np.result_type(a, b)``, built row by row: row i is the sum over p of ``a[i, p] * b[p]``.
    The rule is enforced: ready-made products refuse to run, a multiplication of more than n
    numbers at once (one row of b) is refused, at most 2 m k + m reads of the inputs are
    allowed (a loop over the columns of b, or entry by entry, reads more), and the m k
    multiplications of a weight by a row of b must be made on b itself (not on a plain copy of
    it, such as np.array(b) or b + 0, out of the checker's sight). ValueError when the inner
    sizes differ."""

    @wraps_answer(func)
    def rows_only(a, b):
        m, k = a.shape
        n = b.shape[1]
        _RowsOnly.budget.update(reads=0, limit=2 * m * k + m, row=n, row_products=0)
        _read_code(func)
        watched_a, watched_b = a.view(_RowsOnly), b.view(_RowsOnly)
        watched_a.role, watched_b.role = "a", "b"
        got = _plain(func(watched_a, watched_b))
        made = _RowsOnly.budget["row_products"]
        if k == b.shape[0] and made < m * k:  # (for a size mismatch, "should raise" says more)
            raise RuleBroken("it works on a plain copy of b, out of the checker's sight "
                             "(np.array(b), np.copy(b) or b + 0 makes one): the checker saw "
                             f"{made} of the m k = {m * k} multiplications of a weight a[i, r] "
                             "by a row b[r] that the product needs. The rule is to build each "
                             "row of the product from whole rows of b itself")
        return got

    rng = np.random.default_rng(2)
    cases = [
        Case((np.array([[1, 2], [3, 4]]), np.array([[5, 6], [7, 8]])),
             "[[19, 22], [43, 50]], integers in, integers out"),
        Case((rng.standard_normal((2, 3)), rng.standard_normal((3, 4))), "(2, 3) @ (3, 4)"),
        Case((rng.standard_normal((2, 2)), rng.standard_normal((2, 12))),
             "(2, 2) @ (2, 12): b has many more columns than rows"),
        Case((rng.standard_normal((6, 2)), rng.standard_normal((2, 3))),
             "(6, 2) @ (2, 3): many rows"),
        Case((np.array([[1.0, 2.0, 3.0]]), np.array([[4.0], [5.0], [6.0]])), "row @ column"),
        Case((np.array([[1, 2]], dtype=np.int32), np.array([[3], [4]], dtype=np.int32)),
             "int32 @ int32 is int32 (np.result_type)"),
        Case((np.array([[1, 2]]), np.array([[0.5], [0.25]])), "int @ float is float64"),
        Case((np.ones((2, 3)), np.ones((2, 3))), "(2, 3) @ (2, 3) must fail", raises=ValueError),
    ]
    return check_function(rows_only, cases=cases, reference=matmul_loops, name="matmul_rows",
                          exact_dtype=True)


_N, _D, _HEADS = 1024, 768, 12
_RATIO = (4 * 2 * _N * _D * _D) / (_HEADS * 2 * _N * _N * (_D // _HEADS))


@exercise("predict")
def check_projection_to_score_ratio(answer) -> CheckResult:
    """``answer``: FLOPs of the four projections (Q, K, V, output) of one GPT-2-small layer
    over the FLOPs of its scores QK^T (12 heads, d_k = 64), at N = 1024 tokens: 4d/N = 3."""
    notes = {1 / _RATIO: "That is the ratio upside down: scores over projections.",
             _RATIO * _HEADS: "That compares the projections with the scores of one head only.",
             _RATIO / 4: "That counts one projection; a layer has four (Q, K, V and output).",
             _RATIO / 2: "That adds the weights times V to the scores; the question leaves that "
                         "product out."}
    note = next((why for value, why in notes.items()
                 if isinstance(answer, (int, float)) and not isinstance(answer, bool)
                 and abs(answer - value) <= 0.05 * value), "")
    explanation = (f"{note} Each projection is (N, d) @ (d, d): 2 N d^2 FLOPs, four of them "
                   "8 N d^2 = 4.83e9. The scores are (N, d_k) @ (d_k, N) per head: 2 N^2 d_k, "
                   "times h = 12 heads with h d_k = d: 2 N^2 d = 1.61e9. Ratio 4 d / N = 3.0: "
                   "below N = 4 d = 3072 tokens the projections cost more than the scores. "
                   "(The weights times V cost as much as the scores again: with them, "
                   "4 d / 2N = 1.5.)")
    return check_number(answer, _RATIO, name="projection_to_score_ratio",
                        label="projection FLOPs / score FLOPs, GPT-2 small, N = 1024",
                        explanation=explanation.strip(), rtol=0.05)


def _similarity_matrix(e: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(e, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("a zero row has no direction")
    unit = e / norms
    return unit @ unit.T


@exercise("debug")
def check_similarity_matrix(func: Callable) -> CheckResult:
    """``func(e)``: for embeddings e (n, d), one per row, the (n, n) cosine similarities of every
    pair; 1 on the diagonal; ValueError for a row of zeros."""
    rng = np.random.default_rng(6)
    words = np.array([[0.9, 0.8, 0.1, 0.0], [0.8, 0.9, 0.0, 0.1], [0.0, 0.1, 0.9, 0.7],
                      [0.1, 0.0, 0.8, 0.9]])
    cases = [
        Case((np.array([[3.0, 4.0], [1.0, 0.0]]),), "[[3, 4], [1, 0]] -> [[1, 0.6], [0.6, 1]]"),
        Case((words,), "section 5's four words (4, 4): king . queen 0.986"),
        Case((rng.standard_normal((3, 5)),), "3 embeddings of 5 numbers: (3, 3), diagonal 1"),
        Case((rng.standard_normal((6, 2)) * 10,), "6 embeddings of 2 numbers: (6, 6)"),
        Case((np.array([[1.0, 2.0], [0.0, 0.0]]),), "a zero row has no direction",
             raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=_similarity_matrix,
                          name="similarity_matrix")


@exercise("extend")
def check_batched_scores(func: Callable) -> CheckResult:
    """``func(q, k)``: every score ``q[..., i, :] · k[..., j, :]`` for queries (..., n_q, d_k) and
    keys (..., n_k, d_k) with the same leading axes, or keys with one axis fewer (no head axis:
    (batch, n_k, d_k) against (batch, heads, n_q, d_k)), shared by every head; shape
    (..., n_q, n_k). ValueError when the d_k differ. The case with as many heads as sequences
    is the trap: a plain ``q @ np.swapaxes(k, -1, -2)`` runs there and pairs the wrong keys."""
    rng = np.random.default_rng(3)
    q_small = np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [2.0, 0.0]]])
    k_small = np.arange(12.0).reshape(2, 3, 2)
    cases = [
        Case((q_small, k_small), "a batch of 2: (2, 2, 2) queries, (2, 3, 2) keys -> (2, 2, 3)"),
        Case((rng.standard_normal((3, 4)), rng.standard_normal((5, 4))),
             "no batch axis: (3, 4) and (5, 4) -> (3, 5), as in section 6"),
        Case((rng.standard_normal((2, 3, 4, 8)), rng.standard_normal((2, 3, 6, 8))),
             "one set of keys per head: (2, 3, 4, 8) and (2, 3, 6, 8) -> (2, 3, 4, 6)"),
        Case((rng.standard_normal((2, 3, 4, 8)), rng.standard_normal((2, 6, 8))),
             "keys shared by 3 heads: (2, 3, 4, 8) and (2, 6, 8) -> (2, 3, 4, 6)"),
        Case((rng.standard_normal((3, 3, 4, 8)), rng.standard_normal((3, 6, 8))),
             "keys shared by the heads, 3 heads and 3 sequences: sequence b's keys for every "
             "head of sequence b"),
        Case((rng.standard_normal((2, 1, 4)), rng.standard_normal((2, 7, 4))),
             "one query per sequence: (2, 1, 4) and (2, 7, 4) -> (2, 1, 7)"),
        Case((np.ones((2, 3, 4)), np.ones((2, 3, 5))), "d_k 4 against 5", raises=ValueError),
    ]
    return check_function(func, cases=cases, reference=_batched_scores, name="batched_scores")

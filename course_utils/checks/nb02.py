"""Checkers for notebook 02 (matrix multiplication and dot products)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.checks import Case, CheckResult, Rule, check_function, check_number, exercise
from course_utils.linalg import matmul_loops

_NO_PRODUCT = Rule("to build each row yourself, a weighted sum of the rows of b: no `@` and no "
                   "ready-made product (np.matmul, np.dot, np.einsum, ...)", matmul=True,
                   names={"matmul", "dot", "vdot", "inner", "tensordot", "einsum", "multi_dot",
                          "vecdot", "matvec", "vecmat", "mm", "bmm", "mv", "__matmul__"})


@exercise("constrain")
def check_matmul_rows(func: Callable) -> CheckResult:
    """``func(a, b)``: ``a @ b`` for (m, k) and (k, n) inputs, (m, n) of dtype
    ``np.result_type(a, b)``, row i the sum over r of ``a[i, r] * b[r]``; ValueError when the
    inner sizes differ. The rule is read from the code (`@`, names of ready-made products); it
    cannot see how rows are built: entry by entry, by columns, or all at once by broadcasting."""
    g = np.random.default_rng(2).standard_normal
    cases = [Case((np.array([[1, 2], [3, 4]]), np.array([[5, 6], [7, 8]])),
                  "[[19, 22], [43, 50]], integers in, integers out"),
             Case((g((2, 3)), g((3, 4))), "(2, 3) @ (3, 4)"),
             Case((g((2, 2)), g((2, 12))), "(2, 2) @ (2, 12): b has many more columns than rows"),
             Case((g((6, 2)), g((2, 3))), "(6, 2) @ (2, 3): many rows"),
             Case((np.array([[1.0, 2.0, 3.0]]), np.array([[4.0], [5.0], [6.0]])), "row @ column"),
             Case((np.array([[1, 2]], dtype=np.int32), np.array([[3], [4]], dtype=np.int32)),
                  "int32 @ int32 is int32 (np.result_type)"),
             Case((np.array([[1, 2]]), np.array([[0.5], [0.25]])), "int @ float is float64"),
             Case((np.ones((2, 3)), np.ones((2, 3))), "(2, 3) @ (2, 3) fails", raises=ValueError)]
    mistakes = {"it takes the weights of row i from column i of a (a[r, i], not a[i, r])":
                lambda a, b: matmul_loops(a.T, b)}
    return check_function(func, cases=cases, reference=matmul_loops, name="matmul_rows",
                          exact_dtype=True, rule=_NO_PRODUCT, mistakes=mistakes)


_RATIO = (4 * 2 * 1024 * 768**2) / (12 * 2 * 1024**2 * 64)  # N = 1024, d = 768, 12 heads of 64


@exercise("predict")
def check_projection_to_score_ratio(answer, *, show_answer: bool = False) -> CheckResult:
    """``answer``: 4 projections' FLOPs over the scores' of GPT-2 small at N = 1024: 4 d / N."""
    mistakes = {1 / _RATIO: "that is the ratio upside down: scores over projections",
                _RATIO * 12: "that compares the projections with the scores of one head only",
                _RATIO / 4: "that counts one projection; a layer has four (Q, K, V and output)",
                _RATIO / 2: "that adds the weights times V (left out here) or drops a 2 of 2 m n k",
                _RATIO / 12: "that projects to one head's d_k = 64 columns; each projection maps "
                             "d_model to d_model = h d_k, all the heads at once"}
    return check_number(
        answer, _RATIO, name="projection_to_score_ratio", mistakes=mistakes,
        label="projection FLOPs / score FLOPs, GPT-2 small, N = 1024",
        hint="write both counts with 2 m n k in N, d_model, d_k and h, then use h d_k = d_model",
        explanation="Each projection is (N, d) @ (d, d): 2 N d^2 FLOPs, four of them 8 N d^2 = "
        "4.83e9. The scores are (N, d_k) @ (d_k, N) per head: 2 N^2 d_k, times h = 12 heads "
        "with h d_k = d: 2 N^2 d = 1.61e9. Ratio 4 d / N = 3.0: below N = 4 d = 3072 tokens the "
        "projections cost more than the scores.", show_answer=show_answer)


def _cosines(e: np.ndarray, axis: int = 1, keepdims: bool = True) -> np.ndarray:
    unit = e / np.linalg.norm(e, axis=axis, keepdims=keepdims)
    return unit @ unit.T


@exercise("debug")
def check_similarity_matrix(func: Callable) -> CheckResult:
    """``func(e)``: the (n, n) cosine similarities of the rows of e (n, d), 1 on the diagonal;
    ValueError for a row of zeros."""
    g = np.random.default_rng(6).standard_normal
    words = np.array([[9, 8, 1, 0], [8, 9, 0, 1], [0, 1, 9, 7], [1, 0, 8, 9]]) / 10
    cases = [Case((np.array([[3.0, 4], [1, 0]]),), "[[3, 4], [1, 0]] -> [[1, 0.6], [0.6, 1]]"),
             Case((words,), "section 5's four words (4, 4): king . queen 0.986"),
             Case((g((3, 5)),), "3 embeddings of 5 numbers: (3, 3), diagonal 1"),
             Case((g((6, 2)) * 10,), "6 embeddings of 2 numbers: (6, 6)"),
             Case((np.array([[1.0, 2], [0, 0]]),), "a zero row: no direction", raises=ValueError)]
    mistakes = {"still the bug: it divides by the lengths of the columns (axis=0)":
                lambda e: _cosines(e, 0, False),
                "it divides column j by the length of row j: without keepdims the lengths are a "
                "row, not a column": lambda e: _cosines(e, 1, False),
                "it does not normalise: dot products, not cosines": lambda e: e @ e.T}
    return check_function(func, cases=cases, reference=_cosines, name="similarity_matrix",
                          mistakes=mistakes)


def _scores(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    k = k[..., None, :, :] if k.ndim == q.ndim - 1 else k  # keys shared along q's heads
    return q @ np.swapaxes(k, -1, -2)


@exercise("extend")
def check_batched_scores(func: Callable) -> CheckResult:
    """``func(q, k)``: every ``q[..., i, :] · k[..., j, :]``, (..., n_q, d_k) and (..., n_k, d_k)
    -> (..., n_q, n_k), keys with one axis fewer shared by every head; ValueError for two d_k."""
    g = np.random.default_rng(3).standard_normal
    cases = [Case((np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [2.0, 0.0]]]),
                   np.arange(12.0).reshape(2, 3, 2)),
                  "a batch of 2: (2, 2, 2) queries, (2, 3, 2) keys -> (2, 2, 3)"),
             Case((g((3, 4)), g((5, 4))), "no batch axis: (3, 4) and (5, 4) -> (3, 5), as in "
                  "section 6"),
             Case((g((2, 3, 4, 8)), g((2, 3, 6, 8))),
                  "one set of keys per head: (2, 3, 4, 8) and (2, 3, 6, 8) -> (2, 3, 4, 6)"),
             Case((g((2, 3, 4, 8)), g((2, 6, 8))),
                  "keys shared by 3 heads: (2, 3, 4, 8) and (2, 6, 8) -> (2, 3, 4, 6)"),
             Case((g((3, 3, 4, 8)), g((3, 6, 8))), "keys shared by the heads, 3 heads and 3 "
                  "sequences: sequence b's keys for every head of sequence b"),
             Case((g((2, 1, 4)), g((2, 7, 4))),
                  "one query per sequence: (2, 1, 4) and (2, 7, 4) -> (2, 1, 7)"),
             Case((np.ones((2, 3, 4)), np.ones((2, 3, 5))), "d_k 4 against 5", raises=ValueError)]
    mistakes = {"it lines the keys' sequences up with the heads: shared keys need a head axis of "
                "size 1": lambda q, k: q @ np.swapaxes(k, -1, -2), "it divides by sqrt(d_k): "
                "attention's scaling, not asked here": lambda q, k: _scores(q, k) / q.shape[-1]**.5}
    return check_function(func, cases=cases, reference=_scores, name="batched_scores",
                          mistakes=mistakes)

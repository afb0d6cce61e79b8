"""Notebook 02's checkers: right answers pass, plausible mistakes fail with a reason."""

import numpy as np
from checker_table import right, table_test, wrong

from course_utils.checks import nb02
from course_utils.linalg import cosine_similarity, matmul_loops


def require_inner(a, b):
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"inner sizes differ: {a.shape} @ {b.shape}")


def matmul(a, b, dtype=None):
    require_inner(a, b)
    c = np.zeros((a.shape[0], b.shape[1]), dtype=dtype or np.result_type(a, b))
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            c[i, j] = sum(a[i, p] * b[p, j] for p in range(a.shape[1]))
    return c


def matmul_row_times_column(a, b):
    require_inner(a, b)
    c = np.zeros((a.shape[0], b.shape[1]), dtype=np.result_type(a, b))
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            c[i, j] = np.sum(a[i, :] * b[:, j])
    return c


def matmul_by_loops_of_dots(a, b):
    require_inner(a, b)
    return np.array([[a[i] @ b[:, j] for j in range(b.shape[1])] for i in range(a.shape[0])])


def matmul_index_swapped(a, b):  # b[j, p] for b[p, j]
    require_inner(a, b)
    rows, cols, inner = a.shape[0], b.shape[1], a.shape[1]
    c = [[sum(a[i, p] * b[j, p] for p in range(inner)) for j in range(cols)] for i in range(rows)]
    return np.array(c, dtype=np.result_type(a, b))


def cosine_by_hand(a, b):
    norm_a, norm_b = np.sqrt(a @ a), np.sqrt(b @ b)
    if norm_a == 0 or norm_b == 0:
        raise ValueError("a zero vector has no direction")
    return float(a @ b / (norm_a * norm_b))


def require_same_dk(q, k):
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k need the same d_k, got {q.shape} and {k.shape}")


def batched_scores(q, k):
    require_same_dk(q, k)
    return q @ np.swapaxes(k, -1, -2)


ROWS = [
    *right(nb02.check_matmul, course_utils=matmul_loops, worked=matmul,
           row_times_column=matmul_row_times_column),
    *wrong(
        nb02.check_matmul,
        float_result=(lambda a, b: matmul(a, b, dtype=np.float64),
                      "integers out: dtype: expected int64, got float64"),
        int64_result=(lambda a, b: matmul(a, b, dtype=np.result_type(a, b, np.int64)),
                      "int32 @ int32 is int32 (np.result_type): dtype: expected int32, got int64"),
        uses_the_operator=(lambda a, b: require_inner(a, b) or a @ b,
                           "it uses a ready-made product (`@`, np.dot, np.matmul, np.einsum or "
                           "the like): this exercise builds the product from loops"),
        uses_np_dot=(lambda a, b: require_inner(a, b) or np.dot(a, b), "ready-made product"),
        uses_einsum=(lambda a, b: require_inner(a, b) or np.einsum("ik,kj->ij", a, b),
                     "ready-made product"),
        dots_of_rows=(matmul_by_loops_of_dots, "ready-made product"),
        elementwise=(lambda a, b: require_inner(a, b) or a * b,
                     "the worst at [1, 0]: expected 43, got 21 (|error| 22)"),
        index_swapped=(matmul_index_swapped,
                       "values differ: expected [[19, 22], [43, 50]], got [[17, 23], [39, 53]]"),
        no_size_check=(lambda a, b: matmul(a[:, : b.shape[0]], b),
                       "(2, 3) @ (2, 3) must fail: should raise ValueError"),
    ),
    *right(nb02.check_cosine_similarity, course_utils=cosine_similarity, worked=cosine_by_hand),
    *wrong(
        nb02.check_cosine_similarity,
        dot_only=(lambda a, b: cosine_by_hand(a, b) * np.linalg.norm(a) * np.linalg.norm(b),
                  "expected 0.9746318461970762, got 32.0"),
        absolute=(lambda a, b: abs(cosine_by_hand(a, b)), "expected -1.0, got 0.9999999999999999"),
        no_zero_check=(lambda a, b: float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))),
                       "should raise ValueError, returned nan (it warned: invalid value"),
    ),
    *right(nb02.check_batched_scores, worked=batched_scores,
           einsum=lambda q, k: require_same_dk(q, k) or np.einsum("...id,...jd->...ij", q, k),
           moveaxis=lambda q, k: require_same_dk(q, k) or np.matmul(q, np.moveaxis(k, -1, -2))),
    *wrong(
        nb02.check_batched_scores,
        transpose_all_axes=(lambda q, k: require_same_dk(q, k) or q @ k.T,
                            "(2, 2, 3): raised ValueError: matmul: Input operand 1 has a mismatch"),
        three_axes_only=(lambda q, k: require_same_dk(q, k) or q @ k.transpose(0, 2, 1),
                         "no batch axis: (3, 4) and (5, 4) -> (3, 5), as in section 6: raised "
                         "ValueError: axes don't match array"),
        torch_transpose=(lambda q, k: require_same_dk(q, k) or q @ k.transpose(-2, -1),
                         "raised ValueError: axes don't match array"),
        reshape_for_transpose=(  # nb01: a reshape is not a transpose
            lambda q, k: require_same_dk(q, k)
            or q @ k.reshape(*k.shape[:-2], k.shape[-1], k.shape[-2]),
            "got [[[0., 1., 2.], [3., 4., 5.]], [[15., 17., 19.], [12., 14., 16.]]]"),
        keys_by_queries=(lambda q, k: require_same_dk(q, k) or k @ np.swapaxes(q, -1, -2),
                         "shape: expected (2, 2, 3), got (2, 3, 2)"),
        scaled=(lambda q, k: batched_scores(q, k) / np.sqrt(q.shape[-1]),
                "the worst at [1, 0, 2]: expected 21.0, got 14.849242404917497"),
    ),
]

test_checker = table_test(ROWS)

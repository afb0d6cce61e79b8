"""Notebook 02's checkers: right answers pass, plausible mistakes fail with a reason."""

import numpy as np
from checker_table import right, table_test, wrong

from course_utils.checks import nb02
from course_utils.linalg import cosine_similarity


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


def matmul_index_swapped(a, b):  # b[j, p] for b[p, j]
    require_inner(a, b)
    rows, cols, inner = a.shape[0], b.shape[1], a.shape[1]
    c = [[sum(a[i, p] * b[j, p] for p in range(inner)) for j in range(cols)] for i in range(rows)]
    return np.array(c, dtype=np.result_type(a, b))


def matmul_rows(a, b):
    require_inner(a, b)
    c = np.zeros((a.shape[0], b.shape[1]), dtype=np.result_type(a, b))
    for i in range(a.shape[0]):
        for p in range(a.shape[1]):
            c[i] += a[i, p] * b[p]  # row i of c: a weighted sum of the rows of b
    return c


def matmul_rows_sized(a, b):  # a variable named `inner`, the inner size: np.inner is not listed
    inner = a.shape[1]
    if inner != b.shape[0]:
        raise ValueError(f"inner sizes differ: {a.shape} @ {b.shape}")
    rows = [sum(a[i, r] * b[r] for r in range(inner)) for i in range(a.shape[0])]
    return np.stack(rows).astype(np.result_type(a, b))


def matmul_rows_weights_from_column(a, b):  # a[p, i] for a[i, p]
    require_inner(a, b)
    c = np.zeros((a.shape[0], b.shape[1]), dtype=np.result_type(a, b))
    for i in range(min(a.shape)):
        for p in range(a.shape[1]):
            c[i] += a[p, i] * b[p] if p < a.shape[0] else 0
    return c


def matmul_columns(a, b):  # one column of the product at a time: the scan cannot see it
    require_inner(a, b)
    cols = [(a * b[:, j]).sum(axis=1) for j in range(b.shape[1])]
    return np.stack(cols, axis=1).astype(np.result_type(a, b))


def matmul_rows_zipped(a, b):  # rows of b by iteration, np.array at the end
    require_inner(a, b)
    rows = [sum(w * row for w, row in zip(weights, b, strict=True)) for weights in a]
    return np.array(rows, dtype=np.result_type(a, b))


def dot(weights, rows):  # the learner's own helper, under NumPy's name: exempt by where it is
    return sum(w * row for w, row in zip(weights, rows, strict=True))


def matmul_rows_by_own_dot(a, b):
    require_inner(a, b)
    return np.stack([dot(weights, b) for weights in a]).astype(np.result_type(a, b))


# the rule's rows: the right numbers, by a ready-made product
def matmul_by_operator(a, b):
    require_inner(a, b)
    return a @ b


def matmul_by_np_dot(a, b):
    require_inner(a, b)
    return np.dot(a, b)


def matmul_by_einsum(a, b):
    require_inner(a, b)
    return np.einsum("ik,kj->ij", a, b)


def matmul_row_at_once_by_operator(a, b):
    require_inner(a, b)
    return np.array([a[i] @ b for i in range(len(a))])


def matmul_of_plain_arrays(a, b):
    require_inner(a, b)
    return np.asarray(a) @ np.asarray(b)


def matmul_by_method(a, b):
    require_inner(a, b)
    return a.dot(b)


def similarity_matrix(e, axis=1):
    norms = np.linalg.norm(e, axis=axis, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("a zero row has no direction")
    unit = e / norms
    return unit @ unit.T


def require_same_dk(q, k):
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k need the same d_k, got {q.shape} and {k.shape}")


def share_keys(q, k):
    """k with a head axis of size 1 when it has one axis fewer than q (keys shared by heads)."""
    return k[..., None, :, :] if k.ndim == q.ndim - 1 else k


def batched_scores(q, k):
    require_same_dk(q, k)
    return q @ np.swapaxes(share_keys(q, k), -1, -2)


def batched_scores_unshared(q, k):  # the notebook's line: right until the keys are shared
    require_same_dk(q, k)
    return q @ np.swapaxes(k, -1, -2)


def batched_scores_axis_in_front(q, k):  # the new axis at the front: batch meets heads
    require_same_dk(q, k)
    k = k[None] if k.ndim == q.ndim - 1 else k
    return q @ np.swapaxes(k, -1, -2)


ROWS = [
    *right(nb02.check_matmul_rows, worked=matmul_rows, zipped=matmul_rows_zipped,
           own_helper_named_dot=matmul_rows_by_own_dot, variable_named_inner=matmul_rows_sized,
           # not the exercise's route, but the scan reads names and `@`, not how rows are built
           entry_by_entry=matmul, by_columns=matmul_columns),
    *wrong(
        nb02.check_matmul_rows,
        # the rule, read from the code: no `@` and no ready-made product
        uses_the_operator=(matmul_by_operator, "the rule: it multiplies with @: the rule is to "
                           "build each row yourself, a weighted sum of the rows of b"),
        uses_np_dot=(matmul_by_np_dot, "the rule: it calls dot"),
        uses_einsum=(matmul_by_einsum, "the rule: it calls einsum"),
        row_at_once_by_matmul=(matmul_row_at_once_by_operator, "it multiplies with @"),
        operator_on_plain_arrays=(matmul_of_plain_arrays, "it multiplies with @"),
        uses_the_method=(matmul_by_method, "the rule: it calls dot"),
        float_result=(lambda a, b: matmul_rows(a, b).astype(np.float64),
                      "integers out: dtype: expected int64, got float64"),
        weights_from_a_column=(matmul_rows_weights_from_column, "integers in, integers out: it "
                               "takes the weights of row i from column i of a"),
        index_swapped=(matmul_index_swapped, "integers in, integers out: values differ: expected "
                       "[[19, 22], [43, 50]], got [[17, 23], [39, 53]]"),  # b[j, p] for b[p, j]
        no_size_check=(lambda a, b: matmul_rows(a[:, : b.shape[0]], b),
                       "(2, 3) @ (2, 3) fails: should raise ValueError"),
    ),
    *right(nb02.check_projection_to_score_ratio, exact=3.0, from_counts=4.83e9 / 1.61e9),
    *wrong(
        nb02.check_projection_to_score_ratio,
        upside_down=(1 / 3, "upside down"),
        one_head=(36.0, "the scores of one head only"),
        one_projection=(0.75, "counts one projection"),
        with_weights_times_values=(1.5, "adds the weights times V"),
        head_width_projections=(0.25, "0.25 is too low: that projects to one head's d_k"),
        far_off=(10.0, "10 is too high: write both counts with 2 m n k"),
    ),
    *right(nb02.check_similarity_matrix, worked=similarity_matrix,
           by_loops=lambda e: similarity_matrix(e) if not np.all(
               np.linalg.norm(e, axis=1)) else np.array(
               [[cosine_similarity(x, y) for y in e] for x in e])),
    *wrong(
        nb02.check_similarity_matrix,
        as_given=(lambda e: (e / np.linalg.norm(e, axis=0)) @ (e / np.linalg.norm(e, axis=0)).T,
                  "[[3, 4], [1, 0]] -> [[1, 0.6], [0.6, 1]]: still the bug: it divides by the "
                  "lengths of the columns (axis=0)"),
        norms_not_stretched=(lambda e: (e / np.linalg.norm(e, axis=1))
                             @ (e / np.linalg.norm(e, axis=1)).T,
                             "section 5's four words (4, 4): king . queen 0.986: it divides "
                             "column j by the length of row j"),
        no_normalising=(lambda e: e @ e.T, "[[3, 4], [1, 0]] -> [[1, 0.6], [0.6, 1]]: it does "
                        "not normalise"),
        columns_compared=(lambda e: similarity_matrix(e.T), "shape: expected (3, 3), got (5, 5)"),
    ),
    *right(nb02.check_batched_scores, worked=batched_scores,
           einsum=lambda q, k: require_same_dk(q, k)
           or np.einsum("...id,...jd->...ij", q, share_keys(q, k)),
           expand_dims=lambda q, k: require_same_dk(q, k) or np.matmul(
               q, np.moveaxis(np.expand_dims(k, -3) if k.ndim < q.ndim else k, -1, -2))),
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
        keys_not_shared=(batched_scores_unshared,
                         "keys shared by 3 heads: (2, 3, 4, 8) and (2, 6, 8) -> (2, 3, 4, 6): "
                         "raised ValueError"),
        same_count_trap=(batched_scores_unshared, "3 heads and 3 sequences: sequence b's keys "
                         "for every head of sequence b: it lines the keys' sequences up with the "
                         "heads"),
        new_axis_in_front=(batched_scores_axis_in_front, "3 heads and 3 sequences: sequence b's "
                           "keys for every head of sequence b: it lines the keys' sequences up"),
        scaled=(lambda q, k: batched_scores(q, k) / np.sqrt(q.shape[-1]),
                "it divides by sqrt(d_k)"),
    ),
]

test_checker = table_test(ROWS)

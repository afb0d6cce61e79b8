"""Notebook 01's checkers: right answers pass, plausible mistakes fail with a reason."""

import numpy as np
from checker_table import right, table_test, wrong

from course_utils.checks import nb01
from course_utils.linalg import broadcast_shape


def require_3d(x):
    if x.ndim != 3:
        raise ValueError(f"x must be (batch, seq, d), got shape {tuple(x.shape)}")


def require_lengths(x, lengths):
    require_3d(x)
    if lengths.min() < 1 or lengths.max() > x.shape[1]:
        raise ValueError(f"lengths must lie in 1..{x.shape[1]}, got {lengths}")


def last_real_token_by_loop(x, lengths):
    require_lengths(x, lengths)
    return np.stack([x[b, n - 1] for b, n in enumerate(lengths)])


def broadcast_shape_by_padding(shape_a, shape_b):
    n = max(len(shape_a), len(shape_b))
    a, b = (1,) * (n - len(shape_a)) + tuple(shape_a), (1,) * (n - len(shape_b)) + tuple(shape_b)
    result = []
    for size_a, size_b in zip(a, b, strict=True):
        if size_a != size_b and 1 not in (size_a, size_b):
            raise ValueError(f"{size_a} against {size_b}")
        result.append(size_a if size_b == 1 else size_b)
    return tuple(result)


def broadcast_shape_with_max(shape_a, shape_b):  # max(0, 1) is 1, but a 1 stretches to 0
    shape = broadcast_shape_by_padding(shape_a, shape_b)
    n = len(shape)
    a, b = (1,) * (n - len(shape_a)) + tuple(shape_a), (1,) * (n - len(shape_b)) + tuple(shape_b)
    return tuple(map(max, a, b))


def broadcast_shape_left_aligned(shape_a, shape_b):
    n = max(len(shape_a), len(shape_b))
    a, b = tuple(shape_a) + (1,) * (n - len(shape_a)), tuple(shape_b) + (1,) * (n - len(shape_b))
    return tuple(map(max, a, b))


ROWS = [
    *right(nb01.check_last_real_token,
           worked=lambda x, n: require_lengths(x, n) or x[np.arange(len(x)), n - 1],
           loop=last_real_token_by_loop),
    *wrong(
        nb01.check_last_real_token,
        ignores_lengths=(lambda x, n: require_lengths(x, n) or x[:, -1],
                         "got [[8, 9, 10, 11], [20, 21, 22, 23]]"),
        off_by_one=(lambda x, n: require_lengths(x, n) or x[np.arange(len(x)), n],
                    "raised IndexError: index 3 is out of bounds for axis 1 with size 3"),
        lengths_as_slice=(lambda x, n: require_lengths(x, n) or x[:, n - 1],
                          "shape: expected (2, 4), got (2, 2, 4)"),
        counted_from_the_end=(lambda x, n: require_lengths(x, n) or x[np.arange(len(x)), -n],
                              "got [[0, 1, 2, 3], [20, 21, 22, 23]]"),
        no_length_check=(lambda x, n: require_3d(x) or x[np.arange(len(x)), n - 1],
                         "length 0 has no last token: should raise ValueError, returned array"),
    ),
    *right(nb01.check_broadcast_shape, course_utils=broadcast_shape,
           padding=broadcast_shape_by_padding),
    *wrong(
        nb01.check_broadcast_shape,
        left_aligned=(broadcast_shape_left_aligned, "should raise ValueError, returned (2, 3)"),
        max_of_sizes=(broadcast_shape_with_max, "item 1: values differ: expected 0, got 1"),
        numpy_shapes_as_list=(lambda a, b: list(broadcast_shape(a, b)),
                              "expected a tuple of 3 items, got list [32, 128, 768]"),
    ),
    *right(nb01.check_flatten_tokens, worked=lambda x: require_3d(x) or x.reshape(-1, x.shape[-1]),
           by_rows=lambda x: require_3d(x) or np.concatenate(list(x))),
    *wrong(
        nb01.check_flatten_tokens,
        sequence_major=(lambda x: require_3d(x) or x.transpose(1, 0, 2).reshape(-1, x.shape[-1]),
                        "the worst at [1, 0]: expected 4, got 12"),
        batch_rows=(lambda x: require_3d(x) or x.reshape(x.shape[0], -1),
                    "shape: expected (6, 4), got (2, 12)"),
        flat=(lambda x: require_3d(x) or x.ravel(), "shape: expected (6, 4), got (24,)"),
    ),
]

test_checker = table_test(ROWS)

"""Notebook 01's checkers: right answers pass, plausible mistakes fail with a reason."""

import numpy as np
import torch
from checker_table import right, table_test, wrong

from course_utils.checks import nb01
from course_utils.linalg import broadcast_shape

np_broadcast_shapes = np.broadcast_shapes  # imported under another name


def mean_pool_by_loop(x, lengths):  # one sequence at a time: a debug exercise, no rule
    means = []
    for sequence, length in zip(x, lengths, strict=True):
        means.append(sequence[:length].mean(axis=0))
    return np.stack(means)


def require_3d(x):
    if x.ndim != 3:
        raise ValueError(f"x must be (batch, seq, d), got shape {tuple(x.shape)}")


def require_lengths(x, lengths):
    require_3d(x)
    if lengths.min() < 1 or lengths.max() > x.shape[1]:
        raise ValueError(f"lengths must lie in 1..{x.shape[1]}, got {lengths}")


def broadcast_shape_by_arrays(shape_a, shape_b):  # builds arrays: fails the axes of 2**50
    return (np.zeros(shape_a) + np.zeros(shape_b)).shape


def broadcast_shape_by_strided_arrays(shape_a, shape_b):  # arrays of no memory, np.broadcast
    zero = np.zeros(1)
    a = np.lib.stride_tricks.as_strided(zero, shape_a, (0,) * len(shape_a))
    b = np.lib.stride_tricks.as_strided(zero, shape_b, (0,) * len(shape_b))
    return np.broadcast(a, b).shape


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


def broadcast_shapes(shape_a, shape_b):  # the learner's own helper, under NumPy's name
    return broadcast_shape_by_padding(shape_a, shape_b)


def broadcast_shape_by_own_helper(shape_a, shape_b):
    return broadcast_shapes(shape_a, shape_b)


def broadcast_shape_by_numpy(shape_a, shape_b):
    return np.broadcast_shapes(shape_a, shape_b)


def broadcast_shape_by_alias(shape_a, shape_b):
    return np_broadcast_shapes(shape_a, shape_b)


def broadcast_shape_by_torch(shape_a, shape_b):
    return tuple(torch.broadcast_shapes(shape_a, shape_b))


def broadcast_shape_by_broadcast_to(shape_a, shape_b):
    return np.broadcast_to(np.zeros(shape_b), shape_a).shape


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
    *right(nb01.check_broadcast_shape, padding=broadcast_shape_by_padding,
           own_helper_named_broadcast_shapes=broadcast_shape_by_own_helper),
    *wrong(
        nb01.check_broadcast_shape,
        left_aligned=(broadcast_shape_left_aligned, "should raise ValueError, returned (2, 3)"),
        max_of_sizes=(broadcast_shape_with_max, "item 1: values differ: expected 0, got 1"),
        as_list=(lambda a, b: list(broadcast_shape_by_padding(a, b)),
                 "expected a tuple of 3 items, got list [32, 128, 768]"),
        # the rule, read from the code: no ready-made helper, however imported
        numpy_helper=(broadcast_shape_by_numpy, "the rule: it calls broadcast_shapes: the rule "
                      "is to apply the three rules to the tuples yourself"),
        numpy_helper_imported=(broadcast_shape_by_alias, "it calls broadcast_shapes"),
        course_utils_helper=(broadcast_shape, "it calls broadcast_shape"),
        torch_helper=(broadcast_shape_by_torch, "it calls broadcast_shapes"),
        broadcast_to=(broadcast_shape_by_broadcast_to, "it calls broadcast_to"),
        # arrays of those shapes fail on the numbers: no memory holds axes of 2**50
        builds_arrays=(broadcast_shape_by_arrays, "sizes of 2**50: only tuples, no arrays, can "
                       "hold them: raised MemoryError"),
        strided_arrays=(broadcast_shape_by_strided_arrays, "sizes of 2**50: only tuples, no "
                        "arrays, can hold them: raised ValueError: broadcast dimensions too large"),
    ),
    *right(nb01.check_broadcast_memory, exact=1000 * 1000 * 768 * 4 / 2**20, rounded=2930,
           in_gib_times_1024=2.86 * 1024),
    *wrong(
        nb01.check_broadcast_memory,
        bytes=(3.072e9, "that is the count in bytes"),
        gib=(2.86, "that is GiB"),
        float64=(5859.4, "that is float64"),
        numbers=(732.4, "that counts numbers, not bytes"),
        one_input=(2.93, "one (1000, 768) array"),
        no_d_model=(3.8, "drops the d_model axis"),
        megabytes=(3072.0, "that is MB (10**6 bytes)"),
        rounded_up=(3000.0, "3000 is too high: write down the shape the two operands broadcast"),
        far_off=(100.0, "100 is too low: write down the shape"),
        not_a_number=("3 GB", "expected a number, got str"),
    ),
    *right(nb01.check_mean_pool,
           worked=lambda x, n: (x * (np.arange(x.shape[1])[None, :] < n[:, None])[:, :, None]
                                ).sum(axis=1) / n[:, None],
           loop=mean_pool_by_loop),  # the task says no loop; a debug checker judges the numbers
    *wrong(
        nb01.check_mean_pool,
        as_given=(lambda x, n: (x * (np.arange(x.shape[1]) < n)).sum(axis=1) / n,
                  "[19.5, 20.5, 21.5]]: still the bug: the mask and the lengths do not line up"),
        mask_not_stretched=(
            lambda x, n: (x * (np.arange(x.shape[1])[None, :] < n[:, None])).sum(axis=1)
            / n[:, None], "(2, 4, 3), lengths [4, 2]: batch, seq and d differ: raised ValueError"),
        divides_by_seq=(lambda x, n: (x * (np.arange(x.shape[1])[None, :] < n[:, None])[
            :, :, None]).sum(axis=1) / x.shape[1], "values differ"),
        padding_included=(lambda x, n: x.sum(axis=1) / n[:, None],
                          "lengths [3, 1, 2] -> [[3, 4, 5], [9, 10, 11], [19.5, 20.5, 21.5]]: "
                          "it averages the padding too; values differ"),
        plain_mean=(lambda x, n: x.mean(axis=1), "it takes the plain mean over all seq positions"),
    ),
]

test_checker = table_test(ROWS)

"""Notebook 03's checkers: right answers pass, plausible mistakes fail with a reason."""

import numpy as np
from checker_table import right, table_test, wrong

from course_utils.checks import nb03


def require_square(a):
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"a must be square, got shape {a.shape}")


def power_iteration(a, num_iters, rng, start=None, rayleigh=True):
    require_square(a)
    x = rng.standard_normal(a.shape[0]) if start is None else start(rng, a.shape[0])
    x = x / np.linalg.norm(x)
    for _ in range(num_iters):
        x = a @ x
        x /= np.linalg.norm(x)
    return float(x @ a @ x) if rayleigh else float(np.linalg.norm(a @ x))


def power_by_matrix_power(a, num_iters, rng):  # right numbers, by matrix-matrix products
    require_square(a)
    x = np.linalg.matrix_power(a / np.linalg.norm(a), num_iters) @ rng.standard_normal(len(a))
    x = x / np.linalg.norm(x)
    return float(x @ a @ x)


def library_shortcut(a, num_iters, rng):  # NumPy's routine: the right numbers
    require_square(a)
    return float(max(np.linalg.eigvals(a).real, key=abs))


def ones_start(rng, n):  # the cell's start: a fixed vector
    return np.ones(n)


def drawn_but_unused(rng, n):  # draws from rng (so the rng check passes), then starts from ones
    rng.standard_normal(n)
    return np.ones(n)


def drawn_then_arange(rng, n):  # draws (and discards), then a fixed start that is no eigenvector
    rng.standard_normal(n)
    return np.arange(1.0, n + 1)


def first_axis(rng, n):
    rng.random()
    return np.eye(n)[0]


def variance_along(cov, u):
    if not np.any(u):
        raise ValueError("u is the zero vector")
    return float(u @ cov @ u / (u @ u))


def variance_along_unit(cov, u):
    if not np.any(u):
        raise ValueError("u is the zero vector")
    unit = u / np.linalg.norm(u)
    return float(unit @ cov @ unit)


ROWS = [
    *right(nb03.check_error_after_ten_steps, exact=0.64**10, rounded=0.0115, one_in_87=1 / 87),
    *wrong(
        nb03.check_error_after_ten_steps,
        not_squared=(0.8**10, "the square of the ratio"),
        added=(6.4, "multiply the factors, they do not add"),
        one_step=(0.64, "0.64 is too high: that is one step"),
        # lambda_2 taken as the second largest eigenvalue, 2, not the second largest in size, -8
        smallest_ratio=(0.2**20, "|-8| = 8 is larger than 2"),
        smallest_ratio_not_squared=(0.2**10, "and the error shrinks by its square"),
        not_a_number=(None, "expected a number, got NoneType"),
        # "by what factor does it shrink": the reciprocal of the number it is multiplied by
        reciprocal=(86.7, "86.7 is too high: that is the number the error is divided by"),
    ),
    *right(nb03.check_power_iteration, worked=power_iteration,
           uniform_start=lambda a, n, rng: power_iteration(
               a, n, rng, start=lambda g, k: g.uniform(-1, 1, k)),
           # a debug exercise: NumPy's routine passes, with a note that the task is the iteration
           library_shortcut=library_shortcut, matrix_power=power_by_matrix_power),
    *wrong(
        nb03.check_power_iteration,
        ones_start=(lambda a, n, rng: power_iteration(a, n, rng, start=ones_start),
                    "[[1, -2], [-2, 1]]: 3: still the bug: it starts from np.ones, which is an "
                    "eigenvector of this matrix's other eigenvalue"),
        drawn_but_ones=(lambda a, n, rng: power_iteration(a, n, rng, start=drawn_but_unused),
                        "[[1, -2], [-2, 1]]: 3: still the bug"),
        first_axis=(lambda a, n, rng: power_iteration(a, n, rng, start=first_axis),
                    "diag(1, 3): 3: it starts from the fixed [1, 0, ...], which is an "
                    "eigenvector of this matrix's other eigenvalue"),
        drawn_then_fixed=(lambda a, n, rng: power_iteration(a, n, rng, start=drawn_then_arange),
                          "eigenvalues 3 and 2.8: 3: it starts from the fixed [1, 2, ...]"),
        norm_loses_sign=(lambda a, n, rng: power_iteration(a, n, rng, rayleigh=False),
                         "diag(-4, 1, 2): -4, sign kept: it returns the length of A x, which "
                         "loses the sign"),
        ten_steps=(lambda a, n, rng: power_iteration(a, min(n, 5), rng),
                   "a 5x5 symmetric matrix: 6: values differ"),
        max_not_magnitude=(lambda a, n, rng: require_square(a) or float(
            np.linalg.eigvalsh(a).max()), "diag(-4, 1, 2): -4, sign kept: values differ"),
    ),
    *right(nb03.check_variance_along, worked=variance_along, unit_first=variance_along_unit),
    *wrong(
        nb03.check_variance_along,
        not_normalised=(lambda c, u: variance_along(c, u) * (u @ u),
                        "u = [1, 1, 0], not of length 1: it leaves out the division by u^T u"),
        divides_by_length=(lambda c, u: variance_along(c, u) * np.linalg.norm(u),
                           "u = [-2, 3, 6], of length 7: it divides by |u| once"),
        vector=(lambda c, u: c @ u / (u @ u) if np.any(u) else np.zeros_like(u) / 0,
                "expected a single number, got an array of shape (3,)"),
        top_eigenvalue=(lambda c, u: variance_along(c, u) * 0 + float(np.linalg.eigvalsh(c)[-1]),
                        "u = e_1: the variance of the first coordinate: values differ"),
        no_zero_check=(lambda c, u: float(u @ c @ u / max(u @ u, 1e-300)),
                       "the zero vector has no direction: should raise ValueError"),
    ),
]

test_checker = table_test(ROWS)

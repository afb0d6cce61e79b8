"""Notebook 03's checkers: right answers pass, plausible mistakes fail with a reason."""

import numpy as np
from checker_table import right, table_test, wrong

from course_utils.checks import nb03


def require_nonzero(v):
    if not np.any(v):
        raise ValueError("the zero vector is never an eigenvector")


def is_eigenpair(a, v, lam):
    require_nonzero(v)
    return bool(np.allclose(a @ v, lam * v))


def require_square(a):
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"a must be square, got shape {a.shape}")


def power_iteration(a, num_iters, start=None, rayleigh=True):
    require_square(a)
    x = np.random.default_rng(0).standard_normal(a.shape[0]) if start is None else start
    x = x / np.linalg.norm(x)
    for _ in range(num_iters):
        x = a @ x
        x /= np.linalg.norm(x)
    return float(x @ a @ x) if rayleigh else float(np.linalg.norm(a @ x))


def explained_variance_ratio(x, centre=True, order=slice(None, None, -1)):
    if x.shape[0] < 2:
        raise ValueError("need at least 2 points")
    xc = x - x.mean(axis=0) if centre else x
    values = np.clip(np.linalg.eigvalsh(xc.T @ xc / (len(x) - 1))[order], 0.0, None)
    if values.sum() == 0:
        raise ValueError("all points are identical: no variance")
    return values / values.sum()


def explained_variance_by_svd(x):
    if x.shape[0] < 2:
        raise ValueError("need at least 2 points")
    s = np.linalg.svd(x - x.mean(axis=0), compute_uv=False)
    variances = np.zeros(x.shape[1])
    variances[: s.size] = s**2
    if not variances.sum():
        raise ValueError("no variance")
    return variances / variances.sum()


ROWS = [
    *right(nb03.check_is_eigenpair, worked=is_eigenpair,
           by_norm=lambda a, v, lam: require_nonzero(v) or bool(
               np.all(np.abs(a @ v - lam * v) <= 1e-8 + 1e-5 * np.abs(lam * v)))),
    *wrong(
        nb03.check_is_eigenpair,
        transposed=(lambda a, v, lam: require_nonzero(v) or bool(np.allclose(v @ a, lam * v)),
                    "not symmetric: [[2, 1], [0, 3]], v = [1, 1], 3 (A v, not v A): values "
                    "differ: expected True, got False"),
        exact_equality=(lambda a, v, lam: require_nonzero(v) or bool(np.all(a @ v == lam * v)),
                        "0.1 + 0.2 != 0.3 in floating point: compare with a tolerance: values "
                        "differ: expected True, got False"),
        loose_tolerance=(lambda a, v, lam: require_nonzero(v) or bool(
            np.abs(a @ v - lam * v).max() < 1e-3), "expected False, got True"),
        direction_only=(lambda a, v, lam: is_eigenpair(a, v, (v @ a @ v) / (v @ v)),
                        "diag(2, 3), v = e2, lambda = 2: values differ: expected False, got True"),
        no_zero_check=(lambda a, v, lam: bool(np.allclose(a @ v, lam * v)),
                       "the zero vector: should raise ValueError, returned True"),
        entrywise=(lambda a, v, lam: require_nonzero(v) or np.isclose(a @ v, lam * v),
                   "expected a single number, got an array of shape (2,)"),
    ),
    *right(nb03.check_power_iteration, worked=power_iteration,
           from_ones=lambda a, n: power_iteration(a, n, start=np.ones(len(a)) + np.arange(len(a)))),
    *wrong(
        nb03.check_power_iteration,
        norm_loses_sign=(lambda a, n: power_iteration(a, n, rayleigh=False),
                         "diag(-4, 1, 2): -4, sign kept: values differ: expected -4.0, got 4.0"),
        ten_steps=(lambda a, n: power_iteration(a, 10),
                    "diag(2, 3): 3: values differ: expected 3.0, got 2.999727668249795"),
        returns_the_vector=(lambda a, n: require_square(a) or np.linalg.eigh(a)[1][:, -1],
                            "expected a single number, got an array of shape (2,)"),
    ),
    *right(nb03.check_explained_variance_ratio, worked=explained_variance_ratio,
           svd=explained_variance_by_svd),
    *wrong(
        nb03.check_explained_variance_ratio,
        ascending=(lambda x: explained_variance_ratio(x, order=slice(None)),
                   "values differ: expected [0.9, 0.1], got [0.1, 0.9]"),
        uncentred=(lambda x: explained_variance_ratio(x, centre=False),
                   "a cross of 4 points, variances 9:1 -> [0.9, 0.1]: values differ"),
        variances=(lambda x: explained_variance_ratio(x) * np.trace(np.cov(x, rowvar=False)),
                   "expected [0.9, 0.1], got [6., 0.66666667]"),
    ),
]

test_checker = table_test(ROWS)

"""Checkers for notebook 03 (eigenvalues and eigenvectors)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.checks import Case, CheckResult, check_function, check_number, exercise


@exercise("predict")
def check_error_after_ten_steps(answer, *, show_answer: bool = False) -> CheckResult:
    """``answer``: power iteration's error factor over 10 steps, eigenvalues 10, 2 and -8."""
    second = "lambda_2 is the second largest in magnitude, and |-8| = 8 is larger than 2"
    mistakes = {0.8**10: "that is 0.8^10: for a symmetric matrix the error shrinks by the square "
                         "of the ratio each step", 0.2**20: f"that uses 2 / 10: {second}",
                0.2**10: f"that uses 2 / 10, not squared: {second}; and the error shrinks by "
                         "its square", 0.64: "that is one step; ten steps multiply ten factors",
                6.4: "ten steps multiply the factors, they do not add them", 8.0: "ten steps "
                "multiply the factors, they do not add them",
                0.64**-10: "that is the number the error is divided by (its reciprocal): the "
                           "question asks for the number it is multiplied by, below 1 when it "
                           "shrinks"}
    return check_number(
        answer, 0.64**10, name="error_after_ten_steps", mistakes=mistakes,
        label="the number the error is multiplied by over 10 steps, eigenvalues 10, 2 and -8",
        hint="order the eigenvalues by magnitude, then apply section 3's factor once per step",
        explanation="The eigenvalues by magnitude are 10, |-8| = 8 and 2, so |lambda_2 / "
        "lambda_1| = 0.8 (the sign does not matter: it is squared). Each step multiplies the "
        "error of x^T A x by about (lambda_2 / lambda_1)^2 = 0.64 (section 3), so ten steps "
        "multiply it by 0.64^10 = 0.0115: about 1/87.", show_answer=show_answer)


def _symmetric(eigenvalues: list[float], seed: int) -> np.ndarray:
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((len(eigenvalues),) * 2))
    return (q * np.array(eigenvalues)) @ q.T


def _fixed_start(start):
    def power(a, num_iters, rng):  # power iteration from one fixed start, whatever the matrix
        x = start(len(a))
        for _ in range(num_iters):
            x = a @ x / np.linalg.norm(a @ x)
        return float(x @ a @ x)
    return power


_ONES, _AXIS = _fixed_start(np.ones), _fixed_start(lambda n: np.eye(n)[0])
_RANGE = _fixed_start(lambda n: np.arange(1.0, n + 1))


@exercise("debug")
def check_power_iteration(func: Callable) -> CheckResult:
    """``func(a, num_iters, rng)``: the dominant eigenvalue (largest in magnitude, with its sign)
    of a square matrix by power iteration from a start drawn from ``rng``; ValueError when a is
    not square. The fixed starts np.ones, e_1 and [1, 2] are each an eigenvector of the wrong
    eigenvalue of one case; an eigenvalue routine passes with a note."""
    def case(a, expected, label, steps=200, seed=0):
        return Case((np.array(a, dtype=float), steps, np.random.default_rng(seed)), label,
                    expected=expected)

    cases = [case(np.diag([2, 3]), 3.0, "diag(2, 3): 3", seed=1),
             case([[2, 1], [1, 2]], 3.0, "[[2, 1], [1, 2]]: 3", seed=2),
             case(np.diag([-4, 1, 2]), -4.0, "diag(-4, 1, 2): -4, sign kept", seed=3),
             case(_symmetric([6, 2.5, -1.5, 1, 0.5], 0), 6.0, "a 5x5 symmetric matrix: 6", seed=4),
             case([[1, -2], [-2, 1]], 3.0, "[[1, -2], [-2, 1]]: 3", seed=5),
             case(np.diag([1, 3]), 3.0, "diag(1, 3): 3", seed=6),
             case([[2.96, -0.08], [-0.08, 2.84]], 3.0, "eigenvalues 3 and 2.8: 3", seed=7),
             Case((np.ones((2, 3)), 10, np.random.default_rng(8)), "a (2, 3) matrix is not "
                  "square", raises=ValueError)]
    fixed = ("is an eigenvector of this matrix's other eigenvalue, so c_1 = 0 and v_1 never "
             "appears; any fixed start fails on some matrix")
    mistakes = {f"still the bug: it starts from np.ones, which {fixed}": _ONES,
                f"it starts from the fixed [1, 0, ...], which {fixed}": _AXIS,
                f"it starts from the fixed [1, 2, ...], which {fixed}": _RANGE,
                "it returns the length of A x, which loses the sign":
                lambda a, n, rng: float(np.abs(np.linalg.eigvals(a)).max())}
    return check_function(func, cases=cases, name="power_iteration", mistakes=mistakes,
                          shortcuts=("eig", "eigh", "eigvals", "eigvalsh", "svd", "roots",
                                     "matrix_power", "power_iteration"))


def _spread(x: np.ndarray, u: np.ndarray) -> float:  # the variance measured on the points
    z = (x - x.mean(axis=0)) @ (u / np.linalg.norm(u))
    return float(z @ z / (len(x) - 1))


@exercise("derive")
def check_variance_along(func: Callable) -> CheckResult:
    """``func(cov, u)``: the variance of the projections onto the direction of u from the
    covariance alone, u^T C u / (u^T u), measured on the points; ValueError for u = 0."""
    x = np.random.default_rng(8).standard_normal((50, 3)) @ np.array(
        [[2.0, 0.5, 0.0], [0.0, 1.0, 0.3], [0.0, 0.0, 0.4]]) + [4.0, -1.0, 2.0]
    cov = np.cov(x, rowvar=False)
    values, vectors = np.linalg.eigh(cov)
    cases = [Case((cov, np.array(u, dtype=float)), label, expected=_spread(x, np.array(u)))
             for u, label in [([1, 0, 0], "u = e_1: the variance of the first coordinate"),
                              ([1, 1, 0], "u = [1, 1, 0], not of length 1"),
                              ([-2, 3, 6], "u = [-2, 3, 6], of length 7")]]
    cases += [Case((cov, 5 * vectors[:, -1]), "u along the top eigenvector: the largest "
                   "eigenvalue", expected=float(values[-1])),
              Case((np.diag([9.0, 1.0]), np.array([0.0, 2.0])), "C = diag(9, 1), u = [0, 2]: 1",
                   expected=1.0),
              Case((cov, np.zeros(3)), "the zero vector has no direction", raises=ValueError)]
    mistakes = {"it leaves out the division by u^T u: u is not of length 1":
                lambda c, u: float(u @ c @ u),
                "it divides by |u| once; u appears twice, so divide by |u|^2 = u^T u":
                lambda c, u: float(u @ c @ u / np.linalg.norm(u))}
    return check_function(func, cases=cases, name="variance_along", rtol=1e-9, mistakes=mistakes)

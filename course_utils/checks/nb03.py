"""Checkers for notebook 03 (eigenvalues and eigenvectors)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from course_utils.checks import (
    Case,
    CheckResult,
    RuleBroken,
    check_function,
    check_number,
    exercise,
    names_used,
    wraps_answer,
)


def _symmetric_with_gap(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    eigenvalues = np.array([6.0, 2.5, -1.5, 1.0, 0.5][:n])
    return (q * eigenvalues) @ q.T


_SHRINK = 0.8 ** (2 * 10)  # (lambda_2 / lambda_1)^2 per step, for 10 steps: 8/10, not 2/10


@exercise("predict")
def check_error_after_ten_steps(answer) -> CheckResult:
    """``answer``: the factor by which power iteration's eigenvalue error shrinks over 10 steps on
    a symmetric matrix with eigenvalues 10, 2 and -8. The ratio that counts is the second largest
    in magnitude over the largest, |-8| / 10 = 0.8, so (0.8^2)^10 = 0.0115 (within 5%)."""
    notes = {0.8**10: "That is 0.8^10: for a symmetric matrix the estimate's error shrinks by "
                      "the square of the ratio each step.",
             0.2**20: "That uses 2 / 10: lambda_2 is the eigenvalue second largest in magnitude, "
                      "and |-8| = 8 is larger than 2.",
             0.2**10: "That uses 2 / 10, not squared: lambda_2 is the eigenvalue second largest "
                      "in magnitude (|-8| = 8 > 2), and the error shrinks by its square.",
             0.64 * 10: "Ten steps multiply the factors, they do not add them.",
             0.8 * 10: "Ten steps multiply the factors, they do not add them."}
    note = next((why for value, why in notes.items()
                 if isinstance(answer, (int, float)) and not isinstance(answer, bool)
                 and math.isclose(answer, value, rel_tol=0.05)), "")
    explanation = (f"{note} The eigenvalues by magnitude are 10, |-8| = 8 and 2, so "
                   "|lambda_2 / lambda_1| = 0.8 (the sign does not matter: it is squared). Each "
                   "step multiplies the error of x^T A x by about (lambda_2 / lambda_1)^2 = 0.64 "
                   "(section 3), so ten steps multiply it by 0.64^10 = 0.0115: about 1/87.")
    return check_number(answer, _SHRINK, name="error_after_ten_steps",
                        label="error factor over 10 steps, eigenvalues 10, 2 and -8",
                        explanation=explanation.strip(), rtol=0.05)


_EIGEN_ROUTINES = ("eig", "eigh", "eigvals", "eigvalsh", "svd")
_PROBE_TOP = 1.0  # the dominant eigenvalue of the probes' matrix, eigenvalues 1, -0.9 and 0.5
_PROBE_SECOND_SEED = 11
_MATRIX_POWER = ("it calls np.linalg.matrix_power: matrix-matrix products; the rule is "
                 "matrix-vector products only (x <- A x, one step at a time)")


def _probe_matrix() -> np.ndarray:
    """A symmetric 3x3 matrix with eigenvalues 1, -0.9 and 0.5: power iteration converges slowly
    (the error shrinks by 0.81 a step), so one step, or three, is still far from 1."""
    q, _ = np.linalg.qr(np.random.default_rng(10).standard_normal((3, 3)))
    return (q * np.array([_PROBE_TOP, -0.9, 0.5])) @ q.T


def _power_iteration_rules(func: Callable) -> Callable:
    """``func(a, num_iters, rng)`` under the exercise's two rules: the start is drawn from
    ``rng`` (a function that never draws from it starts from a fixed vector), and it stays a
    power iteration (NumPy's eigenvalue routines, and np.linalg.matrix_power, whose products
    are matrix-matrix, are refused while it runs)."""

    def refuse(name: str) -> Callable:
        def refused(*args, **kwargs):
            raise RuleBroken(f"it calls np.linalg.{name}: NumPy's routine hands over the answer "
                             "without power iteration; the fix keeps the loop of matrix-vector "
                             "products and only changes the start")
        return refused

    def refused_power(*args, **kwargs):
        raise RuleBroken(_MATRIX_POWER)

    @wraps_answer(func)
    def checked(a, num_iters, rng):
        if "matrix_power" in names_used(func):  # also when imported under its own name
            raise RuleBroken(_MATRIX_POWER)
        before = rng.bit_generator.state
        saved = {name: getattr(np.linalg, name) for name in (*_EIGEN_ROUTINES, "matrix_power")}
        for name in _EIGEN_ROUTINES:
            setattr(np.linalg, name, refuse(name))
        np.linalg.matrix_power = refused_power
        try:
            result = func(a, num_iters, rng)
        finally:
            for name, routine in saved.items():
                setattr(np.linalg, name, routine)
        if rng.bit_generator.state == before:
            raise RuleBroken("it never draws from `rng`, so it starts from the same vector every "
                             "time: the rule is a random start, x = rng.standard_normal(n)")
        return result

    return checked


def _power_iteration_probes(checked: Callable) -> Callable:
    """``checked(a, num_iters, rng)``, plus two probes of its behaviour (``probe=``) that a
    routine computing the eigenvalue another way (np.roots(np.poly(a)), scipy.linalg.eigvals)
    or a start that ignores the draw cannot pass: ``"one_step"`` runs a single step, whose
    estimate is still approximate, and ``"two_seeds"`` runs 3 steps from two seeds, whose
    estimates differ. Each probe returns True when it passes."""

    @wraps_answer(checked)
    def probed(a, num_iters, rng, probe=None):
        if probe is None:
            return checked(a, num_iters, rng)
        first = checked(a, num_iters, rng)
        try:
            first = float(first)
        except (TypeError, ValueError):
            return True  # not a number: the other cases say so
        if probe == "one_step" and abs(first - _PROBE_TOP) < 1e-9:
            raise RuleBroken(f"after num_iters=1 it returns {first:.12g}, the exact eigenvalue "
                             f"{_PROBE_TOP:g}: one step of power iteration is still approximate, "
                             "so it computes the eigenvalue another way (the rule: matrix-vector "
                             "products only, no eigenvalue or polynomial-root routine)")
        if probe == "two_seeds":
            second = float(checked(a, num_iters, np.random.default_rng(_PROBE_SECOND_SEED)))
            if second == first:
                raise RuleBroken(f"after num_iters=3 it returns {first:.12g} for two different "
                                 "seeds of rng: the start does not depend on what you drew from "
                                 "rng (the rule: start from x = rng.standard_normal(n))")
        return True

    return probed


@exercise("debug")
def check_power_iteration(func: Callable) -> CheckResult:
    """``func(a, num_iters, rng)``: section 3's ``dominant_eigenvalue`` fixed: the dominant
    eigenvalue (largest in magnitude, with its sign) of a square matrix, from a start drawn from
    the generator ``rng``; ValueError when a is not square. Its rules are enforced: an answer that
    never draws from ``rng`` fails every case, one that calls np.linalg.eig/eigh/eigvals/eigvalsh/
    svd fails, two cases defeat the fixed starts a learner would pick: [[1, -2], [-2, 1]]
    (np.ones is an eigenvector of -1 there; the dominant eigenvalue is 3) and diag(1, 3) (e_1 is
    an eigenvector of 1), and two probe cases refuse an exact answer after one step (another
    routine, such as np.roots(np.poly(a)) or scipy.linalg.eigvals) and the same answer after three
    steps from two seeds (a start that ignores the draw)."""

    def gen(seed: int) -> np.random.Generator:
        return np.random.default_rng(seed)

    cases = [
        Case((np.diag([2.0, 3.0]), 200, gen(1)), "diag(2, 3): 3", expected=3.0),
        Case((np.array([[2.0, 1.0], [1.0, 2.0]]), 200, gen(2)), "[[2, 1], [1, 2]]: 3",
             expected=3.0),
        Case((np.diag([-4.0, 1.0, 2.0]), 200, gen(3)), "diag(-4, 1, 2): -4, sign kept",
             expected=-4.0),
        Case((_symmetric_with_gap(5, 0), 200, gen(4)), "a 5x5 symmetric matrix: 6", expected=6.0),
        Case((np.array([[1.0, -2.0], [-2.0, 1.0]]), 200, gen(5)),
             "[[1, -2], [-2, 1]]: 3 (from np.ones, an eigenvector of -1, you would get -1)",
             expected=3.0),
        Case((np.diag([1.0, 3.0]), 200, gen(6)),
             "diag(1, 3): 3 (from [1, 0], an eigenvector of 1, you would get 1)", expected=3.0),
        Case((np.ones((2, 3)), 10, gen(7)), "a (2, 3) matrix is not square", raises=ValueError),
        Case((_probe_matrix(), 1, gen(8)), "eigenvalues 1, -0.9, 0.5 after 1 step: still "
             "approximate", kwargs={"probe": "one_step"}, expected=True),
        Case((_probe_matrix(), 3, gen(9)), "eigenvalues 1, -0.9, 0.5 after 3 steps: two seeds "
             "give two estimates", kwargs={"probe": "two_seeds"}, expected=True),
    ]
    return check_function(_power_iteration_probes(_power_iteration_rules(func)), cases=cases,
                          name="power_iteration", rtol=1e-6)


def _data_with_covariance(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((50, 3)) @ np.array([[2.0, 0.5, 0.0], [0.0, 1.0, 0.3],
                                                 [0.0, 0.0, 0.4]]) + [4.0, -1.0, 2.0]
    return x, np.cov(x, rowvar=False)


def _projection_variance(x: np.ndarray, u: np.ndarray) -> float:
    """The sample variance (n - 1) of the centred points projected onto u / |u|: the number the
    derived formula must reproduce, computed from the points themselves."""
    z = (x - x.mean(axis=0)) @ (u / np.linalg.norm(u))
    return float(z @ z / (len(x) - 1))


@exercise("derive")
def check_variance_along(func: Callable) -> CheckResult:
    """``func(cov, u)``: the variance of the data's projections onto the direction of u, from the
    covariance matrix alone: u^T C u / (u^T u). Each expected value is measured on the points
    whose covariance is ``cov``; ValueError for u = 0."""
    x, cov = _data_with_covariance(8)
    top = np.linalg.eigh(cov)[1][:, -1]
    cases = [
        Case((cov, np.array([1.0, 0.0, 0.0])), "u = e_1: the variance of the first coordinate",
             expected=_projection_variance(x, np.array([1.0, 0.0, 0.0]))),
        Case((cov, np.array([1.0, 1.0, 0.0])), "u = [1, 1, 0], not of length 1",
             expected=_projection_variance(x, np.array([1.0, 1.0, 0.0]))),
        Case((cov, np.array([-2.0, 3.0, 6.0])), "u = [-2, 3, 6], of length 7",
             expected=_projection_variance(x, np.array([-2.0, 3.0, 6.0]))),
        Case((cov, 5 * top), "u along the top eigenvector: the largest eigenvalue",
             expected=float(np.linalg.eigvalsh(cov)[-1])),
        Case((np.array([[9.0, 0.0], [0.0, 1.0]]), np.array([0.0, 2.0])),
             "C = diag(9, 1), u = [0, 2]: 1", expected=1.0),
        Case((cov, np.zeros(3)), "the zero vector has no direction", raises=ValueError),
    ]
    return check_function(func, cases=cases, name="variance_along", rtol=1e-9)

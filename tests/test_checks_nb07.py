"""Notebook 07's checkers: right answers pass, plausible mistakes fail with a reason."""

import math

import numpy as np
import scipy.special
import torch
from checker_table import right, table_test, wrong
from numpy import log
from scipy.optimize import minimize_scalar

from course_utils.calculus import numerical_gradient
from course_utils.checks import nb07, predict


def best_step(fx, f3x, eps, factor=3, root=3, size=abs):
    return (factor * eps * size(fx) / size(f3x)) ** (1 / root)


def best_step_searched(fx, f3x, eps):
    """A numerical minimisation of E(h): the numbers are right, the calculus is skipped."""
    from scipy.optimize import minimize_scalar

    def error(log_h):
        return (10**log_h) ** 2 / 6 * abs(f3x) + eps * abs(fx) / 10**log_h
    return 10 ** minimize_scalar(error, bounds=(-12, 0), method="bounded",
                                 options={"xatol": 1e-12}).x


def best_step_searched_imported(fx, f3x, eps):
    """The same search with minimize_scalar imported at the top of the cell."""
    def error(log_h):
        return (10**log_h) ** 2 / 6 * abs(f3x) + eps * abs(fx) / 10**log_h
    return 10 ** minimize_scalar(error, bounds=(-12, 0), method="bounded",
                                 options={"xatol": 1e-12}).x


def best_step_newton(fx, f3x, eps):
    """Newton's method on E'(s) = 0, written by hand: right to 1e-9, but a search, not calculus."""
    s = 1e-3
    for _ in range(60):
        slope = s / 3 * abs(f3x) - eps * abs(fx) / s**2  # E'(s)
        curve = abs(f3x) / 3 + 2 * eps * abs(fx) / s**3  # E''(s)
        s = s - slope / curve
    return s


def best_step_grid(fx, f3x, eps):
    """A vectorised two-stage grid search on E'(s): no loop, no SciPy, right to 1e-9 for
    numbers, but a search (and its argmin gives one point for a whole array of inputs)."""
    coarse = np.geomspace(1e-12, 1.0, 100_000)
    slope = coarse / 3 * abs(f3x) - eps * abs(fx) / coarse**2  # E'(s) on the grid
    near = coarse[np.argmin(abs(slope))]
    fine = np.linspace(near * 0.9997, near * 1.0003, 1_000_001)
    slope = fine / 3 * abs(f3x) - eps * abs(fx) / fine**2
    return fine[np.argmin(abs(slope))]


def best_step_zoom(fx, f3x, eps):
    """Three zoom levels of a vectorised grid on E'(s) = a s - c / s^2, one step per entry for
    arrays too: no loop, no SciPy, every number right, and still a search."""
    a, c, n = np.abs(f3x) / 3, eps * np.abs(fx), 100_001
    s = np.linspace(1e-9 + 0 * a, 1.0 + 0 * a, n)
    k = np.argmax(a * s - c / s**2 > 0, axis=0)
    low, width = 1e-9 + (k - 1) * (1 - 1e-9) / (n - 1), (1 - 1e-9) / (n - 1)
    s = np.linspace(low, low + width, n)
    k = np.argmax(a * s - c / s**2 > 0, axis=0)
    low, width = low + (k - 1) * width / (n - 1), width / (n - 1)
    s = np.linspace(low, low + width, n)
    return low + np.argmax(a * s - c / s**2 > 0, axis=0) * width / (n - 1)


def best_step_bisection(fx, f3x, eps):
    """Bisection on E'(s) in log space, by hand."""
    low, high = -15.0, 0.0
    while high - low > 1e-13:
        middle = (low + high) / 2
        if 10**middle / 3 * abs(f3x) - eps * abs(fx) / 10 ** (2 * middle) < 0:
            low = middle
        else:
            high = middle
    return 10**low


def gradient(f, x, h=1e-5, as_float=True, central=True):
    x = np.asarray(x, dtype=np.float64) if as_float else x
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = h
        grad[index] = (f(x + step) - f(x - step if central else x)) / ((1 + central) * h)
    return grad


def gradient_fixed(f, x, h=1e-5):
    point = np.array(x, dtype=np.float64)
    grad = np.empty_like(point)
    for index in np.ndindex(point.shape):
        start = point[index]
        point[index] = start + h
        up = f(point)
        point[index] = start - h
        grad[index] = (up - f(point)) / (2 * h)
        point[index] = start
    return grad


def gradient_buggy(f, x, h=1e-5):
    """The notebook's given function: integer truncation and an unrestored in-place nudge."""
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        x[index] += h
        up = f(x)
        x[index] -= 2 * h
        down = f(x)
        grad[index] = (up - down) / (2 * h)
    return grad


def gradient_restores(f, x, h=1e-5):
    """Fixes the in-place drift only: still integers for integer x."""
    x = x.copy()
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        x[index] += h
        up = f(x)
        x[index] -= 2 * h
        grad[index] = (up - f(x)) / (2 * h)
        x[index] += h
    return grad


def gradient_float_in_place(f, x, h=1e-5):
    """Fixes the integers only: nudges the caller's x (when it is float already)."""
    x = np.asarray(x, dtype=np.float64)
    return gradient_buggy(f, x, h)


def gradient_not_put_back(f, x, h=1e-5):
    """A float copy, but each entry is left h below where it started."""
    return gradient_buggy(f, np.array(x, dtype=np.float64), h)


def tanh_slope_through_x(a, h=1e-6):
    """Back to x with log, a tanh written with exp, and a finite difference: the rule forbids it."""
    x = 0.5 * np.log((1 + a) / (1 - a))
    def tanh(v):
        return (np.exp(v) - np.exp(-v)) / (np.exp(v) + np.exp(-v))
    return (tanh(x + h) - tanh(x - h)) / (2 * h)


def tanh_slope_sech_through_x(a):
    x = 0.5 * np.log((1 + a) / (1 - a))
    return 4 / (np.exp(x) + np.exp(-x)) ** 2


def tanh_slope(a):
    return 1 - np.asarray(a) ** 2


def tanh_slope_emath(a):  # back to x with numpy.emath.log, then the sech form
    x = 0.5 * np.emath.log((1 + a) / (1 - a))
    return 4 / (np.e**x + np.e**-x) ** 2


def tanh_slope_imported_log(a):  # log imported by name before the check patches numpy
    x = 0.5 * log((1 + a) / (1 - a))
    return 4 / (np.e**x + np.e**-x) ** 2


def tanh_of(v):
    """tanh written with powers of np.e: exp under another name."""
    return (np.e**v - np.e**-v) / (np.e**v + np.e**-v)


def tanh_slope_arcsinh(a, h=1e-6):
    """Back to x with arcsinh (arctanh a = arcsinh(a / sqrt(1 - a^2))), then a finite difference."""
    x = np.arcsinh(a / np.sqrt(1 - a * a))
    return (tanh_of(x + h) - tanh_of(x - h)) / (2 * h)


def tanh_slope_logit(a, h=1e-6):
    """Back to x with the logit (tanh x = 2 expit(2x) - 1), then a finite difference of expit."""
    x = scipy.special.logit((1 + a) / 2) / 2
    return (scipy.special.expit(2 * (x + h)) - scipy.special.expit(2 * (x - h))) / h


def tanh_slope_torch_sigmoid(a, h=1e-6):
    """The same with torch.logit and torch.sigmoid."""
    x = torch.logit(torch.tensor((1 + a) / 2)) / 2
    return ((torch.sigmoid(2 * (x + h)) - torch.sigmoid(2 * (x - h))) / h).numpy()


def tanh_slope_series(a, h=1e-6):
    """Back to x by the series arctanh a = a + a^3/3 + a^5/5 + ... (no library function), then a
    finite difference of tanh written with np.e: only the name e gives it away."""
    x = sum(a ** (2 * k + 1) / (2 * k + 1) for k in range(20_000))
    return (tanh_of(x + h) - tanh_of(x - h)) / (2 * h)


def tanh_slope_complex(a, h=1e-6):
    """Back to x through imaginary numbers, arctanh a = arctan(i a) / i and tanh v = tan(i v) / i,
    then a finite difference."""
    x = (np.arctan(1j * a) / 1j).real
    def tanh(v):
        return (np.tan(1j * v) / 1j).real
    return (tanh(x + h) - tanh(x - h)) / (2 * h)


def tanh_finite_difference(a, h=1e-6):
    x = np.arctanh(a)
    return (np.tanh(x + h) - np.tanh(x - h)) / (2 * h)


def tanh_sech(a):
    return 1 / np.cosh(np.arctanh(a)) ** 2


def cube_root(v):  # the learner's own helper
    return v ** (1 / 3)


def best_step_with_helper(fx, f3x, eps):
    return cube_root(3 * eps * np.abs(fx) / np.abs(f3x))


def partial_derivative(f, x, index, s=1e-5):  # the learner's own helper, with np.diff
    nudge = np.zeros_like(x)
    nudge[index] = s
    return np.diff([f(x - nudge), f(x + nudge)])[0] / (2 * s)


def gradient_stacked(f, x):
    x = np.asarray(x, dtype=np.float64)
    return np.stack([partial_derivative(f, x, i) for i in np.ndindex(x.shape)]).reshape(x.shape)


def tanh_derivative(a):  # the learner's own helper
    return 1 - a * a


def tanh_slope_with_helper(a):
    return tanh_derivative(np.asarray(a))


ROWS = [
    *right(nb07.check_best_step, worked=best_step, with_helper=best_step_with_helper,
           cube_root=lambda fx, f3x, eps: np.cbrt(3 * eps * abs(fx / f3x))),
    *wrong(
        nb07.check_best_step,
        terms_equal=(lambda *args: best_step(*args, factor=6),
                     "e^x at 1 in float64: about 1e-5: 6ε where 3ε belongs: it sets the two terms "
                     "equal, or drops the 2 of d(s²)/ds = 2s; values differ: expected "
                     "8.733476581980381e-06, got 1.100349098440101e-05"),
        forgot_the_3=(lambda *args: best_step(*args, factor=1),
                      "the 3 that differentiating s²/6 leaves is missing; values differ: "
                      "expected 4.806217383937356e-07, got 3.332445010132979e-07"),
        square_root=(lambda *args: best_step(*args, root=2),
                     "a square root: E'(s) = 0 is an equation in s³; values differ: expected "
                     "8.733476581980381e-06, got 2.5809568279517847e-08"),
        eps_cube_root=(lambda fx, f3x, eps: eps ** (1 / 3),
                       "1/x at 0.1: f''' = -6/x^4 is negative, use its size: it is ε^(1/3) "
                       "alone: |f| / |f'''| is left out; values differ: expected "
                       "4.806217383937356e-07, got 6.055454452393343e-06"),
        # searches: a bracket of 1e-12 to 1 misses the steps of 9 and 5e-16, a scalar search
        # cannot take arrays, and the tolerance of a search misses rtol 1e-9
        searched=(best_step_searched, "e^(x/10^6) at 0: f''' = 1e-18, a step of about 9: values "
                                      "differ: expected 8.733476581980375, got 0.99999"),
        searched_imported=(best_step_searched_imported,
                           "three at once, as NumPy arrays: a step each: raised ValueError"),
        newton=(best_step_newton, "x^3 at 1e-10: f = 1e-30, a step of about 5e-16: raised "
                                  "ZeroDivisionError"),
        bisection=(best_step_bisection, "x^3 at 1e-10: f = 1e-30, a step of about 5e-16: values "
                                        "differ: expected 4.806217383937361e-16, got 1e-15"),
        grid_search=(best_step_grid, "e^(x/10^6) at 0: f''' = 1e-18, a step of about 9: values "
                                     "differ: expected 8.733476581980375, got 1.0003"),
        zoomed_grid=(best_step_zoom, "e^(x/10^6) at 0: f''' = 1e-18, a step of about 9: values "
                                     "differ"),
        signed=(lambda *args: best_step(*args, size=lambda v: v),
                "1/x at 0.1: f''' = -6/x^4 is negative, use its size: a negative f or f''' gives "
                "a complex root: use their sizes; expected a float, got complex"),
    ),
    *right(nb07.check_numerical_gradient, course_utils=numerical_gradient, worked=gradient_fixed,
           float_copy_and_unit_step=gradient, stacked_with_diff=gradient_stacked),
    *wrong(
        nb07.check_numerical_gradient,
        unchanged=(gradient_buggy, "changed its argument `x` in place"),
        unchanged_integers=(gradient_buggy, "3 x1 + 4 x2 + x1 x2 at the integers (0, 0): still the "
                                            "bug: an integer array cannot hold x + 1e-5 (3 + 1e-5 "
                                            "is stored as 3), so the step was 0 or a whole 1"),
        restores_but_integers=(gradient_restores, "integers in: a step of 1e-5 needs floats: "
                                                  "still the bug: an integer array cannot hold "
                                                  "x + 1e-5"),
        float_but_in_place=(gradient_float_in_place, "x1^2 + x2^2 at (3, 4) -> (6, 8): changed its "
                                                     "argument `x` in place"),
        flattened=(lambda f, x: gradient(f, x).ravel(),
                   "a 2x2 input: keep the shape: shape: expected (2, 2), got (4,)"),
        forward=(lambda f, x: gradient(f, x, central=False),
                 "x1^2 + x2^2 at (3, 4) -> (6, 8): a forward difference (f(x + s) - f(x)) / s: "
                 "the central one is far more accurate; values differ: expected [6., 8.], got "
                 "[6.00001, 8.00001]"),
        integer_steps=(lambda f, x: gradient(f, x, as_float=False),
                       "3 x1 + 4 x2 + x1 x2 at the integers (0, 0): still the bug: an integer "
                       "array cannot hold x + 1e-5"),
        not_put_back=(gradient_not_put_back,
                      "x1·x2 at (3, 4) -> (4, 3): put each entry back before nudging the next: "
                      "each entry is left 1e-5 below where it started"),
        big_step=(lambda f, x: gradient(f, x, h=1e-2),
                  "logsumexp: its gradient is softmax: values differ"),
    ),
    *right(nb07.check_tanh_slope, worked=tanh_slope, factored=lambda a: (1 - a) * (1 + a),
           with_helper=tanh_slope_with_helper),
    *wrong(
        nb07.check_tanh_slope,
        plus=(lambda a: 1 + a**2, "a = ±0.5: tanh is odd, so its slope is the same at ±a: 1 + a²: "
                                  "the quotient rule subtracts u·v'; values differ: expected "
                                  "[0.75, 0.75], got [1.25, 1.25]"),
        no_square=(lambda a: 1 - a, "1 - a: the square is missing; values differ: expected "
                                    "[0.75, 0.75], got [0.5, 1.5]"),
        sigmoid_form=(lambda a: a * (1 - a), "a = 0 (x = 0): tanh is steepest there, slope 1: "
                                             "a (1 - a) is the sigmoid's slope, not tanh's"),
        twice=(lambda a: 2 * (1 - a**2), "twice the slope: one factor 2 too many; values differ: "
                                         "expected [1.], got [2.]"),
        # back to x (arctanh, log, arcsinh, logit, complex numbers), then tanh's slope there: a
        # finite difference misses rtol 1e-12, and a = ±1 has no x (a warning, nan, an exception)
        finite_difference=(tanh_finite_difference, "a = ±0.5: tanh is odd, so its slope is the "
                           "same at ±a: values differ: expected [0.75, 0.75], got [0.75, 0.75]"),
        sech=(tanh_sech, "a = ±1 exactly, as tanh(±20) is in float64: slope 0, and no x to go "
                         "back to: right value, but it warned: divide by zero encountered in "
                         "arctanh"),
        through_x=(tanh_slope_through_x, "and no x to go back to: values differ: expected [0., "
                                         "0., 0.91513696], got [nan, nan, 0.91513696]"),
        sech_through_x=(tanh_slope_sech_through_x, "right value, but it warned: divide by zero "
                                                   "encountered in divide"),
        emath=(tanh_slope_emath, "right value, but it warned: divide by zero"),
        imported_log=(tanh_slope_imported_log, "right value, but it warned: divide by zero"),
        math_tanh=(lambda a: np.array([1 - math.tanh(math.atanh(v)) ** 2 for v in a]),
                   "and no x to go back to: raised ValueError: math domain error"),
        arcsinh=(tanh_slope_arcsinh, "and no x to go back to: values differ: expected [0., 0., "
                                     "0.91513696], got [nan, nan, 0.91513696]"),
        math_asinh=(lambda a: np.array([1 - math.tanh(math.asinh(v / math.sqrt(1 - v * v))) ** 2
                                        for v in a]), "right value, but it warned: divide by zero"),
        logit=(tanh_slope_logit, "a = 0 (x = 0): tanh is steepest there, slope 1: values differ: "
                                 "expected [1.], got [1.]"),
        torch_sigmoid=(tanh_slope_torch_sigmoid, "a = 0 (x = 0): tanh is steepest there, slope 1: "
                                                 "values differ"),
        imaginary=(tanh_slope_complex, "a = ±0.5: tanh is odd, so its slope is the same at ±a: "
                                       "values differ"),
        powers_of_e=(tanh_slope_series, "and no x to go back to: values differ: expected [0., 0., "
                                        "0.91513696], got [2.80725443e-05, 2.80725443e-05"),
    ),
    *right(nb07.check_largest_lr, two_over_ten=0.2, close=0.199),
    *wrong(
        nb07.check_largest_lr,
        x_direction=(1.0, "1 is too high: there x1's factor 1 - 2·lr reaches -1"),
        one_step_to_zero=(0.1, "0.1 is too low: it sends x2 to 0 in one step"),
        the_one_shown=(0.18, "0.18 is too low: section 6 showed that it still converges"),
        halfway=(0.5, "0.5 is too high: follow x2 alone"),
        text=("0.2", "expected a number, got str '0.2'"),
    ),
]

test_checker = table_test(ROWS)


def test_a_first_miss_holds_the_answer_back(capsys):
    predict._misses.clear()
    nb07.check_largest_lr(0.5)
    assert "0.2" not in capsys.readouterr().out
    nb07.check_largest_lr(0.5)
    assert "the answer: about 0.2" in capsys.readouterr().out
    predict._misses.clear()

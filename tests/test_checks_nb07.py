"""Notebook 07's checkers: right answers pass, plausible mistakes fail with a reason."""

import numpy as np
from checker_table import right, table_test, wrong

from course_utils.calculus import numerical_gradient
from course_utils.checks import nb07


def best_step(fx, f3x, eps, factor=3, root=3, size=abs):
    return (factor * eps * size(fx) / size(f3x)) ** (1 / root)


def gradient(f, x, h=1e-5, as_float=True, central=True):
    x = np.asarray(x, dtype=np.float64) if as_float else x
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = h
        grad[index] = (f(x + step) - f(x - step if central else x)) / ((1 + central) * h)
    return grad


def gradient_nudging_x(f, x, h=1e-5):
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        x[index] += h
        up = f(x)
        x[index] -= 2 * h
        grad[index] = (up - f(x)) / (2 * h)
        x[index] += h  # back to where it was, up to rounding
    return grad


def cross_entropy_grad(z, target):
    e = np.exp(z - np.max(z))
    p = e / e.sum()
    return p - np.eye(len(z))[target]


ROWS = [
    *right(nb07.check_best_step, worked=best_step,
           cube_root=lambda fx, f3x, eps: np.cbrt(3 * eps * abs(fx / f3x))),
    *wrong(
        nb07.check_best_step,
        terms_equal=(lambda *args: best_step(*args, factor=6),
                     "e^x at 1 in float64: about 1e-5: values differ: expected "
                     "8.733476581980381e-06, got 1.100349098440101e-05"),
        forgot_the_3=(lambda *args: best_step(*args, factor=1), "got 6.055454452393343e-06"),
        square_root=(lambda *args: best_step(*args, root=2), "got 2.5809568279517847e-08"),
        eps_cube_root=(lambda fx, f3x, eps: eps ** (1 / 3),
                       "1/x at 0.1: f''' = -6/x^4 is negative, use its size: values differ: "
                       "expected 4.806217383937356e-07, got 6.055454452393343e-06"),
        signed=(lambda *args: best_step(*args, size=lambda v: v),
                "1/x at 0.1: f''' = -6/x^4 is negative, use its size: expected a float, got "
                "complex"),
    ),
    *right(nb07.check_numerical_gradient, course_utils=numerical_gradient, worked=gradient),
    *wrong(
        nb07.check_numerical_gradient,
        flattened=(lambda f, x: gradient(f, x).ravel(),
                   "a 2x2 input: keep the shape: shape: expected (2, 2), got (4,)"),
        forward=(lambda f, x: gradient(f, x, central=False),
                 "x^2 + y^2 at (3, 4) -> (6, 8): values differ: expected [6., 8.], got "
                 "[6.00001, 8.00001]"),
        integer_steps=(lambda f, x: gradient(f, x, as_float=False),
                       "integers in: a step of 1e-5 needs floats: dtype: expected float64, got "
                       "int64"),
        nudges_x=(gradient_nudging_x, "changed its argument `x` in place"),
        big_step=(lambda f, x: gradient(f, x, h=1e-2),
                  "logsumexp: its gradient is softmax: values differ"),
    ),
    *right(nb07.check_cross_entropy_grad, worked=cross_entropy_grad),
    *wrong(
        nb07.check_cross_entropy_grad,
        negated=(lambda z, t: -cross_entropy_grad(z, t),
                 "the worst at [0]: expected -0.3409988611140321, got 0.3409988611140321"),
        no_softmax=(lambda z, t: z - np.eye(len(z))[t], "values differ"),
        unstable=(lambda z, t: np.exp(z) / np.exp(z).sum() - np.eye(len(z))[t],
                  "huge logits: use a stable softmax: values differ: expected [1., -1., 0.], "
                  "got [nan, -1., 0.]; 1 of 3 entries differ (1 is nan)"),
    ),
]

test_checker = table_test(ROWS)

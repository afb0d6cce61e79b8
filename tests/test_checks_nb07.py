"""The notebook 07 checkers accept a correct solution and catch plausible mistakes."""

import numpy as np

from course_utils.checks import nb07


def stub(*args):
    raise NotImplementedError


def central(f, x, h):
    return (f(x + h) - f(x - h)) / (2 * h)


def forward(f, x, h):
    return (f(x + h) - f(x)) / h


def gradient(f, x):
    x = np.asarray(x, dtype=np.float64)
    grad = np.zeros_like(x)
    h = 1e-5
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = h
        grad[i] = (f(x + step) - f(x - step)) / (2 * h)
    return grad


def flat_gradient(f, x):
    return gradient(f, x).ravel()


def ce_grad(z, target):
    e = np.exp(z - np.max(z))
    p = e / e.sum()
    return p - np.eye(len(z))[target]


def test_central_difference():
    assert nb07.check_central_difference(central).passed
    assert nb07.check_central_difference(forward).status == "failed"
    no_half = nb07.check_central_difference(lambda f, x, h: (f(x + h) - f(x - h)) / h)
    assert no_half.status == "failed"
    assert nb07.check_central_difference(stub).status == "not attempted"


def test_numerical_gradient():
    assert nb07.check_numerical_gradient(gradient).passed
    assert nb07.check_numerical_gradient(flat_gradient).status == "failed"
    assert nb07.check_numerical_gradient(stub).status == "not attempted"


def test_cross_entropy_grad():
    assert nb07.check_cross_entropy_grad(ce_grad).passed
    assert nb07.check_cross_entropy_grad(lambda z, t: -ce_grad(z, t)).status == "failed"
    assert nb07.check_cross_entropy_grad(lambda z, t: z - np.eye(len(z))[t]).status == "failed"
    assert nb07.check_cross_entropy_grad(stub).status == "not attempted"

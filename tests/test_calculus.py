"""course_utils.calculus against analytic derivatives and torch.autograd."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from course_utils.calculus import (
    derivative,
    gradient_check,
    numerical_gradient,
    numerical_jacobian,
    softmax_jacobian,
)


def test_square_at_three():
    forward = derivative(lambda x: x**2, 3.0, h=1e-5, method="forward")
    assert forward == pytest.approx(6.00001, abs=1e-6)
    assert derivative(lambda x: x**2, 3.0) == pytest.approx(6.0, abs=1e-9)


def test_central_beats_forward():
    forward = abs(derivative(np.sin, 1.0, h=1e-3, method="forward") - np.cos(1.0))
    central = abs(derivative(np.sin, 1.0, h=1e-3) - np.cos(1.0))
    assert central < forward / 100
    # halving h halves the forward error (O(h)) and quarters the central error (O(h^2))
    f2 = abs(derivative(np.sin, 1.0, h=5e-4, method="forward") - np.cos(1.0))
    c2 = abs(derivative(np.sin, 1.0, h=5e-4) - np.cos(1.0))
    assert f2 / forward == pytest.approx(0.5, rel=0.01)
    assert c2 / central == pytest.approx(0.25, rel=0.01)


def _torch_grad(fn, x):
    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    fn(t).backward()
    return t.grad.numpy()


@settings(max_examples=30, deadline=None)
@given(x=arrays(np.float64, st.integers(1, 6), elements=st.floats(-2, 2)))
def test_numerical_gradient_matches_torch(x):
    def fn(v):
        tanh = torch.tanh if torch.is_tensor(v) else np.tanh
        return (v**3).sum() + v[0] * v[-1] + tanh(v).sum()

    np.testing.assert_allclose(numerical_gradient(fn, x), _torch_grad(fn, x), rtol=1e-6, atol=1e-7)


def test_jacobian_matches_torch():
    x = np.random.default_rng(0).normal(size=(2, 3))
    w = np.random.default_rng(1).normal(size=(3, 4))

    def f(v):
        return np.tanh(v @ w)

    expected = torch.autograd.functional.jacobian(
        lambda t: torch.tanh(t @ torch.from_numpy(w)), torch.from_numpy(x)
    ).numpy()
    ours = numerical_jacobian(f, x)
    assert ours.shape == (2, 4, 2, 3)
    np.testing.assert_allclose(ours, expected, rtol=1e-7, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(z=arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(1, 6)),
                elements=st.floats(-10, 10)))
def test_softmax_jacobian_matches_torch(z):
    ours = softmax_jacobian(z)
    for row in range(z.shape[0]):
        expected = torch.autograd.functional.jacobian(
            lambda t: torch.softmax(t, dim=-1), torch.from_numpy(z[row])
        ).numpy()
        np.testing.assert_allclose(ours[row], expected, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(ours.sum(axis=-1), 0.0, atol=1e-15)


def test_gradient_check_separates_right_from_wrong():
    x = np.array([3.0, 4.0])

    def f(v):
        return float(v @ v)

    assert gradient_check(f, lambda v: 2 * v, x) < 1e-9
    assert gradient_check(f, lambda v: v, x) > 0.1  # forgot the factor 2


def test_bad_input():
    with pytest.raises(ValueError, match="h must be a finite number > 0"):
        derivative(np.sin, 1.0, h=0.0)
    with pytest.raises(ValueError, match="method must be"):
        derivative(np.sin, 1.0, method="backward")
    with pytest.raises(ValueError, match="x must hold finite numbers"):
        numerical_gradient(np.sum, [1.0, np.inf])
    with pytest.raises(ValueError, match="f must return a scalar"):
        numerical_gradient(lambda v: v * 2, [1.0, 2.0])
    with pytest.raises(ValueError, match="grad\\(x\\) must have the shape"):
        gradient_check(np.sum, lambda v: np.ones(3), [1.0, 2.0])
    with pytest.raises(ValueError, match="must not be empty"):
        numerical_gradient(np.sum, [])
    with pytest.raises(ValueError, match="last axis"):
        softmax_jacobian(np.ones((2, 3)), axis=0)
    with pytest.raises(TypeError, match="real numbers"):
        softmax_jacobian(["a"])

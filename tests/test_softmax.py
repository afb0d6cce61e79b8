"""course_utils.softmax against scipy.special and torch.nn.functional, plus its invariants."""

import numpy as np
import pytest
import scipy.special
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

from course_utils.softmax import log_softmax, logsumexp, softmax

finite = st.floats(-50, 50, allow_nan=False, allow_infinity=False, width=64)
logit_arrays = arrays(np.float64, array_shapes(min_dims=1, max_dims=3, max_side=5), elements=finite)


def test_the_worked_example():
    np.testing.assert_allclose(softmax([2.0, 1.0, 0.1]), [0.659, 0.242, 0.099], atol=5e-4)


@settings(max_examples=50, deadline=None)
@given(x=logit_arrays, data=st.data())
def test_matches_scipy_on_every_axis(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    np.testing.assert_allclose(softmax(x, axis=axis), scipy.special.softmax(x, axis=axis),
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(log_softmax(x, axis=axis),
                               scipy.special.log_softmax(x, axis=axis), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(logsumexp(x, axis=axis),
                               scipy.special.logsumexp(x, axis=axis), rtol=1e-12, atol=1e-12)


@settings(max_examples=50, deadline=None)
@given(x=logit_arrays, shift=finite)
def test_sums_to_one_and_is_shift_invariant(x, shift):
    p = softmax(x)
    assert np.all(p >= 0)
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(softmax(x + shift), p, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(logsumexp(x + shift), logsumexp(x) + shift, rtol=1e-12, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(x=logit_arrays, temperature=st.floats(0.05, 20))
def test_temperature_matches_torch(x, temperature):
    expected = torch.softmax(torch.from_numpy(x) / temperature, dim=-1).numpy()
    ours = softmax(x, temperature=temperature)
    np.testing.assert_allclose(ours, expected, rtol=1e-10, atol=1e-14)
    expected_log = torch.log_softmax(torch.from_numpy(x) / temperature, dim=-1).numpy()
    np.testing.assert_allclose(log_softmax(x, temperature=temperature), expected_log, rtol=1e-10,
                               atol=1e-10)


def test_temperature_limits():
    x = np.array([2.0, 1.0, 0.1])
    np.testing.assert_allclose(softmax(x, temperature=1e-3), [1.0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(softmax(x, temperature=1e6), np.full(3, 1 / 3), atol=1e-6)


def test_large_inputs_do_not_overflow():
    x = np.array([1000.0, 1001.0, 1002.0])
    with np.errstate(over="raise"):
        p = softmax(x)
    np.testing.assert_allclose(p, scipy.special.softmax(x), rtol=1e-12)
    np.testing.assert_allclose(logsumexp(x), scipy.special.logsumexp(x), rtol=1e-15)
    np.testing.assert_allclose(log_softmax(-x), scipy.special.log_softmax(-x), rtol=1e-12)


def test_minus_inf_gets_zero_probability():
    x = np.array([[0.0, -np.inf, 1.0], [-np.inf, 3.0, -np.inf]])
    p = softmax(x)
    assert p[0, 1] == 0.0 and p[1, 0] == 0.0 and p[1, 1] == 1.0
    np.testing.assert_allclose(p, scipy.special.softmax(x, axis=-1))
    assert np.isneginf(log_softmax(x)[0, 1])


def test_all_minus_inf_row():
    x = np.array([[0.0, 1.0], [-np.inf, -np.inf]])
    with pytest.raises(ValueError, match="all -inf"):
        softmax(x)
    with pytest.raises(ValueError, match="all -inf"):
        log_softmax(x)
    lse = logsumexp(x)
    assert np.isneginf(lse[1])
    np.testing.assert_allclose(lse[0], scipy.special.logsumexp([0.0, 1.0]))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_dtype_is_kept(dtype):
    x = np.array([[2.0, 1.0, 0.1], [0.0, -1.0, 5.0]], dtype=dtype)
    tol = {np.float16: 2e-3, np.float32: 1e-6, np.float64: 1e-14}[dtype]
    reference = torch.from_numpy(x.astype(np.float64))
    for ours, theirs in [(softmax(x), torch.softmax(reference, -1)),
                         (log_softmax(x), torch.log_softmax(reference, -1)),
                         (logsumexp(x), torch.logsumexp(reference, -1))]:
        assert ours.dtype == dtype
        np.testing.assert_allclose(ours.astype(np.float64), theirs.numpy(), rtol=tol, atol=tol)


def test_integers_become_float64():
    assert softmax([1, 2, 3]).dtype == np.float64
    assert logsumexp(np.array([1, 2], dtype=np.int32)).dtype == np.float64


def test_keepdims():
    x = np.arange(6.0).reshape(2, 3)
    assert logsumexp(x, axis=0, keepdims=True).shape == (1, 3)
    assert logsumexp(x, axis=0).shape == (3,)


@pytest.mark.parametrize("func", [softmax, log_softmax, logsumexp])
@pytest.mark.parametrize(
    ("x", "error", "match"),
    [
        ([], ValueError, "must not be empty"),
        (np.zeros((2, 0)), ValueError, "must not be empty"),
        ([1.0, np.nan], ValueError, "NaN"),
        ([1.0, 2j], TypeError, "real numbers"),
        (["a", "b"], TypeError, "real numbers"),
        ([[1.0, 2.0], [3.0]], ValueError, "rectangular"),
        (3.0, ValueError, "axis -1 is out of range for an array with 0 dimensions"),
    ],
)
def test_bad_input(func, x, error, match):
    with pytest.raises(error, match=match):
        func(x)


def test_bad_axis_and_temperature():
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        softmax(np.ones((2, 2)), axis=2)
    with pytest.raises(TypeError, match="axis must be an int"):
        logsumexp(np.ones(2), axis=0.5)
    for bad in (0.0, -1.0, np.inf):
        with pytest.raises(ValueError, match="temperature must be a finite number > 0"):
            softmax([1.0, 2.0], temperature=bad)
    with pytest.raises(ValueError, match=r"\+inf"):
        softmax([1.0, np.inf])
    with pytest.raises(TypeError, match="torch tensor"):
        softmax(torch.ones(3))

"""course_utils.stats against NumPy (mean, var, std, bincount), SciPy (zscore, chisquare),
PyTorch (layer_norm) and hypothesis invariants."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import stats as scipy_stats

from course_utils import stats

floats = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
float_arrays = hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
                          elements=floats)


def test_textbook_example():
    data = [1, 2, 3, 4, 5]
    assert stats.mean(data) == 3.0
    assert stats.variance(data) == 2.0
    assert stats.std(data) == pytest.approx(np.sqrt(2.0), rel=1e-15)
    assert stats.variance(data, ddof=1) == 2.5
    assert isinstance(stats.mean(data), float)


@settings(max_examples=50, deadline=None)
@given(float_arrays, st.sampled_from([None, 0, -1]), st.integers(0, 1))
def test_mean_variance_std_equal_numpy(x, axis, ddof):
    n = x.size if axis is None else x.shape[axis]
    np.testing.assert_allclose(stats.mean(x, axis=axis), np.mean(x, axis=axis),
                               rtol=1e-12, atol=1e-9)
    if n - ddof <= 0:
        with pytest.raises(ValueError, match=f"ddof={ddof} needs more than"):
            stats.variance(x, ddof=ddof, axis=axis)
        return
    np.testing.assert_allclose(stats.variance(x, ddof=ddof, axis=axis),
                               np.var(x, ddof=ddof, axis=axis), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(stats.std(x, ddof=ddof, axis=axis),
                               np.std(x, ddof=ddof, axis=axis), rtol=1e-9, atol=1e-9)


def test_variance_ddof_1_equals_torch_default():
    x = np.random.default_rng(3).standard_normal((4, 7))
    want = torch.from_numpy(x).var(dim=-1).numpy()  # torch's default is the sample variance
    np.testing.assert_allclose(stats.variance(x, ddof=1, axis=-1), want, rtol=1e-12)


@settings(max_examples=50, deadline=None)
@given(float_arrays, st.floats(-10, 10), st.floats(0.1, 10))
def test_variance_shift_and_scale(x, shift, scale):
    # Var(a x + b) = a^2 Var(x); the mean moves with the shift
    np.testing.assert_allclose(stats.variance(scale * x + shift),
                               scale**2 * stats.variance(x), rtol=1e-6, atol=1e-6)
    assert stats.mean(x + shift) == pytest.approx(stats.mean(x) + shift, abs=1e-6)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: stats.mean([]), ValueError, "x must not be empty"),
        (lambda: stats.mean([1.0, np.nan]), ValueError, "finite"),
        (lambda: stats.mean([True, False]), TypeError, "real numbers"),
        (lambda: stats.mean([[1, 2], [3]]), ValueError, "array of numbers"),
        (lambda: stats.mean([1, 2], axis=1), ValueError, "axis 1 is out of range"),
        (lambda: stats.mean([1, 2], axis=0.5), TypeError, "axis must be an int"),
        (lambda: stats.variance([1.0], ddof=1), ValueError, r"ddof=1 needs more than 1"),
        (lambda: stats.variance([1.0, 2.0], ddof=-1), ValueError, "ddof must be at least 0"),
        (lambda: stats.std([1.0, 2.0], ddof=True), TypeError, "ddof must be an int"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --- standardize --------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(2, 8)), elements=floats))
def test_standardize_equals_scipy_zscore(x):
    if np.any(np.ptp(x, axis=-1) < 1e-3):
        return  # nearly constant rows: checked separately below
    got = stats.standardize(x)
    np.testing.assert_allclose(got, scipy_stats.zscore(x, axis=-1), rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(got.mean(axis=-1), 0.0, atol=1e-9)
    np.testing.assert_allclose(got.var(axis=-1), 1.0, rtol=1e-9)


def test_standardize_with_eps_equals_torch_layer_norm():
    x = np.random.default_rng(0).standard_normal((2, 3, 8))
    want = torch.nn.functional.layer_norm(torch.from_numpy(x), (8,), eps=1e-5).numpy()
    np.testing.assert_allclose(stats.standardize(x, eps=1e-5), want, rtol=1e-10, atol=1e-12)


def test_standardize_constant_rows_and_other_axes():
    with pytest.raises(ValueError, match="constant slice"):
        stats.standardize([[1.0, 2.0], [3.0, 3.0]])
    np.testing.assert_array_equal(stats.standardize([[3.0, 3.0]], eps=1e-5), [[0.0, 0.0]])
    x = np.array([[1.0, 10.0], [3.0, 30.0]])
    np.testing.assert_allclose(stats.standardize(x, axis=0), [[-1, -1], [1, 1]])
    np.testing.assert_allclose(stats.standardize([1, 2, 3], axis=None),
                               scipy_stats.zscore([1, 2, 3], axis=None))
    with pytest.raises(ValueError, match="eps must be a finite number"):
        stats.standardize([1.0, 2.0], eps=-1.0)


# --- sampling -----------------------------------------------------------------------------


def test_sample_categorical_matches_probabilities_chi_square():
    probs = [0.7, 0.2, 0.1]
    samples = stats.sample_categorical(probs, 20_000, rng=0)
    assert samples.shape == (20_000,) and samples.dtype == np.int64
    counts = np.bincount(samples, minlength=3)
    p_value = scipy_stats.chisquare(counts, 20_000 * np.array(probs)).pvalue
    assert p_value > 1e-3
    # a sampler with the probabilities reversed would fail this test
    assert scipy_stats.chisquare(counts, 20_000 * np.array(probs[::-1])).pvalue < 1e-10


def test_sample_categorical_edges():
    assert set(stats.sample_categorical([0.0, 1.0, 0.0], 100, rng=1).tolist()) == {1}
    assert set(stats.sample_categorical([1.0], 5, rng=1).tolist()) == {0}
    # the same seed gives the same draws; a Generator is accepted
    np.testing.assert_array_equal(stats.sample_categorical([0.5, 0.5], 10, rng=3),
                                  stats.sample_categorical([0.5, 0.5], 10,
                                                           rng=np.random.default_rng(3)))


@pytest.mark.parametrize(
    ("probs", "n", "error", "match"),
    [
        ([0.5, 0.6], 3, ValueError, "sum to 1, got sum 1.1"),
        ([1.2, -0.2], 3, ValueError, "non-negative"),
        ([[0.5, 0.5]], 3, ValueError, r"probs must be a vector \(1-D\)"),
        ([], 3, ValueError, "probs must not be empty"),
        ([0.5, 0.5], 0, ValueError, "n must be at least 1"),
        ([0.5, 0.5], 2.0, TypeError, "n must be an int"),
    ],
)
def test_sample_categorical_bad_input(probs, n, error, match):
    with pytest.raises(error, match=match):
        stats.sample_categorical(probs, n, rng=0)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=50))
def test_empirical_frequencies_equal_bincount(samples):
    got = stats.empirical_frequencies(samples, 5)
    np.testing.assert_allclose(got, np.bincount(samples, minlength=5) / len(samples))
    assert got.sum() == pytest.approx(1.0)


def test_empirical_frequencies_bad_input():
    with pytest.raises(ValueError, match=r"samples must lie in \[0, 3\), got values from 0 to 3"):
        stats.empirical_frequencies([0, 3], 3)
    with pytest.raises(TypeError, match="integer category indices"):
        stats.empirical_frequencies([0.0, 1.0], 3)
    with pytest.raises(ValueError, match="samples must not be empty"):
        stats.empirical_frequencies([], 3)


# --- the dot-product variance simulation ----------------------------------------------------


@pytest.mark.parametrize("d_k", [1, 16, 300])
def test_dot_product_samples_have_variance_d_k(d_k):
    n = 20_000
    samples = stats.dot_product_samples(d_k, n, rng=d_k)
    assert samples.shape == (n,)
    # Var(q.k) = d_k; the sample variance has relative standard error sqrt((2 + 6/d_k) / n)
    relative_se = np.sqrt((2 + 6 / d_k) / n)
    assert abs(np.var(samples, ddof=1) / d_k - 1) < 5 * relative_se
    assert abs(np.mean(samples)) < 5 * np.sqrt(d_k / n)
    # a product of two normals is heavy-tailed: kurtosis 3 + 6/d_k, not 3
    assert scipy_stats.kurtosis(samples, fisher=False) == pytest.approx(3 + 6 / d_k, rel=0.2)


def test_dot_product_scaling_divides_by_sqrt_d_k():
    raw = stats.dot_product_samples(64, 1000, rng=5)
    scaled = stats.dot_product_samples(64, 1000, rng=5, scaled=True)
    np.testing.assert_allclose(scaled, raw / 8.0)


def test_dot_product_variance_over_d_k():
    d_ks = [4, 64, 1024]
    raw = stats.dot_product_variance(d_ks, 4000, rng=0)
    scaled = stats.dot_product_variance(d_ks, 4000, rng=0, scaled=True)
    assert raw.shape == scaled.shape == (3,)
    np.testing.assert_allclose(raw / d_ks, 1.0, rtol=0.15)
    np.testing.assert_allclose(scaled, 1.0, rtol=0.15)
    with pytest.raises(ValueError, match="d_ks must not be empty"):
        stats.dot_product_variance([], 10)
    with pytest.raises(ValueError, match=r"d_ks\[0\] must be at least 1"):
        stats.dot_product_variance([0], 10)
    with pytest.raises(ValueError, match="n_samples must be at least 2"):
        stats.dot_product_variance([4], 1)
    with pytest.raises(TypeError, match="d_ks must be a sequence"):
        stats.dot_product_variance(4, 10)


@settings(max_examples=50, deadline=None)
@given(float_arrays, st.floats(-10, 10), st.floats(0.01, 10))
def test_normal_pdf_equals_scipy(x, mu, sigma):
    np.testing.assert_allclose(stats.normal_pdf(x, mu, sigma),
                               scipy_stats.norm.pdf(x, loc=mu, scale=sigma),
                               rtol=1e-12, atol=1e-300)


def test_normal_pdf_peak_area_and_errors():
    assert stats.normal_pdf(0.0) == pytest.approx(1 / np.sqrt(2 * np.pi), rel=1e-15)
    assert isinstance(stats.normal_pdf(0.0), float)
    grid = np.linspace(-20, 20, 40_001)
    area = stats.normal_pdf(grid, 1.0, 2.0).sum() * (grid[1] - grid[0])  # Riemann sum
    assert area == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(ValueError, match="std must be a finite number > 0, got 0.0"):
        stats.normal_pdf(0.0, std=0.0)
    with pytest.raises(ValueError, match="mean must be a finite number, got nan"):
        stats.normal_pdf(0.0, mean=float("nan"))
    with pytest.raises(TypeError, match="x must hold real numbers"):
        stats.normal_pdf("a")


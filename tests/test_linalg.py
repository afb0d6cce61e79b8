"""course_utils.linalg against NumPy (``@``, ``np.dot``, ``np.broadcast_shapes``, ``eigh``),
SciPy (``scipy.spatial.distance.cosine``) and hypothesis invariants."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.spatial.distance import cosine as scipy_cosine_distance

from course_utils import linalg

floats = st.floats(-100, 100, allow_nan=False, allow_infinity=False)
# no tiny non-zero entries: SciPy's reference underflows (and warns) on them
plain_floats = floats.filter(lambda x: x == 0 or abs(x) > 1e-6)
ints = st.integers(-1000, 1000)


@st.composite
def matrix_pair(draw, elements=floats, dtype=np.float64):
    m, k, n = (draw(st.integers(1, 6)) for _ in range(3))
    a = draw(hnp.arrays(dtype, (m, k), elements=elements))
    b = draw(hnp.arrays(dtype, (k, n), elements=elements))
    return a, b


# --- matmul_loops -------------------------------------------------------------------------


def test_matmul_loops_textbook_example():
    got = linalg.matmul_loops([[1, 2], [3, 4]], [[5, 6], [7, 8]])
    np.testing.assert_array_equal(got, [[19, 22], [43, 50]])
    assert got.dtype == (np.array([[1, 2]]) @ np.array([[5], [7]])).dtype


@settings(max_examples=50, deadline=None)
@given(matrix_pair())
def test_matmul_loops_equals_numpy_floats(pair):
    a, b = pair
    got = linalg.matmul_loops(a, b)
    assert got.shape == (a.shape[0], b.shape[1])
    assert got.dtype == (a @ b).dtype
    np.testing.assert_allclose(got, a @ b, rtol=1e-12, atol=1e-9)


@settings(max_examples=50, deadline=None)
@given(matrix_pair(elements=ints, dtype=np.int64))
def test_matmul_loops_equals_numpy_integers_exactly(pair):
    a, b = pair
    got = linalg.matmul_loops(a, b)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, a @ b)


def test_matmul_loops_keeps_float32_and_vectors_as_matrices():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 2)).astype(np.float32)
    got = linalg.matmul_loops(a, b)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, a @ b, rtol=1e-5)
    # a row times a column is a 1x1 matrix holding the dot product
    np.testing.assert_array_equal(linalg.matmul_loops([[1, 2, 3]], [[4], [5], [6]]), [[32]])


def test_matmul_loops_integer_overflow_raises_instead_of_wrapping():
    a = np.array([[200, 200]], dtype=np.uint8)
    b = np.array([[1], [1]], dtype=np.uint8)
    assert (a @ b)[0, 0] == 144  # NumPy wraps 400 around modulo 256
    with pytest.raises(OverflowError, match="400 does not fit in uint8"):
        linalg.matmul_loops(a, b)
    assert linalg.matmul_loops(a // 2, b)[0, 0] == 200  # the largest sums that fit are kept
    big = np.array([[2**62, 2**62]], dtype=np.int64)
    with pytest.raises(OverflowError, match="does not fit in int64"):
        linalg.matmul_loops(big, np.array([[1], [1]], dtype=np.int64))


def test_matmul_loops_is_not_elementwise():
    a, b = np.array([[1, 2], [3, 4]]), np.array([[5, 6], [7, 8]])
    assert not np.array_equal(linalg.matmul_loops(a, b), a * b)
    assert not np.array_equal(linalg.matmul_loops(a, b), linalg.matmul_loops(b, a))


@pytest.mark.parametrize(
    ("a", "b", "error", "match"),
    [
        (np.ones((2, 3)), np.ones((2, 3)), ValueError, r"inner sizes differ.*3 != 2"),
        (np.ones(3), np.ones((3, 2)), ValueError, r"a must be a matrix \(2-D\)"),
        (np.ones((2, 3)), np.ones((3, 2, 1)), ValueError, r"b must be a matrix"),
        (np.ones((0, 3)), np.ones((3, 2)), ValueError, "a must not be empty"),
        (np.ones((2, 3)), np.full((3, 2), np.nan), ValueError, "b must hold finite"),
        (np.ones((2, 2), dtype=bool), np.ones((2, 2)), TypeError, "a must hold real numbers"),
        (np.ones((2, 2)), np.ones((2, 2), dtype=complex), TypeError, "b must hold real"),
        ([[1, 2], [3]], np.ones((2, 2)), ValueError, "a must be a matrix of numbers"),
        ([["x"]], [[1]], TypeError, "a must hold real numbers"),
    ],
)
def test_matmul_loops_bad_input(a, b, error, match):
    with pytest.raises(error, match=match):
        linalg.matmul_loops(a, b)


# --- matmul_flops -------------------------------------------------------------------------


def test_matmul_flops():
    assert linalg.matmul_flops(2, 2, 2) == 16
    assert linalg.matmul_flops(128, 64, 128) == 2 * 128 * 64 * 128
    assert linalg.matmul_flops(np.int64(3), 1, 5) == 30
    with pytest.raises(ValueError, match="k must be at least 1"):
        linalg.matmul_flops(2, 0, 2)
    with pytest.raises(TypeError, match="n must be an int"):
        linalg.matmul_flops(2, 2, 2.0)
    with pytest.raises(TypeError, match="m must be an int"):
        linalg.matmul_flops(True, 2, 2)


# --- dot and cosine similarity -------------------------------------------------------------


def test_dot_textbook_example_is_exact_int():
    got = linalg.dot([1, 2, 3], [4, 5, 6])
    assert got == 32 and isinstance(got, int)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 20).flatmap(lambda d: st.tuples(
    hnp.arrays(np.float64, d, elements=floats), hnp.arrays(np.float64, d, elements=floats))))
def test_dot_equals_numpy_and_is_symmetric(pair):
    a, b = pair
    got = linalg.dot(a, b)
    assert isinstance(got, float)
    assert got == pytest.approx(float(np.dot(a, b)), rel=1e-12, abs=1e-9)
    assert got == linalg.dot(b, a)


def test_dot_bad_input():
    with pytest.raises(ValueError, match=r"same length, got \(3,\) and \(2,\)"):
        linalg.dot([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match=r"a must be a vector \(1-D\)"):
        linalg.dot([[1, 2]], [1, 2])
    with pytest.raises(ValueError, match="b must not be empty"):
        linalg.dot([1.0], [])
    with pytest.raises(ValueError, match="finite"):
        linalg.dot([np.inf], [1.0])


def test_cosine_similarity_known_angles():
    assert linalg.cosine_similarity([1, 0], [0, 1]) == 0.0
    assert linalg.cosine_similarity([1, 1], [2, 2]) == pytest.approx(1.0)
    assert linalg.cosine_similarity([1, 0], [-3, 0]) == -1.0
    assert linalg.cosine_similarity([1, 0], [1, 1]) == pytest.approx(math.cos(math.pi / 4))
    a, b = [1, 2, 3], [4, 5, 6]
    assert linalg.cosine_similarity(a, b) == pytest.approx(32 / math.sqrt(14 * 77))


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 20).flatmap(lambda d: st.tuples(
    hnp.arrays(np.float64, d, elements=plain_floats),
    hnp.arrays(np.float64, d, elements=plain_floats), st.floats(1e-3, 1e3))))
def test_cosine_similarity_equals_scipy_and_is_scale_invariant(triple):
    a, b, scale = triple
    if not (np.any(a) and np.any(b)):
        with pytest.raises(ValueError, match="zero vector"):
            linalg.cosine_similarity(a, b)
        return
    got = linalg.cosine_similarity(a, b)
    assert -1.0 <= got <= 1.0
    assert got == pytest.approx(1.0 - scipy_cosine_distance(a, b), abs=1e-9)
    assert linalg.cosine_similarity(scale * a, b) == pytest.approx(got, abs=1e-9)
    assert linalg.cosine_similarity(a, a) == pytest.approx(1.0)


def test_cosine_similarity_huge_and_tiny_entries_do_not_overflow():
    assert linalg.cosine_similarity([1e200, 1e200], [1e200, 0]) == pytest.approx(2**-0.5)
    assert linalg.cosine_similarity([1e-200, 0], [1e-200, 1e-200]) == pytest.approx(2**-0.5)


def test_cosine_similarity_zero_vector_raises():
    with pytest.raises(ValueError, match="b is the zero vector"):
        linalg.cosine_similarity([1, 2], [0, 0])


# --- broadcast_shape ----------------------------------------------------------------------


def test_broadcast_shape_examples():
    assert linalg.broadcast_shape((32, 128, 768), (768,)) == (32, 128, 768)
    assert linalg.broadcast_shape((3, 1), (1, 4)) == (3, 4)
    assert linalg.broadcast_shape((), (2, 3)) == (2, 3)
    assert linalg.broadcast_shape((0,), (1,)) == (0,)
    assert linalg.broadcast_shape([5, 1, 4], (3, 1), (1,)) == (5, 3, 4)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), max_size=4).map(tuple), min_size=1, max_size=3))
def test_broadcast_shape_equals_numpy(shapes):
    try:
        want = np.broadcast_shapes(*shapes)
    except ValueError:
        with pytest.raises(ValueError, match="do not broadcast"):
            linalg.broadcast_shape(*shapes)
    else:
        assert linalg.broadcast_shape(*shapes) == want


def test_broadcast_shape_bad_input():
    match = r"axis -2 \(counted from the right\) has sizes \[32, 128\]"
    with pytest.raises(ValueError, match=match):
        linalg.broadcast_shape((32, 768), (128, 768))
    with pytest.raises(ValueError, match="at least one shape"):
        linalg.broadcast_shape()
    with pytest.raises(TypeError, match=r"shapes\[1\] must be a tuple of ints"):
        linalg.broadcast_shape((2,), 3)
    with pytest.raises(TypeError, match=r"shapes\[0\]\[0\] must be an int, got float"):
        linalg.broadcast_shape((2.0,))
    with pytest.raises(ValueError, match=r"shapes\[0\]\[1\] must be at least 0, got -1"):
        linalg.broadcast_shape((2, -1))


# --- power_iteration ----------------------------------------------------------------------


def test_power_iteration_diagonal():
    result = linalg.power_iteration(np.diag([2.0, 3.0]))
    assert result.converged
    assert result.eigenvalue == pytest.approx(3.0, rel=1e-12)
    np.testing.assert_allclose(result.eigenvector, [0.0, 1.0], atol=1e-9)
    assert result.history.shape == (result.n_iters,)
    assert abs(result.history[-1] - 3.0) < abs(result.history[0] - 3.0)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 8), st.integers(0, 2**32 - 1))
def test_power_iteration_matches_eigh_on_symmetric_matrices(n, seed):
    rng = np.random.default_rng(seed)
    # eigenvalues chosen with a clear gap, so the iteration converges quickly
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    eigenvalues = np.concatenate([[rng.choice([-1, 1]) * 5.0], rng.uniform(-3, 3, n - 1)])
    a = (q * eigenvalues) @ q.T
    a = (a + a.T) / 2
    result = linalg.power_iteration(a, seed=seed)
    values, vectors = np.linalg.eigh(a)
    top = np.argmax(np.abs(values))
    assert result.converged
    assert result.eigenvalue == pytest.approx(values[top], rel=1e-9)
    want = vectors[:, top] * np.sign(vectors[np.argmax(np.abs(vectors[:, top])), top])
    np.testing.assert_allclose(result.eigenvector, want, atol=1e-6)
    np.testing.assert_allclose(a @ result.eigenvector, result.eigenvalue * result.eigenvector,
                               atol=1e-8)


def test_power_iteration_nonsymmetric_with_real_dominant_eigenvalue():
    a = np.array([[2.0, 1.0], [0.0, 0.5]])  # triangular: eigenvalues 2 and 0.5
    result = linalg.power_iteration(a, v0=[0.0, 1.0])
    assert result.converged
    assert result.eigenvalue == pytest.approx(2.0, rel=1e-9)
    assert np.linalg.norm(result.eigenvector) == pytest.approx(1.0)


def test_power_iteration_without_a_dominant_eigenvalue_does_not_converge():
    result = linalg.power_iteration(np.diag([1.0, -1.0]), max_iters=50)
    assert not result.converged and result.n_iters == 50
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])  # eigenvalues ±i
    assert not linalg.power_iteration(rotation, max_iters=50).converged


def test_power_iteration_start_vector_in_the_null_space():
    result = linalg.power_iteration(np.zeros((3, 3)))
    assert result.converged and result.eigenvalue == 0.0 and result.n_iters == 1
    singular = np.array([[1.0, 1.0], [1.0, 1.0]])
    result = linalg.power_iteration(singular, v0=[1.0, -1.0])
    assert result.converged and result.eigenvalue == 0.0  # an exact pair, not the dominant one


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"a": np.ones((2, 3))}, ValueError, r"square matrix \(n, n\)"),
        ({"a": np.ones(3)}, ValueError, "a must be a square matrix"),
        ({"a": np.eye(2), "v0": [1.0, 0.0, 0.0]}, ValueError, r"v0 must have shape \(2,\)"),
        ({"a": np.eye(2), "v0": [0.0, 0.0]}, ValueError, "v0 must not be the zero vector"),
        ({"a": np.eye(2), "max_iters": 0}, ValueError, "max_iters must be at least 1"),
        ({"a": np.eye(2), "max_iters": 1.5}, TypeError, "max_iters must be an int"),
        ({"a": np.eye(2), "tol": 0.0}, ValueError, r"tol must be in \(0, 1\)"),
        ({"a": [[np.nan, 0], [0, 1]]}, ValueError, "a must hold finite"),
    ],
)
def test_power_iteration_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        linalg.power_iteration(**kwargs)

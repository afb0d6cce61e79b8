"""course_utils.validation: shared argument checks."""

import numpy as np
import pytest

from course_utils.validation import check_int, real_array


@pytest.mark.parametrize(
    ("value", "minimum", "error", "message"),
    [
        (1.0, 1, TypeError, "n must be an int, got float"),
        (True, 1, TypeError, "n must be an int, got bool"),
        (0, 1, ValueError, "n must be at least 1, got 0"),
        (-5, 0, ValueError, "n must be at least 0, got -5"),
    ],
)
def test_check_int_names_the_argument(value, minimum, error, message):
    with pytest.raises(error, match=message):
        check_int(value, "n", minimum)


def test_check_int_accepts_numpy_integers_and_no_bound():
    assert check_int(np.int64(3), "n") == 3 and type(check_int(np.int64(3), "n")) is int
    assert check_int(-7, "n", minimum=None) == -7


@pytest.mark.parametrize(
    ("x", "kwargs", "error", "message"),
    [
        ([[1.0], [2.0, 3.0]], {"what": "matrix"}, ValueError, "x must be a matrix of numbers"),
        (["a", "b"], {}, TypeError, "x must hold real numbers .* got dtype <U1"),
        ([1.0 + 2j], {}, TypeError, "got dtype complex128"),
        (np.ones(3), {"ndim": 2, "what": "matrix"}, ValueError, r"x must be a matrix \(2-D\)"),
        (np.ones((0, 2)), {}, ValueError, r"x must not be empty, got shape \(0, 2\)"),
        ([1.0, np.nan], {}, ValueError, "x must hold finite numbers, got NaN or inf"),
        ([1.0, -np.inf], {}, ValueError, "x must hold finite numbers"),
    ],
)
def test_real_array_errors_name_the_argument(x, kwargs, error, message):
    with pytest.raises(error, match=message):
        real_array(x, "x", **kwargs)


def test_real_array_keeps_the_numbers_and_their_dtype():
    ints = real_array([[1, 2], [3, 4]], "a", ndim=2, what="matrix")
    assert ints.dtype.kind == "i" and ints.shape == (2, 2)
    floats = real_array(np.array([0.5, -1.5], dtype=np.float32), "v", ndim=1)
    np.testing.assert_array_equal(floats, [0.5, -1.5])
    assert floats.dtype == np.float32

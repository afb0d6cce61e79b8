"""course_utils.validation: shared argument checks."""

import numpy as np
import pytest

from course_utils.validation import check_int


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

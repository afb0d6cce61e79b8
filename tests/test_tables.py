"""course_utils.tables: exact text of aligned tables and clear errors."""

import numpy as np
import pytest

from course_utils import tables


def test_numbers_right_text_left_with_per_column_formats():
    text = tables.format_table(
        [["cat", 0.7, 10], ["bird", np.float64(0.05), np.int64(1000)]],
        headers=["word", "p", "count"], formats=["", ".2f", ","])
    assert text.splitlines() == [
        "word     p  count",
        "cat   0.70     10",
        "bird  0.05  1,000",
    ]


def test_one_format_for_all_columns_and_tuples_as_text():
    text = tables.format_table([[(2, 3), 1.0], [(), 0.25]], formats=".3f", gap=1)
    assert text.splitlines() == ["(2, 3) 1.000", "()     0.250"]


def test_header_wider_than_entries_and_booleans_are_text():
    text = tables.format_table([[True, 3]], headers=["flag", "a long header"])
    assert text.splitlines() == ["flag  a long header", "True              3"]


def test_print_table_prints_the_same_text(capsys):
    tables.print_table([[1, 2]], headers=["a", "b"])
    assert capsys.readouterr().out == tables.format_table([[1, 2]], headers=["a", "b"]) + "\n"


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"rows": [[1, 2], [3]]}, r"rows\[1\] has 1 entries, rows\[0\] has 2"),
    ({"rows": [[1, 2]], "formats": ["", "", ""]}, "formats has 3"),
    ({"rows": [[1, 2]], "headers": ["a"]}, r"rows\[0\] has 2 entries, headers has 1"),
    ({"rows": []}, "at least one column"),
    ({"rows": [[1]], "gap": -1}, "gap"),
])
def test_refuses_ragged_rows_and_wrong_lengths(kwargs, match):
    with pytest.raises(ValueError, match=match):
        tables.format_table(**kwargs)

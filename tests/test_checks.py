"""course_utils.checks: the core every checker is built on (the checkers themselves are tested
by the tables in tests/test_checks_nbNN.py)."""

import warnings

import numpy as np
import pytest
import torch

from course_utils.checks import (
    Case,
    CheckResult,
    RuleBroken,
    Status,
    check_function,
    check_number,
    compare,
    predict,
)
from course_utils.checks.rules import Rule


def square(x):
    return np.asarray(x, dtype=np.float64) ** 2


CASES = [Case((np.array([1.0, 2.0]),), "small"), Case((np.array([-3.0]),), "negative")]


def test_a_right_answer_passes_and_reports_every_case(capsys):
    result = check_function(square, cases=CASES, reference=square)
    assert isinstance(result, CheckResult)
    assert result.status is Status.PASSED and result.passed and result.n_passed == 2
    assert capsys.readouterr().out == "  ✓ small\n  ✓ negative\n"
    assert repr(result) == "square: passed: 2 of 2 cases pass"


def test_a_stub_is_not_attempted_and_says_so(capsys):
    def stub(x):
        raise NotImplementedError

    result = check_function(stub, cases=CASES, reference=square)
    assert result.status is Status.NOT_ATTEMPTED and not result.passed and result.cases == []
    assert repr(result) == "stub: not attempted yet (replace `raise NotImplementedError` with code)"
    assert capsys.readouterr().out == ""


SUM = {"name": "sum", "label": "1 + ... + 100", "explanation": "50 pairs of 101",
       "hint": "add the numbers in pairs.", "rtol": 0.005}


@pytest.fixture(autouse=True)
def fresh_misses():
    """Each test starts as a learner who has not yet missed a predict exercise."""
    predict._misses.clear()


def test_a_predict_stub_is_not_attempted_and_asks_for_a_number(capsys):
    result = check_number(..., 5050, **SUM)
    assert result.status is Status.NOT_ATTEMPTED and result.cases == []
    assert repr(result) == "sum: not attempted yet (replace `...` with your number)"
    assert capsys.readouterr().out == ""
    check_number(..., 5050, **SUM, show_answer=True)
    assert capsys.readouterr().out == "  the answer: about 5050. 50 pairs of 101\n"


@pytest.mark.parametrize("answer, verdict", [
    (5050, "  ✓ 1 + ... + 100. 50 pairs of 101"),
    (5000, "  ✗ 1 + ... + 100: 5000 is too low: add the numbers in pairs."),
    ("5050", "  ✗ 1 + ... + 100: expected a number, got str '5050'"),
    (float("nan"), "  ✗ 1 + ... + 100: expected a finite number, got nan"),
    (True, "  ✗ 1 + ... + 100: expected a number, got bool True"),
])
def test_check_number_explains_a_pass_and_holds_the_answer_back_on_a_first_miss(
        answer, verdict, capsys):
    result = check_number(answer, 5050, **SUM)
    assert result.passed is verdict.startswith("  ✓")
    assert capsys.readouterr().out == verdict + "\n"


def test_a_further_miss_or_show_answer_reveals_the_answer(capsys):
    check_number(5000, 5050, **SUM)
    assert "the answer" not in capsys.readouterr().out
    check_number(5100, 5050, **SUM)
    assert capsys.readouterr().out.endswith("  the answer: about 5050. 50 pairs of 101\n")
    predict._misses.clear()
    check_number(5000, 5050, **SUM, show_answer=True)
    assert "the answer: about 5050" in capsys.readouterr().out


@pytest.mark.parametrize("answer, named", [
    (4950, "4950 is too low: that stops at 99."),
    (4949, "4949 is too low: that starts at 2 and stops at 99."),  # both within 0.5%: the nearer
    (4000, "4000 is too low: add the numbers in pairs."),
])
def test_check_number_names_the_nearest_listed_mistake(answer, named, capsys):
    mistakes = {4950: "that stops at 99.", 4949: "that starts at 2 and stops at 99."}
    result = check_number(answer, 5050, **SUM, mistakes=mistakes)
    assert not result.passed
    assert capsys.readouterr().out == f"  ✗ 1 + ... + 100: {named}\n"


def test_a_wrong_value_that_a_listed_mistake_gives_is_named(capsys):
    def cube(x):
        return np.asarray(x, dtype=np.float64) ** 3

    mistakes = {"it cubes instead of squaring": cube, "it doubles": lambda x: 2 * x}
    result = check_function(cube, cases=CASES, reference=square, mistakes=mistakes)
    assert [c.message.split(";")[0] for c in result.cases] == ["it cubes instead of squaring"] * 2
    doubled = check_function(lambda x: 2 * x, cases=CASES, reference=square, mistakes=mistakes,
                             verbose=False)
    assert [c.message.split(";")[0] for c in doubled.cases] == ["it doubles"] * 2


def test_a_listed_mistake_s_own_warnings_do_not_reach_the_learner(recwarn):
    mistakes = {"it divides by the sum": lambda v: v / v.sum()}  # the sum of [-1, 1] is 0
    result = check_function(lambda v: 2 * v, cases=[Case((np.array([-1.0, 1.0]),))],
                            reference=square, mistakes=mistakes, verbose=False)
    assert not result.passed and len(recwarn) == 0


def test_a_constrain_rule_is_a_failed_line_of_its_own_and_shortcuts_only_a_note(capsys):
    rule = Rule("no np.square", names={"square"})

    def by_library(x):
        return np.square(np.asarray(x, dtype=np.float64))

    def by_hand(x):
        x = np.asarray(x, dtype=np.float64)
        return x * x

    refused = check_function(by_library, cases=CASES, reference=square, rule=rule)
    assert refused.status is Status.FAILED and refused.n_passed == 2
    assert capsys.readouterr().out.startswith(
        "  ✗ the rule: it calls square: the rule is no np.square\n  ✓ small")
    assert check_function(by_hand, cases=CASES, reference=square, rule=rule).passed
    capsys.readouterr()
    noted = check_function(by_library, cases=CASES, reference=square, shortcuts=("square",))
    assert noted.passed and noted.note.startswith("passes; it calls square")
    assert capsys.readouterr().out.endswith("  note: passes; it calls square, and the exercise "
                                            "is to write that step yourself\n")
    with pytest.raises(TypeError, match="rule must be a rules.Rule"):
        check_function(by_hand, cases=CASES, reference=square, rule="no np.square")


def test_a_failure_is_printed_with_its_reason(capsys):
    result = check_function(lambda x: x * 2, cases=CASES, reference=square, name="square")
    assert result.status is Status.FAILED and repr(result) == "square: failed: 0 of 2 cases pass"
    assert capsys.readouterr().out.splitlines()[0] == (
        "  ✗ small: values differ: expected [1., 4.], got [2., 4.]; 1 of 2 entries differ, "
        "the worst at [0]: expected 1.0, got 2.0 (|error| 1)")


@pytest.mark.parametrize(
    ("got", "expected", "message"),
    [
        (np.array([6.00001, 8.00001]), np.array([6.0, 8.0]),  # a forward difference
         "values differ: expected [6., 8.], got [6.00001, 8.00001]; 2 of 2 entries differ, "
         "the worst at [0]: expected 6.0, got 6.00001 (|error| 1e-05)"),
        (np.array([1.7e-7, 0.0]), np.zeros(2), "the worst at [0]: expected 0.0, got 1.7e-07"),
        (0.300003, 0.3, "values differ: expected 0.3, got 0.300003 (|error| 3e-06)"),
        (np.array([[1.0, np.nan], [0.5, 1.0]]), np.array([[1.0, 1e-16], [0.5 + 1e-16, 1.0]]),
         "1 of 4 entries differ (1 is nan), the worst at [0, 1]: expected 1e-16, got nan"),
        (np.array([np.inf, 1.0]), np.ones(2),
         "(1 is inf), the worst at [0]: expected 1.0, got inf"),
        (np.arange(100.0) + (np.arange(100) == 57), np.arange(100.0),
         "values differ in 1 of 100 entries of shape (100,), the first at [57]; the worst at "
         "[57]: expected 57.0, got 58.0 (|error| 1)"),
        (np.array([[-1.0, 2.5], [3.0, 4.0]]), np.array([[1.0, 2.5], [3.0, 4.0]]),
         "expected [[1., 2.5], [3., 4.]], got [[-1., 2.5], [3., 4.]]"),
        (7, 9, "values differ: expected 9, got 7 (|error| 2)"),
    ],
)
def test_values_that_differ_show_every_digit_the_worst_index_nan_and_inf(got, expected, message):
    assert message in compare(got, expected)


@pytest.mark.parametrize(
    ("got", "expected", "message"),
    [
        (np.array([1.0, 4.0])[None, :], np.array([1.0, 4.0]), "shape: expected (2,), got (1, 2)"),
        (np.array([1.0, 2.0]), 3.0, "expected a single number, got an array of shape (2,)"),
        (np.ones(2, np.float32), np.ones(2), "dtype: expected float64, got float32"),
        (np.tril(np.ones((2, 2))), np.tril(np.ones((2, 2), bool)),
         "dtype: expected bool entries (bool), got float64"),
        (torch.ones(2, dtype=torch.long), torch.ones(2, dtype=torch.bool),
         "dtype: expected bool entries (torch.bool), got torch.int64"),
        (torch.ones(2), torch.ones(2, dtype=torch.long),
         "dtype: expected integer entries (torch.int64), got torch.float32"),
        (torch.ones(2, dtype=torch.bfloat16), torch.ones(2),
         "dtype: expected torch.float32, got torch.bfloat16"),
        (131072.0, 131072, "expected an integer, got float 131072.0"),
        (1, True, "expected a bool, got int 1"),
        (True, 1.0, "expected a float, got bool True"),
        ([1.0, 2.0], np.array([1.0, 2.0]), "expected a numpy.ndarray, got list [1.0, 2.0]"),
        (np.ones(2), torch.ones(2), "expected a torch.Tensor, got numpy.ndarray array([1., 1.])"),
        (2.5, torch.tensor(2.5), "expected a torch.Tensor, got float 2.5"),
        ((1, 2), [1, 2], "expected a list, got tuple (1, 2)"),
        ("four", 4.0, "expected a number or array, got str 'four'"),
        ("abd", "abc", "expected 'abc', got 'abd'"),
    ],
)
def test_the_kind_shape_and_dtype_come_before_the_values(got, expected, message):
    assert compare(got, expected) == message


def test_an_int_may_stand_for_a_float_and_exact_dtype_is_opt_in():
    assert compare(3, 3.0) is None and compare(np.int32(3), 3) is None
    assert compare(np.ones(2, np.int32), np.ones(2, np.int64)) is None
    assert compare(np.ones(2, np.int32), np.ones(2, np.int64), exact_dtype=True) == (
        "dtype: expected int64, got int32")


def test_tolerances_and_nan():
    assert compare(np.array([1.0 + 1e-9]), np.array([1.0])) is None
    assert compare(np.array([np.nan]), np.array([np.nan])) is None
    assert compare(np.array([1.1]), np.array([1.0])) is not None
    assert compare(1.1, 1.0, rtol=0.2) is None
    assert compare(1.0 + 1e-12, 1.0, rtol=0, atol=0) is not None


def test_tuples_and_dicts_name_their_parts():
    assert compare((1.0, np.ones(2)), (1.0, np.ones(2))) is None
    assert compare((1.0, np.ones(2)), (1.0, np.zeros(2))).startswith("item 1: values differ")
    named = compare((1.0, np.ones(2)), (1.0, np.zeros(2)), names=("dL/dw", "new v"))
    assert named.startswith("new v: values differ")
    assert compare(1.0, (1.0, 2.0), names=("m", "ℓ")) == (
        "expected a tuple of 2 items (m, ℓ), got float 1.0")
    assert compare({"a": 1}, {"a": 1}) is None
    assert compare({"a": 2}, {"a": 1}).startswith("key 'a': values differ")
    with pytest.raises(ValueError, match="names must name all 2 items"):
        compare((1, 2), (1, 2), names=("one",))


def test_an_answer_that_changes_its_input_in_place_fails_naming_the_argument():
    data = np.array([1.0, 2.0])

    def square_in_place(values, power=2):
        values **= power
        return values

    cases = [Case((data,), "in place", expected=np.array([1.0, 4.0])),
             Case((), "keyword", kwargs={"values": data.copy()}, expected=np.array([1.0, 4.0]))]
    result = check_function(square_in_place, cases=cases, verbose=False)
    assert [case.message for case in result.cases] == [
        "changed its argument `values` in place: work on a copy, the caller still needs its data",
    ] * 2
    np.testing.assert_array_equal(data, [1.0, 2.0])  # the case's own data is untouched


def test_in_place_changes_are_found_in_tensors_lists_and_dicts():
    def append(items, value):
        items.append(value)
        return len(items)

    def clear(table):
        table.clear()
        return 0

    def add_one(t):
        t += 1
        return t.sum()

    for func, args, name in ((append, ([1], 2), "items"), (clear, ({"a": 1},), "table"),
                             (add_one, (torch.zeros(2),), "t")):
        result = check_function(func, cases=[Case(args)], reference=func, verbose=False)
        assert result.cases[0].message.startswith(f"changed its argument `{name}` in place")


def test_a_broken_rule_is_the_verdict_and_an_expected_exception_passes():
    def strict_sqrt(x):
        if x < 0:
            raise ValueError("x must be >= 0")
        if x > 100:
            raise RuleBroken("it was asked for a square root of more than 100")
        return float(np.sqrt(x))

    cases = [Case((4.0,), expected=2.0), Case((-1.0,), "negative", raises=ValueError),
             Case((400.0,), "big", expected=20.0)]
    result = check_function(strict_sqrt, cases=cases, verbose=False)
    assert [c.passed for c in result.cases] == [True, True, False]
    assert result.cases[2].message == "it was asked for a square root of more than 100"
    loose = check_function(lambda x: float(np.sqrt(abs(x))), cases=cases[:2], verbose=False)
    assert loose.cases[1].message == "should raise ValueError, returned 1.0"
    wrong_error = check_function(lambda x: {}[x], cases=cases[:2], verbose=False)
    assert wrong_error.cases[0].message == "raised KeyError: 4.0"
    assert wrong_error.cases[1].message == "raised KeyError: -1.0 (expected ValueError)"


def test_warnings_are_reported_not_leaked_and_fail_only_with_no_warnings(recwarn):
    def noisy_sqrt(x):
        warnings.warn("careful", RuntimeWarning, stacklevel=1)
        return x**0.5

    cases = [Case((4.0,), expected=2.0), Case((9.0,), expected=4.0)]
    allowed = check_function(noisy_sqrt, cases=cases, verbose=False)
    assert allowed.cases[0].passed
    assert allowed.cases[1].message.endswith("(|error| 1) (it warned: careful)")
    refused = check_function(noisy_sqrt, cases=cases, no_warnings=True, verbose=False)
    assert refused.cases[0].message == "right value, but it warned: careful (it must not warn)"
    assert len(recwarn) == 0


def test_bad_checker_arguments():
    with pytest.raises(TypeError, match="func must be a function"):
        check_function(3, cases=CASES, reference=square)
    with pytest.raises(ValueError, match="cases must hold at least one Case"):
        check_function(square, cases=[], reference=square)
    with pytest.raises(ValueError, match="no expected value and no reference"):
        check_function(square, cases=CASES, verbose=False)
    with pytest.raises(TypeError, match="args must be a tuple, got list"):
        Case([1.0])
    with pytest.raises(TypeError, match="raises must be an exception type"):
        Case((1.0,), raises="ValueError")


def test_a_predict_answer_may_be_any_real_number(capsys):
    from fractions import Fraction

    assert check_number(Fraction(10100, 2), 5050, **SUM).passed
    assert check_number(np.float32(5050), 5050, **SUM).passed


def test_the_rule_and_the_note_read_the_learner_s_code_through_a_driver(capsys):
    from functools import partial

    def by_library(x):
        return np.square(np.asarray(x, dtype=np.float64))

    def drive(answer, x):  # a checker's driver: builds the input, calls the answer
        return answer(x)

    noted = check_function(partial(drive, by_library), cases=CASES, reference=square,
                           shortcuts=("square",), code=by_library)
    assert noted.passed and noted.note.startswith("passes; it calls square")
    refused = check_function(partial(drive, by_library), cases=CASES, reference=square,
                             rule=Rule("no np.square", names={"square"}), code=by_library)
    assert refused.cases[0].message.startswith("it calls square")

"""course_utils.checks: the checker passes right answers, catches wrong ones, says why."""

import numpy as np
import pytest
import torch

from course_utils.checks import Case, CheckResult, check_function, compare, nb00


def reference_square(x):
    return np.asarray(x, dtype=np.float64) ** 2


CASES = [Case((np.array([1.0, 2.0]),), "small"), Case((np.array([-3.0]),), "negative")]


def test_reference_passes_and_reports_every_case(capsys):
    result = check_function(reference_square, cases=CASES, reference=reference_square)
    assert isinstance(result, CheckResult)
    assert result.passed and result.status == "passed" and result.n_passed == 2
    out = capsys.readouterr().out
    assert "✓ small" in out and "✓ negative" in out
    assert repr(result) == "reference_square: passed (2/2 cases)"


def test_stub_is_not_attempted_not_failed():
    def stub(x):
        raise NotImplementedError

    result = check_function(stub, cases=CASES, reference=reference_square)
    assert result.status == "not attempted" and not result.passed and result.cases == []
    assert "not attempted yet" in repr(result)


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        (lambda x: x * 2, "values differ: expected [1., 4.], got [2., 4.]"),
        (lambda x: (x**2)[None, :], "shape: expected (2,), got (1, 2)"),
        (lambda x: (x**2).astype(np.float32), "dtype: expected float64, got float32"),
        (lambda x: list(x**2), "expected a numpy array, got builtins.list"),
        (lambda x: torch.from_numpy(x**2), "expected a numpy array, got torch.Tensor"),
        (lambda x: "four", "expected a number or array, got str"),
        (lambda x: 1 / 0, "raised ZeroDivisionError: division by zero"),
    ],
)
def test_wrong_implementations_fail_with_a_reason(wrong, message, capsys):
    result = check_function(wrong, cases=CASES, reference=reference_square, name="square")
    assert result.status == "failed"
    assert message in result.cases[0].message
    assert f"✗ small: {result.cases[0].message}" in capsys.readouterr().out


def test_expected_exception_cases():
    def strict_sqrt(x):
        if x < 0:
            raise ValueError("x must be >= 0")
        return float(np.sqrt(x))

    cases = [Case((4.0,), expected=2.0), Case((-1.0,), "negative", raises=ValueError)]
    assert check_function(strict_sqrt, cases=cases).passed
    loose = check_function(lambda x: float(np.sqrt(abs(x))), cases=cases, verbose=False)
    assert loose.status == "failed"
    assert loose.cases[1].message.startswith("should raise ValueError, returned 1.0")
    wrong_error = check_function(lambda x: {}[x], cases=cases, verbose=False)
    assert "raised KeyError" in wrong_error.cases[0].message
    assert "(expected ValueError)" in wrong_error.cases[1].message


def test_inputs_are_copied_so_mutation_cannot_leak_between_cases():
    data = np.array([1.0, 2.0])
    cases = [Case((data,), expected=np.array([1.0, 4.0]))] * 2

    def in_place(x):
        x **= 2
        return x

    assert check_function(in_place, cases=cases, verbose=False).passed
    np.testing.assert_array_equal(data, [1.0, 2.0])


def test_tolerances_and_nan():
    assert compare(np.array([1.0 + 1e-9]), np.array([1.0])) is None
    assert compare(np.array([1.1]), np.array([1.0])) is not None
    assert compare(np.array([np.nan]), np.array([np.nan])) is None
    assert "max |error| inf" in compare(np.array([np.inf]), np.array([1.0]))


def test_tuples_dicts_scalars_and_tensors():
    assert compare((1.0, np.ones(2)), (1.0, np.ones(2))) is None
    assert compare((1.0, np.ones(2)), (1.0, np.zeros(2))).startswith("item 1: values differ")
    assert "expected a tuple of 2 items" in compare(1.0, (1.0, 2.0))
    assert compare({"a": 1}, {"a": 1}) is None
    assert compare({"a": 2}, {"a": 1}).startswith("key 'a'")
    assert compare(torch.ones(2), torch.ones(2)) is None
    assert "expected a torch array" in compare(np.ones(2), torch.ones(2))
    assert compare(3, 3) is None and compare(3, 4) is not None
    assert compare("abc", "abc") is None and compare("abc", "abd") is not None


def test_bad_checker_arguments():
    with pytest.raises(TypeError, match="func must be a function"):
        check_function(3, cases=CASES, reference=reference_square)
    with pytest.raises(ValueError, match="cases must hold at least one Case"):
        check_function(reference_square, cases=[], reference=reference_square)
    with pytest.raises(ValueError, match="no expected value and no reference"):
        check_function(reference_square, cases=CASES, verbose=False)


def test_warnings_from_learner_code_are_reported_not_leaked(recwarn):
    result = nb00.check_unit_vector(lambda v: v / np.linalg.norm(v))
    assert result.status == "failed"
    assert "it warned: invalid value encountered" in result.cases[-1].message
    assert len(recwarn) == 0


def test_nb00_unit_vector_checker():
    def good(v):
        v = np.asarray(v, dtype=np.float64)
        if not np.linalg.norm(v):
            raise ValueError("zero vector")
        return v / np.linalg.norm(v)

    assert nb00.check_unit_vector(good).passed
    assert nb00.check_unit_vector(lambda v: v / v.sum()).status == "failed"

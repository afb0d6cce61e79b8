"""The one test every checker runs: a table of answers and what the learner must see.

Each ``tests/test_checks_nbNN.py`` lists rows: right answers (the course_utils reference and
other correct formulations) that must pass, and plausible wrong answers that must fail with a
message a learner can act on. :func:`table_test` adds the stub of every checker (it must be
"not attempted") and returns the parametrized test that runs them all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from course_utils.checks import CheckResult, Status


@dataclass(frozen=True)
class Row:
    """``checker(answer)`` must end in ``status``; a failing row must print ``message`` on a ✗
    line."""

    checker: Callable[[Any], CheckResult]
    name: str
    answer: Any  # a function, or for a *predict* exercise a number
    status: Status
    message: str = ""

    @property
    def id(self) -> str:
        return f"{self.checker.__name__.removeprefix('check_')}-{self.name}"


def right(checker: Callable, **answers: Callable) -> list[Row]:
    """Correct answers, ``name=answer``: every case passes."""
    return [Row(checker, name, answer, Status.PASSED) for name, answer in answers.items()]


def wrong(checker: Callable, **mistakes: tuple[Callable, str]) -> list[Row]:
    """Plausible mistakes, ``name=(answer, message fragment)``: the checker fails and says so.
    A constrain exercise's rows that break its rule with the right numbers are listed here too;
    no other exercise has rule rows."""
    return [Row(checker, name, answer, Status.FAILED, message)
            for name, (answer, message) in mistakes.items()]


def stub(*args, **kwargs):
    raise NotImplementedError


def table_test(rows: list[Row]) -> Callable:
    """The parametrized test over ``rows`` plus the stub of each of their checkers."""
    checkers = list(dict.fromkeys(row.checker for row in rows))
    rows = rows + [Row(checker, "stub", ... if getattr(checker, "kind", "") == "predict" else stub,
                       Status.NOT_ATTEMPTED) for checker in checkers]

    @pytest.mark.parametrize("row", rows, ids=[row.id for row in rows])
    def test_checker(row: Row, capsys: pytest.CaptureFixture[str]) -> None:
        result = row.checker(row.answer)
        printed = capsys.readouterr().out.splitlines()
        assert result.status is row.status, "\n".join(printed)
        failures = [line for line in printed if line.startswith("  ✗")]
        if row.status is Status.PASSED:
            verdicts = [line for line in printed if not line.startswith("  note: ")]
            assert not failures and len(verdicts) == len(result.cases)
        elif row.status is Status.FAILED:
            assert any(row.message in line for line in failures), "\n".join(printed)
        else:
            assert not printed and "not attempted yet" in repr(result)

    return test_checker

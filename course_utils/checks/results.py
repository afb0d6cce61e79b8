"""What a checker is given and what it returns: the exercise kinds, a :class:`Case` to try, the
verdict on one case and on the whole exercise."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

_MISSING = object()


class Status(Enum):
    """A checker's verdict on the whole exercise."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_ATTEMPTED = "not attempted"


#: Re-doing what a cell showed; a number written down before running anything; a formula the
#: notebook used, derived; a bug with a named symptom; a stated rule; a variant not shown.
EXERCISE_KINDS = ("practice", "predict", "derive", "debug", "constrain", "extend")


def exercise(kind: str) -> Callable[[Callable], Callable]:
    """Mark a checker with its exercise's kind (``checker.kind``), named by the notebook's
    heading too: ``### Exercise 2 (predict): ...``."""
    if kind not in EXERCISE_KINDS:
        raise ValueError(f"kind must be one of {EXERCISE_KINDS}, got {kind!r}")

    def mark(checker: Callable) -> Callable:
        checker.kind = kind  # type: ignore[attr-defined]
        return checker

    return mark


@dataclass(frozen=True)
class Case:
    """One call to try, ``func(*args, **kwargs)``: it must return ``expected`` (else what the
    reference returns), or raise ``raises`` (an edge case such as an empty input)."""

    args: tuple
    label: str = ""
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    expected: Any = _MISSING
    raises: type[BaseException] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.args, tuple):
            raise TypeError(f"args must be a tuple, got {type(self.args).__name__}")
        if self.raises is not None and not (
            isinstance(self.raises, type) and issubclass(self.raises, BaseException)
        ):
            raise TypeError(f"raises must be an exception type, got {self.raises!r}")


@dataclass(frozen=True)
class CaseResult:
    """The verdict on one case: ``passed`` and a message that says what was wrong."""

    label: str
    passed: bool
    message: str


@dataclass
class CheckResult:
    """What a checker found: its :class:`Status` and the verdict on every case."""

    name: str
    status: Status
    cases: list[CaseResult]
    todo: str = "replace `raise NotImplementedError` with code"  # what a stub asks of the learner
    note: str | None = None  # a passing answer's note: a shortcut the exercise meant to avoid

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED

    @property
    def n_passed(self) -> int:
        return sum(case.passed for case in self.cases)

    def __repr__(self) -> str:
        if self.status is Status.NOT_ATTEMPTED:
            return f"{self.name}: not attempted yet ({self.todo})"
        return f"{self.name}: {self.status.value}: {self.n_passed} of {len(self.cases)} cases pass"

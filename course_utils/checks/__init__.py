"""Exercise checkers: run a learner's function on several cases and say what is wrong.

A notebook exercise gives a stub that raises ``NotImplementedError`` and a checker from
``course_utils.checks.nbNN`` (one module per notebook). Each checker is a call to
:func:`check_function` with the cases chosen for that exercise, edge cases included::

    check_function(my_softmax, reference=softmax, cases=[Case(([2.0, 1.0, 0.1],), "basic")])

It prints one verdict per case (expected against got, shape, dtype, the exception raised, or the
argument the function changed in place) and returns a :class:`CheckResult` that tests can assert
on. A stub still raising ``NotImplementedError`` is reported as "not attempted yet", not as a
failure.
"""

from __future__ import annotations

import copy
import functools
import inspect
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np

from course_utils.checks.compare import _brief, _describe, _is_tensor, compare

if TYPE_CHECKING:
    import torch

_MISSING = object()


class Status(Enum):
    """A checker's verdict on the whole exercise."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_ATTEMPTED = "not attempted"


#: The kinds of exercise (issue 18): re-doing what a cell showed; writing down a number before
#: running anything; deriving a formula the notebook used; finding and fixing a bug with a named
#: symptom; the same result under a stated rule; a variant the notebook did not show.
EXERCISE_KINDS = ("practice", "predict", "derive", "debug", "constrain", "extend")


def exercise(kind: str) -> Callable[[Callable], Callable]:
    """Mark a checker with its exercise's kind (one of :data:`EXERCISE_KINDS`): ``checker.kind``.

    The notebook's heading names the same kind: ``### Exercise 2 (predict): ...``.
    """
    if kind not in EXERCISE_KINDS:
        raise ValueError(f"kind must be one of {EXERCISE_KINDS}, got {kind!r}")

    def mark(checker: Callable) -> Callable:
        checker.kind = kind  # type: ignore[attr-defined]
        return checker

    return mark


class RuleBroken(Exception):
    """Raised by a checker around the learner's code when it breaks a rule the exercise states
    (no ``@``, no loop, read once); the message is the verdict."""


@dataclass(frozen=True)
class Case:
    """One call to try: ``func(*args, **kwargs)``.

    The expected value is ``expected`` when given, else ``reference(*args, **kwargs)``.
    ``raises`` says the call must raise that exception type instead (an edge case such as an
    empty input).
    """

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


def wraps_answer(func: Any) -> Callable[[Callable], Callable]:
    """``functools.wraps(func)`` for a checker's wrapper around the learner's ``func``, so that
    messages use the learner's names; ``TypeError`` when ``func`` is not a function."""
    if not callable(func):
        raise TypeError(f"func must be a function, got {type(func).__name__}")
    return functools.wraps(func)


def randn(*shape: int, seed: int, scale: float = 1.0, shift: float = 0.0) -> torch.Tensor:
    """A float64 torch tensor ``scale · N(0, 1) + shift`` of ``shape``, the same for a ``seed``."""
    import torch

    g = torch.Generator().manual_seed(seed)
    return scale * torch.randn(*shape, generator=g, dtype=torch.float64) + shift


def _argument_name(func: Callable, key: int | str) -> str:
    if isinstance(key, str):
        return key
    try:
        parameters = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):  # some builtins have no signature
        parameters = []
    positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY,
                                                          p.POSITIONAL_OR_KEYWORD)]
    return positional[key] if key < len(positional) else f"argument {key + 1}"


def _changed_argument(func: Callable, case: Case, args: tuple, kwargs: dict) -> str | None:
    """The message for the first argument (array, tensor, list, dict) ``func`` changed in place."""
    before: dict[int | str, Any] = {**dict(enumerate(case.args))}
    before.update(case.kwargs)
    after: dict[int | str, Any] = {**dict(enumerate(args))}
    after.update(kwargs)
    for key, original in before.items():
        mutable = isinstance(original, (list, dict, set, np.ndarray)) or _is_tensor(original)
        if mutable and compare(after[key], original, rtol=0, atol=0) is not None:
            return (f"changed its argument `{_argument_name(func, key)}` in place: work on a copy,"
                    " the caller still needs its data")
    return None


def lines_run(func: Callable, *args: Any) -> tuple[object, int]:
    """``func(*args)`` and how many lines of its own source file ran: a rule such as "no loop" is
    enforced by the count (a loop runs its lines again for every item)."""
    code = getattr(inspect.unwrap(func), "__code__", None)
    count = 0

    def count_lines(frame, event, arg):
        nonlocal count
        count += event == "line"
        return count_lines

    def trace(frame, event, arg):
        return count_lines if code and frame.f_code.co_filename == code.co_filename else None

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        return func(*args), count
    finally:
        sys.settrace(previous)


def names_used(func: Callable) -> set[str]:
    """The global and attribute names ``func``'s code refers to (``scipy.special.expit`` gives
    ``scipy``, ``special`` and ``expit``), with those of its nested functions and of the functions
    of its own module that it calls: a rule such as "no library softmax" is enforced by the
    names. A library function given as the answer itself contributes its own name."""
    names: set[str] = set()
    seen: set[int] = set()
    todo = [inspect.unwrap(func)]
    while todo:
        item = todo.pop()
        code = getattr(item, "__code__", None)
        if code is None:
            names.add(str(getattr(item, "__name__", "")))
            continue
        module, scope = getattr(item, "__module__", None), getattr(item, "__globals__", {})
        codes = [code]
        while codes:
            current = codes.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            names.update(current.co_names)
            codes += [const for const in current.co_consts if inspect.iscode(const)]
            for name in current.co_names:
                value = scope.get(name)
                if inspect.isfunction(value) and value.__module__ == module:
                    todo.append(value)
    return names


def check_function(
    func: Callable[..., Any],
    *,
    cases: Sequence[Case],
    reference: Callable[..., Any] | None = None,
    name: str | None = None,
    rtol: float = 1e-6,
    atol: float = 1e-9,
    names: Sequence[str] = (),
    exact_dtype: bool = False,
    no_warnings: bool = False,
    verbose: bool = True,
) -> CheckResult:
    """Run ``func`` on every case, print a verdict per case, and return a :class:`CheckResult`.

    Each case's arguments are deep-copied before the call, and a function that changes them in
    place fails that case. ``names``, ``exact_dtype``, ``rtol`` and ``atol`` go to
    :func:`compare`; with ``no_warnings`` a case that warns fails. ``NotImplementedError`` from
    the stub means "not attempted yet".
    """
    if not callable(func):
        raise TypeError(f"func must be a function, got {type(func).__name__}")
    if not cases:
        raise ValueError("cases must hold at least one Case")
    name = str(name or getattr(func, "__name__", "function"))
    results: list[CaseResult] = []
    for number, case in enumerate(cases, 1):
        label = case.label or f"case {number}"
        args, kwargs = copy.deepcopy(case.args), copy.deepcopy(dict(case.kwargs))
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                got = func(*args, **kwargs)
        except NotImplementedError:
            return CheckResult(name, Status.NOT_ATTEMPTED, [])
        except RuleBroken as error:
            results.append(CaseResult(label, False, str(error)))
            continue
        except Exception as error:  # the learner's bug, reported rather than raised
            if case.raises is not None and isinstance(error, case.raises):
                results.append(CaseResult(label, True, f"raised {type(error).__name__}"))
            else:
                wanted = f" (expected {case.raises.__name__})" if case.raises else ""
                message = f"raised {type(error).__name__}: {error}{wanted}"
                results.append(CaseResult(label, False, message))
            continue
        warned = f" (it warned: {caught[0].message})" if caught else ""
        if case.raises is not None:
            message = f"should raise {case.raises.__name__}, returned {_brief(got)}{warned}"
            results.append(CaseResult(label, False, message))
            continue
        if case.expected is not _MISSING:
            expected = case.expected
        elif reference is not None:
            expected = reference(*copy.deepcopy(case.args), **copy.deepcopy(dict(case.kwargs)))
        else:
            raise ValueError(f"case {label!r} has no expected value and no reference was given")
        problem = _changed_argument(func, case, args, kwargs) or compare(
            got, expected, rtol=rtol, atol=atol, names=names, exact_dtype=exact_dtype)
        if problem:
            problem += warned
        elif caught and no_warnings:
            problem = f"right value, but it warned: {caught[0].message} (it must not warn)"
        results.append(CaseResult(label, not problem, problem or "ok"))
    status = Status.PASSED if all(r.passed for r in results) else Status.FAILED
    result = CheckResult(name, status, results)
    if verbose:
        for r in results:
            print(f"  ✓ {r.label}" if r.passed else f"  ✗ {r.label}: {r.message}")
    return result


def _shown(value: float) -> str:
    """A number as a learner wrote it: whole numbers from 10,000 on with thousands separators
    (``1,666,243``, not ``1.66624e+06``), others to six significant digits."""
    value = float(value)
    if value.is_integer() and 1e4 <= abs(value) < 1e16:
        return f"{int(value):,}"
    return f"{value:.6g}"


def check_number(
    answer: Any,
    expected: float,
    *,
    name: str,
    label: str,
    explanation: str,
    rtol: float = 0.05,
    atol: float = 0.0,
    verbose: bool = True,
    hint: str | None = None,
    mistakes: Mapping[Any, str] | None = None,
) -> CheckResult:
    """A *predict* exercise's verdict: ``answer`` (a number the learner wrote down) within
    ``rtol``/``atol`` of ``expected``. ``...`` (the stub) means "not attempted yet"; the
    ``explanation`` of the right value is printed whether the answer passes or fails.

    With a ``hint``, a miss keeps the right value and the explanation back: it says whether the
    answer is too high or too low, names the mistake when the answer matches a value of
    ``mistakes`` (value -> what that answer did; within the same tolerance, and the nearest one
    when several are), and else prints the hint. The explanation is printed once the answer
    passes.
    """
    if answer is Ellipsis:
        return CheckResult(name, Status.NOT_ATTEMPTED, [], todo="replace `...` with your number")
    if isinstance(answer, (bool, np.bool_)) or not isinstance(answer, (int, float, np.number)):
        message = f"expected a number, got {_describe(answer)}"
    elif not np.isfinite(answer):
        message = f"expected a finite number, got {answer}"
    elif abs(float(answer) - expected) <= atol + rtol * abs(expected):
        message = ""
    elif hint is not None:
        value = float(answer)
        # the nearest listed mistake within the tolerance (several may lie within it)
        why = min(((abs(value - wrong), text) for wrong, text in (mistakes or {}).items()
                   if abs(value - wrong) <= atol + rtol * abs(wrong)),
                  key=lambda pair: pair[0], default=(None, None))[1]
        side = "too high" if value > expected else "too low"
        message = f"{_shown(value)} is {side}: " + (why if why is not None else hint)
    else:
        tolerance = f"within {rtol * 100:g}%" if rtol else f"within {atol:g}"
        message = (f"expected about {_shown(expected)} ({tolerance}), got "
                   f"{_shown(float(answer))}")
    passed = not message
    result = CheckResult(name, Status.PASSED if passed else Status.FAILED,
                         [CaseResult(label, passed, message or "ok")])
    if verbose:
        verdict = f"  ✓ {label}" if passed else f"  ✗ {label}: {message}"
        print(verdict if hint is not None and not passed else f"{verdict}. {explanation}")
    return result

"""Exercise checkers: run a learner's function on several cases and say what is wrong.

A notebook exercise gives a stub that raises ``NotImplementedError`` and a checker from
``course_utils.checks.nbNN`` (one module per notebook). Each checker is a call to
:func:`check_function` with the cases chosen for that exercise, edge cases included, and the
plausible mistakes it can name::

    check_function(my_softmax, reference=softmax, cases=[Case(([2.0, 1.0, 0.1],), "basic")],
                   mistakes={"it forgot to subtract the maximum": unshifted_softmax})

It prints one verdict per case (expected against got, shape, dtype, the exception raised, the
argument the function changed in place, and the mistake whose numbers it reproduces) and returns
a :class:`CheckResult` that tests can assert on. A stub still raising ``NotImplementedError`` is
reported as "not attempted yet", not as a failure. A *constrain* exercise's rule is a
:class:`~course_utils.checks.rules.Rule`, enforced by reading the code (``rules.py``); nothing is
patched while the learner's code runs.
"""

from __future__ import annotations

import copy
import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np

from course_utils.checks.compare import _brief, _describe, _is_tensor, compare
from course_utils.checks.rules import Rule, RuleBroken, broken, shortcut

if TYPE_CHECKING:
    import torch

_MISSING = object()


class Status(Enum):
    """A checker's verdict on the whole exercise."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_ATTEMPTED = "not attempted"


#: The kinds of exercise: re-doing what a cell showed; writing down a number before
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



def _named_mistake(got: Any, case: Case, mistakes: Mapping[str, Callable[..., Any]],
                   **tolerances: Any) -> str | None:
    """The message of the first of ``mistakes`` whose function returns ``got`` on ``case``."""
    for message, mistake in mistakes.items():
        try:
            value = mistake(*copy.deepcopy(case.args), **copy.deepcopy(dict(case.kwargs)))
        except Exception:  # a mistake that cannot run on this case names nothing here
            continue
        if compare(got, value, **tolerances) is None:
            return message
    return None


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
    mistakes: Mapping[str, Callable[..., Any]] | None = None,
    rule: Rule | None = None,
    shortcuts: Sequence[str] = (),
    verbose: bool = True,
) -> CheckResult:
    """Run ``func`` on every case, print a verdict per case, and return a :class:`CheckResult`.

    Each case's arguments are deep-copied before the call, and a function that changes them in
    place fails that case. ``names``, ``exact_dtype``, ``rtol`` and ``atol`` go to
    :func:`compare`; with ``no_warnings`` a case that warns fails. A wrong value that one of
    ``mistakes`` (message -> a function making that mistake) also returns is told the message.
    ``rule`` (constrain exercises only) is checked on the code first and is a failed line of its
    own; ``shortcuts`` (library functions that do the exercise's work) add a note to a pass.
    ``NotImplementedError`` from the stub means "not attempted yet".
    """
    if not callable(func):
        raise TypeError(f"func must be a function, got {type(func).__name__}")
    if not cases:
        raise ValueError("cases must hold at least one Case")
    if rule is not None and not isinstance(rule, Rule):
        raise TypeError(f"rule must be a rules.Rule, got {type(rule).__name__}")
    name = str(name or getattr(func, "__name__", "function"))
    tolerances = {"rtol": rtol, "atol": atol, "names": names, "exact_dtype": exact_dtype}
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
        problem = _changed_argument(func, case, args, kwargs)
        if problem is None:
            problem = compare(got, expected, **tolerances)
            why = problem and mistakes and _named_mistake(got, case, mistakes, **tolerances)
            if why:
                problem = f"{why}; {problem}"
        if problem:
            problem += warned
        elif caught and no_warnings:
            problem = f"right value, but it warned: {caught[0].message} (it must not warn)"
        results.append(CaseResult(label, not problem, problem or "ok"))
    if rule is not None:
        verdict = broken(func, rule)
        results.insert(0, CaseResult("the rule", verdict is None, verdict or "kept"))
    status = Status.PASSED if all(r.passed for r in results) else Status.FAILED
    note = shortcut(func, shortcuts) if shortcuts and status is Status.PASSED else None
    result = CheckResult(name, status, results, note=note)
    if verbose:
        for r in results:
            print(f"  ✓ {r.label}" if r.passed else f"  ✗ {r.label}: {r.message}")
        if note:
            print(f"  note: {note}")
    return result


def _shown(value: float) -> str:
    """A number as a learner wrote it: whole numbers from 10,000 on with thousands separators
    (``1,666,243``, not ``1.66624e+06``), others to six significant digits."""
    value = float(value)
    if value.is_integer() and 1e4 <= abs(value) < 1e16:
        return f"{int(value):,}"
    return f"{value:.6g}"


_misses: dict[str, int] = {}  # misses per predict exercise in this session: the second shows


def check_number(
    answer: Any,
    expected: float,
    *,
    name: str,
    label: str,
    explanation: str,
    hint: str,
    mistakes: Mapping[float, str] | None = None,
    rtol: float = 0.05,
    atol: float = 0.0,
    show_answer: bool = False,
    verbose: bool = True,
) -> CheckResult:
    """A *predict* exercise's verdict: ``answer`` (a number the learner wrote down) within
    ``rtol``/``atol`` of ``expected``; ``...`` (the stub) means "not attempted yet".

    A pass prints the ``explanation``. A first miss holds the right value back: it says whether
    the answer is too high or too low and names the mistake when the answer matches a value of
    ``mistakes`` (value -> what that answer did; the nearest within the tolerance), else gives
    the ``hint``. A further miss of the same exercise, or ``show_answer=True``, also prints the
    right value and the explanation.
    """
    reveal = f"  the answer: about {_shown(expected)}. {explanation}"
    if answer is Ellipsis:
        if verbose and show_answer:
            print(reveal)
        return CheckResult(name, Status.NOT_ATTEMPTED, [], todo="replace `...` with your number")
    if isinstance(answer, (bool, np.bool_)) or not isinstance(answer, (int, float, np.number)):
        message = f"expected a number, got {_describe(answer)}"
    elif not np.isfinite(answer):
        message = f"expected a finite number, got {answer}"
    elif abs(float(answer) - expected) <= atol + rtol * abs(expected):
        message = ""
    else:
        value = float(answer)
        near = [(abs(value - wrong), text) for wrong, text in (mistakes or {}).items()
                if abs(value - wrong) <= atol + rtol * abs(wrong)]
        why = min(near, key=lambda pair: pair[0])[1] if near else hint
        side = "too high" if value > expected else "too low"
        message = f"{_shown(value)} is {side}: {why}"
    passed = not message
    if not passed:
        _misses[name] = _misses.get(name, 0) + 1
    result = CheckResult(name, Status.PASSED if passed else Status.FAILED,
                         [CaseResult(label, passed, message or "ok")])
    if verbose:
        print(f"  ✓ {label}. {explanation}" if passed else f"  ✗ {label}: {message}")
        if not passed and (show_answer or _misses[name] > 1):
            print(reveal)
    return result

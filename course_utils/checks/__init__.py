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
import re
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

_MISSING = object()
_DUMP_LIMIT = 16  # arrays with more entries are described by shape and index, not printed
_KIND_NAMES = {"b": "bool", "i": "integer", "u": "integer", "f": "float", "c": "complex"}
_SCALAR_ACCEPTS = {"bool": {"bool"}, "integer": {"integer"}, "float": {"integer", "float"},
                   "complex": {"integer", "float", "complex"}}


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


def _is_tensor(value: Any) -> bool:
    return hasattr(value, "detach") and hasattr(value, "cpu")  # torch is not imported here


def _as_array(value: Any) -> np.ndarray | None:
    """A NumPy copy of numbers (array, tensor, list, scalar), or None for anything else."""
    if _is_tensor(value):
        value = value.detach().cpu()
        try:
            return value.numpy()
        except TypeError:  # bfloat16 and other dtypes NumPy lacks
            return value.double().numpy()
    if isinstance(value, (np.ndarray, np.generic, int, float, complex, list)):
        try:
            array = np.asarray(value)
        except ValueError:  # ragged nested lists
            return None
        return array if array.dtype.kind in _KIND_NAMES else None
    return None


def _type_name(value: Any) -> str:
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"


def _one_line(text: str) -> str:
    """``text`` on one line, without NumPy's alignment spaces."""
    return re.sub(r"(?<=\[) | (?=[,\]])", "", re.sub(r"\s+", " ", text))


def _brief(value: Any) -> str:
    return _one_line(str(value) if isinstance(value, np.generic) else repr(value))[:80]


def _describe(value: Any) -> str:
    return f"{_type_name(value)} {_brief(value)}"


def _family(value: Any) -> str | None:
    """The kind of container a result must come in, or None for a plain number."""
    if _is_tensor(value):
        return "torch.Tensor"
    if isinstance(value, np.ndarray) and value.ndim > 0:
        return "numpy.ndarray"
    return "list" if isinstance(value, list) else None


def _dtype_name(value: Any, array: np.ndarray) -> str:
    return str(value.dtype) if _is_tensor(value) else str(array.dtype)


def _short(array: np.ndarray) -> str:
    with np.printoptions(precision=8, floatmode="maxprec", threshold=_DUMP_LIMIT, edgeitems=3):
        return _one_line(np.array2string(array, separator=", "))


def _index(index: tuple[int | np.integer, ...]) -> str:
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def _entry(have: np.ndarray, want: np.ndarray, index: tuple) -> str:
    """'expected 0.8, got 0.5714285714285714 (|error| 0.23)': every digit that differs."""
    got, wanted = have[index], want[index]
    text = f"expected {wanted}, got {got}"
    if have.dtype.kind in "iu" and want.dtype.kind in "iu":
        text += f" (|error| {abs(int(got) - int(wanted))})"
    elif want.dtype.kind != "b" and np.isfinite(got) and np.isfinite(wanted):
        text += f" (|error| {abs(complex(got) - complex(wanted)):.2g})"
    return text


def _dtype_problem(got: Any, have: np.ndarray, expected: Any, want: np.ndarray,
                   exact: bool) -> str | None:
    got_kind, want_kind = _KIND_NAMES[have.dtype.kind], _KIND_NAMES[want.dtype.kind]
    if _family(expected) is None:  # a plain number: an int may stand for a float, not the reverse
        if got_kind in _SCALAR_ACCEPTS[want_kind]:
            return None
        article = "an" if want_kind[0] in "ai" else "a"
        return f"expected {article} {want_kind}, got {_describe(got)}"
    got_dtype, want_dtype = _dtype_name(got, have), _dtype_name(expected, want)
    if (exact or want_kind == "float") and got_dtype != want_dtype:
        return f"dtype: expected {want_dtype}, got {got_dtype}"
    if got_kind != want_kind:
        return f"dtype: expected {want_kind} entries ({want_dtype}), got {got_dtype}"
    return None


def _values_problem(have: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """Which entries differ, the worst one with every digit, NaN and inf named."""
    if want.dtype.kind in "fc" or have.dtype.kind in "fc":
        bad = ~np.isclose(have, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        bad = np.asarray(have != want)
    if not bad.any():
        return None
    if want.ndim == 0:
        return f"values differ: {_entry(have, want, ())}"
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.abs(have.astype(np.complex128) - want.astype(np.complex128))
    nan, inf = bad & np.isnan(have), bad & np.isinf(have)
    error = np.where(nan | np.isnan(error), np.inf, error)  # a NaN is the worst entry
    worst = np.unravel_index(np.argmax(np.where(bad, error, -1.0)), bad.shape)
    counts = [f"{n} {'is' if n == 1 else 'are'} {what}"
              for n, what in ((int(nan.sum()), "nan"), (int(inf.sum()), "inf")) if n]
    nonfinite = f" ({', '.join(counts)})" if counts else ""
    where = f"the worst at {_index(worst)}: {_entry(have, want, worst)}"
    n_bad = f"{int(bad.sum())} of {bad.size}"
    if want.size <= _DUMP_LIMIT:
        return (f"values differ: expected {_short(want)}, got {_short(have)}; "
                f"{n_bad} entries differ{nonfinite}, {where}")
    first = _index(np.argwhere(bad)[0])
    return (f"values differ in {n_bad} entries of shape {want.shape}{nonfinite}, the first at "
            f"{first}; {where}")


def _compare_numbers(got: Any, expected: Any, rtol: float, atol: float,
                     exact_dtype: bool) -> str | None:
    want = _as_array(expected)
    if want is None:  # strings, None, other objects: plain equality
        same = type(got) is type(expected) and got == expected
        return None if same else f"expected {expected!r}, got {_brief(got)}"
    family = _family(expected)
    if family is not None and _family(got) != family:
        return f"expected a {family}, got {_describe(got)}"
    have = _as_array(got)
    if have is None:
        return f"expected a number or array, got {_describe(got)}"
    if have.shape != want.shape:
        if want.ndim == 0:
            return f"expected a single number, got an array of shape {have.shape}"
        return f"shape: expected {want.shape}, got {have.shape}"
    return _dtype_problem(got, have, expected, want, exact_dtype) or _values_problem(
        have, want, rtol, atol)


def compare(got: Any, expected: Any, *, rtol: float = 1e-6, atol: float = 1e-9,
            names: Sequence[str] = (), exact_dtype: bool = False) -> str | None:
    """``None`` when ``got`` matches ``expected``, else a sentence saying how it differs.

    Checks, in order: the kind of object (a torch tensor, a NumPy array, a list, a number), the
    shape, the dtype (exactly for float arrays, or for every array with ``exact_dtype``; the
    kind bool / integer / float otherwise; an int may stand for a float number), then the values
    with ``np.isclose(got, expected, rtol, atol)`` (NaN equals NaN). Tuples and dicts are
    compared part by part; ``names`` names a tuple's parts in the message.
    """
    if isinstance(expected, tuple):
        if names and len(names) != len(expected):
            raise ValueError(f"names must name all {len(expected)} items, got {names!r}")
        labels = names or [f"item {i}" for i in range(len(expected))]
        if not isinstance(got, tuple) or len(got) != len(expected):
            parts = f" ({', '.join(names)})" if names else ""
            return f"expected a tuple of {len(expected)} items{parts}, got {_describe(got)}"
        for label, g, e in zip(labels, got, expected, strict=True):
            problem = compare(g, e, rtol=rtol, atol=atol, exact_dtype=exact_dtype)
            if problem:
                return f"{label}: {problem}"
        return None
    if isinstance(expected, dict):
        if not isinstance(got, dict) or set(got) != set(expected):
            return f"expected a dict with keys {sorted(expected)}, got {_brief(got)}"
        for key in expected:
            problem = compare(got[key], expected[key], rtol=rtol, atol=atol,
                              exact_dtype=exact_dtype)
            if problem:
                return f"key {key!r}: {problem}"
        return None
    return _compare_numbers(got, expected, rtol, atol, exact_dtype)


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
    mistakes: dict[float, str] | None = None,
) -> CheckResult:
    """A *predict* exercise's verdict: ``answer`` (a number the learner wrote down) within
    ``rtol``/``atol`` of ``expected``. ``...`` (the stub) means "not attempted yet"; the
    ``explanation`` of the right value is printed whether the answer passes or fails.

    With a ``hint``, a miss keeps the right value and the explanation back: it says whether the
    answer is too high or too low, names the mistake when the answer matches a value of
    ``mistakes`` (within the same tolerance; value -> what that answer did), and else prints the
    hint. The explanation is printed once the answer passes.
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
        why = next((text for wrong, text in (mistakes or {}).items()
                    if abs(value - wrong) <= atol + rtol * abs(wrong)), None)
        side = "too high" if value > expected else "too low"
        message = f"{value:.6g} is {side}: " + (why if why is not None else hint)
    else:
        tolerance = f"within {rtol * 100:g}%" if rtol else f"within {atol:g}"
        message = f"expected about {expected:.6g} ({tolerance}), got {float(answer):.6g}"
    passed = not message
    result = CheckResult(name, Status.PASSED if passed else Status.FAILED,
                         [CaseResult(label, passed, message or "ok")])
    if verbose:
        verdict = f"  ✓ {label}" if passed else f"  ✗ {label}: {message}"
        print(verdict if hint is not None and not passed else f"{verdict}. {explanation}")
    return result

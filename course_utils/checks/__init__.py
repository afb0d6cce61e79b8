"""Exercise checkers: run a learner's function on cases and say what is wrong.

Each checker of ``course_utils.checks.nbNN`` calls :func:`check_function` with the cases of its
exercise, edge cases included, and the plausible mistakes it can name::

    check_function(my_softmax, reference=softmax, cases=[Case(([2.0, 1.0, 0.1],), "basic")],
                   mistakes={"it forgot to subtract the maximum": unshifted_softmax})

It prints one verdict per case and returns a :class:`CheckResult`; a stub still raising
``NotImplementedError`` is "not attempted yet". A *constrain* exercise's rule is a
:class:`~course_utils.checks.rules.Rule`, read from the code; nothing is patched while it runs.
"""

from __future__ import annotations

import copy
import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from course_utils.checks.compare import _brief, _is_tensor, compare
from course_utils.checks.predict import check_number
from course_utils.checks.results import (
    _MISSING,
    EXERCISE_KINDS,
    Case,
    CaseResult,
    CheckResult,
    Status,
    exercise,
)
from course_utils.checks.rules import Rule, RuleBroken, Stream, broken, shortcut

if TYPE_CHECKING:
    import torch

__all__ = ["EXERCISE_KINDS", "Case", "CaseResult", "CheckResult", "Rule", "RuleBroken", "Status",
           "Stream", "check_function", "check_number", "compare", "exercise", "randn"]


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
    before: dict[int | str, Any] = dict(enumerate(case.args))
    before.update(case.kwargs)
    after: dict[int | str, Any] = {**dict(enumerate(args)), **kwargs}
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
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")  # the mistake's warnings are not the learner's
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
    code: Callable[..., Any] | None = None,
    verbose: bool = True,
) -> CheckResult:
    """Run ``func`` on every case, print a verdict per case, and return a :class:`CheckResult`.

    Each case's arguments are deep-copied before the call, and a function that changes them in
    place fails that case. ``names``, ``exact_dtype``, ``rtol`` and ``atol`` go to
    :func:`compare`; with ``no_warnings`` a case that warns fails. A wrong value that one of
    ``mistakes`` (message -> a function making that mistake) also returns is told the message.
    ``rule`` (constrain exercises only) is checked on the code first and is a failed line of its
    own; ``shortcuts`` (library functions that do the exercise's work) add a note to a pass.
    Both read ``code``, the learner's function, when ``func`` is a driver that calls it.
    ``NotImplementedError`` from the stub means "not attempted yet".
    """
    if not callable(func):
        raise TypeError(f"func must be a function, got {type(func).__name__}")
    if not cases:
        raise ValueError("cases must hold at least one Case")
    if rule is not None and not isinstance(rule, Rule):
        raise TypeError(f"rule must be a rules.Rule, got {type(rule).__name__}")
    name = str(name or getattr(func, "__name__", "function"))
    tolerances: dict[str, Any] = {"rtol": rtol, "atol": atol, "names": names,
                                  "exact_dtype": exact_dtype}
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
        verdict = broken(code or func, rule)
        results.insert(0, CaseResult("the rule", verdict is None, verdict or "kept"))
    status = Status.PASSED if all(r.passed for r in results) else Status.FAILED
    note = shortcut(code or func, shortcuts) if shortcuts and status is Status.PASSED else None
    result = CheckResult(name, status, results, note=note)
    if verbose:
        for r in results:
            print(f"  ✓ {r.label}" if r.passed else f"  ✗ {r.label}: {r.message}")
        if note:
            print(f"  note: {note}")
    return result

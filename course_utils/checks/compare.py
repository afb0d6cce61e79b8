"""The comparison engine of the checkers: is a learner's value the expected one, and if not,
what is wrong with it, in one sentence (type, shape, dtype, or the first entry that differs)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

_DUMP_LIMIT = 16  # arrays with more entries are described by shape and index, not printed
_KIND_NAMES = {"b": "bool", "i": "integer", "u": "integer", "f": "float", "c": "complex"}
_SCALAR_ACCEPTS = {"bool": {"bool"}, "integer": {"integer"}, "float": {"integer", "float"},
                   "complex": {"integer", "float", "complex"}}


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

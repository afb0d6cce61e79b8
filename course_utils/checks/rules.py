"""The rules of *constrain* exercises: the one place a stated rule is checked, by two mechanisms
that touch no library while the learner's code runs.

- :func:`scan` reads the learner's code (the function, its nested functions, and the helpers it
  calls that the learner defined, found by where they are defined, never by name): the names and
  attributes it uses, the library objects its names hold (aliases too), its loops and ``@``;
  :func:`broken` holds them against a :class:`Rule`, :func:`shortcut` makes a pass's note.
- :class:`Stream` hands out items once, in order, in one reused buffer: items kept for a second
  pass hold stale numbers.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import sys
import sysconfig
import textwrap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

_LOOP_NODES = {ast.For: "a for loop", ast.AsyncFor: "a for loop", ast.While: "a while loop",
               ast.ListComp: "a comprehension", ast.SetComp: "a comprehension",
               ast.DictComp: "a comprehension", ast.GeneratorExp: "a generator expression"}


class RuleBroken(Exception):
    """Raised where a constrain exercise's rule is broken (by :class:`Stream`, read twice);
    the message is the verdict."""


@dataclass(frozen=True)
class Scan:
    """What a scan found: ``names`` (with the ``__name__`` of each library object a name holds),
    ``loops`` ("a for loop", ...), ``matmul`` (``@``); ``readable`` is False when the source could
    not be read (the names then come from the compiled code, and loops are not seen)."""

    names: frozenset[str]
    loops: tuple[str, ...]
    matmul: bool
    readable: bool


def _is_learners(value: Any, module: str | None) -> bool:
    return inspect.isfunction(value) and value.__module__ == module


_LIBRARY_FOLDERS = tuple({sysconfig.get_paths()[key] for key in ("stdlib", "purelib", "platlib")}
                         | {str(Path(__file__).parents[1])})  # and course_utils itself


def _in_a_library(func: Any) -> bool:
    """Whether ``func`` comes from an installed library or course_utils, not from the learner."""
    path = getattr(sys.modules.get(getattr(func, "__module__", None) or ""), "__file__", None)
    return isinstance(path, str) and str(Path(path).resolve()).startswith(_LIBRARY_FOLDERS)


def _library_name(value: Any) -> str | None:
    """The ``__name__`` of a library object a learner's name holds (a partial's function)."""
    value = getattr(value, "func", value)  # functools.partial
    name = getattr(value, "__name__", None)
    return name if isinstance(name, str) and not inspect.ismodule(value) else None


def _tree(func: Callable) -> ast.AST | None:
    """The syntax tree of ``func``'s definition (a lambda's own node), or None."""
    try:
        source = textwrap.dedent(inspect.getsource(func))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return None
    if func.__name__ != "<lambda>":
        return tree
    arguments = func.__code__.co_varnames[:func.__code__.co_argcount]
    lambdas = [node for node in ast.walk(tree) if isinstance(node, ast.Lambda)
               and tuple(a.arg for a in node.args.args) == arguments]
    return lambdas[0] if len(lambdas) == 1 else None


def _code_names(code: Any) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            names |= _code_names(const)
    return names


def scan(func: Callable) -> Scan:
    """Scan ``func`` and the helpers it calls that were defined where it was (the learner's)."""
    if not callable(func):
        raise TypeError(f"func must be a function, got {type(func).__name__}")
    names: set[str] = set()
    loops: list[str] = []
    matmul, readable = False, True
    todo, seen = [inspect.unwrap(func)], set()
    module = getattr(todo[0], "__module__", None)
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        code = getattr(item, "__code__", None)
        if code is None or _in_a_library(item):  # a library function given as the answer
            names.add(_library_name(item) or type(item).__name__)
            continue
        scope = dict(getattr(item, "__globals__", {}))
        for name, cell in zip(code.co_freevars, item.__closure__ or (), strict=False):
            with contextlib.suppress(ValueError):  # a cell not filled yet
                scope[name] = cell.cell_contents
        tree = _tree(item)
        used: set[str] = set()
        if tree is None:
            readable = False
            used = _code_names(code)
        else:
            bound: set[str] = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.Name):
                    (used if isinstance(node.ctx, ast.Load) else bound).add(node.id)
                elif isinstance(node, ast.arg):
                    bound.add(node.arg)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    bound.add(node.name)
                elif isinstance(node, (ast.Import, ast.ImportFrom)):  # an import inside it
                    names.update(alias.name.split(".")[-1] for alias in node.names)
                    bound.update((alias.asname or alias.name).split(".")[0]
                                 for alias in node.names)
                elif isinstance(node, ast.Attribute):
                    names.add(node.attr)
                elif isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(
                        node.op, ast.MatMult):
                    matmul = True
                elif type(node) in _LOOP_NODES:
                    loops.append(_LOOP_NODES[type(node)])
            used -= bound  # its own variables, arguments and nested functions
        for name in used:
            value = scope.get(name)
            if _is_learners(value, module):
                todo.append(value)  # the learner's own helper: scanned, its name exempt
                continue
            names.add(name)
            library = _library_name(value) if value is not None else None
            if library:
                names.add(library)
            if callable(value) and not inspect.isroutine(value) and not inspect.isclass(value):
                names.add(type(value).__name__)  # a wrapper object: np.vectorize(helper)
    return Scan(frozenset(names), tuple(loops), matmul, readable)


@dataclass(frozen=True)
class Rule:
    """A constrain exercise's rule: ``says`` it in words ("no Python loop"); the scan refuses
    any of ``names`` (functions, methods, modules), a loop when ``loops``, ``@`` when
    ``matmul``."""

    says: str
    names: frozenset[str] | set[str] | tuple[str, ...] = field(default_factory=frozenset)
    loops: bool = False
    matmul: bool = False


def broken(func: Callable, rule: Rule) -> str | None:
    """The verdict when ``func`` breaks ``rule`` ("it calls searchsorted: the rule is ..."),
    else None."""
    found = scan(func)
    used = sorted(found.names & set(rule.names))
    if used:
        what = f"it calls {used[0]}"
    elif rule.loops and found.loops:
        what = f"it has {found.loops[0]}"
    elif rule.matmul and found.matmul:
        what = "it multiplies with @"
    else:
        return None
    return f"{what}: the rule is {rule.says}"


def shortcut(func: Callable, names: Sequence[str]) -> str | None:
    """A note for a passing answer of an exercise without a rule that calls one of ``names``
    (a library function that does the exercise's work), else None."""
    used = sorted(scan(func).names & set(names))
    if not used:
        return None
    return f"passes; it calls {used[0]}, and the exercise is to write that step yourself"


class Stream:
    """``items`` (arrays, or tuples of arrays of equal length) read once, in order, like the key
    tiles of a long sequence: ``for item in stream`` works once and a second pass raises
    :class:`RuleBroken`. Every item arrives in the same buffer, overwritten by the next one, so an
    answer that keeps references for later computes with the last item's numbers. ``what``
    names an item in messages ("chunk")."""

    def __init__(self, items: Sequence[Any], what: str = "item") -> None:
        self._items = [item if isinstance(item, tuple) else (item,) for item in items]
        self._tuples = bool(items) and isinstance(items[0], tuple)
        if not self._items:
            raise ValueError("items must hold at least one item")
        self._what, self._read = what, False
        first = [np.asarray(part) for part in self._items[0]]
        longest = max(len(item[0]) for item in self._items)
        self._buffers = [np.empty((longest, *part.shape[1:]), dtype=np.result_type(part, 0.0))
                         for part in first]

    def __iter__(self) -> Iterator[Any]:
        if self._read:
            raise RuleBroken(f"it reads the {self._what}s a second time: they arrive once, in "
                             f"order, so everything must be updated as each {self._what} arrives")
        self._read = True
        return self._generate()

    def _generate(self) -> Iterator[Any]:
        for item in self._items:
            views = [buffer[:len(part)] for buffer, part in zip(self._buffers, item, strict=True)]
            for view, part in zip(views, item, strict=True):
                view[...] = part
            yield tuple(views) if self._tuples else views[0]

    def __repr__(self) -> str:
        state = "read" if self._read else "not read yet"
        return f"Stream({len(self._items)} {self._what}s, {state})"

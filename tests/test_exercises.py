"""The exercises of every notebook (CONTRIBUTING.md, "Exercises and their checkers").

Each exercise is a heading ``### Exercise N (kind): title`` and its statement, a stub code cell
that calls its checker (``nbNN.check_name(...)``), and three collapsed blocks in this order:
``Hint 1`` (the idea), ``Hint 2`` (the line), ``Solution`` (a ```python fence ending with the
checker call). Notebooks after 00 have 3 to 5 exercises, at most one ``practice``; over the
course every other kind appears at least five times; a heading's kind is its checker's
``.kind``; every checker is called by an exercise.

**The copy test.** A worked solution must need a step the notebook did not show. Its code is
tokenised (``tokenize``) without imports, docstrings, checker calls and input checks (``if ...:
raise ...``) and ``def`` lines (the stub gives the signature). Every name that is not a keyword,
a builtin, an imported module, an attribute or a keyword argument becomes one token ``ID``, so
renaming a variable does not hide a copy, while the functions and attributes it calls anchor a
match; strings become ``STR``. The *copy share* is the fraction of its tokens covered by runs
of at least :data:`RUN` tokens that also occur in what the notebook showed before the solution:
earlier code cells, and code in earlier markdown (fences, inline code, the hints), but not the
exercise's own code cells (its stub, or a function to debug). A solution fails at a share of
:data:`MAX_COPY` or more, except for the kinds in :data:`EXEMPT`.
``python tests/test_exercises.py`` prints every exercise with its kind and copy share.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import io
import keyword
import re
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from course_utils.checks import EXERCISE_KINDS

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import notebooks as nbtools  # noqa: E402

PATHS = nbtools.notebook_paths()
# Calibrated on the notebooks of commit 1b268f6 (56 worked solutions), whose reviews name copies:
# with runs of 7 tokens 05's three exercises share 63%, 62% and 47% of their tokens with what was
# shown, 10's causal_mask 71%, and 28 of the 56 fail at 45% (the reviews read 33 as copies; runs
# of 8 and a 50% threshold give their mechanical count, 19, but let 05's third exercise pass).
# 08's adam_step (20%) transcribes LaTeX, which no code-token measure sees.
RUN = 7  # tokens: about one short statement, `ID = np.exp(ID - ID)` is 9
MAX_COPY = 0.45  # "mostly a copy"
EXEMPT = ("practice", "debug")  # re-doing a cell, and fixing given code, are copies by design
LADDER = ["Hint 1", "Hint 2", "Solution"]
START_RE = re.compile(r"^(?:### |\*\*)Exercise (\d+)", re.M)  # also the old bold form, to report
HEADING_RE = re.compile(r"^### Exercise (\d+) \((\w+)\): \S", re.M)
CALL_RE = re.compile(r"\b(nb\d\d)\.(check_\w+)\(")
DETAILS_RE = re.compile(r"<details>\s*<summary>\s*(.*?)\s*</summary>(.*?)</details>", re.S)
FENCE_RE = re.compile(r"^ {0,3}```[^\n]*\n(.*?)^ {0,3}```", re.S | re.M)
INLINE_RE = re.compile(r"`([^`\n]+)`")


@dataclass
class Exercise:
    number: int
    heading: str  # the first line of its heading
    kind: str | None  # None when the heading does not name one
    start: int  # the index of the cell with its heading
    code: list[int]  # its own code cells
    blocks: list[tuple[str, str]]  # the (summary, body) of its <details> blocks, in order
    calls: list[str]  # the checkers its code cells call, ``nbNN.check_name``

    @property
    def solution(self) -> str:
        bodies = [body for summary, body in self.blocks if summary == "Solution"]
        found = FENCE_RE.findall(bodies[0]) if bodies else []
        return found[-1] if found else ""


def exercises(nb) -> list[Exercise]:
    """The notebook's exercises, in order: each runs from its heading to the next exercise or
    the next ``## `` heading (the summary)."""
    found: list[Exercise] = []
    for index, cell in enumerate(nb.cells):
        text = cell.source
        if cell.cell_type == "markdown" and (start := START_RE.search(text)):
            strict = HEADING_RE.search(text)
            heading = text[start.start():].splitlines()[0]
            found.append(Exercise(int(start.group(1)), heading, strict and strict.group(2),
                                  index, [], [], []))
            text = text[start.end():]
        elif cell.cell_type == "markdown" and re.match(r"^## ", text):
            if found and found[-1].start >= 0:
                found.append(Exercise(0, "", None, -1, [], [], []))  # an end marker
            continue
        if not found or found[-1].start < 0:
            continue
        if cell.cell_type == "code":
            found[-1].code.append(index)
            found[-1].calls += [f"{m}.{c}" for m, c in CALL_RE.findall(cell.source)]
        else:
            found[-1].blocks += DETAILS_RE.findall(text)
    return [e for e in found if e.start >= 0]


# --- the copy measure -----------------------------------------------------------------------


def _dropped_lines(source: str) -> set[int]:
    """The lines of imports, docstrings, checker calls, ``if ...: raise`` input checks, and of
    the ``def`` lines (the stub gives the signature)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    dropped = set()
    for node in ast.walk(tree):
        checker_call = isinstance(node, ast.Expr) and CALL_RE.search(ast.unparse(node))
        constant = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        input_check = (isinstance(node, ast.If) and not node.orelse
                       and all(isinstance(s, ast.Raise) for s in node.body))
        imports = isinstance(node, (ast.Import, ast.ImportFrom))
        if imports or checker_call or constant or input_check:
            dropped.update(range(node.lineno, node.end_lineno + 1))
        elif isinstance(node, ast.FunctionDef):
            dropped.update(range(node.lineno, node.body[0].lineno))
    return dropped


def imported_names(sources: list[str]) -> set[str]:
    """The names that ``import`` statements in ``sources`` bind (``np``, ``torch``, ``F``...)."""
    names = set()
    for source in sources:
        for line in source.splitlines():
            try:
                nodes = ast.parse(line.strip()).body
            except SyntaxError:
                continue
            names |= {(alias.asname or alias.name).split(".")[0] for node in nodes
                      if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    return names


SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
           tokenize.ENDMARKER}
STRINGS = {tokenize.STRING, *(getattr(tokenize, name) for name in
                              ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
                              if hasattr(tokenize, name))}
BUILTINS = set(dir(builtins)) | set(keyword.kwlist) | set(keyword.softkwlist)


def code_tokens(source: str, keep: set[str] = frozenset()) -> list[str]:
    """``source``'s tokens, normalised for the copy test (see the module's docstring): a name
    that is not a keyword, a builtin, in ``keep`` (the imported modules), an attribute or a
    keyword argument becomes ``ID``."""
    dropped = _dropped_lines(source)
    kept = [t for t in _tokens(source) if t.type not in SKIPPED and t.start[0] not in dropped]
    tokens: list[str] = []
    depth = 0
    for i, token in enumerate(kept):
        text = token.string
        depth += (text in "([{") - (text in ")]}") if token.type == tokenize.OP else 0
        before = kept[i - 1].string if i else ""
        after = kept[i + 1].string if i + 1 < len(kept) else ""
        if token.type in STRINGS:
            text = "STR"
        elif (token.type == tokenize.NAME and before != "." and text not in BUILTINS
              and text not in keep and not (depth and after == "=")):  # keyword arguments stay
            text = "ID"
        if not (text == "STR" and tokens[-1:] == ["STR"]):  # an f-string's pieces: one
            tokens.append(text)
    return tokens


def _tokens(source: str) -> list[tokenize.TokenInfo]:
    """``source``'s tokens; for a fragment that does not tokenise to its end, those before."""
    found: list[tokenize.TokenInfo] = []
    try:
        found.extend(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return found


def _markdown_code(source: str) -> list[str]:
    """The code a markdown cell shows (its fences and inline code), its solutions left out."""
    shown = re.sub(r"<details>\s*<summary>\s*Solution\s*</summary>.*?</details>", "", source,
                   flags=re.S)
    fences = FENCE_RE.findall(shown)
    rest = FENCE_RE.sub("", shown)
    return fences + INLINE_RE.findall(rest)


def shown_before(nb, exercise: Exercise) -> list[str]:
    """The code a learner has seen when they open the solution of ``exercise``."""
    last = max(exercise.code + [exercise.start])
    shown = []
    for index, cell in enumerate(nb.cells[:last + 2]):
        if cell.cell_type == "markdown":
            shown += _markdown_code(cell.source)
        elif index < exercise.start:
            shown.append(cell.source)
    return shown


def copy_share(solution: str, shown: list[str], run: int = RUN) -> float:
    """The share of ``solution``'s tokens covered by runs of at least ``run`` tokens that occur
    in one of the ``shown`` pieces of code."""
    keep = imported_names([solution, *shown])
    tokens = code_tokens(solution, keep)
    if not tokens:
        return 0.0
    seen = {tuple(seq[i:i + run]) for piece in shown if len(seq := code_tokens(piece, keep)) >= run
            for i in range(len(seq) - run + 1)}
    covered = [False] * len(tokens)
    for i in range(len(tokens) - run + 1):
        if tuple(tokens[i:i + run]) in seen:
            covered[i:i + run] = [True] * run
    return sum(covered) / len(tokens)


def report(paths=PATHS) -> str:
    """Per notebook: each exercise with its kind and copy share, and what the tests find."""
    lines = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        found = exercises(nb)
        problems = [] if path.name.startswith("00") else notebook_problems(path.name[:2], found)
        lines.append(f"{path.name}: {len(found)} exercises")
        for e in found:
            share = copy_share(e.solution, shown_before(nb, e))
            verdict = "exempt" if e.kind in EXEMPT else "COPY" if share >= MAX_COPY else "ok"
            lines.append(f"  {e.number}. {e.kind or '?':<9} copy {share:4.0%} {verdict:<6} "
                         f"{e.heading[:64]}")
        lines += [f"  FAIL {problem}" for problem in problems]
    return "\n".join(lines)


# --- the rules --------------------------------------------------------------------------------


def checkers(number: str) -> dict[str, object]:
    """The checkers module ``nbNN`` defines: ``{"nbNN.check_name": function}``."""
    module = importlib.import_module(f"course_utils.checks.nb{number}")
    return {f"nb{number}.{name}": f for name, f in inspect.getmembers(module, inspect.isfunction)
            if name.startswith("check_") and f.__module__ == module.__name__}


def notebook_problems(number: str, found: list[Exercise]) -> list[str]:
    """What breaks the exercise rules in notebook ``number`` (after 00), one sentence each."""
    problems = []
    if not 3 <= len(found) <= 5:
        problems.append(f"{len(found)} exercises: 3 to 5 are needed")
    if [e.number for e in found] != list(range(1, len(found) + 1)):
        problems.append(f"exercises numbered {[e.number for e in found]}, not 1, 2, ...")
    if sum(e.kind == "practice" for e in found) > 1:
        problems.append("more than one practice exercise")
    defined = checkers(number)
    for e in found:
        name = f"exercise {e.number}"
        if e.kind not in EXERCISE_KINDS:
            problems.append(f"{name}: the heading {e.heading!r} is not '### Exercise N (kind): "
                            f"title' with a kind in {EXERCISE_KINDS}")
        if len(set(e.calls)) != 1:
            problems.append(f"{name}: its code cells call {sorted(set(e.calls))}, not one checker")
        for call in set(e.calls):
            if call not in defined:
                problems.append(f"{name}: {call} does not exist")
            elif e.kind and getattr(defined[call], "kind", None) != e.kind:
                problems.append(f"{name}: the heading says {e.kind}, {call}.kind is "
                                f"{getattr(defined[call], 'kind', None)!r}")
        if [summary for summary, _ in e.blocks] != LADDER:
            problems.append(f"{name}: blocks {[s for s, _ in e.blocks]}, not {LADDER}")
        if e.calls and not CALL_RE.search(e.solution.strip().splitlines()[-1:][0]
                                          if e.solution.strip() else ""):
            problems.append(f"{name}: the solution does not end with its checker call")
    called = {call for e in found for call in e.calls}
    problems += [f"{name} is called by no exercise (a dead checker)"
                 for name in sorted(set(defined) - called)]
    return problems


NUMBERED = [p for p in PATHS if not p.name.startswith("00")]


@pytest.mark.parametrize("path", NUMBERED, ids=[p.stem[:2] for p in NUMBERED])
def test_exercises_follow_the_rules(path):
    problems = notebook_problems(path.name[:2], exercises(nbformat.read(path, as_version=4)))
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


def test_every_kind_appears_five_times_over_the_course():
    kinds = [e.kind for p in NUMBERED for e in exercises(nbformat.read(p, as_version=4))]
    few = {kind: kinds.count(kind) for kind in EXERCISE_KINDS[1:] if kinds.count(kind) < 5}
    assert not few, f"kinds with fewer than five exercises: {few}"


SOLUTIONS = [(p, e.number) for p in PATHS for e in exercises(nbformat.read(p, as_version=4))]


@pytest.mark.parametrize(("path", "number"), SOLUTIONS,
                         ids=[f"{p.stem[:2]}-{n}" for p, n in SOLUTIONS])
def test_worked_solution_is_not_a_copy(path, number):
    nb = nbformat.read(path, as_version=4)
    exercise = next(e for e in exercises(nb) if e.number == number)
    share = copy_share(exercise.solution, shown_before(nb, exercise))
    print(f"{path.name} exercise {number} ({exercise.kind}): copy share {share:.0%}")
    assert exercise.kind in EXEMPT or share < MAX_COPY, (
        f"{share:.0%} of the solution's tokens are in runs of {RUN} the notebook showed before "
        "it: the exercise must need a step the notebook did not take")


# --- planted violations -----------------------------------------------------------------------

SHOWN = '''\
def stable_softmax(x):
    z = np.asarray(x, dtype=np.float64) - np.max(x)
    e = np.exp(z)
    return e / e.sum()
'''
COPIED = '''\
import numpy as np
from course_utils.checks import nb05


def softmax(scores):
    """A stable softmax."""
    if len(scores) == 0:
        raise ValueError("empty")
    shifted = np.asarray(scores, dtype=np.float64) - np.max(scores)
    weights = np.exp(shifted)
    return weights / weights.sum()


nb05.check_softmax(softmax)
'''
NEW_STEP = '''\
def log_softmax(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


nb05.check_log_softmax(log_softmax)
'''


def planted(solution: str, kind: str = "extend") -> nbformat.NotebookNode:
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    blocks = "\n\n".join(f"<details><summary>{s}</summary>\n\n{body}\n\n</details>" for s, body in
                         [("Hint 1", "Shift first."), ("Hint 2", "`np.exp(z)`"),
                          ("Solution", f"```python\n{solution}```")])
    nb = nbformat.v4.new_notebook()
    nb.cells = [code(SHOWN), md("## Exercises"), md(f"### Exercise 1 ({kind}): a softmax"),
                code("def softmax(x):\n    raise NotImplementedError\n\n\nnb05.check_softmax(x)"),
                md(blocks), md("## Summary")]
    return nb


def test_a_renamed_copy_fails_and_a_new_step_passes():
    nb = planted(COPIED)
    [exercise] = exercises(nb)
    assert exercise.blocks[-1][0] == "Solution" and exercise.calls == ["nb05.check_softmax"]
    assert copy_share(exercise.solution, shown_before(nb, exercise)) == 1.0
    nb = planted(NEW_STEP)
    [exercise] = exercises(nb)
    assert copy_share(exercise.solution, shown_before(nb, exercise)) < MAX_COPY


def test_the_rules_catch_a_planted_notebook():
    [exercise] = exercises(planted(NEW_STEP, kind="guess"))
    problems = notebook_problems("05", [exercise])
    assert "1 exercises: 3 to 5 are needed" in problems
    assert any("is not '### Exercise N (kind): title'" in p for p in problems)
    assert any("is called by no exercise (a dead checker)" in p for p in problems)
    exercise.blocks = exercise.blocks[::-1]
    assert any("not ['Hint 1', 'Hint 2', 'Solution']" in p
               for p in notebook_problems("05", [exercise]))


if __name__ == "__main__":
    print(report())

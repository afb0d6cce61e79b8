"""The parts every notebook shares, generated in one place; and the scaffold of a new notebook.

    python tools/notebooks.py sync                 # rewrite badges, setup cells and kernelspecs
    python tools/notebooks.py new 17_snake_case "Title" ["what you will see"]

``sync``: the address lives only in pyproject.toml ([project.urls] Repository);
tests/test_course.py fails when a notebook's badge or setup cell disagrees with this module.

``new``: the next notebook, its checker module ``course_utils/checks/nbNN.py`` and its checker
test ``tests/test_checks_nbNN.py``, with three exercises to replace (practice, predict,
derive); its row in the course maps of README.md, notebook 00 and CONTRIBUTING.md; then
``make notebooks NB=…`` executes it.
``make test`` passes at once. CONTRIBUTING.md ("Adding a notebook") says what to write next.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
BADGE_RE = re.compile(r"\[!\[Open In Colab\]\([^)]*\)\]\([^)]*\)")
STEM_RE = re.compile(r"^\d\d_[a-z0-9]+(_[a-z0-9]+)*$")
MAP_ROW_RE = re.compile(r"^\| \d\d \|.*$", re.M)  # a row of a course map: "| 07 | ... |"
# The kernelspec JupyterLab writes for ipykernel's kernel: any other display name, and every
# notebook shows as modified the moment it opens.
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def repository_url() -> str:
    """The canonical repository address, e.g. https://github.com/owner/name."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["urls"]["Repository"].rstrip("/")


def badge(notebook_name: str) -> str:
    """Markdown for the "Open in Colab" badge of ``notebooks/<notebook_name>``."""
    github_path = repository_url().removeprefix("https://github.com/")
    target = f"https://colab.research.google.com/github/{github_path}/blob/main/notebooks/{notebook_name}"
    return f"[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({target})"


def setup_cell_source() -> str:
    """The second cell of every notebook: on Colab only, install course_utils (not editable)."""
    return f'''# Setup (Colab only): install the course helpers, course_utils, from GitHub.
# A regular install (not -e) imports without a restart; --no-deps keeps Colab's torch and numpy.
# Anywhere else this cell does nothing: `make lab` has installed everything already.
import importlib
import os
import subprocess
import sys

if "google.colab" in sys.modules:
    default = "git+{repository_url()}"
    source = os.environ.get("COURSE_UTILS_SOURCE", default)
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", source]
    subprocess.run(pip, check=True)
    importlib.invalidate_caches()'''


def notebook_paths() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def sync(path: Path) -> bool:
    """Rewrite the badge (cell 1), the setup cell (cell 2) and the kernelspec of one notebook;
    True if changed."""
    nb = nbformat.read(path, as_version=4)
    first, second = nb.cells[0], nb.cells[1]
    new_first = BADGE_RE.sub(lambda _: badge(path.name), first.source)
    new_second = setup_cell_source()
    old = (first.source, second.source, nb.metadata.get("kernelspec"))
    if old == (new_first, new_second, KERNELSPEC):
        return False
    first.source, second.source = new_first, new_second
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nbformat.write(nb, path)
    return True


# --- the scaffold of a new notebook (its number replaces "NN" in the templates) ---------------


@dataclass(frozen=True)
class Exercise:
    """A scaffolded exercise of ``kind``: a stub (``stub``, the checker's argument) checked by
    ``nbNN.check_<name>``, a hint ladder and a worked solution."""

    kind: str
    heading: str
    name: str
    stub: str  # the cell's code before the checker call
    statement: str
    hints: tuple[str, str]
    solution: str  # the code before the checker call
    argument: str = ""  # what the checker is given (default: the function ``name``)

    def cells(self, number: int, checks: str) -> list[nbformat.NotebookNode]:
        """Exercise ``number``: the statement, the stub with its call to the checker module
        ``checks``, the two hints and the solution, each in its own collapsed block."""
        check = f"{checks}.check_{self.name}({self.argument or self.name})"
        solution = (f"import numpy as np\nfrom course_utils.checks import {checks}\n\n"
                    f"{self.solution}\n\n{check}\n")
        blocks = [f"<details><summary>Hint {i}</summary>\n\n{hint}\n\n</details>"
                  for i, hint in enumerate(self.hints, 1)]
        blocks.append(f"<details><summary>Solution</summary>\n\n```python\n{solution}```\n\n"
                      "</details>")
        return [
            nbformat.v4.new_markdown_cell(
                f"### Exercise {number} ({self.kind}): {self.heading}\n\n{self.statement}"),
            nbformat.v4.new_code_cell(f"{self.stub}\n\n{check}"),
            nbformat.v4.new_markdown_cell("\n\n".join(blocks)),
        ]


EXERCISES = [
    Exercise(
        "practice", "the mean", "mean",
        "def mean(x):\n    raise NotImplementedError  # your code here\n",
        "Write `mean(x)` returning the mean $\\bar x = \\frac{1}{n}\\sum_{i=1}^{n} x_i$ of a 1-D "
        "array as a float (also for integers), and raising `ValueError` for an empty array, "
        "whose mean would be $0/0$.",
        ("An empty array has no mean: test for it before dividing.",
         "`x.size` is the number of entries; `np.sum(x)` their total."),
        "def mean(x):\n"
        "    x = np.asarray(x, dtype=np.float64)\n"
        "    if x.size == 0:\n"
        '        raise ValueError("x must not be empty: its mean would be 0/0")\n'
        "    return float(np.sum(x) / x.size)\n",
    ),
    Exercise(
        "predict", "the sum up to 1000", "sum_to_1000",
        "answer = ...  # your number\n",
        "Without running anything, write down $1 + 2 + \\dots + 1000$ as `answer`.",
        ("Section 1 pairs the first number with the last.",
         "There are $1000/2$ pairs, each adding up to $1001$."),
        "answer = 1000 * 1001 // 2\n",
        argument="answer",
    ),
    Exercise(
        "derive", "the sum of the squares", "sum_of_squares",
        "def sum_of_squares(n):\n    raise NotImplementedError  # your code here\n",
        "The sum of the squares $1^2 + 2^2 + \\dots + n^2$ is a polynomial of degree 3 in $n$. "
        "Find it (compute the first few sums and fit, or guess and prove by induction) and "
        "write `sum_of_squares(n)` returning it as an integer, with no loop and no sum over "
        "$k$. The checker compares it with the sum for $n = 1 \\dots 200$.",
        ("A polynomial of degree 3 is fixed by four values: $n = 0, 1, 2, 3$ give 0, 1, 5, 14.",
         "It has the factors $n$ and $n + 1$, like section 1's formula, and one more."),
        "def sum_of_squares(n):\n    return n * (n + 1) * (2 * n + 1) // 6\n",
    ),
]

INTRO = """\
*Scaffolded by `tools/notebooks.py new`: replace this paragraph with why the topic matters for
Transformers, the section and the exercises below with the notebook's own, and follow
CONTRIBUTING.md.*

You will learn:

- the pattern every section follows, on the sum $1 + 2 + \\dots + n$;
- three exercises with automatic checkers: a mean, a prediction and a derivation."""

PREAMBLE = """\
import matplotlib.pyplot as plt
import numpy as np

from course_utils import env, plotting
from course_utils.checks import nbNN

rng = env.setup_notebook(seed=0)  # seeds everything; rounded printing; figure style"""

SECTION = """\
## 1. The sum of the first n integers

**In words.** Pair the first number with the last, the second with the second last: each pair
adds up to $n + 1$, and there are $n/2$ pairs.

**Formula.**

$$\\sum_{k=1}^{n} k = \\frac{n(n + 1)}{2}$$

**Smallest example.** $1 + 2 + 3 + 4 = 10 = \\frac{4 \\cdot 5}{2}$."""

SECTION_CODE = """\
n = 4
print(f"1 + ... + {n} = {np.arange(1, n + 1).sum()} = n(n + 1)/2 = {n * (n + 1) // 2}")
for n in range(1, 101):
    assert np.arange(1, n + 1).sum() == n * (n + 1) // 2
print("the formula holds for n = 1 ... 100")"""

PICTURE = """\
n = np.arange(1, 21)
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(n, np.cumsum(n), "o", label="1 + 2 + ... + n, added up")
ax.plot(n, n * (n + 1) / 2, label="n(n + 1)/2")
ax.set(xlabel="n", ylabel="sum", title="The sum grows like n²/2")
ax.legend()
plotting.show()"""

PICTURE_TEXT = """\
What to see: the added-up sums sit exactly on the curve $n(n + 1)/2$, which bends upwards like
$n^2/2$."""

SUMMARY = """\
## Summary

- Each section goes: the idea in words → the formula → the smallest example → the code → a check
  that the math holds → a picture; here, $\\sum_{k=1}^{n} k = n(n + 1)/2$ for $n$ up to 100.
- Each exercise gives a stub, a checker that says what is wrong, two hints and a worked
  solution.

This is the last notebook of the course. [Back to the start: 00 start here](00_start_here.ipynb)"""

CHECKS = '''\
\"\"\"Checkers for notebook NN's exercises (scaffolded by tools/notebooks.py: replace them with
the notebook's own).\"\"\"

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.checks import Case, CheckResult, check_function, check_number, exercise


def _mean(x: np.ndarray) -> float:
    return float(np.mean(x))


@exercise("practice")
def check_mean(func: Callable[[np.ndarray], float]) -> CheckResult:
    \"\"\"``func(x)`` must return the mean of ``x`` as a float; ValueError when it is empty.\"\"\"
    cases = [
        Case((np.array([1.0, 2.0, 3.0, 6.0]),), "[1, 2, 3, 6] -> 3.0"),
        Case((np.array([5]),), "one integer: [5] -> 5.0"),
        Case((np.array([-2.0, 2.0]),), "entries that cancel: [-2, 2] -> 0.0"),
        Case((np.array([]),), "an empty array has no mean", raises=ValueError),
    ]
    mistakes = {"it divides by n - 1 (the sample variance's count), not by n":
                lambda x: float(np.sum(x) / (len(x) - 1))}
    return check_function(func, cases=cases, reference=_mean, name="mean", mistakes=mistakes)


@exercise("predict")
def check_sum_to_1000(answer: float, *, show_answer: bool = False) -> CheckResult:
    \"\"\"``answer`` must be 1 + 2 + ... + 1000 = 500500, exactly.\"\"\"
    return check_number(answer, 500500, name="sum_to_1000", label="1 + 2 + ... + 1000",
                        rtol=0.0, explanation="500 pairs (1 + 1000, 2 + 999, ...) of 1001 each: "
                        "1000 * 1001 / 2 = 500500", show_answer=show_answer,
                        hint="pair the first number with the last, the second with the one "
                             "before the last: how many pairs, and what is each pair's sum?",
                        mistakes={500000: "that is 1000² / 2: the pairs sum to 1001, not 1000",
                                  501501: "that is the sum up to 1001, one number too many"})


def _sum_of_squares(n: int) -> int:
    return sum(k * k for k in range(1, n + 1))


@exercise("derive")
def check_sum_of_squares(func: Callable[[int], int]) -> CheckResult:
    \"\"\"``func(n)`` must return 1 + 4 + ... + n² as an integer for n = 1 ... 200.\"\"\"
    cases = [Case((n,), f"n = {n}") for n in (1, 2, 3, 10, 57, 200)]
    return check_function(func, cases=cases, reference=_sum_of_squares, name="sum_of_squares",
                          exact_dtype=True)
'''

CHECKS_TEST = '''\
\"\"\"Notebook NN's checkers: right answers pass, plausible mistakes fail with a reason.\"\"\"

import numpy as np
from checker_table import right, table_test, wrong

from course_utils.checks import nbNN


def mean(x):
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        raise ValueError("x must not be empty")
    return float(np.sum(x) / x.size)


ROWS = [
    *right(nbNN.check_mean, worked=mean),
    *wrong(
        nbNN.check_mean,
        divides_by_n_minus_1=(lambda x: np.sum(x) / (len(x) - 1), "it divides by n - 1"),
        median=(np.median, "expected 3.0, got 2.5"),
        no_empty_check=(np.mean, "should raise ValueError, returned nan"),
    ),
    *right(nbNN.check_sum_to_1000, worked=500500),
    *wrong(
        nbNN.check_sum_to_1000,
        n_squared_over_2=(1000**2 // 2, "that is 1000² / 2"),
        one_too_many=(1001 * 1002 // 2, "one number too many"),
        far_off=(1000, "1000 is too low: pair the first number with the last"),
    ),
    *right(nbNN.check_sum_of_squares, worked=lambda n: n * (n + 1) * (2 * n + 1) // 6),
    *wrong(
        nbNN.check_sum_of_squares,
        cube_over_3=(lambda n: n**3 // 3, "n = 2: values differ: expected 5, got 2"),
        float_division=(lambda n: n * (n + 1) * (2 * n + 1) / 6, "expected an integer"),
    ),
]

test_checker = table_test(ROWS)
'''


def add_map_row(text: str, row: str) -> str:
    """``text`` with ``row`` after the last row of its course map (rows start ``| NN |``)."""
    rows = list(MAP_ROW_RE.finditer(text))
    if not rows:
        raise ValueError("no course map found: no line starts with `| NN |`")
    end = rows[-1].end()
    return f"{text[:end]}\n{row}{text[end:]}"


def scaffold_notebook(path: Path, title: str) -> nbformat.NotebookNode:
    """The notebook: title and badge, setup cell, preamble, one section, exercises, summary."""
    checks = f"nb{path.name[:2]}"
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    nb.cells = [
        md(f"# {title}\n\n{badge(path.name)}\n\n{INTRO}"),
        code(setup_cell_source()),
        code(PREAMBLE.replace("nbNN", checks)), md(SECTION), code(SECTION_CODE), code(PICTURE),
        md(PICTURE_TEXT),
        md("## Exercises"),
        *[cell for number, ex in enumerate(EXERCISES, 1) for cell in ex.cells(number, checks)],
        md(SUMMARY),
    ]
    return nb


def new(stem: str, title: str, blurb: str = "to be written") -> list[Path]:
    """Scaffold notebook ``<stem>`` (the next number), its checker module and checker test, add
    its row to the three course maps, and execute it; the paths created."""
    if not STEM_RE.match(stem):
        raise ValueError(f"stem must look like 17_snake_case_title, got {stem!r}")
    number, expected = stem[:2], f"{len(notebook_paths()):02d}"
    if number != expected:
        raise ValueError(f"the next notebook is number {expected}, got {stem!r}")
    path = NOTEBOOKS / f"{stem}.ipynb"
    created = [path, ROOT / f"course_utils/checks/nb{number}.py",
               ROOT / f"tests/test_checks_nb{number}.py"]
    if existing := [p for p in created if p.exists()]:
        raise FileExistsError(existing[0])

    nbformat.write(scaffold_notebook(path, title), path)
    for target, template in zip(created[1:], (CHECKS, CHECKS_TEST), strict=True):
        target.write_text(template.replace("NN", number))

    link = f"[{title}](notebooks/{path.name})"
    for name, row in {
        "README.md": f"| {number} | {link} — {blurb} | {badge(path.name)} |",
        "CONTRIBUTING.md": f"| {number} | {link} | — | `nb{number}` | `{created[2].name}` |",
    }.items():
        (ROOT / name).write_text(add_map_row((ROOT / name).read_text(), row))
    start_path = notebook_paths()[0]
    start = nbformat.read(start_path, as_version=4)
    course_map = next(c for c in start.cells
                      if c.cell_type == "markdown" and MAP_ROW_RE.search(c.source))
    course_map.source = add_map_row(course_map.source,
                                    f"| {number} | [{title}]({path.name}) | {blurb} |")
    nbformat.write(start, start_path)

    subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), "notebooks",
                    f"NB=notebooks/{path.name}"], check=True)
    return created


if __name__ == "__main__":
    command, *rest = sys.argv[1:] or ["sync"]
    if command == "sync":
        changed = [p.name for p in notebook_paths() if sync(p)]
        print("updated: " + (", ".join(changed) if changed else "nothing"))
    elif command == "new" and len(rest) in (2, 3):
        for created in new(*rest):
            print(f"created {created.relative_to(ROOT)}")
        print("added its row to the maps in README.md, notebook 00 and CONTRIBUTING.md, and\n"
              "executed it. To do (CONTRIBUTING.md, 'Adding a notebook'): replace the warm-ups\n"
              "with the notebook's content and name its modules in its CONTRIBUTING.md row; its\n"
              "description in README.md and 00; the count of notebooks in 00 and CONTRIBUTING.md;\n"
              f"a link to it from the summary of {notebook_paths()[-2].name}.")
    else:
        sys.exit(__doc__)

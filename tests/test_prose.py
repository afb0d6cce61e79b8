"""Prose lints on every notebook (CONTRIBUTING.md, "Course-wide tests"): what renders wrong or
reads badly in JupyterLab.

- a line right after a `>` box line is pulled into the box (Markdown's lazy continuation);
- code lines over 100 characters scroll sideways: ruff's E501 covers code cells (pyproject.toml),
  :func:`long_fenced_lines` the code fences in markdown (hints, solutions);
- stored output lines over 100 characters wrap mid-word;
- a figure needs a markdown cell right after it that says, in a sentence, what to see.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import notebooks as nbtools  # noqa: E402

PATHS = nbtools.notebook_paths()
MAX_LINE = 100
BOX_RE = re.compile(r"^ {0,3}>")
FENCE_RE = re.compile(r"^ {0,3}(```|~~~)")
# What a "what to see" cell must not start with: a heading, a box, a table, display maths, a
# fence, a details block, a bold lead-in ("**Formula.**").
NOT_A_SENTENCE_RE = re.compile(r"^(#|>|\||\$\$|```|<details>|\*\*)")


def _markdown_lines(source: str) -> list[tuple[int, str, bool]]:
    """``(line number, line, inside a code fence)`` for each line of a markdown cell."""
    lines, fenced = [], False
    for number, line in enumerate(source.splitlines(), 1):
        if FENCE_RE.match(line):
            fenced = not fenced
            continue
        lines.append((number, line, fenced))
    return lines


def box_continuations(nb) -> list[str]:
    """Lines that follow a ``>`` box line directly, without ``>``: Markdown puts them in the
    box."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            lines = _markdown_lines(cell.source)
            for (_, before, code), (number, line, fenced) in zip(lines, lines[1:], strict=False):
                box = BOX_RE.match(before) and not (code or fenced)
                if box and line.strip() and not BOX_RE.match(line):
                    found.append(f"cell {index} line {number}: {line[:60]!r} continues the box")
    return found


def long_fenced_lines(nb) -> list[str]:
    """Code lines in markdown fences (hints, solutions) over :data:`MAX_LINE` characters."""
    return [f"cell {index} line {number}: {len(line)} characters: {line[:50]!r}..."
            for index, cell in enumerate(nb.cells) if cell.cell_type == "markdown"
            for number, line, fenced in _markdown_lines(cell.source)
            if fenced and len(line) > MAX_LINE]


def _output_text(output) -> str:
    if output.output_type == "stream":
        return output.text
    return output.get("data", {}).get("text/plain", "") if "data" in output else ""


def long_output_lines(nb) -> list[str]:
    """Stored text output lines over :data:`MAX_LINE` characters (JupyterLab wraps them
    mid-word)."""
    return [f"cell {index}: an output line of {len(line)} characters: {line[:50]!r}..."
            for index, cell in enumerate(nb.cells) if cell.cell_type == "code"
            for output in cell.outputs for line in _output_text(output).splitlines()
            if len(line) > MAX_LINE]


def figures_without_words(nb) -> list[str]:
    """Code cells with an image output not followed by a markdown cell that starts with a
    sentence ("What to see: ..." or a plain sentence about the picture)."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and any("image/png" in out.get("data", {})
                                            for out in cell.outputs):
            after = nb.cells[index + 1] if index + 1 < len(nb.cells) else None
            if after is None or after.cell_type != "markdown":
                found.append(f"cell {index}: the figure is not followed by a markdown cell")
            elif NOT_A_SENTENCE_RE.match(after.source.lstrip()):
                found.append(f"cell {index}: the cell after the figure starts with "
                             f"{after.source.lstrip()[:40]!r}, not a sentence saying what to see")
    return found


LINTS = [box_continuations, long_fenced_lines, long_output_lines, figures_without_words]


@pytest.mark.parametrize("lint", LINTS, ids=[lint.__name__ for lint in LINTS])
@pytest.mark.parametrize("path", PATHS, ids=[p.stem[:2] for p in PATHS])
def test_notebook_passes_the_prose_lint(path, lint):
    found = lint(nbformat.read(path, as_version=4))
    assert not found, f"{path.name}:\n" + "\n".join(found)


def _ruff_long_lines(*args: str, stdin: str | None = None) -> list[str]:
    """ruff's E501 findings with the project's settings (pyproject.toml), one per line."""
    run = subprocess.run([str(ROOT / ".venv" / "bin" / "ruff"), "check", "--select", "E501",
                          "--output-format", "concise", "--no-cache", *args],
                         cwd=ROOT, input=stdin, capture_output=True, text=True)
    assert run.returncode in (0, 1), run.stderr
    return [line for line in run.stdout.splitlines() if "E501" in line]


def test_code_cells_have_no_line_over_100_characters():
    found = _ruff_long_lines(*(str(p.relative_to(ROOT)) for p in PATHS))
    assert not found, "\n".join(found)


# --- each lint fails on a planted violation -----------------------------------------------

LONG = "total = 0" + " + 1" * 30  # 129 characters


def planted(*cells) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    return nb


def test_a_line_pulled_into_a_box_is_found():
    md = nbformat.v4.new_markdown_cell
    box = "> **Convention.** Masks mean True = attend.\nThis sentence is not part of the box."
    assert box_continuations(planted(md(box))) == [
        "cell 0 line 2: 'This sentence is not part of the box.' continues the box"]
    fine = [md("> a box\n\nafter a blank line"), md("> a box\n> on two lines"),
            md("```text\n> not a box\nin a fence\n```")]
    assert box_continuations(planted(*fine)) == []


def test_a_long_line_in_a_solution_fence_is_found():
    solution = f"<details><summary>Solution</summary>\n\n```python\n{LONG}\n```\n\n</details>"
    found = long_fenced_lines(planted(nbformat.v4.new_markdown_cell(solution)))
    assert len(found) == 1 and found[0].startswith("cell 0 line 4: 129 characters")
    assert long_fenced_lines(planted(nbformat.v4.new_markdown_cell(LONG))) == []  # prose wraps


def test_a_long_output_line_is_found():
    cell = nbformat.v4.new_code_cell("print(...)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ok\n" + "y" * 101)]
    assert long_output_lines(planted(cell)) == [
        f"cell 0: an output line of 101 characters: {'y' * 50!r}..."]


def test_a_figure_without_a_sentence_after_it_is_found():
    md = nbformat.v4.new_markdown_cell
    figure = nbformat.v4.new_code_cell("plotting.show()")
    figure.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "", "text/plain":
                                                                   "<Figure>"})]
    assert figures_without_words(planted(figure, md("What to see: the curve falls."))) == []
    assert len(figures_without_words(planted(figure, md("## 2. The next section")))) == 1
    assert len(figures_without_words(planted(figure, nbformat.v4.new_code_cell("x = 1")))) == 1
    assert len(figures_without_words(planted(figure))) == 1


def test_ruff_finds_a_long_line_in_a_notebook_code_cell():
    nb = planted(nbformat.v4.new_code_cell(LONG))
    found = _ruff_long_lines("--stdin-filename", "notebooks/99_planted.ipynb",
                             stdin=json.dumps(nbformat.v4.upgrade(nb)))
    assert len(found) == 1 and "Line too long (129 > 100)" in found[0]

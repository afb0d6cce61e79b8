"""Course-wide rules every notebook follows (see COURSE.md): names, template, outputs, exercises."""

from __future__ import annotations

import ast
import contextlib
import io
import re
import sys
from pathlib import Path

import nbformat
import pytest

from course_utils.checks import CheckResult

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import notebooks as nbtools  # noqa: E402

PATHS = nbtools.notebook_paths()
NAMES = [p.name for p in PATHS]
NAME_RE = re.compile(r"^(\d\d)_[a-z0-9]+(_[a-z0-9]+)*\.ipynb$")
SOLUTION_RE = re.compile(
    r"<details>\s*<summary>\s*Solution\s*</summary>\s*```python\n(.*?)```\s*</details>", re.S
)


def load(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def solutions(nb) -> list[str]:
    return [m for c in nb.cells if c.cell_type == "markdown" for m in SOLUTION_RE.findall(c.source)]


def test_notebooks_are_numbered_contiguously_from_00():
    assert NAMES, "no notebooks found"
    for name in NAMES:
        assert NAME_RE.match(name), f"{name} is not NN_snake_case.ipynb"
    numbers = [int(name[:2]) for name in NAMES]
    assert numbers == list(range(len(numbers))), f"not numbered 00, 01, ... in order: {numbers}"
    assert not [p for p in (ROOT / "notebooks").glob("*.ipynb") if p.name not in NAMES]


@pytest.mark.parametrize("path", PATHS, ids=NAMES)
class TestNotebook:
    def test_title_badge_and_setup_cell(self, path):
        nb = load(path)
        first, second = nb.cells[0], nb.cells[1]
        assert first.cell_type == "markdown" and first.source.startswith("# ")
        badges = nbtools.BADGE_RE.findall(first.source)
        assert badges == [nbtools.badge(path.name)], "badge missing or not the canonical address"
        assert second.cell_type == "code"
        assert second.source == nbtools.setup_cell_source(), "setup cell differs; run `make sync`"
        assert "You will learn" in first.source

    def test_kernelspec_and_imports_course_utils(self, path):
        nb = load(path)
        assert nb.metadata["kernelspec"]["name"] == "python3"
        assert any("course_utils" in c.source for c in code_cells(nb)[1:])

    def test_executed_in_order_without_stderr_or_errors(self, path):
        counts = []
        for cell in code_cells(load(path)):
            assert cell.execution_count is not None, f"unexecuted cell: {cell.source[:60]!r}"
            counts.append(cell.execution_count)
            for out in cell.outputs:
                assert out.output_type != "error", f"stored error in {cell.source[:60]!r}"
                if out.output_type == "stream":
                    assert out.name == "stdout", f"stderr stored: {out.text[:200]!r}"
                if out.output_type == "execute_result":  # a figure shown by plt.show() is fine
                    text = out.data.get("text/plain", "")
                    bad = text.startswith(("<Figure size", "[<matplotlib", "Text(", "<matplotlib"))
                    assert not bad, f"end plot cells with plt.show(), not {text[:40]!r}"
        assert counts == list(range(1, len(counts) + 1)), "counts out of order: `make notebooks`"

    def test_only_the_allowed_nbval_marker(self, path):
        for cell in code_cells(load(path)):
            markers = set(re.findall(r"#\s*NBVAL_\w+", cell.source))
            assert markers <= {"# NBVAL_IGNORE_OUTPUT"}, markers
            if markers:
                assert cell.source.startswith("# NBVAL_IGNORE_OUTPUT")
            assert not [t for t in cell.metadata.get("tags", []) if t.startswith("nbval")]

    def test_exercises_have_solutions_and_stubs(self, path):
        nb = load(path)
        found = solutions(nb)
        assert len(found) >= (1 if path.name.startswith("00") else 3), "too few exercises"
        stubs = [
            c
            for c in code_cells(nb)
            if any(
                "not attempted yet" in out.get("data", {}).get("text/plain", "")
                for out in c.outputs
            )
        ]
        assert len(stubs) == len(found), "each exercise needs a stub cell and a solution block"

    def test_relative_links_resolve(self, path):
        nb = load(path)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                for target in re.findall(r"\]\((\d\d_[a-z0-9_]+\.ipynb)\)", cell.source):
                    assert (path.parent / target).exists(), f"broken link to {target}"


def test_start_here_maps_every_notebook():
    source = "\n".join(c.source for c in load(PATHS[0]).cells if c.cell_type == "markdown")
    linked = set(re.findall(r"\]\((\d\d_[a-z0-9_]+\.ipynb)\)", source))
    assert linked >= set(NAMES[1:]), f"course map misses {set(NAMES[1:]) - linked}"


SOLUTION_CASES = [(p, i) for p in PATHS for i in range(len(solutions(load(p))))]


@pytest.mark.parametrize(
    ("path", "index"), SOLUTION_CASES, ids=[f"{p.stem[:2]}-{i + 1}" for p, i in SOLUTION_CASES]
)
def test_worked_solution_passes_its_checker(path, index):
    tree = ast.parse(solutions(load(path))[index])
    *body, last = tree.body
    assert isinstance(last, ast.Expr), "a solution block must end with its checker call"
    namespace: dict = {"__name__": "__solution__"}
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        exec(compile(ast.Module(body, []), "<solution>", "exec"), namespace)
        result = eval(compile(ast.Expression(last.value), "<solution>", "eval"), namespace)
    assert isinstance(result, CheckResult), "the last line must be a checker call"
    assert result.passed, f"{result!r}\n{printed.getvalue()}"


def _requirement_names(lines) -> set[str]:
    names = set()
    for line in lines:
        line = line.split("#")[0].strip().lstrip("- ").strip()
        if line and not line.endswith(":"):
            name = re.split(r"[<>=!~; \[]", line, maxsplit=1)[0].lower().replace("_", "-")
            names.add({"pytorch": "torch"}.get(name, name))
    return names


def test_requirements_and_environment_yml_list_the_same_packages():
    req = _requirement_names((ROOT / "requirements.txt").read_text().splitlines())
    yml_lines = (ROOT / "environment.yml").read_text().split("dependencies:", 1)[1].splitlines()
    yml = _requirement_names(yml_lines) - {"python", "pip"}
    assert req == yml, f"only in requirements.txt: {req - yml}; only in the yml: {yml - req}"
    expected = {"numpy", "matplotlib", "torch", "jupyterlab", "nbval", "pytest", "scipy"}
    assert expected | {"hypothesis", "triton"} <= req


def test_requirements_are_lower_bounds_only():
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        spec = line.split("#")[0].split(";")[0].strip()
        if spec:
            assert ">=" in spec and "==" not in spec and "<" not in spec.replace("<=", ""), spec
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    triton = [x for x in lines if x.startswith("triton")]
    assert triton and 'platform_machine == "x86_64"' in triton[0]


def test_ci_pins_torch_to_the_cpu_build_on_disk():
    pins = (ROOT / ".ci" / "constraints.txt").read_text().splitlines()
    assert "torch==2.13.0" in pins


def test_readme_maps_every_notebook_with_its_canonical_badge():
    readme = (ROOT / "README.md").read_text()
    badges = nbtools.BADGE_RE.findall(readme)
    assert badges == [nbtools.badge(name) for name in NAMES], "README course map out of date"
    assert readme.index("make lab") < readme.index("## The course")

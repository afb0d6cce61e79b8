"""Course-wide rules every notebook follows (CONTRIBUTING.md): names, the template, stored
outputs, exercises, the maps of the course, the requirements."""

from __future__ import annotations

import ast
import contextlib
import io
import linecache
import re
import sys
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from course_utils.checks import CheckResult

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import notebooks as nbtools  # noqa: E402

PATHS = nbtools.notebook_paths()
NAMES = [p.name for p in PATHS]
NAME_RE = re.compile(r"^(\d\d)_[a-z0-9]+(_[a-z0-9]+)*\.ipynb$")
SOLUTION_RE = re.compile(r"<details>\s*<summary>\s*Solution\s*</summary>(.*?)</details>", re.S)
FENCE_RE = re.compile(r"```python\n(.*?)```", re.S)  # a solution's code: its last fence
# A row of CONTRIBUTING.md's notebook map: number, notebook, modules, checker, test files.
CONTRIBUTING_ROW_RE = re.compile(
    r"^\| (\d\d) \| \[[^\]]*\]\(notebooks/([^)]+)\) \| (.*) \| (.*) \| (.*) \|$", re.M
)


def load(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def solutions(nb) -> list[str]:
    blocks = [m for c in nb.cells if c.cell_type == "markdown"
              for m in SOLUTION_RE.findall(c.source)]
    return [FENCE_RE.findall(block)[-1] for block in blocks if FENCE_RE.search(block)]


def imported_modules(nb) -> set[str]:
    """The course_utils modules a notebook imports (``from course_utils[.module] import ...``)."""
    found = set()
    for cell in code_cells(nb):
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("course_utils"):
                parts = node.module.split(".")
                found |= {parts[1]} if len(parts) > 1 else {alias.name for alias in node.names}
    return found


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
        # exactly what JupyterLab writes, or every notebook shows as modified when it opens
        assert nb.metadata["kernelspec"] == nbtools.KERNELSPEC, "kernelspec differs: `make sync`"
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

    def test_exercises_have_solutions_and_stubs(self, path):  # CONTRIBUTING.md: the template
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
    source = solutions(load(path))[index]
    tree = ast.parse(source)
    *body, last = tree.body
    assert isinstance(last, ast.Expr), "a solution block must end with its checker call"
    # its source readable, as a notebook cell's is (IPython keeps cells in linecache), so that
    # a constrain checker's scan reads it as it reads a learner's
    filename = f"<solution {path.stem[:2]}-{index + 1}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {"__name__": "__solution__"}
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        exec(compile(ast.Module(body, []), filename, "exec"), namespace)
        result = eval(compile(ast.Expression(last.value), filename, "eval"), namespace)
    assert isinstance(result, CheckResult), "the last line must be a checker call"
    assert result.passed, f"{result!r}\n{printed.getvalue()}"


def test_contributing_maps_every_notebook_to_its_files():
    """CONTRIBUTING.md's notebook map has a row per notebook, in order, naming modules the
    notebook imports, its checker module and test files that exist (a module's own included)."""
    rows = CONTRIBUTING_ROW_RE.findall((ROOT / "CONTRIBUTING.md").read_text())
    assert [row[1] for row in rows] == NAMES, "CONTRIBUTING.md's notebook map is out of date"
    for number, name, modules, checker, tests in rows:
        listed = re.findall(r"`(test_\w+\.py)`", tests)
        assert checker == f"`nb{number}`", f"{name}: the checker module is nb{number}"
        assert (ROOT / "course_utils" / "checks" / f"nb{number}.py").is_file()
        assert f"test_checks_nb{number}.py" in listed, f"{name}: its checker test is not listed"
        imported = imported_modules(load(ROOT / "notebooks" / name))
        for module in re.findall(r"`(\w+)`", modules):
            assert module in imported, f"{name} does not import course_utils.{module}"
            assert f"test_{module}.py" in listed, f"{name}: test_{module}.py is not listed"
        for test in listed:
            assert (ROOT / "tests" / test).is_file(), f"{name}: tests/{test} does not exist"


def test_contributing_names_every_course_utils_module():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    modules = {p.stem for p in (ROOT / "course_utils").glob("*.py")} - {"__init__"}
    missing = sorted(m for m in modules if f"`{m}`" not in text)
    assert not missing, f"CONTRIBUTING.md does not say where these belong: {missing}"


def _requirements(lines) -> list[Requirement]:
    """The requirements in ``lines``: comments, blank lines and YAML keys skipped, a YAML list
    item's ``- `` removed."""
    specs = (line.split("#")[0].strip().removeprefix("- ").strip() for line in lines)
    return [Requirement(spec) for spec in specs if spec and not spec.endswith(":")]


def _requirement_names(lines) -> set[str]:
    names = {canonicalize_name(req.name) for req in _requirements(lines)}
    return {{"pytorch": "torch"}.get(name, name) for name in names}


def test_requirements_and_environment_yml_list_the_same_packages():
    req = _requirement_names((ROOT / "requirements.txt").read_text().splitlines())
    yml_lines = (ROOT / "environment.yml").read_text().split("dependencies:", 1)[1].splitlines()
    yml = _requirement_names(yml_lines) - {"python", "pip"}
    assert req == yml, f"only in requirements.txt: {req - yml}; only in the yml: {yml - req}"
    expected = {"numpy", "matplotlib", "torch", "jupyterlab", "nbval", "pytest", "scipy"}
    assert expected | {"hypothesis", "triton"} <= req


def test_requirements_are_lower_bounds_only():
    requirements = _requirements((ROOT / "requirements.txt").read_text().splitlines())
    for req in requirements:
        assert [spec.operator for spec in req.specifier] == [">="], str(req)
    triton = [req for req in requirements if req.name == "triton"]
    assert triton and 'platform_machine == "x86_64"' in str(triton[0].marker)


def test_ci_pins_torch_to_the_cpu_build_on_disk():
    pins = (ROOT / ".ci" / "constraints.txt").read_text().splitlines()
    assert "torch==2.13.0" in pins


def test_readme_maps_every_notebook_with_its_canonical_badge():
    readme = (ROOT / "README.md").read_text()
    badges = nbtools.BADGE_RE.findall(readme)
    assert badges == [nbtools.badge(name) for name in NAMES], "README course map out of date"
    assert readme.index("make lab") < readme.index("## The course")


FLOOR_ROW_RE = re.compile(r"^\| (\d) [^|]+\| (.+) \|$", re.M)  # "| 3 the maths | `linalg`, … |"


def house_floors() -> dict[str, int]:
    """CONTRIBUTING.md's floor of every module of course_utils (``checks`` and ``diagrams``
    stand for their packages)."""
    text = (ROOT / "CONTRIBUTING.md").read_text()
    table = text[text.index("## House rules"):text.index("**Doors and cores.**")]
    return {module: int(floor) for floor, modules in FLOOR_ROW_RE.findall(table)
            for module in re.findall(r"`(\w+)`", modules)}


def package_imports() -> dict[str, set[str]]:
    """The course_utils modules each module of the package imports, in functions too."""
    imports: dict[str, set[str]] = {}
    for path in sorted((ROOT / "course_utils").rglob("*.py")):
        parts = path.relative_to(ROOT / "course_utils").with_suffix("").parts
        if parts == ("__init__",):
            continue
        unit = imports.setdefault(parts[0], set())
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for name in names:
                if name.startswith("course_utils."):
                    unit.add(name.split(".")[1])
                elif name == "course_utils" and isinstance(node, ast.ImportFrom):
                    unit.update(a.name for a in node.names)
        unit.discard(parts[0])
    return imports


def house_rule_breaks(floors: dict[str, int], imports: dict[str, set[str]]) -> list[str]:
    breaks = [f"{module} is not on CONTRIBUTING.md's floors" for module in imports
              if module not in floors]
    for module, used in sorted(imports.items()):
        for other in sorted(used):
            if other in floors and floors[other] > floors.get(module, 0):
                breaks.append(f"{module} (floor {floors.get(module)}) imports {other} "
                              f"(floor {floors[other]})")
    return breaks


def test_every_import_follows_the_house_rules():
    floors = house_floors()
    assert floors["validation"] == 1 and floors["checks"] == 6
    assert house_rule_breaks(floors, package_imports()) == []
    planted = {"plotting": {"layers"}, "tiled": {"checks"}, "brand_new": set()}
    assert house_rule_breaks(floors, planted) == [
        "brand_new is not on CONTRIBUTING.md's floors",
        "plotting (floor 2) imports layers (floor 5)", "tiled (floor 4) imports checks (floor 6)"]

"""`tools/notebooks.py new` scaffolds a notebook that passes the course's tests unchanged.

The scaffold is made in a copy of this checkout, so the checkout itself is left alone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import notebooks as nbtools  # noqa: E402

NUMBER = f"{len(nbtools.notebook_paths()):02d}"
STEM = f"{NUMBER}_warm_ups"
RUN_ENV = {"COURSE_DEVICE": "cpu", "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """A copy of the checkout after ``new STEM "Warm-ups"``; its .venv runs this interpreter's."""
    repo = tmp_path_factory.mktemp("scaffold") / "repo"
    shutil.copytree(ROOT, repo, ignore=shutil.ignore_patterns(
        ".git", ".venv*", "__pycache__", ".*_cache", ".hypothesis", "*.egg-info"))
    (repo / ".venv").mkdir()
    (repo / ".venv" / "bin").symlink_to(Path(sys.prefix) / "bin")
    # A stamp newer than every copied file: make must not reinstall course_utils from the copy.
    (repo / ".venv" / ".installed").touch()
    done = subprocess.run(
        [sys.executable, "tools/notebooks.py", "new", STEM, "Warm-ups", "three warm-ups"],
        cwd=repo, env=env(repo), capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return repo


def env(repo: Path) -> dict[str, str]:
    """The environment of ``make test``, importing course_utils from ``repo``."""
    return {**os.environ, **RUN_ENV, "PYTHONPATH": str(repo)}


def test_new_writes_the_notebook_its_checker_and_its_test(repo):
    notebook = repo / "notebooks" / f"{STEM}.ipynb"
    for path in (notebook, repo / f"course_utils/checks/nb{NUMBER}.py",
                 repo / f"tests/test_checks_nb{NUMBER}.py"):
        assert path.is_file(), path
    for name in ("README.md", "CONTRIBUTING.md", "notebooks/00_start_here.ipynb"):
        assert f"{STEM}.ipynb)" in (repo / name).read_text(), f"{name} does not map it"


def test_the_scaffold_passes_the_course_tests_and_nbval(repo):
    """test_course.py on the new notebook and the course-wide rules, its checker table, and the
    notebook under nbval, as `make test` runs them."""
    notebook = f"notebooks/{STEM}.ipynb"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider",
         "tests/test_course.py", f"tests/test_checks_nb{NUMBER}.py", notebook,
         "--nbval", "--nbval-current-env", "--nbval-sanitize-with", "nbval_sanitize.cfg",
         "-k", f"{STEM} or {NUMBER}- or nb{NUMBER} or not (TestNotebook or solution)"],
        cwd=repo, env=env(repo), capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    for ran in ("::Cell", f"test_exercises_have_solutions_and_stubs[{STEM}",  # "::Cell": nbval
                f"test_worked_solution_passes_its_checker[{NUMBER}-3]",
                "test_checker[sum_to_1000-stub]", "test_checker[sum_of_squares-stub]",
                "test_readme_maps_every_notebook", "test_contributing_maps_every_notebook"):
        assert ran in done.stdout, f"{ran} did not run"


def test_the_scaffold_passes_the_exercise_and_prose_rules(repo):
    """Its exercises have kinds, the hint ladder and no copied solution; its text passes the
    prose lints (figure sentence, box continuation, line lengths)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "tests/test_exercises.py",
         "tests/test_prose.py", "-k", f"[{NUMBER}] or [{NUMBER}- or -{NUMBER}]"],
        cwd=repo, env=env(repo), capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    for ran in (f"test_exercises_follow_the_rules[{NUMBER}]",
                f"test_worked_solution_is_not_a_copy[{NUMBER}-3]"):
        assert ran in done.stdout, f"{ran} did not run"


def test_the_scaffold_is_lint_clean(repo):
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", f"course_utils/checks/nb{NUMBER}.py",
         f"tests/test_checks_nb{NUMBER}.py", f"notebooks/{STEM}.ipynb"],
        cwd=repo, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


@pytest.mark.parametrize(
    ("stem", "message"),
    [("05_softmax_again", f"the next notebook is number {NUMBER}"),
     (f"{NUMBER}-Bad-Name", "stem must look like")],
)
def test_new_refuses_a_name_that_would_break_the_numbering(stem, message):
    with pytest.raises(ValueError, match=message):
        nbtools.new(stem, "Title")

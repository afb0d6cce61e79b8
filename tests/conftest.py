"""Shared test set-up: the Hypothesis profiles, and the package built as a learner gets it.

Hypothesis profiles. ``make test`` and CI use ``ci``: every property test draws the same
examples on every run (derandomized, no example database), so a run can only fail for a change in
the code. To search afresh for counterexamples, run the property tests with
``HYPOTHESIS_PROFILE=explore`` (random examples; failures are remembered in ``.hypothesis/``)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# --- the browser tests ----------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium")
NO_BROWSER = ("Debian's chromium is not installed: this browser test did NOT run "
              "(apt-get install chromium; CI installs it in .ci/run)")
# CI sets COURSE_REQUIRE_BROWSER=1: there a missing browser fails the browser tests, never skips.
needs_browser = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("COURSE_REQUIRE_BROWSER"), reason=NO_BROWSER)


def pytest_terminal_summary(terminalreporter) -> None:
    """A skipped browser test is said loudly at the end of the run, not only with ``-rs``."""
    skipped = [report for report in terminalreporter.stats.get("skipped", [])
               if NO_BROWSER in str(report.longrepr)]
    if skipped:
        terminalreporter.write_sep("!", f"{len(skipped)} browser tests did NOT run: Debian's "
                                   "chromium is not installed (apt-get install chromium)", red=True)


# --- the package as a learner installs it -------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))  # the tests import tools/notebooks.py as `notebooks`


def purelib(python: Path | str) -> Path:
    """The site-packages folder of the interpreter ``python`` (a venv's, say)."""
    return Path(subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip())


@pytest.fixture(scope="session")
def distributions(tmp_path_factory) -> dict[str, Path]:
    """The wheel and the sdist of course_utils, built offline from a copy of this checkout
    (``pyproject.toml``, ``README.md`` and ``course_utils/``), as ``pip`` builds them for a
    learner: ``{"wheel": path, "sdist": path}``."""
    tmp = tmp_path_factory.mktemp("dist")
    source = tmp / "checkout"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source)
    shutil.copytree(
        ROOT / "course_utils", source / "course_utils",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    out = tmp / "out"
    for kind in ("sdist", "wheel"):  # one process each: setuptools keeps state between them
        build = f"import sys, setuptools.build_meta as m; m.build_{kind}(sys.argv[1])"
        subprocess.run(
            [sys.executable, "-c", build, str(out)], cwd=source, check=True, capture_output=True
        )
    (wheel,), (sdist,) = out.glob("course_utils-*.whl"), out.glob("course_utils-*.tar.gz")
    return {"wheel": wheel, "sdist": sdist}


# --- checks at the door -------------------------------------------------------------------------

@pytest.fixture
def validation_calls(monkeypatch):
    """A Counter of calls into ``course_utils.validation``'s guards made through any module of
    the package, filled while the test runs (a model's forward pass should check at its door
    and nowhere else)."""
    import collections
    import importlib
    import pkgutil

    import course_utils
    from course_utils import validation

    calls: collections.Counter[str] = collections.Counter()
    guards = {name: getattr(validation, name) for name in dir(validation)
              if name.startswith("check_") or name in ("real_array", "float_array")}
    for info in pkgutil.iter_modules(course_utils.__path__):
        if info.ispkg or info.name == "triton_attention":
            continue
        module = importlib.import_module(f"course_utils.{info.name}")
        for name, guard in guards.items():
            if getattr(module, name, None) is guard:
                def counted(*args, _guard=guard, _name=name, **kwargs):
                    calls[_name] += 1
                    return _guard(*args, **kwargs)
                monkeypatch.setattr(module, name, counted)
    return calls

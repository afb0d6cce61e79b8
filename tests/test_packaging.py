"""The wheel and the sdist carry every module of course_utils, subpackages included.

A learner on Colab gets a regular (non-editable) install built from the repository; a module
left out of the wheel is a ModuleNotFoundError there and nowhere else."""

import tarfile
import zipfile

from conftest import ROOT


def package_modules() -> set[str]:
    """Every .py file under course_utils/, as a path relative to the repository root."""
    return {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "course_utils").rglob("*.py")
        if "__pycache__" not in p.parts
    }


def test_the_package_has_subpackages():
    # the check below is only meaningful while there is something beyond the top level
    assert any(m.count("/") > 1 for m in package_modules()), "no subpackage found"


def test_wheel_holds_every_module(distributions):
    with zipfile.ZipFile(distributions["wheel"]) as wheel:
        names = set(wheel.namelist())
    missing = package_modules() - names
    assert not missing, f"modules missing from the wheel: {sorted(missing)}"


def test_sdist_holds_every_module(distributions):
    with tarfile.open(distributions["sdist"]) as sdist:
        # members are named <name>-<version>/course_utils/...
        names = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    missing = package_modules() - names
    assert not missing, f"modules missing from the sdist: {sorted(missing)}"

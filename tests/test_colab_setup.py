"""The Colab path: the setup cell, run for real in a fresh virtual environment with a stand-in
``google.colab`` module and no package index, installs course_utils from the local checkout
(not editable, without reinstalling torch or numpy) and imports it in the same process."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from conftest import purelib

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import notebooks as nbtools  # noqa: E402

SCRIPT = textwrap.dedent(
    """
    import sys, types
    if sys.argv[1] == "colab":  # what Colab's kernel has imported before any cell runs
        sys.modules["google"] = types.ModuleType("google")
        sys.modules["google.colab"] = types.ModuleType("google.colab")
    try:
        import course_utils
        raise SystemExit("course_utils was importable before the setup cell ran")
    except ModuleNotFoundError:
        pass
    exec(open(sys.argv[2]).read())
    try:
        import course_utils
    except ModuleNotFoundError:
        print("not installed")
        raise SystemExit(0)
    from course_utils import env
    import numpy, torch
    print(course_utils.__file__)
    print(env.environment_report()["colab"])
    print(numpy.__file__)
    print(torch.__file__)
    """
)


@pytest.fixture(scope="module")
def colab(tmp_path_factory, distributions):
    """A fresh venv that sees this environment's numpy/torch (as Colab has its own) but not
    course_utils, and the wheel built from a copy of the local checkout."""
    tmp = tmp_path_factory.mktemp("colab")
    offline = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    wheel = distributions["wheel"]
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = purelib(python)
    # Plain path entries: the .pth files there (our own editable install) are not processed.
    (site / "preinstalled.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    cell = tmp / "setup_cell.py"
    cell.write_text(nbtools.setup_cell_source())
    script = tmp / "run.py"
    script.write_text(SCRIPT)
    env = {**offline, "COURSE_UTILS_SOURCE": str(wheel)}
    env.pop("PYTHONPATH", None)
    return python, site, script, cell, env, tmp


def run(colab, mode):
    python, _, script, cell, env, tmp = colab
    return subprocess.run(
        [python, script, mode, cell], cwd=tmp, env=env, capture_output=True, text=True, timeout=300
    )


def test_outside_colab_the_setup_cell_does_nothing(colab):
    out = run(colab, "local")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "not installed"


def test_on_colab_it_installs_a_regular_copy_and_imports_without_restart(colab):
    out = run(colab, "colab")
    assert out.returncode == 0, out.stdout + out.stderr
    module_file, colab_flag, numpy_file, torch_file = out.stdout.split()
    _, site, *_ = colab
    assert Path(module_file).parent == site / "course_utils", "not a regular install in the venv"
    assert not list(site.glob("__editable__*")), "editable install"
    assert colab_flag == "yes"
    # torch and numpy are the ones that were already there, not reinstalled into the venv
    assert not Path(numpy_file).is_relative_to(site) and not Path(torch_file).is_relative_to(site)
    assert not list(site.glob("numpy*")) and not list(site.glob("torch*"))

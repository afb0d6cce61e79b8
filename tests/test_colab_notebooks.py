"""Every notebook, run as a Colab learner runs it.

The interpreter and packages are Colab's (``make colab-env`` builds ``.venv-colab`` from
``tests/colab/requirements.txt``: Python 3.13, numpy 2.1.3, torch 2.11, no triton), a
``google.colab`` module is imported at start-up as in Colab's kernel, and the notebook runs alone
in a folder outside the repository. Its own setup cell installs course_utils from the canonical
address, ``git+https://github.com/…``, which git redirects (``url.<clone>.insteadOf``) to a local
clone of this working tree. Every cell must run without error; the outputs are not compared
(the versions differ from those that wrote them).

Each notebook gets its own small virtual environment on top of the Colab one, so that every
notebook starts, like a fresh Colab runtime, without course_utils installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT, purelib

sys.path.insert(0, str(ROOT / "tools"))
import notebooks as nbtools  # noqa: E402

COLAB_PYTHON = os.environ.get("COLAB_PYTHON")

# Runs inside the notebook's environment: execute every cell, then report where course_utils
# came from. nbclient raises CellExecutionError, with the cell and its traceback, on any error.
DRIVER = textwrap.dedent(
    """
    import json, sys
    import nbclient, nbformat
    path = sys.argv[1]
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(
        "import json, sys, course_utils\\n"
        "print(json.dumps({'module': course_utils.__file__, 'python': sys.version.split()[0],"
        " 'colab': 'google.colab' in sys.modules}))"))
    client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                                     resources={"metadata": {"path": "."}})
    client.execute()
    print("".join(out.get("text", "") for out in nb.cells[-1].outputs))  # streams may be split
    """
)


@pytest.fixture(scope="session")
def colab_python() -> Path:
    if not COLAB_PYTHON:
        pytest.fail("COLAB_PYTHON is not set: run `make test`, which builds .venv-colab")
    return Path(COLAB_PYTHON)


def python_version(python: Path) -> str:
    return subprocess.run(
        [python, "-c", "import platform; print(platform.python_version())"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()


@pytest.fixture(scope="session")
def redirected_git(tmp_path_factory) -> Path:
    """A git config that sends the repository's canonical address to a local clone of the
    working tree (tracked and untracked files that git does not ignore, committed once)."""
    tmp = tmp_path_factory.mktemp("github")
    clone = tmp / "clone"
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout.split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)
    config = tmp / "gitconfig"
    config.write_text(
        "[user]\n\tname = test\n\temail = test@example.invalid\n"
        f'[url "{clone.as_uri()}"]\n\tinsteadOf = {nbtools.repository_url()}\n'
    )
    env = {**os.environ, "GIT_CONFIG_GLOBAL": str(config), "GIT_CONFIG_NOSYSTEM": "1"}
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "snapshot"]):
        subprocess.run(["git", *command], cwd=clone, env=env, check=True, capture_output=True)
    return config


def colab_runtime(base: Path, where: Path) -> tuple[Path, dict[str, str]]:
    """A fresh environment on top of the Colab one: its Python, and the process environment."""
    subprocess.run([base, "-m", "venv", "--without-pip", where / "venv"], check=True)
    python = where / "venv" / "bin" / "python"
    site, base_site = purelib(python), purelib(base)
    stub = where / "stub" / "google"
    (stub / "colab").mkdir(parents=True)
    (stub / "__init__.py").write_text("")
    (stub / "colab" / "__init__.py").write_text('"""A stand-in for Colab\'s module."""\n')
    # Colab's packages, then the stand-in, imported at start-up as Colab's kernel does.
    (site / "colab.pth").write_text(f"{base_site}\n{where / 'stub'}\nimport google.colab\n")
    kernels = where / "jupyter" / "kernels" / "python3"
    kernels.mkdir(parents=True)
    argv = [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec = {"argv": argv, "display_name": "Python 3", "language": "python"}
    (kernels / "kernel.json").write_text(json.dumps(spec))
    env = {
        key: value for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "COURSE_", "JUPYTER", "VIRTUAL_ENV", "OMP_", "NPY_"))
    }
    env |= {"JUPYTER_PATH": str(where / "jupyter"), "MPLBACKEND": "module://matplotlib_inline"
            ".backend_inline", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return python, env


PATHS = nbtools.notebook_paths()


@pytest.mark.parametrize("path", PATHS, ids=[p.name[:2] for p in PATHS])
def test_notebook_runs_as_on_colab(path, colab_python, redirected_git, tmp_path):
    python, env = colab_runtime(colab_python, tmp_path)
    env["GIT_CONFIG_GLOBAL"] = str(redirected_git)
    work = tmp_path / "content"  # Colab's working folder: the notebook and nothing else
    work.mkdir()
    shutil.copy(path, work)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    done = subprocess.run(
        [python, driver, path.name], cwd=work, env=env, capture_output=True, text=True,
        timeout=1200,
    )
    assert done.returncode == 0, f"{path.name} failed on the Colab runtime:\n{done.stderr[-4000:]}"
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["colab"] is True
    assert Path(report["module"]).is_relative_to(tmp_path / "venv"), report["module"]
    assert report["python"] == python_version(colab_python)

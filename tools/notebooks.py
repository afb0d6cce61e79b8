"""Keep every notebook's Colab badge and setup cell in step with the one canonical address.

    python tools/notebooks.py sync                      # rewrite badges and setup cells
    python tools/notebooks.py new 05_softmax "Title"    # start a notebook from the template

The address lives only in pyproject.toml ([project.urls] Repository); tests/test_course.py
fails when a notebook disagrees with what this module generates.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
BADGE_RE = re.compile(r"\[!\[Open In Colab\]\([^)]*\)\]\([^)]*\)")


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
    source = os.environ.get("COURSE_UTILS_SOURCE", "git+{repository_url()}")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", source], check=True)
    importlib.invalidate_caches()'''


def notebook_paths() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def sync(path: Path) -> bool:
    """Rewrite the badge (cell 1) and the setup cell (cell 2) of one notebook; True if changed."""
    nb = nbformat.read(path, as_version=4)
    first, second = nb.cells[0], nb.cells[1]
    new_first = BADGE_RE.sub(lambda _: badge(path.name), first.source)
    new_second = setup_cell_source()
    if (new_first, new_second) == (first.source, second.source):
        return False
    first.source, second.source = new_first, new_second
    nbformat.write(nb, path)
    return True


def new(stem: str, title: str) -> Path:
    """Create notebooks/<stem>.ipynb with the title, badge and setup cell (no outputs yet)."""
    path = NOTEBOOKS / f"{stem}.ipynb"
    if path.exists():
        raise FileExistsError(path)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell(f"# {title}\n\n{badge(path.name)}\n"),
        nbformat.v4.new_code_cell(setup_cell_source()),
    ]
    nbformat.write(nb, path)
    return path


if __name__ == "__main__":
    command, *rest = sys.argv[1:] or ["sync"]
    if command == "sync":
        changed = [p.name for p in notebook_paths() if sync(p)]
        print("updated: " + (", ".join(changed) if changed else "nothing"))
    elif command == "new" and len(rest) == 2:
        print(new(*rest))
    else:
        sys.exit(__doc__)

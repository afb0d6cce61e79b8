"""Build the course's website from the notebooks' stored outputs: `make site`.

Nothing is executed and nothing is fetched: the pages render what the tests verified, with MathJax
(from the npm registry, `site/package.json`) and the theme's fonts and scripts served from the site
folder. The sources are staged in ``build/site-src`` (the README becomes the landing page, links
to files that are not pages point at the repository, the Colab badge image is served locally,
stream outputs are merged and their carriage returns applied, as JupyterLab shows them) and
rendered by Sphinx with MyST-NB into ``build/site`` (``site/conf.py``).

    python tools/site.py [--out build/site]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from notebooks import notebook_paths, repository_url  # tools/notebooks.py, beside this file

ROOT = Path(__file__).resolve().parents[1]
REPOSITORY = repository_url()
BADGE_URL = "https://colab.research.google.com/assets/colab-badge.svg"
BADGE = "colab-badge.svg"
MATHJAX = ROOT / "site" / "node_modules" / "mathjax" / "es5"
LINK = re.compile(r"\]\((?!https?://|#|mailto:)(<[^>]+>|(?:[^()\s]|\([^()\s]*\))+)\)")
MATH = re.compile(r"\$[^$]*\$")


def rewrite_links(text: str, pages: set[str], prefix: str) -> str:
    """Links between pages stay relative (``notebooks/05_x.ipynb`` -> ``05_x.ipynb``; anchors as
    JupyterLab names headings, less their maths, which MyST leaves out of its anchors); links to
    any other file of the repository point at it on GitHub; the Colab badge image is the local
    copy. ``prefix`` is the source file's folder in the repository."""

    def one(match: re.Match[str]) -> str:
        target, _, anchor = match.group(1).strip("<>").partition("#")
        name = Path(target).name
        if target == BADGE:
            return match.group(0)
        if name in pages:
            return f"](<{name}{'#' + MATH.sub('', anchor) if anchor else ''}>)"
        path = Path(prefix, target).as_posix()
        return f"]({REPOSITORY}/blob/main/{path}{'#' + anchor if anchor else ''})"

    return LINK.sub(one, text.replace(BADGE_URL, BADGE))


def _overwrite(line: str) -> str:
    """One line as a terminal shows it: each carriage return starts writing again at column 0,
    over what is there (a shorter write leaves the rest of the longer one)."""
    shown = ""
    for part in line.split("\r"):
        shown = part + shown[len(part):]
    return shown


def merge_streams(outputs: list[dict]) -> list[dict]:
    """Stored outputs with each run of stream outputs to the same stream merged into one, and
    carriage returns applied as JupyterLab applies them: a progress bar stored as its 0% and 100%
    writes, each after a ``\r``, renders as the one line a learner saw, not as two lines (a
    browser shows a ``\r`` inside ``<pre>`` as a line break)."""
    merged: list[dict] = []
    for output in outputs:
        if (output.get("output_type") == "stream" and merged
                and merged[-1].get("output_type") == "stream"
                and merged[-1].get("name") == output.get("name")):
            merged[-1] = {**merged[-1], "text": "".join(merged[-1]["text"]) + "".join(
                output["text"])}
        else:
            merged.append(dict(output))
    for output in merged:
        if output.get("output_type") == "stream":
            text = "".join(output["text"]).replace("\r\n", "\n")
            output["text"] = "\n".join(_overwrite(line) for line in text.split("\n"))
    return merged


def landing_page(pages: list[str]) -> str:
    """The README, with a hidden table of contents that gives the site its sidebar."""
    readme = (ROOT / "README.md").read_text()
    toc = "\n".join(Path(page).stem for page in pages)
    return (rewrite_links(readme, set(pages), "") + "\n\n```{toctree}\n:hidden:\n:maxdepth: 1\n\n"
            f"{toc}\n```\n")


def stage(src: Path) -> None:
    """Copy and adapt every source of the site into ``src``."""
    if src.exists():
        shutil.rmtree(src)
    shutil.copytree(ROOT / "site", src, ignore=shutil.ignore_patterns("node_modules", "package*"))
    if not (MATHJAX / "tex-mml-chtml.js").exists():
        sys.exit(f"MathJax is missing at {MATHJAX}: run `make site` (it installs it with npm)")
    shutil.copytree(MATHJAX, src / "_static" / "mathjax")
    pages = [path.name for path in notebook_paths()]
    glossary = ROOT / "notebooks" / "glossary.md"
    if glossary.exists():
        pages.append(glossary.name)
        text = rewrite_links(glossary.read_text(), set(pages), "notebooks")
        (src / glossary.name).write_text(text)
    for path in notebook_paths():
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "markdown":
                source = "".join(cell["source"])
                cell["source"] = rewrite_links(source, set(pages), "notebooks")
            elif cell["cell_type"] == "code":
                cell["outputs"] = merge_streams(cell.get("outputs", []))
        (src / path.name).write_text(json.dumps(nb, ensure_ascii=False))
    (src / "index.md").write_text(landing_page(pages))


def build(out: Path) -> None:
    src = ROOT / "build" / "site-src"
    start = time.perf_counter()
    stage(src)
    if out.exists():
        shutil.rmtree(out)
    subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", "--keep-going",
                    "-d", str(ROOT / "build" / "site-doctrees"), str(src), str(out)], check=True)
    print(f"site built in {time.perf_counter() - start:.0f} s: {out}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "site")
    build(parser.parse_args().out.resolve())

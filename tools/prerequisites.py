"""The course's concepts: where each one is introduced, and where a notebook uses one too early.

    python tools/prerequisites.py check       # the registry's problems and every early use
    python tools/prerequisites.py hits NAME   # every cell where concept NAME's patterns match
    python tools/prerequisites.py glossary    # rewrite notebooks/glossary.md (make glossary)

The registry is ``notebooks/concepts.toml``: one ``[[concept]]`` table per concept with its
``name``, a one-line ``definition`` (the glossary's), the ``notebook`` ("07") and the ``section``
(a heading's text, without its number: "The chain rule") that introduce it, and regular
expressions that detect its use: ``markdown`` ones see the prose a learner reads (markdown outside
code, and code comments), ``code`` ones see code (code cells and the code of hints and solutions,
without comments and import lines, and inline `code` in markdown). Stored outputs are not text.

A use is early in a notebook before the introducing one, and in the introducing notebook before
its section's heading cell (its title cell, which lists what it will teach, aside). Allowed
anywhere: a use inside a ``> **Preview (notebook NN).**`` box (all its ``>`` lines), and in the
sections of notebook 00 named in ``EXEMPT`` (the course map and the notation table). A preview box
also licenses the concepts it mentions for the rest of its section (until the next heading of the
same or a higher level): it says enough of the later idea to read that section.
``tests/test_prerequisites.py`` runs ``registry_problems`` and ``violations`` on the notebooks.
"""

from __future__ import annotations

import io
import json
import re
import sys
import tokenize
import tomllib
from dataclasses import dataclass
from pathlib import Path

from notebooks import notebook_paths  # tools/notebooks.py, beside this file

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
REGISTRY = NOTEBOOKS / "concepts.toml"
GLOSSARY = NOTEBOOKS / "glossary.md"
EXEMPT = {"00": ("The course map", "Notation")}  # sections whose uses are allowed (00's maps)

HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.M)
NUMBER_RE = re.compile(r"^\d+(\.\d+)*\s*[.·:]?\s+")  # "5. ", "16 · ", "3.2 " before a title
FENCE_RE = re.compile(r"^ {0,3}```[^\n]*\n(.*?)^ {0,3}```[^\n]*$", re.M | re.S)
INLINE_CODE_RE = re.compile(r"`([^`\n]+)`")
PREVIEW_RE = re.compile(r"^>\s*\*\*Preview \(notebooks?\b")
NOTEBOOK_LINK_RE = re.compile(r"\[[^\]\n]*\]\([^)\s]*\.ipynb[^)\s]*\)")  # a notebook's title
LINK_TARGET_RE = re.compile(r"\]\([^)\s]*\)")  # the (target) of [text](target)
HTML_TAG_RE = re.compile(r"</?[a-zA-Z][^>\n]*>")
IMPORT_RE = re.compile(r"^[ \t]*(?:from[ \t]+\S+[ \t]+)?import[ \t][^\n]*$", re.M)  # the preamble's


@dataclass(frozen=True)
class Concept:
    name: str
    definition: str
    notebook: str  # two digits
    section: str  # a heading's text without its number
    markdown: tuple[re.Pattern[str], ...]
    code: tuple[re.Pattern[str], ...]


@dataclass(frozen=True)
class Cell:
    """The text of one cell as a learner reads it, split into prose and code."""

    index: int
    prose: str  # markdown outside code, preview boxes blanked; comments of code
    code: str  # a code cell or fenced code (without comments and imports); inline `code`
    exempt: bool = False
    preview: str = ""  # the text of the cell's preview boxes


@dataclass(frozen=True)
class Notebook:
    number: str
    name: str  # the file name, 05_exponentials_logarithms_and_softmax.ipynb
    cells: tuple[Cell, ...]
    headings: tuple[tuple[int, int, str], ...]  # (cell index, level, heading text) in order


@dataclass(frozen=True)
class Use:
    concept: Concept
    notebook: str
    cell: int
    text: str  # the matched text with a little context

    def __str__(self) -> str:
        where = f"notebook {self.concept.notebook}, section {self.concept.section!r}"
        return (f"{self.concept.name!r} used in notebook {self.notebook} cell {self.cell} "
                f"({self.text}) before it is introduced ({where})")


# --- the registry --------------------------------------------------------------------------------


def load_concepts(path: Path = REGISTRY) -> list[Concept]:
    with open(path, "rb") as f:
        tables = tomllib.load(f)["concept"]
    return [Concept(t["name"], t["definition"], t["notebook"], t["section"],
                    tuple(re.compile(p) for p in t.get("markdown", [])),
                    tuple(re.compile(p) for p in t.get("code", [])))
            for t in tables]


# --- the notebooks as text -----------------------------------------------------------------------


def strip_number(heading: str) -> str:
    return NUMBER_RE.sub("", heading, count=1)


def blank_previews(markdown: str) -> tuple[str, str]:
    """(the markdown with every preview box — from its first line, all its ``>`` lines — blanked,
    the text of those boxes)."""
    lines, boxes, inside = markdown.split("\n"), [], False
    for i, line in enumerate(lines):
        inside = bool(PREVIEW_RE.match(line)) or (inside and line.startswith(">"))
        if inside:
            boxes.append(line)
            lines[i] = ""
    return "\n".join(lines), "\n".join(boxes)


def split_code(code: str) -> tuple[str, str]:
    """(comments, code without comments) of a piece of Python; where it does not tokenize, a
    line's ``#...`` counts as its comment."""
    lines, notes = code.split("\n"), []
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.COMMENT:
                (row, col), text = token.start, token.string
                notes.append(text)
                lines[row - 1] = lines[row - 1][:col]  # a comment runs to the end of its line
    except (tokenize.TokenError, IndentationError, SyntaxError):
        notes = re.findall(r"#[^\n]*", code)
        lines = [re.sub(r"#.*", "", line) for line in code.split("\n")]
    return "\n".join(notes), IMPORT_RE.sub("", "\n".join(lines))


def split_markdown(source: str) -> tuple[str, str]:
    """(prose, code) of a markdown cell, preview boxes left out of both."""
    source = blank_previews(source)[0]
    fenced = FENCE_RE.findall(source)
    prose = FENCE_RE.sub("\n", source)
    inline = INLINE_CODE_RE.findall(prose)
    prose = NOTEBOOK_LINK_RE.sub(" ", INLINE_CODE_RE.sub(" ", prose))
    prose = HTML_TAG_RE.sub(" ", LINK_TARGET_RE.sub("]", prose))
    notes, code = split_code("\n".join(fenced))
    return prose + "\n" + notes, code + "\n" + "\n".join(inline)


def read_notebook(number: str, name: str, nb: dict) -> Notebook:
    """A notebook (its JSON as a dict) as the text its learner reads."""
    cells, headings, exempt_level = [], [], 0
    for index, cell in enumerate(nb["cells"]):
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        preview = ""
        if cell["cell_type"] == "markdown":
            prose, code = split_markdown(source)
            preview = blank_previews(source)[1]
            for hashes, text in HEADING_RE.findall(FENCE_RE.sub("\n", source)):
                headings.append((index, len(hashes), text))
                if strip_number(text) in EXEMPT.get(number, ()):
                    exempt_level = len(hashes)
                elif exempt_level and len(hashes) <= exempt_level:
                    exempt_level = 0
        elif cell["cell_type"] == "code":
            prose, code = split_code(source)
        else:
            continue
        cells.append(Cell(index, prose, code, exempt=bool(exempt_level), preview=preview))
    return Notebook(number, name, tuple(cells), tuple(headings))


def load_notebooks() -> dict[str, Notebook]:
    notebooks = {}
    for path in notebook_paths():
        with open(path, encoding="utf-8") as f:
            notebooks[path.name[:2]] = read_notebook(path.name[:2], path.name, json.load(f))
    return notebooks


def section(notebook: Notebook, title: str) -> tuple[int, int, str] | None:
    """(first cell, cell after the last, full heading) of the section whose heading reads
    ``title`` (with or without its number); the section ends at the next heading of its level or
    higher."""
    for i, (index, level, text) in enumerate(notebook.headings):
        if title in (text, strip_number(text)):
            after = (j for j, lv, _ in notebook.headings[i + 1:] if lv <= level and j > index)
            return index, next(after, notebook.cells[-1].index + 1), text
    return None


# --- uses, violations, the registry's own problems -----------------------------------------------


def uses(concept: Concept, notebook: Notebook) -> list[Use]:
    """Every cell of ``notebook`` where one of the concept's patterns matches (first match each)."""
    found = []
    for cell in notebook.cells:
        for patterns, text in ((concept.markdown, cell.prose), (concept.code, cell.code)):
            match = next((m for p in patterns if (m := p.search(text))), None)
            if match:
                context = text[max(match.start() - 25, 0):match.end() + 25]
                found.append(Use(concept, notebook.number, cell.index,
                                 repr(" ".join(context.split()))))
                break
    return found


def licensed(concept: Concept, notebook: Notebook) -> set[int]:
    """The cells where a preview box that mentions ``concept`` licenses its use: from the box's
    cell to the next heading of the level of the box's section, or a higher one."""
    cells: set[int] = set()
    for cell in notebook.cells:
        if not any(p.search(cell.preview) for p in concept.markdown + concept.code):
            continue
        above = [lv for j, lv, _ in notebook.headings if j <= cell.index]
        level = above[-1] if above else 1
        end = next((j for j, lv, _ in notebook.headings if j > cell.index and lv <= level),
                   notebook.cells[-1].index + 1)
        cells |= {c.index for c in notebook.cells if cell.index <= c.index < end}
    return cells


def violations(concepts: list[Concept], notebooks: dict[str, Notebook]) -> list[Use]:
    """Uses of a concept before it is introduced: in an earlier notebook, or in the introducing
    notebook before its section's heading (its title cell, which lists what it teaches, aside).
    Exempt cells, and cells a preview box licenses, are left out."""
    early = []
    for concept in concepts:
        home = notebooks.get(concept.notebook)
        span = section(home, concept.section) if home else None
        for number, notebook in notebooks.items():
            if number > concept.notebook:
                break
            first = notebook.cells[0].index
            before = {c.index for c in notebook.cells if not c.exempt and (
                number < concept.notebook
                or (span is not None and first < c.index < span[0]))}
            before -= licensed(concept, notebook)
            early += [use for use in uses(concept, notebook) if use.cell in before]
    return sorted(early, key=lambda u: (u.notebook, u.cell, u.concept.name))


def registry_problems(concepts: list[Concept], notebooks: dict[str, Notebook]) -> list[str]:
    """What is wrong with the registry itself: a duplicate name, a notebook or section that does
    not exist, a concept without patterns, a pattern that matches nowhere in the introducing
    notebook, a section that does not use its concept (so a deleted introduction is caught)."""
    problems, names = [], set()
    for concept in concepts:
        label = f"{concept.name!r} ({concept.notebook}, {concept.section!r})"
        if concept.name.lower() in names:
            problems.append(f"{label}: the name appears twice")
        names.add(concept.name.lower())
        if not concept.markdown + concept.code:
            problems.append(f"{label}: no patterns")
        notebook = notebooks.get(concept.notebook)
        if notebook is None:
            problems.append(f"{label}: there is no notebook {concept.notebook}")
            continue
        for kind, patterns in (("markdown", concept.markdown), ("code", concept.code)):
            for pattern in patterns:
                if not any(pattern.search(c.prose if kind == "markdown" else c.code)
                           for c in notebook.cells):
                    problems.append(f"{label}: the {kind} pattern {pattern.pattern!r} matches "
                                    f"nowhere in notebook {concept.notebook}")
        span = section(notebook, concept.section)
        if span is None:
            titles = "; ".join(strip_number(text) for _, level, text in notebook.headings
                               if level == 2)
            problems.append(f"{label}: {notebook.name} has no heading {concept.section!r} "
                            f"(its sections: {titles})")
        elif not any(span[0] <= use.cell < span[1] for use in uses(concept, notebook)):
            problems.append(f"{label}: no pattern matches in that section, which should "
                            f"introduce it")
    return problems


# --- the glossary --------------------------------------------------------------------------------


def anchor(heading: str) -> str:
    """The id JupyterLab gives a heading: its rendered text (``textContent``: markdown's `code`,
    **bold** and *emphasis* marks gone, maths left as written) with each space replaced by ``-``
    (``renderMarkdown.createHeaderId`` in @jupyterlab/rendermime)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"`([^`]*)`", r"\1", text)
    text = re.sub(r"(\*\*|__)(.+?)\1", r"\2", text)
    text = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*", r"\1", text)
    return text.replace(" ", "-")


def glossary(concepts: list[Concept], notebooks: dict[str, Notebook]) -> str:
    """notebooks/glossary.md: every concept, alphabetically, linked to where it is introduced."""
    lines = [
        "# Glossary",
        "",
        "Every symbol, word and idiom the course relies on, with the notebook and section that",
        "introduce it. Generated from `concepts.toml` by `make glossary`; do not edit by hand.",
        "",
    ]
    for concept in sorted(concepts, key=lambda c: c.name.lower().lstrip("`\\$.@[")):
        notebook = notebooks[concept.notebook]
        span = section(notebook, concept.section)
        target = f"{notebook.name}#{anchor(span[2])}" if span else notebook.name
        if re.search(r"[\s<>]", target) or target.count("(") != target.count(")"):
            target = f"<{target}>"
        link = f"[{concept.notebook}, {span[2] if span else concept.section}]({target})"
        name = concept.name.replace("*", "\\*")
        lines.append(f"- **{name}**: {concept.definition} ({link})")
    return "\n".join(lines) + "\n"


# --- the command line ----------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    command, *rest = argv or ["check"]
    concepts, notebooks = load_concepts(), load_notebooks()
    if command == "glossary" and not rest:
        GLOSSARY.write_text(glossary(concepts, notebooks), encoding="utf-8")
        print(f"wrote {GLOSSARY.relative_to(ROOT)}: {len(concepts)} concepts")
        if problems := registry_problems(concepts, notebooks):  # a missing section: no anchor
            print("the registry has problems (tests/test_prerequisites.py fails on them):\n"
                  + "\n".join(problems), file=sys.stderr)
    elif command == "check" and not rest:
        problems, early = registry_problems(concepts, notebooks), violations(concepts, notebooks)
        print("\n".join(problems + [str(use) for use in early]))
        print(f"{len(concepts)} concepts; {len(problems)} registry problems; "
              f"{len(early)} uses before introduction")
        return 1 if problems or early else 0
    elif command == "hits" and len(rest) == 1:
        if not any(c.name == rest[0] for c in concepts):
            print(f"no concept is named {rest[0]!r}")
            return 2
        for concept in (c for c in concepts if c.name == rest[0]):
            print(f"{concept.name}: introduced in {concept.notebook}, {concept.section!r}")
            for notebook in notebooks.values():
                for use in uses(concept, notebook):
                    print(f"  {use.notebook} c{use.cell}: {use.text}")
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The prerequisite guard: no notebook uses a symbol, word or idiom before the notebook (and the
section) that introduces it, as the registry ``notebooks/concepts.toml`` records; the registry
itself is sound; and the glossary is the one the registry generates (``make glossary``).

The logic lives in ``tools/prerequisites.py``; CONTRIBUTING.md ("The concept registry") says how to
add a concept."""

from __future__ import annotations

import json
import re
import sys

import pytest
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import prerequisites as prq  # noqa: E402

CONCEPTS = prq.load_concepts()
NOTEBOOKS = prq.load_notebooks()
EARLY = prq.violations(CONCEPTS, NOTEBOOKS)


def test_the_registry_is_sound():
    assert len(CONCEPTS) >= 100, f"only {len(CONCEPTS)} concepts"
    problems = prq.registry_problems(CONCEPTS, NOTEBOOKS)
    assert not problems, "concepts.toml:\n" + "\n".join(problems)


@pytest.mark.parametrize("number", sorted(NOTEBOOKS))
def test_no_concept_is_used_before_it_is_introduced(number):
    early = [str(use) for use in EARLY if use.notebook == number]
    assert not early, (f"{len(early)} uses before introduction (introduce the idea first, or "
                       f"put the mention in a '> **Preview (notebook NN).**' box):\n"
                       + "\n".join(early))


def test_the_glossary_is_generated_from_the_registry():
    expected = prq.glossary(CONCEPTS, NOTEBOOKS)
    assert prq.GLOSSARY.read_text(encoding="utf-8") == expected, (
        "notebooks/glossary.md is stale: run `make glossary`")


# --- the guard itself, on copies of the notebooks in memory --------------------------------------


def concept(name: str) -> prq.Concept:
    return next(c for c in CONCEPTS if c.name == name)


def with_cell(number: str, index: int, cell_type: str, source: str) -> dict[str, prq.Notebook]:
    """The notebooks, with notebook ``number`` read from a copy of its file that has a new cell
    inserted at ``index``."""
    path = next(prq.NOTEBOOKS.glob(f"{number}_*.ipynb"))
    nb = json.loads(path.read_text(encoding="utf-8"))  # a fresh copy: the file is not touched
    nb["cells"].insert(index, {"cell_type": cell_type, "metadata": {}, "source": source,
                               **({"outputs": [], "execution_count": None}
                                  if cell_type == "code" else {})})
    return {**NOTEBOOKS, number: prq.read_notebook(number, path.name, nb)}


def new_uses(notebooks: dict[str, prq.Notebook], name: str) -> list[prq.Use]:
    before = {(u.notebook, u.cell) for u in EARLY if u.concept.name == name}
    return [u for u in prq.violations([concept(name)], notebooks)
            if (u.notebook, u.cell) not in before]


@pytest.mark.parametrize("name, number, cell_type, source", [
    ("KV cache", "02", "markdown", "Decoding keeps a KV cache of the keys seen so far."),
    ("gather", "01", "code", "picked = scores.gather(-1, targets[..., None])[..., 0]\n"),
    ("likelihood", "04", "markdown", "<details><summary>Hint 1</summary>\n\n```python\n"
                                     "# the negative log-likelihood of the data\n```\n</details>"),
])
def test_a_late_concept_in_an_early_notebook_fails_naming_both(name, number, cell_type, source):
    late = concept(name)
    found = new_uses(with_cell(number, 3, cell_type, source), name)
    assert [(u.notebook, u.cell) for u in found] == [(number, 3)]
    message = str(found[0])
    assert f"{name!r} used in notebook {number} cell 3" in message
    assert f"notebook {late.notebook}, section {late.section!r}" in message


def test_a_use_before_the_introducing_section_fails_within_its_notebook():
    found = new_uses(with_cell("05", 3, "markdown", "We compute a logsumexp here."), "logsumexp")
    assert [(u.notebook, u.cell) for u in found] == [("05", 3)]


@pytest.mark.parametrize("number, index, source", [
    ("02", 3, "> **Preview (notebook 15).** The KV cache keeps the keys\n> of earlier tokens.\n"),
    ("00", next(i for i, _, text in NOTEBOOKS["00"].headings if text == "Notation") + 1,
     "| KV cache | the keys and values kept while decoding | 15 |"),
    ("17", 3, "A KV cache again."),
])
def test_previews_the_notation_table_and_later_notebooks_are_allowed(number, index, source):
    assert new_uses(with_cell(number, index, "markdown", source), "KV cache") == []


def test_a_preview_box_licenses_its_concept_to_the_end_of_its_section_only():
    """A box that says what a KV cache is covers the rest of its section, not the next one."""
    heading = next(i for i, level, _ in NOTEBOOKS["02"].headings if level == 2)
    box = "> **Preview (notebook 15).** A KV cache keeps the keys of earlier tokens.\n"
    notebooks = with_cell("02", heading + 1, "markdown", box + "\nSo the KV cache grows.")
    assert new_uses(notebooks, "KV cache") == []
    path = next(prq.NOTEBOOKS.glob("02_*.ipynb"))
    nb = json.loads(path.read_text(encoding="utf-8"))
    nb["cells"].insert(heading + 1, {"cell_type": "markdown", "metadata": {}, "source": box})
    later = next(i for i, level, _ in NOTEBOOKS["02"].headings if level == 2 and i > heading)
    nb["cells"].insert(later + 2, {"cell_type": "markdown", "metadata": {},
                                   "source": "The KV cache again, in the next section."})
    found = new_uses({**NOTEBOOKS, "02": prq.read_notebook("02", path.name, nb)}, "KV cache")
    assert [(u.notebook, u.cell) for u in found] == [("02", later + 2)]


def test_a_deleted_introduction_is_caught():
    path = next(prq.NOTEBOOKS.glob("05_*.ipynb"))
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:  # the heading of the section goes, and every use of the concept
        text = re.sub(r"^#+ .*logsumexp.*$", "## Another title", "".join(cell["source"]),
                      flags=re.M)
        cell["source"] = text.replace("logsumexp", "LSE").replace("log-sum-exp", "LSE")
    notebooks = {**NOTEBOOKS, "05": prq.read_notebook("05", path.name, nb)}
    problems = prq.registry_problems([concept("logsumexp")], notebooks)
    assert any("has no heading" in p for p in problems), problems
    assert any("matches nowhere in notebook 05" in p for p in problems), problems


def test_the_glossary_links_use_jupyterlabs_anchors():
    # JupyterLab: the heading's rendered text with every space replaced by "-"
    # (renderMarkdown.createHeaderId in @jupyterlab/rendermime): markup goes, the rest stays.
    assert prq.anchor("6. `*` versus `@`") == "6.-*-versus-@"
    assert prq.anchor('2. The logarithm: "what power?"') == '2.-The-logarithm:-"what-power?"'
    assert prq.anchor("8. NumPy ↔ PyTorch") == "8.-NumPy-↔-PyTorch"
    assert prq.anchor("A **bold** and *emphasis* title") == "A-bold-and-emphasis-title"
    text = prq.glossary(CONCEPTS, NOTEBOOKS)
    assert text.count("\n- **") == len(CONCEPTS)
    _, _, heading = prq.section(NOTEBOOKS["05"], "logsumexp: the log of a sum of exponentials")
    assert heading.endswith("logsumexp: the log of a sum of exponentials")
    link = f"(05_exponentials_logarithms_and_softmax.ipynb#{heading.split()[0]}-logsumexp:-the-"
    assert link + "log-of-a-sum-of-exponentials)" in text

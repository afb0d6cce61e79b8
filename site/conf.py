"""Sphinx configuration of the course's website (`make site`): the notebooks rendered from their
stored outputs, nothing executed and nothing fetched from the network (see CONTRIBUTING.md)."""

import sys
from pathlib import Path

project = "Transformer Math"
author = "the Transformer Math authors"
copyright = "2026, the Transformer Math authors"

extensions = ["myst_nb"]
root_doc = "index"
exclude_patterns = ["_build"]

# The notebooks' stored outputs are what the tests verified: render them, never execute.
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_dmath_double_inline = True  # `$$...$$` inside a paragraph is display maths, as in JupyterLab
myst_heading_anchors = 6

# Headings are linked as JupyterLab names them (spaces become '-'), so that one link (the
# glossary's, a notebook's) works in the Lab and on the site; tools/site.py drops the maths,
# which MyST leaves out.
sys.path.insert(0, str(Path(__file__).parent))
myst_heading_slug_func = "anchors.jupyterlab_anchor"
suppress_warnings = ["myst.header"]  # the notebooks' titles sit above "## 1." sections

# Math: MathJax 3 from the npm registry, copied into _static by tools/site.py (no CDN).
mathjax_path = "mathjax/tex-mml-chtml.js"
mathjax3_config = {"tex": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]]}}

html_theme = "sphinx_book_theme"
html_title = "Transformer Math"
html_static_path = ["_static"]
html_css_files = ["course.css"]
html_sourcelink_suffix = ""  # the download button offers the .ipynb itself
html_last_updated_fmt = None
html_context = {"default_mode": "light"}  # the notebooks' figures are drawn on white
html_theme_options = {
    "use_download_button": True,
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "show_navbar_depth": 1,
    "show_toc_level": 2,
    "navigation_with_keys": False,
}

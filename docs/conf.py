"""Sphinx configuration of the dphist documentation site (``make docs``).

The source directory is the repository root (``sphinx-build -c docs . docs/_build/html``), so
README.md, ARCHITECTURE.md, the plugins' READMEs and the notebooks are read where they live and
their relative links between each other resolve.  ``include_patterns`` keeps everything else
out.  Notebooks are rendered from their committed outputs (``nb_execution_mode = "off"``): nbval
under ``make test`` is what executes them.
"""
from __future__ import annotations

import re

project = "dphist"
author = "dphist developers"
copyright = "dphist developers"

extensions = [
    "myst_nb",                      # Markdown (MyST) and notebooks
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",          # NumPy-style "Parameters" sections
    "sphinx.ext.mathjax",
]

root_doc = "docs/index"
include_patterns = [
    "docs/index.md", "docs/api.md", "docs/api/generated/**",
    "README.md", "ARCHITECTURE.md", "BENCHMARKS.md",
    "plugins/*/README.md",
    "notebooks/*.ipynb",
    "notebooks/coursework/README.md", "notebooks/coursework/student/*.ipynb",
]
exclude_patterns = ["docs/_build", ".venv", "**/.ipynb_checkpoints"]

nb_execution_mode = "off"           # use the outputs committed with each notebook
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
# notebooks and READMEs jump from "#" to "###" on purpose in places; that is style, not breakage
suppress_warnings = ["myst.header"]

# module pages: the module's docstring and members (autodoc), and its submodules; no summary tables
# autosummary resolves templates from the source directory (the repository root)
templates_path = ["docs/_templates"]
autosummary_generate = True
autosummary_imported_members = False
# ignore-module-all: a package page documents what the package defines, not what its __all__
# re-exports (documented once, where it is defined)
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
napoleon_google_docstring = False

html_theme = "furo"
html_title = "dphist"
html_extra_path = ["_root"]         # index.html at the site root: a redirect to docs/index.html
html_static_path: list[str] = []

# README links each notebook's built page as docs/_build/html/notebooks/NAME.html (right when
# the README is read in the repository); inside the site the page is the notebook document itself.
_BUILT_PAGE = re.compile(r"\]\(docs/_build/html/(notebooks/[^)]+?)\.html\)")


# Docstrings write set sizes and absolute values as |C| or |x_i - m|, plain text; reStructuredText
# would read them as substitution references.  Escape every | in running text: not inside
# ``literals``, literal blocks (after "::"), code directives, doctests, or table and line-block
# lines (which start with |).
_LITERAL = re.compile(r"(``.*?``)")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _escape_bars(app, what, name, obj, options, lines):
    block_indent = None          # indentation of the line that opened a literal block
    for i, line in enumerate(lines):
        stripped = line.strip()
        if block_indent is not None:
            if not stripped or _indent(line) > block_indent:
                continue
            block_indent = None
        if stripped.endswith("::") or stripped.startswith((".. code", ".. math", ".. highlight")):
            block_indent = _indent(line)
        if "|" not in line or stripped.startswith(("|", "+", ">>>", "...")):
            continue
        parts = _LITERAL.split(line)
        lines[i] = "".join(p if p.startswith("``") else p.replace("|", r"\|") for p in parts)


def _site_links(app, docname, source):
    if docname == "README":
        source[0] = _BUILT_PAGE.sub(r"](\1.ipynb)", source[0])


def setup(app):
    app.connect("source-read", _site_links)
    app.connect("autodoc-process-docstring", _escape_bars)

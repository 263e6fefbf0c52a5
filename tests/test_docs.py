"""The documentation site builds with warnings as errors (what `make docs` runs), into a temporary folder.

Kills: a docstring that breaks reStructuredText (e.g. a list with no blank line before it), a notebook
or README missing from the site's table of contents, a broken cross-reference, a README link to a
notebook page that does not exist.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_docs_build_without_warnings(tmp_path):
    out = tmp_path / "html"
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-c", "docs", "-W", "--keep-going", "-q",
                           "-d", str(tmp_path / "doctrees"), ".", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"sphinx-build failed:\n{proc.stderr[-4000:]}"
    # every notebook and the API reference of the core and each plugin have a page
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        page = out / "notebooks" / f"{notebook.stem}.html"
        assert page.is_file(), f"no page for {notebook.name}"
    for package in ("dphist", "dphist_boost", "dphist_ahp", "dphist_dawa", "dphist_sortaki", "dphist_sreb_gca",
                    "dphist_acs2012"):
        assert (out / "docs" / "api" / "generated" / f"{package}.html").is_file(), f"no API page for {package}"
    assert "PrivateKernel" in (out / "docs" / "api" / "generated" / "dphist.kernel.private.html").read_text()
    assert (out / "index.html").is_file()


def test_readme_links_every_notebook_and_its_page():
    readme = (ROOT / "README.md").read_text()
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert f"](notebooks/{notebook.name})" in readme, f"README does not link notebooks/{notebook.name}"
        assert f"](docs/_build/html/notebooks/{notebook.stem}.html)" in readme, (
            f"README does not link the built page of {notebook.name}")
    # and links nothing that is not there
    for target in re.findall(r"\]\((notebooks/[^)]+\.ipynb)\)", readme):
        assert (ROOT / target).is_file(), f"README links {target}, which does not exist"

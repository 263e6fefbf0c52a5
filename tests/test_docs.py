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

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_docs_build_without_warnings(tmp_path):
    out = tmp_path / "html"
    # toc_object_entries off: the site's configuration puts every documented class and function in the
    # tables of contents, and the theme copies the whole tree into each of the 200-odd pages' sidebars
    # (quadratic: 40 % of the build).  Every docstring is still parsed, rendered and cross-referenced
    # under -W; only the sidebar entries of API objects, which add no warning of their own, are left out.
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-c", "docs", "-W", "--keep-going", "-q",
                           "-D", "toc_object_entries=0", "-d", str(tmp_path / "doctrees"), ".", str(out)],
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


def test_readme_links_every_notebook():
    """Kills: a notebook missing from the README's table, or a link to a notebook that is not there."""
    readme = (ROOT / "README.md").read_text()
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert f"](notebooks/{notebook.name})" in readme, f"README does not link notebooks/{notebook.name}"
    for target in re.findall(r"\]\((notebooks/[^)]+\.ipynb)\)", readme):
        assert (ROOT / target).is_file(), f"README links {target}, which does not exist"


# ---------------------------------------------------------------- wording of the notebooks and documents
#: history instead of the project as it is
HISTORY = re.compile(r"\b(?:issue\s*#?\d+|former default|work in progress|previously|new in v?\d)", re.I)
# "DP" standing for a dynamic program (in a differential-privacy library DP means differential privacy):
# the words that come before or after it when it names the algorithm.  "eps-DP", "not DP", "DP-Sniper",
# "a DP mechanism", "DP histograms" are differential privacy and must pass.
_BEFORE = (r"optimal|exact|plain|penali[sz]ed|k-group|\$k\$-group|exactly-k|uncorrected|old|L1|segmentation|"
           r"power-of-two|one|the same|compiled|O\([^()]*(?:\([^()]*\)[^()]*)*\)\$?|\$O\([^$]*\)\$")
_AFTER = (r"table|tables|row|rows|recurrence|over|cell|cells|solves?|minimi[sz]es|keeps|selects|runs|"
          r"partitioner|is post-processing|then|returns|finds|visits|loop|loops|step")
DYNAMIC_PROGRAM = [
    re.compile(r"(?<![-\w.])DPs\b"),                    # "DPs": dynamic programs
    re.compile(r"(?<![-\w.])DP's\b"),
    re.compile(rf"(?<![-\w.])DP\s+(?:{_AFTER})\b"),
    re.compile(rf"(?:{_BEFORE})\s+DP\b(?![-\w])"),
    re.compile(r"\b(?:before|after|in|by|from|of) the DP\b(?![-\w])"),
    re.compile(r"\bthe DP\s*[.,;:)]"),
]


def wording_problems(text: str) -> list[str]:
    """History wording and "DP" used for a dynamic program, as the phrases found."""
    found = [m.group(0) for m in HISTORY.finditer(text)]
    return found + [m.group(0) for pattern in DYNAMIC_PROGRAM for m in pattern.finditer(text)]


def _documents() -> list[Path]:
    docs = [ROOT / name for name in ("README.md", "ARCHITECTURE.md", "BENCHMARKS.md", "AUDIT.md")]
    docs += sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "plugins").glob("*/README.md"))
    docs += sorted((ROOT / "notebooks").rglob("*.md"))
    return [d for d in docs if d.is_file()]


def _notebook_text(path: Path) -> str:
    import json
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    parts = []
    for cell in cells:
        parts.append("".join(cell["source"]))
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", "")))
            parts.append("".join(out.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


@pytest.mark.parametrize("path", _documents() + sorted((ROOT / "notebooks").rglob("*.ipynb")),
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_documents_speak_of_the_project_not_its_history(path):
    """Kills: "issue 13", "former default", "work in progress" in a notebook or document, and "DP" written for
    a dynamic program ("the DP keeps", "an O(n^2) DP", "DP table"); sources and printed outputs are read."""
    text = _notebook_text(path) if path.suffix == ".ipynb" else path.read_text(encoding="utf-8")
    problems = wording_problems(text)
    assert not problems, f"{path.relative_to(ROOT)}: {sorted(set(problems))}"


@pytest.mark.parametrize("sentence", [
    "The DP keeps the most negative ones.", "an $O(n^2)$ DP equal to the search", "the k-group DP runs",
    "one penalised DP (`optimal`)", "each DP row's bins", "the power-of-two DPs", "the DP's relaxation",
    "subtracts it before the DP. Check", "the exact DP over candidates", "GreedyH before issue 13",
    "With the former default, noisy-min", "the auditor's work in progress", "as previously shown",
])
def test_wording_check_flags_history_and_dynamic_programs(sentence):
    """Kills: a wording check that never fires (each sentence is one the notebooks held)."""
    assert wording_problems(sentence), sentence


@pytest.mark.parametrize("sentence", [
    "the whole run is $\\varepsilon$-DP.", "it is not DP: a reference calibration", "as DP-Sniper and StatDP do",
    "a DP mechanism publishes", "differentially private (DP) histograms", "`sortaki.dp` refuses it",
    "DP histogram algorithms split the budget", "eps_1-DP release", "the DPP partitioner (Alg. 6)",
    "publishes a histogram under epsilon-differential privacy", "the dynamic program keeps the best",
    "dp = rel.loc['dpbench']",
])
def test_wording_check_passes_differential_privacy(sentence):
    """Kills: false positives (a check so broad that "eps-DP" or "DP-Sniper" fail it)."""
    assert not wording_problems(sentence), sentence


# ---------------------------------------------------------------- figures readable at their committed size
#: text below 8 points, or a figure dpi below 100 (an inline PNG is shown at one pixel per dot)
TINY_FIGURE = re.compile(r"\b(?:fontsize|labelsize)\s*=\s*[0-7](?:\.\d+)?\b|"
                         r"""rcParams\[["'](?:figure|savefig)\.dpi["']\]\s*=\s*[0-9]{1,2}\b|\bdpi\s*=\s*[0-9]{1,2}\b""")


def tiny_figure_settings(source: str) -> list[str]:
    return [m.group(0) for m in TINY_FIGURE.finditer(source)]


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_notebook_figures_are_readable_at_their_committed_size(path):
    """Kills: 6-point tick labels, a 60 or 72 dpi figure (`plt.rcParams["figure.dpi"] = 72`), a committed
    figure squeezed to a strip (less than 200 pixels high, or a panel narrower than 300 pixels)."""
    import base64
    import io
    import json
    from PIL import Image
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    source = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert not tiny_figure_settings(source), f"{path.name}: {tiny_figure_settings(source)}"
    for cell in cells:
        for out in cell.get("outputs", []):
            png = out.get("data", {}).get("image/png")
            if png:
                width, height = Image.open(io.BytesIO(base64.b64decode("".join(png)))).size
                assert width >= 300 and height >= 200, f"{path.name}: a {width} x {height} figure"


def test_tiny_figure_check_fires_and_passes_readable_settings():
    """Kills: a figure check that never fires, or one that refuses readable settings."""
    for bad in ('ax.tick_params(labelsize=6)', 'plt.rcParams["figure.dpi"] = 72', "ax.legend(fontsize=7.5)",
                "fig.savefig(buf, dpi=60)"):
        assert tiny_figure_settings(bad), bad
    for good in ("ax.tick_params(labelsize=8)", "fontsize=10", 'plt.rcParams["figure.dpi"] = 100', "dpi=150",
                 'fontsize="small"'):
        assert not tiny_figure_settings(good), good

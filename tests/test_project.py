"""Project-level promises: the README's two commands, a valid CITATION.cff, a current ARCHITECTURE.md."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _sections(text: str) -> list[str]:
    return re.findall(r"^## (.+)$", text, re.M)


def test_readme_first_screen_says_what_then_how_to_start():
    """Kills: a README whose first section is not how to start, whose start block loses `make demo` first or the
    `make dev` the notebooks need or the way to open the quickstart, or whose first screen is CI detail."""
    text = (ROOT / "README.md").read_text()
    assert _sections(text)[0] == "Start"
    intro = text[:text.index("\n## ")]
    assert "differential privacy" in intro and len(intro.splitlines()) <= 15
    start = text[text.index("## Start"):]
    start = start[:start.index("\n## ", 3)]
    block = re.search(r"```\n(.*?)```", start, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands[0] == "make demo"
    assert commands.index("make dev") < commands.index(".venv/bin/jupyter lab notebooks/00-quickstart.ipynb")
    assert "make test" in commands
    assert "](notebooks/00-quickstart.ipynb)" in start
    first_screen = "\n".join(text.splitlines()[:40])
    for detail in ("Chromium", "Playwright", ".ci/run", "Voil"):
        assert detail not in first_screen, f"{detail!r} on the README's first screen"


#: SPDX identifier -> words the licence text must contain (its title and one clause only it has)
LICENCE_TEXTS = {
    "BSD-3-Clause": ("BSD 3-Clause License", "Neither the name of the copyright holder nor the names of its"),
    "MIT": ("MIT License", "Permission is hereby granted, free of charge"),
    "Apache-2.0": ("Apache License", "Version 2.0"),
}


def _project_table(pyproject: Path) -> str:
    try:
        import tomllib
    except ModuleNotFoundError:      # Python 3.10
        import tomli as tomllib
    return tomllib.loads(pyproject.read_text())["project"]


def test_licence_file_matches_the_declared_licence():
    """Kills: no LICENSE file, a LICENSE of another licence than pyproject.toml declares (e.g. an MIT text under
    "BSD-3-Clause"), a copyright line without the declared authors, a plugin declaring another licence, and
    a LICENSE left out of the distribution's metadata (license-files)."""
    project = _project_table(ROOT / "pyproject.toml")
    spdx = project["license"]
    assert spdx in LICENCE_TEXTS, f"no expected text for the declared licence {spdx!r}"
    text = (ROOT / "LICENSE").read_text()
    title, clause = LICENCE_TEXTS[spdx]
    assert text.startswith(title) and clause in text
    for other, (other_title, other_clause) in LICENCE_TEXTS.items():
        if other != spdx:
            assert other_clause not in text, f"LICENSE contains the {other} text"
    holders = [a["name"] for a in project["authors"]]
    assert re.search(rf"^Copyright \(c\) 2026, {re.escape(holders[0])}$", text, re.M)
    assert "LICENSE" in project.get("license-files", [])
    for plugin in sorted((ROOT / "plugins").glob("*/pyproject.toml")):
        assert _project_table(plugin)["license"] == spdx, f"{plugin.parent.name} declares another licence"


def _relative_links(text: str) -> list[str]:
    """Targets of Markdown links and images that point into the repository (no URL, no pure anchor)."""
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    return [t.split("#")[0] for t in targets if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


@pytest.mark.parametrize("document", ["README.md", "ARCHITECTURE.md", "BENCHMARKS.md"])
def test_links_resolve_to_files_in_the_repository(document):
    """Kills: a link to a page that exists only after a build (docs/_build/...), to a renamed notebook or figure,
    or to a file that was never committed."""
    text = (ROOT / document).read_text()
    links = _relative_links(text)
    if document == "README.md":
        assert len(links) >= 20                      # the notebooks, the figures, the coursework README
    missing = [t for t in links if not (ROOT / t).exists()]
    assert not missing, f"{document} links files that are not in the repository: {missing}"
    built = [t for t in links if t.startswith("docs/_build")]
    assert not built, f"{document} links pages that exist only after `make docs`: {built}"


def test_relative_links_helper_sees_links_and_skips_urls():
    """Kills: a link check that finds nothing (a regex that never matches passes every README)."""
    text = "see [a](notebooks/a.ipynb), ![f](docs/f.png), [b](https://x.org/y), [c](#start), [d](B.md#part)"
    assert _relative_links(text) == ["notebooks/a.ipynb", "docs/f.png", "B.md"]


def _cff_schema() -> dict:
    """The Citation File Format 1.2.0 JSON schema, as shipped in the cffconvert distribution (installed by
    `make dev` without its dependencies: it pins jsonschema<4, which the Jupyter stack cannot share)."""
    import importlib.metadata
    import json
    # located through the distribution's metadata: importing the package would need its dependencies
    path = importlib.metadata.distribution("cffconvert").locate_file("cffconvert/schemas/1.2.0/schema.json")
    return json.loads(path.read_text(encoding="utf-8"))


def test_citation_cff_validates_and_lists_the_papers():
    """Kills: a CITATION.cff that breaks the CFF 1.2.0 schema (a missing author, an unquoted date that YAML
    reads as a date object, a misspelt key) or that drops one of the papers dphist implements."""
    import jsonschema
    import yaml
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    schema = _cff_schema()
    errors = sorted(jsonschema.validators.validator_for(schema)(schema).iter_errors(cff), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)
    titles = " | ".join(ref["title"] for ref in cff["references"])
    for words in ("SORTaki", "Towards Accurate Histogram", "Boosting the Accuracy", "Engineering Methods",
                  "Small-Bin Availability", "Data- and Workload-Aware", "Wavelet Transforms",
                  "Lossy Compression", "Differentially Private Histogram Publication",
                  "Grouping and Smoothing", "Simple and Practical Algorithm", "Multidimensional Partitioning",
                  "Optimizing error of high-dimensional", "Optimal error of query sets"):
        assert words in titles, words


def test_citation_validation_rejects_a_broken_file():
    """Kills: a validator that accepts anything (e.g. the wrong schema, or errors never collected)."""
    import jsonschema
    import yaml
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    del cff["authors"]
    cff["date-released"] = 20261122
    schema = _cff_schema()
    assert len(list(jsonschema.validators.validator_for(schema)(schema).iter_errors(cff))) >= 2


def test_architecture_names_every_core_module():
    arch = (ROOT / "ARCHITECTURE.md").read_text()
    pkg = ROOT / "toolkit" / "dphist"
    missing = []
    for path in pkg.rglob("*.py"):
        rel = path.relative_to(pkg)
        if rel.name == "__init__.py":
            continue
        top = rel.parts[0]
        if len(rel.parts) > 1 and f"`{top}/`" in arch:
            continue  # a sub-package described as a whole
        if f"`{rel.as_posix()}`" not in arch:
            missing.append(rel.as_posix())
    assert not missing, f"ARCHITECTURE.md does not mention: {missing}"


@pytest.mark.parametrize("name", ["kernel", "components", "pipeline", "registry", "workloads", "metrics",
                                  "datasets", "cli"])
def test_layout_shows_the_architecture(name):
    pkg = ROOT / "toolkit" / "dphist"
    assert (pkg / name).is_dir() or (pkg / f"{name}.py").is_file()


#: what a path of the machine that executed a notebook looks like in its outputs (a home, a scratch or
#: temporary folder: ipykernel names each cell's source file under /tmp, and a warning prints it)
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:tmp|root|home|work|Users)/[\w.-]+")


def _notebook_output_text(path: Path) -> str:
    import json
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    parts = []
    for cell in cells:
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", "")))
            for mime, value in out.get("data", {}).items():
                if mime.startswith("text/"):
                    parts.append("".join(value))
            parts.append("".join(out.get("traceback", [])))
    return "\n".join(parts)


@pytest.mark.parametrize("notebook", sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb")))
def test_notebook_outputs_carry_no_path_of_the_machine(notebook):
    """Committed outputs say nothing of the machine that ran them.  Kills: an output with a warning's
    ``/tmp/ipykernel_.../...py`` source path, a scratch folder or a home folder in a printed path."""
    found = MACHINE_PATH.findall(_notebook_output_text(ROOT / "notebooks" / notebook))
    assert not found, f"{notebook} outputs show paths of the machine: {sorted(set(found))[:5]}"


def test_machine_path_pattern_sees_temporary_and_home_paths_only():
    assert MACHINE_PATH.search("/tmp/ipykernel_25007/1909364306.py:3: Warning")
    assert MACHINE_PATH.search("written to /work/main/report.md")
    assert not MACHINE_PATH.search("see notebooks/data/selection.csv and https://example.org/tmp/x")

"""Project-level promises: the README's two commands, a valid CITATION.cff, a current ARCHITECTURE.md."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_readme_opens_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```\n(.*?)```", text, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make demo", "make test"]


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
                  "Grouping and Smoothing", "Simple and Practical Algorithm", "Multidimensional Partitioning"):
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

"""The coursework assignments (notebooks/coursework/) grade as they should.

For every assignment, ``otter assign`` (Otter-Grader, the tool the course uses) builds the
student version and the autograder from the instructor notebook; then

* the instructor version passes every test, hidden ones included (kills: a wrong solution, a
  test that cannot pass);
* the student version fails every test case, each with a readable hint and no traceback (kills:
  a test that passes on an empty answer, a hint leaking a stack trace of dphist's internals);
* each prepared wrong answer (``notebooks/coursework/wrong_answers.py``) loses exactly the
  questions it should, with the hint it should (kills: a test that does not catch noise not
  scaled by sensitivity, a partitioner reading the raw counts, an off-by-one in inference, a
  bound without confidence intervals);
* the committed student notebooks are what ``otter assign`` makes from the instructor versions
  (kills: an edit to the instructor version not released with ``make coursework``).

Grading runs Otter's own test files (``OKTestFile`` from the autograder zip, the same doctests
``otter run`` applies) on the namespace of the executed notebook, in a forked process per
submission: a fresh registry per submission as with a fresh kernel, without paying a kernel
start and the imports each time.  ``test_otter_run_end_to_end`` runs one real ``otter run``.
"""
from __future__ import annotations

import importlib.util
import json
import multiprocessing
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

# nbconvert's traitlets, imported through Otter, warn about their own API
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:traitlets.*")
ROOT = Path(__file__).resolve().parents[1]
COURSEWORK = ROOT / "notebooks" / "coursework"
ASSIGNMENTS = sorted(p.name for p in COURSEWORK.iterdir() if (p / f"{p.name}.ipynb").is_file())
OTTER = Path(sys.executable).with_name("otter")


def _require_otter():
    if not OTTER.exists():
        pytest.fail("otter-grader is not installed in this environment; `make dev` installs it")


def _wrong_answers() -> list[dict]:
    spec = importlib.util.spec_from_file_location("coursework_wrong_answers", COURSEWORK / "wrong_answers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.WRONG_ANSWERS


def _assign(name: str, out: Path) -> Path:
    """``otter assign --no-run-tests`` in this process (the instructor run is graded below instead)."""
    from otter.assign import main as otter_assign

    result = out / name
    otter_assign(str(COURSEWORK / name / f"{name}.ipynb"), str(result), no_pdfs=True, no_run_tests=True)
    (zip_path,) = (result / "autograder").glob("*.zip")
    with zipfile.ZipFile(zip_path) as z:
        z.extractall(result / "autograder" / "unzipped")
    return result


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """``otter assign`` of every assignment into a temporary folder."""
    _require_otter()
    out = tmp_path_factory.mktemp("coursework")
    return {name: _assign(name, out) for name in ASSIGNMENTS}


# ----------------------------------------------------------------- in-process grading
def _is_otter_cell(source: str) -> bool:
    # the init cell (import otter; grader = otter.Notebook(...)) and grader.check(...) cells
    return "import otter" in source or source.lstrip().startswith("grader.")


def _grade_in_child(args) -> dict[str, list[tuple[bool, str]]]:
    """Execute the notebook's code cells, then run every test file (hidden tests included)."""
    cells, tests_dir, workdir = args
    import os

    from otter.test_files.ok_test import OKTestFile
    os.chdir(workdir)
    env: dict = {"__name__": "__main__"}
    for source in cells:
        try:
            exec(compile(source, "<cell>", "exec"), env)
        except Exception:  # noqa: BLE001 - like `otter run`, keep executing after an error
            pass
    results = {}
    for path in sorted(Path(tests_dir).glob("*.py")):
        test_file = OKTestFile.from_file(str(path))
        test_file.run(env)
        results[test_file.name] = [(r.passed, r.message or "") for r in test_file.test_case_results]
    return results


def _code_cells(notebook) -> list[str]:
    return [c.source for c in notebook.cells if c.cell_type == "code" and not _is_otter_cell(c.source)]


def _grade_many(jobs: list[tuple[list[str], Path, Path]]) -> list[dict]:
    # import once here, so that every forked child starts with numpy, scipy, dphist, its plugins
    # and Otter's test runner loaded (a kernel would import them once per submission)
    import scipy.stats  # noqa: F401

    import dphist
    import dphist.testing  # noqa: F401
    from otter.test_files.ok_test import OKTestFile  # noqa: F401
    for preset in ("identity", "H", "H-tilde"):
        dphist.make_algorithm(preset)
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(processes=2, maxtasksperchild=1) as pool:  # one fresh process per submission
        return pool.map(_grade_in_child, jobs, chunksize=1)


def _instructor(built, name):
    return nbformat.read(built[name] / "autograder" / f"{name}.ipynb", as_version=4)


def _student(built, name):
    return nbformat.read(built[name] / "student" / f"{name}.ipynb", as_version=4)


def _replace_cell(notebook, starts_with: str, source: str) -> list[str]:
    cells = _code_cells(notebook)
    hits = [i for i, s in enumerate(cells) if s.lstrip().startswith(starts_with)]
    assert len(hits) == 1, f"{len(hits)} cells start with {starts_with!r}"
    cells[hits[0]] = source
    return cells


@pytest.fixture(scope="module")
def graded(built, tmp_path_factory):
    """Grades of every instructor version, student version and wrong answer (keyed by label)."""
    work = tmp_path_factory.mktemp("grading")
    jobs, labels = [], []
    for name in ASSIGNMENTS:
        tests = built[name] / "autograder" / "unzipped" / "tests"
        jobs.append((_code_cells(_instructor(built, name)), tests, work))
        labels.append(("instructor", name))
        jobs.append((_code_cells(_student(built, name)), tests, work))
        labels.append(("student", name))
    for i, wrong in enumerate(_wrong_answers()):
        name = wrong["assignment"]
        tests = built[name] / "autograder" / "unzipped" / "tests"
        jobs.append((_replace_cell(_instructor(built, name), wrong["replaces"], wrong["source"].strip("\n")),
                     tests, work))
        labels.append(("wrong", i))
    return dict(zip(labels, _grade_many(jobs)))


# ------------------------------------------------------------------------------ tests
def test_there_are_four_assignments_with_hidden_tests(built):
    assert len(ASSIGNMENTS) >= 4, ASSIGNMENTS
    for name in ASSIGNMENTS:
        meta = _instructor(built, name).metadata["otter"]["tests"]
        public = _student(built, name).metadata["otter"]["tests"]
        hidden = [c for q in meta.values() for s in q["suites"] for c in s["cases"] if c["hidden"]]
        assert hidden, f"{name} has no hidden test"
        shown = [c["code"] for q in public.values() for s in q["suites"] for c in s["cases"]]
        assert not any(c["code"] in shown for c in hidden), f"{name}: a hidden test is in the student version"


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_instructor_version_passes_every_test(graded, name):
    failed = {q: [m for ok, m in cases if not ok] for q, cases in graded[("instructor", name)].items()}
    failed = {q: m for q, m in failed.items() if m}
    assert not failed, f"{name}: the instructor version fails {json.dumps(failed, indent=1)[:3000]}"


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_student_version_fails_every_test_with_a_readable_hint(graded, name):
    for question, cases in graded[("student", name)].items():
        for i, (ok, message) in enumerate(cases):
            assert not ok, f"{name} {question} case {i} passes on the unanswered student version"
            assert "HINT:" in message, f"{name} {question} case {i} gives no hint:\n{message[-1500:]}"
            assert "Traceback" not in message, f"{name} {question} case {i} shows a traceback:\n{message[-1500:]}"


@pytest.mark.parametrize("index", range(len(_wrong_answers())),
                         ids=[f"{w['assignment']}: {w['mistake']}" for w in _wrong_answers()])
def test_prepared_wrong_answer_fails_the_test_it_should(graded, index):
    wrong = _wrong_answers()[index]
    grades = graded[("wrong", index)]
    failing = {q for q, cases in grades.items() if not all(ok for ok, _ in cases)}
    assert failing == set(wrong["fails"]), (
        f"{wrong['mistake']}: questions failing {sorted(failing)}, expected {sorted(wrong['fails'])}")
    messages = [m for q in failing for ok, m in grades[q] if not ok]
    assert any(wrong["hint"] in m for m in messages), f"no failure says {wrong['hint']!r}: {messages}"
    assert not any("Traceback" in m for m in messages), "a failure shows a traceback"


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_committed_student_version_is_up_to_date(built, name):
    committed = COURSEWORK / "student" / f"{name}.ipynb"
    assert committed.is_file(), f"{committed.relative_to(ROOT)} is missing: run `make coursework`"
    fresh = _student(built, name)
    old = nbformat.read(committed, as_version=4)
    cells = lambda nb: [(c.cell_type, c.source) for c in nb.cells]  # noqa: E731
    assert cells(old) == cells(fresh), f"{committed.relative_to(ROOT)} is stale: run `make coursework`"
    assert old.metadata.get("otter", {}).get("tests") == fresh.metadata["otter"]["tests"], (
        f"{committed.relative_to(ROOT)} has stale public tests: run `make coursework`")


def test_otter_run_end_to_end(built, tmp_path):
    """The real grading command on one student version: it runs, scores 0, shows the hints."""
    name = ASSIGNMENTS[0]
    (zip_path,) = (built[name] / "autograder").glob("*.zip")
    submission = tmp_path / f"{name}.ipynb"
    shutil.copy(built[name] / "student" / f"{name}.ipynb", submission)
    proc = subprocess.run([str(OTTER), "run", "--no-logo", "-a", str(zip_path), "-o", str(tmp_path), str(submission)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads((tmp_path / "results.json").read_text())
    scored = [t for t in results["tests"] if "max_score" in t and t["max_score"]]
    assert scored and all(t["score"] == 0 for t in scored), results
    assert "HINT:" in results["tests"][0]["output"]

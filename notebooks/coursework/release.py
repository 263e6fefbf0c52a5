"""Build every assignment with Otter-Grader (`make coursework`).

For each ``NAME/NAME.ipynb`` instructor notebook beside this file: ``otter assign`` writes the
student version and the autograder zip into ``dist/NAME/`` (it also runs every test against the
instructor's solutions and stops on a failure); the student version is copied to
``student/NAME.ipynb`` with cell ids derived from the cell's position, so that rebuilding an
unchanged assignment changes no committed file.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent


def assignments() -> list[str]:
    return sorted(p.name for p in HERE.iterdir() if (p / f"{p.name}.ipynb").is_file())


def release(name: str, otter: Path) -> Path:
    dist = HERE / "dist" / name
    shutil.rmtree(dist, ignore_errors=True)
    subprocess.run([str(otter), "assign", str(HERE / name / f"{name}.ipynb"), str(dist)], check=True)
    notebook = nbformat.read(dist / "student" / f"{name}.ipynb", as_version=4)
    for i, cell in enumerate(notebook.cells):
        cell.id = f"{name}-{i}"
    target = HERE / "student" / f"{name}.ipynb"
    target.parent.mkdir(exist_ok=True)
    nbformat.write(notebook, target)
    return target


def main() -> None:
    otter = Path(sys.executable).with_name("otter")
    for name in assignments():
        print("released", release(name, otter).relative_to(HERE.parent.parent))


if __name__ == "__main__":
    main()

"""``python -m autograder demo`` (``make demo``): a small example class, graded as a real one.

The demo folder (default ``demo/`` in the course root) becomes a course of one lab, the
warm-up unless another is asked for: ``nbgrader_config.py``, ``solutions/LAB`` and
``notebooks/LAB`` copied from the course, and the class handed in as a Moodle assignment's
"Download all submissions" zip (``moodle-submissions-LAB.zip``: a folder per participant,
``full_101_assignsubmission_file_/LAB.ipynb``) of four students built from the release
(autograder.grading.answers):

    full      every exercise answered from the solutions: full marks, no finding
    partial   the first exercise answered, the others left as released
    blank     the release untouched: every exercise blank
    wrong     every exercise answered with a mistake made in its solution

Then autograder.cli grades it as ``python -m autograder --course DEMO grade DEMO/moodle-submissions-LAB.zip``,
the command an instructor runs, in the bubblewrap sandbox (intake reads each participant's id
from the zip), prints the paths of grades.csv, the feedback folder and the class report
(``grading.results``), and ends with the files Moodle imports (``python -m autograder export
--lms moodle LAB``: the grading worksheet and the feedback zip). A folder that holds anything
but an earlier demo is refused.
"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import nbformat

from autograder import notebook_cells as nbcells
from autograder.grading import answers

LAB = "00-warmup"
STUDENTS = ("full", "partial", "blank", "wrong")
FIRST_PARTICIPANT = 101  # the Moodle participant ids of the download: 101, 102, ... in STUDENTS' order
MARKER = ".autograder-demo"  # written into the folder: what may be removed by the next demo
# Mistakes made in a solution's code for the student "wrong": the first that applies to an
# exercise is made once (a few of benchmarks/grading_corpus.py's MISTAKES).
MISTAKES = [
    ("x > 0", "x < 0"),
    (".mean()", ".sum()"),
    ("dim=-1", "dim=-2"),
    ("torch.relu(", "("),
    ("~mask", "mask"),
    ("scale * ", ""),
]


class DemoFolderInUse(ValueError):
    """The demo folder holds files that no earlier demo wrote: nothing is removed."""


def wrong_answer(solution: str) -> str:
    """``solution`` with the first of MISTAKES that applies made once; unchanged when none does."""
    for old, new in MISTAKES:
        if old in solution:
            return solution.replace(old, new, 1)
    return solution


def submissions(root: Path, lab: str) -> dict[str, nbformat.NotebookNode]:
    """The four students' notebooks of ``lab``, built from the course's release and solutions."""
    solved = answers.solutions(root, lab)
    first = list(solved)[:1]
    wrong = answers.answered(root, lab)
    for cell in wrong.cells:
        grade_id = nbcells.grade_id(cell)
        if grade_id in solved:
            cell.source = wrong_answer(solved[grade_id])
    return {
        "full": answers.answered(root, lab),
        "partial": answers.answered(root, lab, first),
        "blank": answers.released(root, lab),
        "wrong": wrong,
    }


def _clear(folder: Path) -> None:
    """Make ``folder`` empty and marked as the demo's; refuse a folder that is not an earlier demo's."""
    if folder.exists() and any(folder.iterdir()):
        if not (folder / MARKER).is_file():
            raise DemoFolderInUse(f"{folder} is not empty and holds no earlier demo: give another folder")
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MARKER).write_text("written by python -m autograder demo; the next demo removes this folder\n")


def moodle_folder(student: str) -> str:
    """The student's folder in the demo's Moodle download, as Moodle names it (full name, participant id)."""
    return f"{student}_{FIRST_PARTICIPANT + STUDENTS.index(student)}_assignsubmission_file_"


def build(root: Path, folder: Path, lab: str = LAB) -> Path:
    """Write the demo course of ``lab`` into ``folder`` (see the module's docstring); returns its
    Moodle download, ``folder/moodle-submissions-LAB.zip``."""
    root, folder = Path(root).resolve(), Path(folder).resolve()
    _clear(folder)
    shutil.copy2(root / "nbgrader_config.py", folder / "nbgrader_config.py")
    for kind in ("solutions", "notebooks"):
        shutil.copytree(root / kind / lab, folder / kind / lab)
    (folder / "solutions").chmod(0o750)  # the hidden tests: kept from other users, as grading asks
    download = folder / f"moodle-submissions-{lab}.zip"
    with zipfile.ZipFile(download, "w", zipfile.ZIP_DEFLATED) as zf:
        for student, nb in submissions(root, lab).items():
            zf.writestr(f"{moodle_folder(student)}/{lab}.ipynb", nbformat.writes(nb))
    return download

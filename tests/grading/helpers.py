"""A temporary course (nbgrader_config.py, solutions/00-warmup, notebooks/00-warmup) and
submissions made from the released warm-up lab."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat

from autograder.grading import answers

REPO = Path(__file__).resolve().parents[2]
LAB = "00-warmup"


def make_course(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO / "nbgrader_config.py", folder / "nbgrader_config.py")
    shutil.copytree(REPO / "solutions" / LAB, folder / "solutions" / LAB)
    shutil.copytree(REPO / "notebooks" / LAB, folder / "notebooks" / LAB)
    return folder


def released(lab: str = LAB) -> nbformat.NotebookNode:
    return answers.released(REPO, lab)


def answered(*exercises: str, lab: str = LAB) -> nbformat.NotebookNode:
    """The released lab with the given exercises (default: all) answered correctly."""
    return answers.answered(REPO, lab, exercises or None)


def index_of(nb: nbformat.NotebookNode, grade_id: str) -> int:
    return next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def with_answers(lab: str, sources: dict[str, str], base: nbformat.NotebookNode | None = None) -> nbformat.NotebookNode:
    """The released ``lab`` (or ``base``) with the cells of the given grade ids replaced by ``sources``."""
    nb = released(lab) if base is None else base
    for grade_id, source in sources.items():
        nb.cells[index_of(nb, grade_id)].source = source
    return nb


def with_cell(nb: nbformat.NotebookNode, after: str | None, source: str) -> nbformat.NotebookNode:
    """``nb`` with a new student code cell after the cell ``after`` (None: at the end)."""
    position = len(nb.cells) if after is None else index_of(nb, after) + 1
    nb.cells.insert(position, nbformat.v4.new_code_cell(source))
    return nb


def submit(folder: Path, student: str, nb: nbformat.NotebookNode | str | bytes, name: str = f"{LAB}.ipynb") -> Path:
    path = folder / student / LAB / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(nb, bytes):
        path.write_bytes(nb)
    elif isinstance(nb, str):
        path.write_text(nb)
    else:
        nbformat.write(nb, str(path))
    return path


def processes_with(*tokens: str) -> list[str]:
    """The command lines of the running processes that contain any of ``tokens``."""
    out = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(token in text for token in tokens):
            out.append(text)
    return out


def results_of(root: Path) -> dict[str, bytes]:
    """What a grading of the course at ``root`` wrote that a student or the instructor reads
    (grades.csv, the feedback pages, the autograded notebooks and their verdicts), by
    path under ``root``, after the grading corpus's normaliser (``benchmarks/grading_corpus.py``):
    two gradings of one class compare equal when the grader behaved the same."""
    from benchmarks.grading_corpus import normalise

    files = [root / "grades.csv", *(p for folder in ("feedback", "autograded") for p in (root / folder).rglob("*"))]
    return {
        str(p.relative_to(root)): normalise(p.read_bytes(), p.name, root, REPO) for p in sorted(files) if p.is_file()
    }

"""What the autograded notebook says of its kernel's run, as notes an instructor can act on:
timeouts, memory errors, a kernel that died, a visible check that passed where hidden tests failed."""

from __future__ import annotations

from pathlib import Path

import nbformat

from autograder import notebook_cells
from autograder.grading.grader.verdict.steps import hidden_tests_failed


def after_grading(autograded: Path) -> list[str]:
    """Notes from the autograded notebook: timeouts, memory errors, a kernel that died."""
    if not autograded.is_file():
        return []
    nb = nbformat.read(str(autograded), as_version=4)
    notes = []
    for cell in nb.cells:
        grade_id = notebook_cells.grade_id(cell)
        name = f"cell {grade_id}" if grade_id else "a cell the student added"
        outputs = cell.get("outputs", [])
        printed = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
        errors = [o for o in outputs if o.get("output_type") == "error"]
        if (
            notebook_cells.is_graded(cell)
            and " passed." in printed
            and errors
            and errors[0].get("ename") in ("CheckFailed", "AssertionError", "ForbiddenCall")
        ):
            notes.append(hidden_tests_failed(grade_id))
        for out in outputs:
            if out.get("output_type") != "error":
                continue
            if out.get("ename") == "CellTimeoutError":
                notes.append(f"{name} ran past the time limit: interrupted, the rest was graded")
            elif out.get("ename") == "MemoryError":
                notes.append(f"{name} ran out of memory (MemoryError under the kernel's limit)")
            elif out.get("ename") == "DeadKernelError":
                notes.append(f"the kernel died in {name}")
    return notes

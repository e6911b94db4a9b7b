"""What a test cell shows in the feedback: the independent check's verdict, never what the
submission's kernel printed while the cell ran.

A submission's kernel can print anything into a test cell's output (an IPython hook prints
the cell it is about to run; ``run.hide_hidden_tests`` keeps the hidden tests from it, but not the rest).
So once the independent check has run, ``annotate`` replaces every test cell's outputs in
the autograded notebook (which the feedback and Formgrader render) by:

- passed: one line saying so;
- blank (every answer cell as released, ``blank``'s rule, and the test failed in the notebook too):
  one line, "Blank", the class report's word, with the check's words for it (which function is
  not answered yet); a stub whose test passed in the notebook was forged, and is said to be;
- failed: an error output with the exception's type and message as the check's own process
  raised them, and the submission's own frames (``Cell In[N], line L, in f`` with that line
  of the student's cell) as its sandboxed child raised them (``errors.cell_frames``); where the
  failure came from a line of the hidden tests, the message loses its ``expected:`` part (the
  hidden test's answer), keeping what was checked, what was found and the likely mistake;
- where the cell failed in the notebook and passes here, a line saying it failed there
  (scored 0) and how to see why;
- where it fails as written but passes once the earlier exercises the student got wrong are
  made right (error carried forward), a line saying so beside the failure as written;
- where the kernel itself ran out of time or memory, or died, in that cell, a line saying so
  (in our words, with the error's name, which the summary's notes read).
"""

from __future__ import annotations

import os
import re
import stat
import traceback
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograder import notebook_cells
from autograder.grading.grader.job import Verdict
from autograder.grading.grader.lab_cells import hidden_lines
from autograder.grading.grader.verdict import blank

BEGIN, END = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"
LABEL = re.compile(r"^\s*(checked|expected|found|likely mistake|hint)\s*:", re.IGNORECASE)
PASSED = "Passed: the grader ran this test again, outside your notebook, and it passed."
FAILED = "Failed: the grader ran this test again, outside your notebook (scored 0)."
BLANK = "Blank (scored 0): {said}"
NOT_ANSWERED = (
    "this exercise is not answered yet: replace `raise NotImplementedError()` in its cell with your "
    "code, then run this cell again."
)
CARRIED = (
    "Error carried forward: your answer fails this test as you wrote it, but it is right when given "
    "a correct {names}: it keeps its points, and the mistake costs you once, where you made it."
)
FORGED = "IndependentCheckFailed: this test passed in your notebook, but not when checked again outside it (scored 0)."
# what went wrong in the kernel itself is kept, in our words, for the summary's notes (kernel_notes.after_grading)
KERNEL_TROUBLE = {
    "CellTimeoutError": "this cell ran past the time limit when your notebook ran",
    "MemoryError": "this cell ran out of memory when your notebook ran",
    "DeadKernelError": "the kernel died in this cell when your notebook ran",
}
NOTEBOOK_FAILED = (
    "This test failed when your notebook ran (scored 0), although it passes when the grader runs it "
    "again outside your notebook: run your notebook from the top (Restart & Run All) to see why."
)


def failing_line(error: BaseException | None, grade_id: str) -> int | None:
    """The line of test cell ``grade_id`` (compiled as ``<grade_id>``) that raised ``error``."""
    if error is None:
        return None
    lines = [f.lineno for f in traceback.extract_tb(error.__traceback__) if f.filename == f"<{grade_id}>"]
    return lines[-1] if lines else None


def in_hidden_tests(error: BaseException | None, grade_id: str, source: str) -> bool:
    """Did ``error`` come from a line of the hidden tests of test cell ``source``?"""
    line = failing_line(error, grade_id)
    return line is not None and line in hidden_lines(source, BEGIN, END)


def remote_frames(error: BaseException | None) -> list[tuple[int, int, str]]:
    """The submission's frames that came with ``error`` or an exception it was raised from."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        frames = getattr(error, "remote_frames", None)
        if frames:
            return list(frames)
        error = error.__cause__ or error.__context__
    return []


def without_expected(message: str) -> str:
    """A check's message without its ``expected:`` part (the line and its continuation)."""
    kept, skipping = [], False
    for line in message.split("\n"):
        label = LABEL.match(line)
        if label:
            skipping = label.group(1).lower() == "expected"
        if not skipping:
            kept.append(line)
    return "\n".join(kept)


def _frame(cells: list[NotebookNode], number: int, line: int, function: str) -> str:
    """One frame as IPython shows it, the line quoted from the student's own cell."""
    if not 1 <= number <= len(cells):
        return f"(a cell of your notebook), line {line}, in {function}"
    cell = cells[number - 1]
    count = cell.get("execution_count")
    head = (
        f"Cell In[{count}], line {line}, in {function}"
        if isinstance(count, int)
        else f"Your code cell {number}, line {line}, in {function}"
    )
    source = cell.source.split("\n")
    quoted = [
        f"{'---->' if n == line else '     '} {n} {source[n - 1]}" for n in (line - 1, line) if 1 <= n <= len(source)
    ]
    return "\n".join([head, *quoted])


def outputs(
    verdict: Verdict,
    grade_id: str,
    source: str,
    cells: list[NotebookNode],
    failed_in_notebook: bool,
    left_blank: bool = False,
) -> list[NotebookNode]:
    """The outputs test cell ``grade_id`` (its code in the source notebook: ``source``) shows
    for ``verdict``; ``cells`` are the submission's code cells as the check's child numbered them;
    ``left_blank``: the exercise's answer cells are as released."""
    if left_blank and failed_in_notebook and not verdict.passed:  # a stub's test passing in the notebook was forged
        said = str(verdict.message).partition("NotImplementedError: ")[2].split("\n")[0]
        text = BLANK.format(said=said if "not answered yet" in said else NOT_ANSWERED)
        return [nbformat.v4.new_output("stream", name="stderr", text=text + "\n")]
    if verdict.passed:
        text = NOTEBOOK_FAILED if failed_in_notebook else PASSED
        return [nbformat.v4.new_output("stream", name="stderr" if failed_in_notebook else "stdout", text=text + "\n")]
    error = verdict.error
    if error is not None:
        name, message = type(error).__name__, str(error)
    else:
        name, _, message = (
            verdict.message.partition(": ")
            if ": " in verdict.message.split("\n")[0]
            else ("IndependentCheckFailed", "", verdict.message)
        )
        if not name.isidentifier():
            name, message = "IndependentCheckFailed", verdict.message
    hidden = in_hidden_tests(error, grade_id, source)
    if hidden:
        message = without_expected(message)
    frames = [_frame(cells, *frame) for frame in remote_frames(error)]
    header = FAILED if failed_in_notebook or hidden else FORGED  # the kernel never ran the hidden tests
    if verdict.alone:
        names = " and ".join(f"`{name}`" for name in verdict.given) or "answer to the exercises before it"
        carried = CARRIED.format(names=names)
        return [
            nbformat.v4.new_output("stream", name="stdout", text=carried + "\n"),
            nbformat.v4.new_output(
                "error", ename=name, evalue=message, traceback=[carried, *frames, f"{name}: {message}"]
            ),
        ]
    return [
        nbformat.v4.new_output("error", ename=name, evalue=message, traceback=[header, *frames, f"{name}: {message}"])
    ]


def answer_cells(nb: NotebookNode) -> list[NotebookNode]:
    """The code cells the check's child ran, in its numbering (``lab_cells.answer_cells``)."""
    return [c for c in nb.cells if c.cell_type == "code" and not notebook_cells.is_graded(c)]


def annotate(notebook: Path, sources: dict[str, str], verdicts: dict[str, Verdict]) -> None:
    """Replace the outputs of every test cell of ``notebook`` (autograded) that has a verdict."""
    nb = nbformat.read(str(notebook), as_version=4)
    cells = answer_cells(nb)
    blanks = {
        grade_id
        for grade_id, answers in blank.exercises(nb)
        if grade_id in verdicts and blank.status(verdicts[grade_id], answers) == "blank"
    }
    for cell in nb.cells:
        grade_id = notebook_cells.grade_id(cell)
        if not notebook_cells.is_test(cell) or grade_id not in verdicts:
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        cell.outputs = outputs(
            verdicts[grade_id], grade_id, sources.get(grade_id, ""), cells, bool(errors), grade_id in blanks
        )
        cell.outputs += [
            nbformat.v4.new_output("error", ename=e.ename, evalue=KERNEL_TROUBLE[e.ename], traceback=[])
            for e in errors[:1]
            if e.get("ename") in KERNEL_TROUBLE
        ]
    _replace(notebook, nbformat.writes(nb))


def _replace(path: Path, text: str) -> None:
    """Write ``path`` anew with its mode kept: nbgrader leaves an autograded notebook read-only
    (0444), which stops its owner's write unless the owner is root, so it is replaced, not written."""
    fresh = path.with_name(f".{path.name}.verdicts")
    fresh.write_text(text, encoding="utf-8")
    os.chmod(fresh, stat.S_IMODE(os.stat(path).st_mode))
    os.replace(fresh, path)


def hidden_failures(sources: dict[str, str], verdicts: dict[str, Verdict]) -> set[str]:
    """The test cells whose only failure is a hidden test's (no disagreement with the notebook,
    whose kernel never ran the hidden tests)."""
    return {
        grade_id
        for grade_id, verdict in verdicts.items()
        if not verdict.passed and in_hidden_tests(verdict.error, grade_id, sources.get(grade_id, ""))
    }

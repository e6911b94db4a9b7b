"""The grading kernel never sees a hidden test: autograde runs each test cell without its
``### BEGIN HIDDEN TESTS`` block, and the block is put back once the notebook has run.

A submission can watch every cell its kernel runs (an IPython ``pre_run_cell`` hook, an input
transformer) and print it, now or in a later cell: the hidden tests must therefore never reach
the kernel. They are run by the independent check (``independent_check``), outside the submission's
process, whose verdict decides the score with the kernel's (an exercise keeps its points only
if both pass) and is what the feedback shows for each test cell (``verdict.into_notebook``).

``HideHiddenTests`` goes just before ``Execute`` in ``Autograde.autograde_preprocessors``,
``RestoreHiddenTests`` just after it (nbgrader_config.py): the autograded notebook, which
instructors read, keeps its test cells whole.
"""

from __future__ import annotations

from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool, Unicode

from autograder import notebook_cells
from autograder.grading.grader.lab_cells import clear_hidden

KEY = "autograder_hidden_tests"


REFUSAL = (
    "this course autogrades only through `python -m autograder grade` (or `make grade`): "
    "`nbgrader autograde` would run each submission as you, outside the sandbox, with nothing "
    'checking its points (see the instructor guide, "What grading trusts")'
)


class UnsandboxedGrading(RuntimeError):
    """nbgrader's autograde started by hand, not by ``python -m autograder grade``."""


class HideHiddenTests(Preprocessor):
    """Take the hidden block out of every test cell before the kernel runs the notebook. The
    first step of autograde: it refuses to start unless grading set ``through_grade`` (the kernel
    is then the sandboxed one, and the independent check decides the points)."""

    enabled = Bool(True, help="nbconvert runs only an enabled preprocessor").tag(config=True)
    through_grade = Bool(
        False,
        help="set by python -m autograder grade, which runs the kernel in bubblewrap; "
        "False: refuse to run a submission",
    ).tag(config=True)
    begin_hidden = Unicode("BEGIN HIDDEN TESTS", help="the line that opens a hidden-test block").tag(config=True)
    end_hidden = Unicode("END HIDDEN TESTS", help="the line that closes a hidden-test block").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        if not self.through_grade:
            raise UnsandboxedGrading(REFUSAL)
        kept: dict[int, str] = {}
        for index, cell in enumerate(nb.cells):
            if notebook_cells.is_test(cell) and self.begin_hidden in cell.source:
                kept[index] = cell.source
                cell.source = clear_hidden(cell.source, self.begin_hidden, self.end_hidden)
        resources[KEY] = kept
        return nb, resources

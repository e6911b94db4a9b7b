"""The second half of ``hide_hidden_tests``: once the kernel has run the notebook, the hidden
blocks it never saw are put back into the test cells (nbgrader's autograde writes the notebook,
and the independent check and the feedback read it, with them)."""

from __future__ import annotations

from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool

from autograder.grading.grader.run.hide_hidden_tests import KEY


class RestoreHiddenTests(Preprocessor):
    """Put back the hidden blocks that ``HideHiddenTests`` took out."""

    enabled = Bool(True, help="nbconvert runs only an enabled preprocessor").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        for index, source in (resources.pop(KEY, None) or {}).items():
            nb.cells[index].source = source
        return nb, resources

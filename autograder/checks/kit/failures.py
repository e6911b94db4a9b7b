"""What a failing check raises: ``CheckFailed``, and ``ForbiddenCall`` for a sentinel's refusal.

A check's failure is an ``AssertionError`` (so nbgrader scores the cell 0) whose message
teaches (``expect.fail`` writes it). Both the comparisons (``expect``) and the sentinels
(``sentinels``) raise these; neither imports the other for them. Beside its message, a
failure carries the stable id of the mistake it names (``mistakes.py`` lists them), or
``"unnamed"``: the grader records it, the student never sees it.
"""

from __future__ import annotations

UNNAMED = "unnamed"


class CheckFailed(AssertionError):
    """A check found the candidate wrong; the message says how, ``mistake_id`` which known mistake."""

    def __init__(self, *args: object, mistake_id: str = UNNAMED) -> None:
        super().__init__(*args)
        self.mistake_id = mistake_id


class ForbiddenCall(CheckFailed):
    """The candidate called something the exercise asks the student to build."""

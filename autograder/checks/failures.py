"""What a failing check raises: ``CheckFailed``, and ``ForbiddenCall`` for a sentinel's refusal.

A check's failure is an ``AssertionError`` (so nbgrader scores the cell 0) whose message
teaches (``core.fail`` writes it). Both the comparisons (``core``) and the sentinels
(``sentinels``) raise these; neither imports the other for them.
"""

from __future__ import annotations


class CheckFailed(AssertionError):
    """A check found the candidate wrong; the message says how."""


class ForbiddenCall(CheckFailed):
    """The candidate called something the exercise asks the student to build."""


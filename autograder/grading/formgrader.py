"""Formgrader grades nothing: its Autograde buttons answer with a pointer to ``make grade``.

Formgrader's Autograde button (the flash icon of each submission in "Manage Submissions")
posts to ``/formgrader/api/submission/LAB/STUDENT/autograde``, whose handler runs nbgrader's
autograde in the Jupyter server itself: the submission's code would run as the instructor,
with the instructor's files and network, without the sandbox or the independent check.
``disable_autograde`` (called by nbgrader_config.py, which the server reads when Formgrader
starts) replaces that handler's answer by a failure that Formgrader shows in its error
dialog, saying how to grade instead. Reviewing, manual grading, feedback and the gradebook
stay as they are.
"""

from __future__ import annotations

import importlib
import json
import sys

HANDLERS = "nbgrader.server_extensions.formgrader.apihandlers"
MESSAGE = (
    "Autograde is turned off in Formgrader for this course: it would run the submission's code as you, "
    "outside the sandbox and without the independent check. Grade with `python -m autograder grade` "
    "(`make grade`) at the course root, then come back here to review, grade by hand and release feedback."
)


def disable_autograde() -> bool:
    """In a Jupyter server with Formgrader, make its autograde handler refuse with ``MESSAGE``;
    elsewhere (a grading worker, the command line) do nothing. True where it was done."""
    if HANDLERS not in sys.modules and "jupyter_server.serverapp" not in sys.modules:
        return False
    try:
        handlers = importlib.import_module(HANDLERS)
    except ImportError:
        return False
    handler = handlers.AutogradeHandler
    if getattr(handler, "autograde_disabled", False):
        return True

    def post(self, assignment_id: str, student_id: str) -> None:
        self.write(json.dumps({"success": False, "log": "", "error": MESSAGE}))

    handler.post = handlers.web.authenticated(handlers.check_xsrf(post))
    handler.autograde_disabled = True
    return True

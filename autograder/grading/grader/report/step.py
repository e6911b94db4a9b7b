"""``report``, the last step of ``grade``: the class report of every lab just graded.

It reads only what the grading wrote (verdicts.json, the autograded notebooks); whatever goes wrong here becomes a
note of the summary, never a lost grade (the grades are exported by the step before it).
"""

from __future__ import annotations

from autograder.grading.grader.grading import Grading
from autograder.grading.grader.report import NoVerdicts, write_report


def report(g: Grading) -> None:
    """Write reports/LAB/ for each lab graded; a failure is a note that says how to retry."""
    for lab in sorted({lab for _, lab in g.pairs}):
        try:
            _, _, unread = write_report(g.root, lab)
        except NoVerdicts as err:
            g.not_graded.notes.append(f"no class report for {lab}: {err}")
        except Exception as err:  # a report is never worth a grade: say it and go on
            g.not_graded.notes.append(
                f"the class report of {lab} could not be written ({type(err).__name__}: "
                f"{err}); the grades are unaffected: `python -m autograder report {lab}`"
            )
        else:
            g.not_graded.notes += [f"class report of {lab}: {note}" for note in unread]

"""The steps that grade one submission, in the worker, in order: ``STEPS``, each in its
station (run, then verdict, then output).

Each step is a small function of the ``Submission`` the steps share; it returns False when
the steps after it have nothing to work on (nbgrader could not autograde). A new step (a
record of the verdicts, another flag) is added to the list, not written into the others.

    autograde          nbgrader autograde: the notebook in its sandboxed kernel, hidden tests
                       kept out (nbgrader_config.py)
    independent_check  every graded exercise again, in this process, against a sandboxed child
    points             verdict: an exercise the check fails scores 0 in the gradebook, a
                       disagreement is a note
    into_notebook      verdict: the verdicts shown in the autograded notebook's test cells
    flags              verdict: answers that retype the reference or touch the checks: notes,
                       never points
    record             verdict: the verdicts as data, autograded/STUDENT/LAB/verdicts.json (never
                       in the feedback), for the class report
    feedback           output: nbgrader generate_feedback
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from autograder.grading.grader.job import Result, Run, Submission, Verdict
from autograder.grading.grader.lab_cells import test_cells
from autograder.grading.grader.output.steps import feedback
from autograder.grading.grader.run import ahead
from autograder.grading.grader.run.independent_check import GraderError, recheck
from autograder.grading.grader.verdict import retyped
from autograder.grading.grader.verdict.save_verdicts import record
from autograder.grading.grader.verdict.steps import flags, into_notebook, points


def autograde(s: Submission) -> bool:
    start = time.perf_counter()
    ahead.timings.clear()
    answer = s.api.autograde(s.job.lab, s.job.student, force=True, create=True)
    s.result.autograde = Run.of(answer, time.perf_counter() - start)  # kernel start included
    s.result.steps.update(ahead.timings)
    return s.result.autograde.success


def _recheck(s: Submission) -> dict[str, Verdict]:
    """The independent check's verdicts; a check that could not run fails every exercise."""
    started = ahead.take_child(s.job)
    child, scratch = started if started else (None, Path(tempfile.mkdtemp(prefix="recheck-", dir=s.job.scratch)))
    try:  # cells were already interrupted once in the notebook: a shorter limit here
        return recheck(
            s.source,
            s.autograded,
            wrap=ahead.check_sandbox(s.job, scratch),
            cell_timeout=min(float(s.config.Execute.timeout or 30), 10.0),
            call_timeout=ahead.CALL_TIMEOUT,
            carry_forward=_carries_forward(s),
            child=child,
            timings=s.result.steps,
        )
    except GraderError:
        raise  # the grader's failure: reported as such, never as the student's 0
    except Exception as err:  # no verdict, no points: said on the summary line
        return {
            grade_id: Verdict(False, f"the independent check could not run: {err}") for grade_id in test_cells(s.source)
        }
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _carries_forward(s: Submission) -> bool:
    """Error carried forward: on unless the course's nbgrader_config.py says
    ``c.Grading.carry_forward = False``, and never for a submission whose cells could see how
    an earlier answer is bound (a code object, frames, the collector's objects): it is graded as
    written."""
    return bool(s.config.Grading.get("carry_forward", True)) and not retyped.could_observe_binding(s.autograded)


def _withheld(s: Submission) -> bool:
    """Was error carried forward withheld from an exercise that failed after an earlier failure?"""
    failed = [not v.passed for v in s.verdicts.values()]
    return (
        bool(s.config.Grading.get("carry_forward", True))
        and any(failed[i] and any(failed[:i]) for i in range(len(failed)))
        and retyped.could_observe_binding(s.autograded)
    )


def independent_check(s: Submission) -> bool:
    """Check every graded exercise again in this process (which never runs student code),
    calling the submission's answers in a sandboxed child, and, where error is carried forward,
    once the earlier exercises the student got wrong are made right: the verdicts."""
    start = time.perf_counter()
    s.verdicts = _recheck(s)
    if _withheld(s):
        s.result.notes.append(
            "error carried forward not applied: an answer could see how earlier answers are bound "
            "(a code object, frames or the collector's objects; flagged), so every exercise is graded as written"
        )
    s.result.check_seconds = time.perf_counter() - start  # its sandboxed child's start included
    return True


Step = Callable[[Submission], bool]
STEPS: list[Step] = [autograde, independent_check, points, into_notebook, flags, record, feedback]


def grade(s: Submission, steps: list[Step] = STEPS) -> Result:
    """Run ``steps`` in order on ``s`` until one returns False; the result they wrote."""
    for step in steps:
        start = time.perf_counter()
        going_on = step(s)
        s.result.steps[step.__name__] = time.perf_counter() - start
        if not going_on:
            break
    return s.result

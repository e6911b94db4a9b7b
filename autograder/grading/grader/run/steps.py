"""The steps that grade one submission, in the worker, in order: ``STEPS``.

Each step is a small function of the ``Submission`` the steps share; it returns False when
the steps after it have nothing to work on (nbgrader could not autograde). A new step (a
record of the verdicts, another flag) is added to the list, not written into the others.

    autograde          nbgrader autograde: the notebook in its sandboxed kernel, hidden tests
                       kept out (nbgrader_config.py)
    independent_check  every graded exercise again, in this process, against a sandboxed child;
                       an exercise it fails scores 0 in the gradebook, a disagreement is a note
    into_notebook      its verdicts shown in the autograded notebook's test cells, for feedback
    flags              answers that retype the reference or touch the checks: notes, never points
    feedback           nbgrader generate_feedback
    record             the verdicts as data, autograded/STUDENT/LAB/verdicts.json (never in the
                       feedback), for the class report
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.grading.grader.job import Job, Result, Run
from autograder.grading.grader.lab_cells import test_cells
from autograder.grading.grader.output import gradebook
from autograder.grading.grader.run import bwrap
from autograder.grading.grader.run.independent_check import GraderError, Verdict, recheck
from autograder.grading.grader.verdict import into_notebook as verdicts_of
from autograder.grading.grader.verdict import retyped, save_verdicts


@dataclass
class Submission:
    """What the steps of one job share: the job, nbgrader's settings and API, the verdicts so
    far, and the result being written."""

    job: Job
    config: Any  # traitlets Config: nbgrader_config.py and the job's overrides
    api: Any  # nbgrader.apps.NbGraderAPI
    result: Result = field(default_factory=Result)
    verdicts: dict[str, Verdict] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return Path(self.job.root)

    @property
    def source(self) -> Path:
        """The lab's source notebook: its test cells, hidden tests included."""
        return self.job.source

    @property
    def autograded(self) -> Path:
        return self.job.autograded


def autograde(s: Submission) -> bool:
    start = time.perf_counter()
    answer = s.api.autograde(s.job.lab, s.job.student, force=True, create=True)
    s.result.autograde = Run.of(answer, time.perf_counter() - start)  # kernel start included
    return s.result.autograde.success


def _recheck(s: Submission) -> dict[str, Verdict]:
    """The independent check's verdicts; a check that could not run fails every exercise."""
    scratch = Path(tempfile.mkdtemp(prefix="recheck-", dir=s.job.scratch))

    def wrap(argv: list[str]) -> list[str]:
        return bwrap.wrap(
            argv,
            scratch=scratch,
            limits=s.job.limits,
            env={"NBGRADER_EXECUTION": "autograde"},
            enabled=s.job.sandbox,
            package=s.job.package,
        )

    try:  # cells were already interrupted once in the notebook: a shorter limit here
        return recheck(
            s.source,
            s.autograded,
            wrap=wrap,
            cell_timeout=min(float(s.config.Execute.timeout or 30), 10.0),
            carry_forward=_carries_forward(s),
        )
    except GraderError:
        raise  # the grader's failure: reported as such, never as the student's 0
    except Exception as err:  # noqa: BLE001 - no verdict, no points: said on the summary line
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
    calling the submission's answers in a sandboxed child; an exercise keeps its points only
    if its test cell passed in the notebook and the independent check passes, or (error
    carried forward) it passes once the earlier exercises the student got wrong are made right."""
    start = time.perf_counter()
    s.verdicts = _recheck(s)
    if _withheld(s):
        s.result.notes.append(
            "error carried forward not applied: an answer could see how earlier answers are bound "
            "(a code object, frames or the collector's objects; flagged), so every exercise is graded as written"
        )
    hidden = verdicts_of.hidden_failures(test_cells(s.source), s.verdicts)  # never run by the kernel
    before = gradebook.settle(
        s.config.CourseDirectory.db_url,
        s.config.CourseDirectory.course_id,
        s.job.student,
        s.job.lab,
        {grade_id: None if v.alone and not v.passed else v.passed for grade_id, v in s.verdicts.items()},
    )
    for grade_id, verdict in s.verdicts.items():
        points, verdict.max_points = before[grade_id]
        verdict.exercise, verdict.points = grade_id, points if verdict.passed else 0.0
        if verdict.alone and not verdict.passed:
            verdict.points = verdict.max_points
            continue
        if verdict.passed or not points:  # it scored nothing in the notebook: no disagreement to report
            continue
        if grade_id in hidden:
            s.result.notes.append(
                f"test cell {grade_id}: the visible check passed but the hidden tests failed (hard-coded outputs?)"
            )
        else:
            s.result.notes.append(
                f"test cell {grade_id} passed in the notebook but failed the independent check "
                f"({headline(verdict.message)}): scored 0"
            )
    s.result.check_seconds = time.perf_counter() - start  # its sandboxed child's start included
    return True


def headline(message: str) -> str:
    """The line of a check's message that says most: the likely mistake, else what was found."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()] or ["failed"]
    for label in ("likely mistake:", "found:"):
        for line in lines:
            if line.startswith(label):
                return line[:200]
    return lines[0][:200]


def into_notebook(s: Submission) -> bool:
    """Show the independent check's verdict in each test cell of the autograded notebook, in
    place of what the kernel printed there, for the feedback."""
    verdicts_of.annotate(s.autograded, test_cells(s.source), s.verdicts)
    return True


def flags(s: Submission) -> bool:
    """Answers that retype the reference or touch the checks' machinery: a note for the
    instructor, never a score."""
    s.result.notes += retyped.notes(s.autograded)
    return True


def feedback(s: Submission) -> bool:
    s.result.feedback = Run.of(s.api.generate_feedback(s.job.lab, s.job.student, force=True))
    return True


Step = Callable[[Submission], bool]
STEPS: list[Step] = [autograde, independent_check, into_notebook, flags, feedback, save_verdicts.record]


def grade(s: Submission, steps: list[Step] = STEPS) -> Result:
    """Run ``steps`` in order on ``s`` until one returns False; the result they wrote."""
    for step in steps:
        if not step(s):
            break
    return s.result

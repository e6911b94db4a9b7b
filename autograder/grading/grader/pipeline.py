"""``grade``: collect submissions, autograde every lab in parallel, feedback, grades.csv, summary.

Each (student, lab) is graded by nbgrader in its own process (autograder.grading.grader.run.worker),
in a sandboxed kernel (autograder.grading.sandboxed.kernel, .launcher), under a wall-clock limit;
whatever happens to one submission is reported and the others go on.

``grade`` runs the steps of ``STEPS`` in order on one ``Grading``, each step in its station and
the stations in the order a submission travels: intake's ``intake`` (collect the submissions
into submitted/, apply --student and --lab) and ``screen`` (a look at each notebook, the bytes of
each that can be graded staged in a folder of ours that nbgrader reads instead of submitted/);
run's ``prepare`` (the gradebook knows every lab, the course's state is hashed), ``make_jobs``
(one job for each submission staged and not graded already with the same bytes) and
``grade_each`` (the jobs on worker processes, each result recorded); output's ``score`` (0 for
what could not be graded, the scores read back) and ``export`` (grades.csv); and report's
``report`` (the class report of each lab, from the verdicts the workers recorded). The summary
is ``grading.summary``.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from autograder.grading.course import scripts_on_path
from autograder.grading.grader.grading import Grading, Options, Outcome
from autograder.grading.grader.intake.steps import intake, screen
from autograder.grading.grader.output import gradebook
from autograder.grading.grader.output.steps import export, score
from autograder.grading.grader.report.step import report
from autograder.grading.grader.run import bwrap, nbconfig
from autograder.grading.grader.run.jobs import make_jobs, prepare
from autograder.grading.grader.run.on_workers import grade_each
from autograder.grading.layout import CourseLayout
from autograder.grading.protocol import boot

Step = Callable[[Grading], None]
# The steps of a grading, in order; a new one (a class report) is appended here.
STEPS: list[Step] = [intake, screen, prepare, make_jobs, grade_each, score, export, report]


def run(root: Path, source: Path, options: Options, steps: list[Step], sandboxes: bool = True) -> Grading:
    """Run ``steps`` on a new ``Grading`` of the course at ``root``, after the checks that come
    before anything is written (an older config; a sandbox that cannot start, when ``sandboxes``
    are started), with the gradebook used in turns; the scratch folder is removed afterwards."""
    root = Path(root).resolve()
    options = dataclasses.replace(options, package=options.package or boot.package_dir(root))
    nbconfig.check_paths(root)  # an older copy of the config: a clear error before anything is written
    if sandboxes and options.sandbox and (problem := bwrap.probe(options.package)):  # refuse rather than run unconfined
        raise bwrap.Unavailable(problem)
    db_url = options.db_url or CourseLayout(root).db_url
    g = Grading(root, Path(source), options, db_url, Path(tempfile.mkdtemp(prefix="autograder-grade-")))
    try:
        # nbgrader_config.py puts the scripts on PATH too when it is read: inside the block
        with scripts_on_path(), gradebook.turns(gradebook.lock_for(db_url)) as g.lock:
            for step in steps:
                step(g)
        return g
    finally:
        shutil.rmtree(g.scratch, ignore_errors=True)


def grade(root: Path, source: Path, options: Options | None = None, steps: list[Step] = STEPS) -> list[Outcome]:
    """Grade every submission in ``source`` (a folder or an LMS zip) and return the outcomes;
    writes autograded/, feedback/, the gradebook and grades.csv under ``root``. A submission
    already graded with the same bytes (its stamp, ``in_parts.stamps``) is not graded again
    unless ``options.regrade``."""
    return run(root, source, options or Options(), steps).every_outcome()

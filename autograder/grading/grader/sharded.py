"""A class graded in shards: ``grade --intake``, then ``grade --shard I/N`` side by side (on
one machine or many), then ``grade --finish``. Each runs steps of ``pipeline`` on a
``Grading`` of its own; what they share lies in the course folder (``shards``, ``resume``)
and in the gradebook, used in turns (``output/gradebook``).

- ``plan``: intake, once: the class collected into submitted/, the plan written, and the
  start-up check run (once per state of the course: the shards then skip it).
- ``shard``: its part of the plan's pairs, graded as ``grade`` grades them (a submission already
  graded with the same bytes is skipped, so a shard killed and started again grades only what
  it had not finished); it never writes submitted/, grades.csv or the class report.
- ``finish``: after every shard: the scores, grades.csv, the class reports and the summary of
  the whole class, refused while a shard still runs or while a pair has no result (unless
  ``allow_incomplete``: then grades.csv marks the missing rows).
"""

from __future__ import annotations

import sys
from pathlib import Path

from autograder.grading.grader import pipeline, resume, shards
from autograder.grading.grader.outcomes import Outcome, Outcomes
from autograder.grading.grader.output import gradebook
from autograder.grading.grader.output.grades_csv import write_csv
from autograder.grading.grader.report.step import report
from autograder.grading.layout import CourseLayout

MISSING = "MISSING: no shard finished it; grades.csv says missing (run its shard again, then --finish)"


def _write_plan(g: pipeline.Grading) -> None:
    not_graded = [(o.file, "; ".join(o.notes)) for o in g.not_graded]
    shards.write_plan(CourseLayout(g.root), shards.Plan(g.pairs, not_graded, g.not_graded.notes))


def plan(root: Path, source: Path, options: pipeline.Options) -> Outcomes:
    """``grade SOURCE --intake``: collect the class, check the grader, write the plan; the
    files not graded (with the notes) are returned, for the summary."""
    g = pipeline.run(root, source, options, [pipeline.intake, pipeline.prepare, pipeline.check_grader, _write_plan])
    print(f"planned: {len(g.pairs)} submission(s) to grade in shards ({shards.plan_path(CourseLayout(g.root))})")
    return g.not_graded


def _from_plan(pairs: list[tuple[str, str]]) -> pipeline.Step:
    def step(g: pipeline.Grading) -> None:
        g.pairs = pairs
        pipeline.read_record(g)

    return step


def shard(root: Path, which: shards.Shard, options: pipeline.Options) -> Outcomes:
    """``grade --shard I/N``: grade this shard's part of the plan; its outcomes."""
    layout = CourseLayout(Path(root).resolve())
    planned = shards.read_plan(layout)
    shards.check_count(layout, which)
    pairs = shards.part(planned.pairs, which)
    print(f"shard {which}: {len(pairs)} of the {len(planned.pairs)} submission(s) planned", file=sys.stderr)
    with shards.heartbeat(layout, which):
        steps = [_from_plan(pairs), pipeline.prepare, pipeline.make_jobs, pipeline.grade_each]
        g = pipeline.run(root, layout.submitted, options, steps)
    return pipeline.outcomes(g)


def _stamped(g: pipeline.Grading) -> list[tuple[str, str]]:
    """Put each pair's stamp into its outcome; the pairs with no complete result."""
    layout, missing = CourseLayout(g.root), []
    held = gradebook.held(g.db_url, g.course_id)
    for student, lab in g.pairs:
        stamp = resume.complete(layout, student, lab, held)
        if stamp is None:
            missing.append((student, lab))
            continue
        g.outcomes[(student, lab)] = Outcome(
            student,
            lab,
            graded=stamp.graded,
            notes=stamp.notes,
            sandboxed=g.options.sandbox,
            original_id=g.originals.get(student, ""),
        )
    return missing


def finish(root: Path, options: pipeline.Options, allow_incomplete: bool = False) -> Outcomes:
    """``grade --finish``: the scores, grades.csv, the class reports and the summary of the
    class, once every shard has ended. ShardError, with nothing written, while a shard runs or
    while a pair has no result (unless ``allow_incomplete``)."""
    layout = CourseLayout(Path(root).resolve())
    planned = shards.read_plan(layout)
    if busy := shards.running(layout):
        raise shards.ShardError(f"--finish: {', '.join(busy)} still running; finish once every shard has ended")
    missing: list[tuple[str, str]] = []

    def gather(g: pipeline.Grading) -> None:
        g.pairs, g.not_graded = planned.pairs, _not_graded(planned)
        pipeline.read_record(g)
        g.course_id = pipeline.nbconfig.course_id(g.root)
        missing.extend(_stamped(g))
        if missing and not allow_incomplete:
            shown = ", ".join(f"{s}/{lab}" for s, lab in missing[:20]) + (" ..." if len(missing) > 20 else "")
            raise shards.ShardError(
                f"--finish: {len(missing)} of {len(g.pairs)} submission(s) have no result: {shown}. Run their "
                "shards again (a shard grades only what it has not finished), or --finish --allow-incomplete "
                "to write grades.csv with those rows marked missing; nothing was written"
            )

    def export(g: pipeline.Grading) -> None:
        path = g.options.csv_path or layout.grades_csv
        write_csv(path, g.scores, g.late, g.originals, missing=set(missing))
        for student, lab in missing:
            g.outcomes[(student, lab)] = Outcome(student, lab, graded=False, notes=[MISSING])

    g = pipeline.run(root, layout.submitted, options, [gather, pipeline.score, export, report], sandboxes=False)
    return pipeline.outcomes(g)


def _not_graded(planned: shards.Plan) -> Outcomes:
    """The plan's files not graded and notes, as the summary shows them."""
    return Outcomes(
        [Outcome("", "", graded=False, file=name, notes=[reason]) for name, reason in planned.not_graded],
        planned.notes,
    )

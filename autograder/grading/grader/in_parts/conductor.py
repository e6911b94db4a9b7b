"""A class graded in shards: ``grade --intake``, then ``grade --shard I/N`` side by side (on
one machine or many), then ``grade --finish``. Each runs steps of the stations with
``pipeline.run`` on a ``Grading`` of its own; what they share lies in the course folder
(``shards``, ``stamps``) and in the gradebook, used in turns (``output/gradebook``).

- ``plan``: intake, once: the class collected into submitted/, the start-up check run (once per
  state of the course: the shards then skip it), and the plan written with the key each pair
  is to be graded with; refused while a shard runs.
- ``shard``: its part of the plan's pairs, graded as ``grade`` grades them (a submission already
  graded with the same bytes is skipped, so a shard killed and started again grades only what
  it had not finished); refused while a shard of its index runs, and before it writes anything
  when a pair's key is not the plan's. It never writes submitted/, grades.csv or the class report.
- ``finish``: after every shard: the scores, grades.csv, the class reports and the summary of
  the whole class, refused while a shard still runs or while a pair has no result with the key
  of the plan (unless ``allow_incomplete``: then grades.csv marks those rows missing).

Each holds the lock of the shards' states (``shards.locked``) while it reads them: a shard
only while it claims its index, intake and finish throughout.
"""

from __future__ import annotations

import sys
from pathlib import Path

from autograder.grading.grader import pipeline
from autograder.grading.grader.grading import Grading, Options, Outcome, Outcomes
from autograder.grading.grader.in_parts import shards, stamps
from autograder.grading.grader.intake.steps import intake, read_record, screen
from autograder.grading.grader.output import gradebook
from autograder.grading.grader.output.grades_csv import write_csv
from autograder.grading.grader.output.steps import score
from autograder.grading.grader.report.step import report
from autograder.grading.grader.run import nbconfig
from autograder.grading.grader.run.jobs import keep_jobs, plan_jobs, prepare
from autograder.grading.grader.run.on_workers import check_grader, grade_each
from autograder.grading.layout import CourseLayout

MISSING = "MISSING: no shard finished it; grades.csv says missing (run its shard again, then --finish)"


def _write_plan(g: Grading) -> None:
    not_graded = [(o.file, "; ".join(o.notes)) for o in g.not_graded]
    shards.write_plan(CourseLayout(g.root), shards.Plan(g.pairs, not_graded, g.not_graded.notes, g.keys))


def plan(root: Path, source: Path, options: Options) -> Outcomes:
    """``grade SOURCE --intake``: collect the class, check the grader, write the plan with each
    pair's key; the files not graded (with the notes) are returned, for the summary. ShardError,
    with nothing written, while a shard runs."""
    layout = CourseLayout(Path(root).resolve())
    with shards.locked(layout):
        if busy := shards.refusal(layout, "--intake", "a new plan would change the class under it"):
            raise shards.ShardError(busy)
        steps: list[pipeline.Step] = [intake, prepare, check_grader, screen, plan_jobs, _write_plan]
        g = pipeline.run(root, source, options, steps)
    print(f"planned: {len(g.pairs)} submission(s) to grade in shards ({shards.plan_path(layout)})")
    return g.not_graded


def _from_plan(pairs: list[tuple[str, str]]) -> pipeline.Step:
    def step(g: Grading) -> None:
        g.pairs = pairs
        read_record(g)

    return step


def _as_planned(which: shards.Shard, planned: shards.Plan) -> pipeline.Step:
    """A step that refuses, before anything is written, a pair whose key is not the plan's: this
    shard would grade it in another state of the course than intake planned."""

    def step(g: Grading) -> None:
        if other := [f"{s}/{lab}" for s, lab in g.pairs if g.keys[(s, lab)] != planned.keys.get((s, lab))]:
            raise shards.ShardError(
                f"--shard {which}: {len(other)} submission(s) would not be graded as --intake planned them: "
                f"{_shown(other)}. Since intake the course changed (its package, a lab, nbgrader_config.py, "
                "the versions of Python or of what grades), or this shard has other settings (--timeout, "
                "--memory-mb, --job-timeout, --no-sandbox): give every step the same settings, or run "
                "`grade SUBMISSIONS --intake` again; nothing was graded"
            )

    return step


def shard(root: Path, which: shards.Shard, options: Options) -> Outcomes:
    """``grade --shard I/N``: grade this shard's part of the plan; its outcomes. ShardError while
    a shard of that index runs, or when the shard would not grade its part as planned."""
    layout = CourseLayout(Path(root).resolve())
    planned = shards.read_plan(layout)
    pairs = shards.part(planned.pairs, which)
    with shards.heartbeat(layout, which):
        print(f"shard {which}: {len(pairs)} of the {len(planned.pairs)} submission(s) planned", file=sys.stderr)
        steps = [_from_plan(pairs), prepare, screen, plan_jobs, _as_planned(which, planned), keep_jobs, grade_each]
        g = pipeline.run(root, layout.submitted, options, steps)
    return g.every_outcome()


def _shown(pairs: list[str]) -> str:
    return ", ".join(pairs[:20]) + (" ..." if len(pairs) > 20 else "")


def _stamped(g: Grading, keys: dict[tuple[str, str], str]) -> tuple[list[str], list[str]]:
    """Put each pair's stamp into its outcome when its results are complete and its key is the
    plan's (``keys``); the pairs with no complete result, and those graded with another key."""
    layout = CourseLayout(g.root)
    missing: list[tuple[str, str]] = []
    other: list[tuple[str, str]] = []
    held = gradebook.held(g.db_url, g.course_id)
    for student, lab in g.pairs:
        stamp = stamps.complete(layout, student, lab, held)
        if stamp is None or stamp.key != keys.get((student, lab)):
            (missing if stamp is None else other).append((student, lab))
            continue
        g.outcomes[(student, lab)] = Outcome(
            student,
            lab,
            graded=stamp.graded,
            notes=stamp.notes,
            sandboxed=g.options.sandbox,
            original_id=g.originals.get(student, ""),
        )
    return [f"{s}/{lab}" for s, lab in missing], [f"{s}/{lab}" for s, lab in other]


def _incomplete(total: int, missing: list[str], other: list[str]) -> str:
    """Why --finish refuses: the pairs with no result, and those graded from other bytes than planned."""
    said = [f"{len(missing)} of {total} submission(s) have no result: {_shown(missing)}"] if missing else []
    if other:
        said.append(
            f"{len(other)} of {total} submission(s) have a result of other bytes or another state of the course "
            f"than --intake planned (handed in again since their shard ran): {_shown(other)}"
        )
    return (
        f"--finish: {'; '.join(said)}. Run their shards again (a shard grades only what it has not finished), "
        "or --finish --allow-incomplete to write grades.csv with those rows marked missing; nothing was written"
    )


def finish(root: Path, options: Options, allow_incomplete: bool = False) -> Outcomes:
    """``grade --finish``: the scores, grades.csv, the class reports and the summary of the
    class, once every shard has ended. ShardError, with nothing written, while a shard runs or
    while a pair has no result with the key the plan gives it (unless ``allow_incomplete``:
    those rows say missing)."""
    layout = CourseLayout(Path(root).resolve())
    planned = shards.read_plan(layout)
    missing: set[tuple[str, str]] = set()

    def gather(g: Grading) -> None:
        g.pairs, g.not_graded = planned.pairs, _not_graded(planned)
        read_record(g)
        g.course_id = nbconfig.course_id(g.root)
        none, other = _stamped(g, planned.keys)
        if (none or other) and not allow_incomplete:
            raise shards.ShardError(_incomplete(len(g.pairs), none, other))
        missing.update(pair for pair in g.pairs if pair not in g.outcomes)

    def export(g: Grading) -> None:
        path = g.options.csv_path or layout.grades_csv
        write_csv(path, g.scores, g.late, g.originals, missing=missing)
        for student, lab in sorted(missing):
            g.outcomes[(student, lab)] = Outcome(student, lab, graded=False, notes=[MISSING])

    with shards.locked(layout):
        if busy := shards.refusal(layout, "--finish", "finish once every shard has ended"):
            raise shards.ShardError(busy)
        g = pipeline.run(root, layout.submitted, options, [gather, score, export, report], sandboxes=False)
    return g.every_outcome()


def _not_graded(planned: shards.Plan) -> Outcomes:
    """The plan's files not graded and notes, as the summary shows them."""
    return Outcomes(
        [Outcome("", "", graded=False, file=name, notes=[reason]) for name, reason in planned.not_graded],
        planned.notes,
    )

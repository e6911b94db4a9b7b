"""The report's CSV files: the same numbers as the page, for a spreadsheet. The files under
``class/`` carry no student id; every cell a spreadsheet would read as a formula is neutralised."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from autograder.checks.kit.mistakes import describe
from autograder.grading.grader.report import plots
from autograder.grading.grader.report.alike import Pair, matches
from autograder.grading.grader.report.lessons import lesson
from autograder.grading.grader.report.tally import Tally
from autograder.grading.grader.safe_text import csv_cell


def _write(path: Path, head: list[str], rows: list[list[object]]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(head)
    for row in rows:
        writer.writerow([csv_cell(f"{c:g}" if isinstance(c, float) else str(c)) for c in row])
    path.write_text(buffer.getvalue(), encoding="utf-8")


def _exercises(t: Tally) -> tuple[list[str], list[list[object]]]:
    """exercises.csv: the exercises ranked by the points the class lost on them alone."""
    head = [
        "rank",
        "exercise",
        "max_points",
        "passed",
        "failed",
        "blank",
        "attempted",
        "lost_points",
        "points_lost_alone",
        "most_common_mistake",
        "most_common_mistake_words",
        "taught_in",
    ]
    return head, [
        [
            rank,
            e.name,
            e.max_points,
            e.passed,
            e.failed,
            e.blank,
            e.attempted,
            e.lost,
            round(e.points_lost, 4),
            top or "",
            describe(top) if top else "",
            (where.url() if (where := lesson(t.lab, e.name)) else ""),
        ]
        for rank, e in enumerate(t.ranked(), 1)
        for top in [e.top_mistake()]
    ]


def _similar(pairs: list[Pair]) -> tuple[list[str], list[list[object]]]:
    """similar.csv, for the instructor's copy alone: one row per two students and exercise on which
    their answers are alike, numbered by pair of students as the page shows them."""
    return (
        [
            "pair",
            "first",
            "second",
            "exercise",
            "shared_fingerprints",
            "first_fingerprints",
            "second_fingerprints",
            "contained",
            "similarity",
        ],
        [
            [n, p.first, p.second, p.exercise, p.shared, p.first_prints, p.second_prints]
            + [round(p.contained, 3), round(p.similarity, 3)]
            for n, m in enumerate(matches(pairs), 1)
            for p in m.pairs
        ],
    )


def write_tables(t: Tally, pairs: list[Pair], folder: Path, ids: bool) -> list[Path]:
    """Write the report's CSV files into ``folder`` (with ids, or the class copy without); their paths.
    A mistake's words (``mistakes.describe``) stand beside its id; similar answers are pairs of students."""
    written: dict[str, tuple[list[str], list[list[object]]]] = {
        "distribution.csv": (["score_from", "score_to", "students"], [[lo, hi, n] for lo, hi, n in plots.bins(t)]),
        "exercises.csv": _exercises(t),
        "mistakes.csv": (
            ["exercise", "mistake", "words", "students", "attempted", "share"] + (["ids"] if ids else []),
            [
                [m.exercise, m.mistake, describe(m.mistake), m.count, m.attempted, round(m.share, 4)]
                + ([" ".join(m.students)] if ids else [])
                for m in t.mistakes
            ],
        ),
    }
    if ids:
        written["scores.csv"] = (["student_id", "score", "max_score"], [list(s) for s in t.scores])
        written["similar.csv"] = _similar(pairs)
    folder.mkdir(parents=True, exist_ok=True)
    for name, (head, rows) in written.items():
        _write(folder / name, head, rows)
    return [folder / name for name in written]

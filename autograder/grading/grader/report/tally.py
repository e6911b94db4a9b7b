"""The report's numbers: per exercise passed / failed / blank, per mistake who made it, and
the exercises ranked by the points the class lost on them *on their own*: where grading re-ran
an exercise with the earlier exercises it uses replaced by the reference (error carried
forward, ``points_alone`` in the verdicts), a mistake made earlier costs it nothing here, so the
ranking points at the exercise where the mistake is.

A check stops at its first failure, so each failed exercise carries one mistake: the first
one its check found. A student *attempted* an exercise when it is not blank (an answer cell
changed from the release); a mistake's share is of those who attempted the exercise.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from autograder.grading.grader.report.sheets import Sheet


@dataclass
class Exercise:
    """How the class did on one exercise."""

    name: str
    max_points: float = 0.0
    passed: int = 0
    failed: int = 0
    blank: int = 0
    lost: int = 0  # students with fewer points than the maximum (blank ones included)
    points_lost: float = 0.0  # points the class lost on it on its own (blank ones included)
    mistakes: Counter[str] = field(default_factory=Counter)

    @property
    def attempted(self) -> int:
        return self.passed + self.failed

    def top_mistake(self) -> str | None:
        """The most common mistake (ties: the first id in alphabetical order)."""
        return min(self.mistakes, key=lambda m: (-self.mistakes[m], m)) if self.mistakes else None


@dataclass(frozen=True)
class Mistake:
    """One mistake id on one exercise: who made it, and their share of those who attempted."""

    exercise: str
    mistake: str
    students: tuple[str, ...]
    attempted: int

    @property
    def count(self) -> int:
        return len(self.students)

    @property
    def share(self) -> float:
        return self.count / self.attempted if self.attempted else 0.0


@dataclass
class Tally:
    """A lab's class in numbers (what every table and plot of the report shows)."""

    lab: str
    scores: list[tuple[str, float, float]]  # (student, score, max score), by student
    exercises: list[Exercise]  # in the notebook's order
    mistakes: list[Mistake]  # most common first

    def ranked(self) -> list[Exercise]:
        """Exercises by the points the class lost on them on their own, most first (then by students
        who lost points, then notebook order)."""
        order = {e.name: i for i, e in enumerate(self.exercises)}
        return sorted(self.exercises, key=lambda e: (-round(e.points_lost, 6), -e.lost, order[e.name]))

    def spread(self) -> tuple[float, float, float]:
        """(median, first quartile, third quartile) of the scores; the middle half lies between the quartiles."""
        values = sorted(score for _, score, _ in self.scores)
        if len(values) < 2:
            return (values[0],) * 3 if values else (0.0, 0.0, 0.0)
        low, middle, high = statistics.quantiles(values, n=4, method="inclusive")
        return middle, low, high


def tally(lab: str, sheets: list[Sheet]) -> Tally:
    """Count what ``sheets`` (one per student, of ``lab``) record."""
    exercises: dict[str, Exercise] = {}
    who: defaultdict[tuple[str, str], list[str]] = defaultdict(list)
    for sheet in sorted(sheets, key=lambda s: s.student):
        for row in sheet.rows:
            ex = exercises.setdefault(row.exercise, Exercise(row.exercise))
            ex.max_points = max(ex.max_points, row.max_points)
            setattr(ex, row.status, getattr(ex, row.status) + 1)
            ex.lost += row.points < row.max_points
            ex.points_lost += row.lost_alone
            if row.status == "failed" and not (row.points_alone is not None and row.lost_alone == 0):
                # (a failure that passes on its own is an earlier exercise's mistake, counted there)
                mistake = row.mistake or "unnamed"
                ex.mistakes[mistake] += 1
                who[(row.exercise, mistake)].append(sheet.student)
    order = {name: i for i, name in enumerate(exercises)}
    mistakes = [Mistake(ex, m, tuple(students), exercises[ex].attempted) for (ex, m), students in who.items()]
    mistakes.sort(key=lambda m: (-m.count, order[m.exercise], m.mistake))
    scores = sorted((s.student, s.score, s.max_score) for s in sheets)
    return Tally(lab, scores, list(exercises.values()), mistakes)

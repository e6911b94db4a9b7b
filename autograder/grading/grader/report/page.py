"""The report's HTML page: static, no JavaScript, every plot an image with alt text and a table
beside it with the same numbers. ``render(..., ids=False)`` is the copy without any student id,
for teaching assistants or the class: no id anywhere, and no similar submissions.

The page opens with what an instructor came for, read in a minute: the class's size, median and
spread, the three most common mistakes in words with their counts and the lecture section that
teaches each, and how many pairs of students with similar answers need a look. Wherever the page names a
mistake, its words (``checks.kit.mistakes.describe``) stand beside its id."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from html import escape

from autograder.checks.kit.failures import UNNAMED
from autograder.checks.kit.mistakes import describe
from autograder.grading.grader.report import plots
from autograder.grading.grader.report.alike import MIN_SHARED, MIN_TOKENS, THRESHOLD, Pair, matches
from autograder.grading.grader.report.lessons import lesson
from autograder.grading.grader.report.tally import Tally

_STYLE = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:1rem auto;padding:0 1rem;color:#1a1a1a;
background:#fff;line-height:1.5}h1{margin:.5rem 0}table{border-collapse:collapse;margin:1rem 0}caption{text-align:left;
font-weight:600;padding:.25rem 0}th,td{border:1px solid #767676;padding:.25rem .5rem;text-align:left;
vertical-align:top}td.n{text-align:right}figure{margin:1rem 0}img{max-width:100%;height:auto}
a{color:#0b57a4}.ids{font-family:monospace;font-size:.9em}#summary{border:2px solid #0b57a4;border-radius:.25rem;
padding:0 1rem}#summary ol{margin:.25rem 0}#summary p{margin:.5rem 0}"""


@dataclass(frozen=True)
class Compared:
    """How similar answers were looked for: whether the release was found (it says which cells
    make up an exercise; without it nothing is compared), and M (``alike.MAX_SHARED``)."""

    release: bool = True
    max_shared: int = 10


def _table(caption: str, head: list[str], rows: list[list[str]], numeric: Collection[int] = ()) -> str:
    """A table with a caption and column headers; cells are HTML already escaped by the caller."""
    th = "".join(f'<th scope="col">{h}</th>' for h in head)
    body = "".join(
        "<tr>"
        + "".join(f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    if not rows:
        body = f'<tr><td colspan="{len(head)}">none</td></tr>'
    return f"<table><caption>{caption}</caption><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _mistake(mistake: str) -> str:
    """A mistake as the page names it: its words, then its id."""
    return f"{escape(describe(mistake))} (<code>{escape(mistake)}</code>)"


def _taught(lab: str, exercise: str) -> str:
    where = lesson(lab, exercise)
    return f'<a href="{escape(where.url())}">{escape(where.title)}</a>' if where else "a section not mapped"


def _summary(t: Tally, pairs: list[Pair], ids: bool, compared: Compared) -> str:
    top = max((m for _, _, m in t.scores), default=0.0)
    median, low, high = t.spread()
    scores = [s for _, s, _ in t.scores]
    lines = [
        f"<p><strong>{len(t.scores)} students</strong>. Median score <strong>{median:g}</strong> of {top:g} "
        f"points; the middle half scored {low:g} to {high:g} (lowest {min(scores, default=0):g}, "
        f"highest {max(scores, default=0):g}).</p>"
    ]
    common = [m for m in t.mistakes if m.mistake != UNNAMED][:3]
    if common:
        items = "".join(
            f"<li><strong>{m.count}</strong> of {m.attempted} who attempted <code>{escape(m.exercise)}"
            f"</code>: {_mistake(m.mistake)}; taught in {_taught(t.lab, m.exercise)}.</li>"
            for m in common
        )
        lines.append(f"<p>The {len(common)} most common mistakes:</p><ol>{items}</ol>")
    else:
        lines.append("<p>No named mistake.</p>")
    ranked = t.ranked()
    if ranked and ranked[0].points_lost > 0:
        e = ranked[0]
        lines.append(
            f"<p>Most points lost on its own: <code>{escape(e.name)}</code>, {e.points_lost:g} points in all "
            f'(<a href="#ranked">what to teach again</a>).</p>'
        )
    if ids:
        found = matches(pairs)
        lines.append(
            "<p>Similar answers: "
            + (
                f"<strong>{len(found)} pair{'s' if len(found) != 1 else ''}</strong> of students to look at "
                f'(<a href="#similar">below</a>).</p>'
                if compared.release
                else "not compared (the lab's release notebook was not found).</p>"
            )
        )
    return (
        '<section id="summary" aria-labelledby="summary-title"><h2 id="summary-title">Summary</h2>'
        + "".join(lines)
        + "</section>"
    )


def _distribution(t: Tally) -> str:
    rows = plots.bins(t)
    busiest = max(rows, key=lambda r: r[2])
    alt = (
        f"Bar chart of the scores of {len(t.scores)} students in ten bins; the most students, "
        f"{busiest[2]}, scored {busiest[0]:g} to {busiest[1]:g} points. The table below gives every bin."
    )
    table = _table(
        "Students per score bin (the last bin includes the maximum)",
        ["score from", "to", "students"],
        [[f"{lo:g}", f"{hi:g}", str(n)] for lo, hi, n in rows],
        {0, 1, 2},
    )
    return (
        f'<h2 id="scores">Score distribution</h2><figure><img src="{plots.distribution(t)}" alt="{escape(alt)}">'
        f"<figcaption>Scores of the class on {escape(t.lab)}.</figcaption></figure>{table}"
    )


def _exercises(t: Tally) -> str:
    worst = max(t.exercises, key=lambda e: e.lost) if t.exercises else None
    alt = (
        "Stacked horizontal bars, one per exercise, of the students who passed, failed or left it blank"
        + (f"; the most lost points on {worst.name} ({worst.lost})" if worst else "")
        + ". The table below gives them."
    )
    table = _table(
        "Per exercise, in the notebook's order",
        ["exercise", "points", "passed", "failed", "blank"],
        [
            [f"<code>{escape(e.name)}</code>", f"{e.max_points:g}", str(e.passed), str(e.failed), str(e.blank)]
            for e in t.exercises
        ],
        {1, 2, 3, 4},
    )
    return (
        f'<h2 id="exercises">Each exercise</h2><figure><img src="{plots.outcomes(t)}" alt="{escape(alt)}">'
        f"<figcaption>Passed, failed and blank, per exercise.</figcaption></figure>{table}"
    )


def _ranked(t: Tally) -> str:
    rows = []
    for rank, e in enumerate(t.ranked(), 1):
        top = e.top_mistake()
        rows.append(
            [
                str(rank),
                f"<code>{escape(e.name)}</code>",
                f"{e.points_lost:g}",
                str(e.lost),
                f"{_mistake(top)}: {e.mistakes[top]}" if top else "none",
                _taught(t.lab, e.name),
            ]
        )
    return (
        '<h2 id="ranked">What to teach again</h2><p>Exercises ranked by the points the class lost on them '
        "<em>on their own</em> (blank ones included): where grading re-ran an exercise with the earlier "
        "exercises it uses replaced by the reference, a mistake made earlier costs it nothing here. Each comes "
        "with its most common mistake and the lecture section that teaches it.</p>"
        + _table(
            "Exercises by points lost on their own",
            [
                "rank",
                "exercise",
                "points lost on its own",
                "students who lost points",
                "most common mistake",
                "taught in",
            ],
            rows,
            {0, 2, 3},
        )
    )


def _mistakes(t: Tally, ids: bool) -> str:
    head = ["exercise", "mistake", "students", "of those who attempted"] + (["ids"] if ids else [])
    rows = [
        [f"<code>{escape(m.exercise)}</code>", _mistake(m.mistake), str(m.count), f"{_pct(m.share)} of {m.attempted}"]
        + ([f'<span class="ids">{escape(" ".join(m.students))}</span>'] if ids else [])
        for m in t.mistakes
    ]
    return (
        '<h2 id="mistakes">Mistakes, one by one</h2><p>A check stops at its first failure: each count is of '
        f"the first mistake each check found; a failure no check names is counted as {_mistake(UNNAMED)}.</p>"
        + _table("Named mistakes, most common first", head, rows, {2, 3})
    )


def _alike(p: Pair) -> str:
    """How one pair's answers to one exercise resemble each other, in words."""
    inner, outer = p.inside
    return (
        f"<code>{escape(p.exercise)}</code>: {_pct(p.contained)} of {escape(inner)}'s answer is in "
        f"{escape(outer)}'s ({p.shared} of {min(p.first_prints, p.second_prints)} fingerprints; "
        f"{escape(outer)}'s has {max(p.first_prints, p.second_prints)}, Jaccard {p.similarity:.2f})"
    )


def _similar(pairs: list[Pair], compared: Compared) -> str:
    rows = [
        [
            str(n),
            f'<span class="ids">{escape(" ".join(m.students))}</span>',
            "<br>".join(_alike(p) for p in m.pairs),
        ]
        for n, m in enumerate(matches(pairs), 1)
    ]
    how = (
        "Who resembles whom: each row is two students and the exercises on which their answers are alike; "
        "nobody is listed beside a student whose answers theirs do not resemble. An exercise's answer is the "
        "code a run of the notebook leaves bound to its names, wherever the student wrote it (the answer cell "
        "or a cell they added), with the helpers it uses. Two answers are similar when that code, with "
        "comments, names, whitespace and the stub's own lines taken out, and with the code that says nothing "
        "removed (the fingerprints of the release's stub and of the reference solution, and any found in more "
        f"than {compared.max_shared} answers of the class), shares at least {MIN_SHARED} fingerprints and "
        f"{THRESHOLD:.0%} of the smaller answer's, whatever the other adds (answers under {MIN_TOKENS} tokens "
        "are not compared). Read the answers before you conclude anything: this is a flag, never a change of points."
    )
    if not compared.release:
        how = "Not compared: the lab's release notebook, which says which cells make up an exercise, was not found."
    return f'<h2 id="similar">Similar answers</h2><p>{how}</p>' + _table(
        "Pairs of students with similar answers", ["pair", "students", "alike on"], rows, {0}
    )


def render(t: Tally, pairs: list[Pair], notes: list[str], ids: bool = True, compared: Compared = Compared()) -> str:
    """The report's page for one lab; ``ids=False``: the copy with no student id."""
    audience = "instructor's copy, with student ids" if ids else "class copy, without student ids"
    noted = (
        '<h2 id="notes">Notes</h2><ul>' + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>"
        if notes and ids
        else ""
    )
    parts = (
        [_summary(t, pairs, ids, compared), _ranked(t), _mistakes(t, ids)]
        + ([_similar(pairs, compared)] if ids else [])
        + [_distribution(t), _exercises(t)]
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
        f'content="width=device-width, initial-scale=1"><title>Class report: {escape(t.lab)}</title>'
        f"<style>{_STYLE}</style></head><body><main><h1>Class report: {escape(t.lab)} "
        f"<small>({audience})</small></h1>" + "".join(parts) + noted + "</main></body></html>\n"
    )

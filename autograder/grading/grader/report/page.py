"""The report's HTML page: static, no JavaScript, every plot an image with alt text and a table
beside it with the same numbers. ``render(..., ids=False)`` is the copy without any student id,
for teaching assistants or the class: no id anywhere, and no similar submissions."""

from __future__ import annotations

from collections.abc import Collection
from html import escape

from autograder.grading.grader.report import plots
from autograder.grading.grader.report.lessons import lesson
from autograder.grading.grader.report.similar import MIN_TOKENS, THRESHOLD, Pair
from autograder.grading.grader.report.tally import Tally

_STYLE = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a;
background:#fff;line-height:1.5}table{border-collapse:collapse;margin:1rem 0}caption{text-align:left;
font-weight:600;padding:.25rem 0}th,td{border:1px solid #767676;padding:.25rem .5rem;text-align:left;
vertical-align:top}td.n{text-align:right}figure{margin:1rem 0}img{max-width:100%;height:auto}
a{color:#0b57a4}.ids{font-family:monospace;font-size:.9em}"""


def _table(caption: str, head: list[str], rows: list[list[str]], numeric: Collection[int] = ()) -> str:
    """A table with a caption and column headers; cells are HTML already escaped by the caller."""
    th = "".join(f'<th scope="col">{h}</th>' for h in head)
    body = "".join("<tr>" + "".join(f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    if not rows:
        body = f'<tr><td colspan="{len(head)}">none</td></tr>'
    return f"<table><caption>{caption}</caption><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _distribution(t: Tally) -> str:
    rows = plots.bins(t)
    busiest = max(rows, key=lambda r: r[2])
    alt = (f"Bar chart of the scores of {len(t.scores)} students in ten bins; the most students, "
           f"{busiest[2]}, scored {busiest[0]:g} to {busiest[1]:g} points. The table below gives every bin.")
    table = _table("Students per score bin (the last bin includes the maximum)", ["score from", "to", "students"],
                   [[f"{lo:g}", f"{hi:g}", str(n)] for lo, hi, n in rows], {0, 1, 2})
    return (f'<h2 id="scores">Score distribution</h2><figure><img src="{plots.distribution(t)}" alt="{escape(alt)}">'
            f"<figcaption>Scores of the class on {escape(t.lab)}.</figcaption></figure>{table}")


def _exercises(t: Tally) -> str:
    worst = t.ranked()[0] if t.exercises else None
    alt = ("Stacked horizontal bars, one per exercise, of the students who passed, failed or left it blank"
           + (f"; the most lost points on {worst.name} ({worst.lost})" if worst else "")
           + ". The table below gives them.")
    table = _table("Per exercise, in the notebook's order", ["exercise", "points", "passed", "failed", "blank"],
                   [[f"<code>{escape(e.name)}</code>", f"{e.max_points:g}", str(e.passed), str(e.failed), str(e.blank)]
                    for e in t.exercises], {1, 2, 3, 4})
    return (f'<h2 id="exercises">Each exercise</h2><figure><img src="{plots.outcomes(t)}" alt="{escape(alt)}">'
            f"<figcaption>Passed, failed and blank, per exercise.</figcaption></figure>{table}")


def _ranked(t: Tally) -> str:
    rows = []
    for rank, e in enumerate(t.ranked(), 1):
        where = lesson(t.lab, e.name)
        link = f'<a href="{escape(where.url())}">{escape(where.title)}</a>' if where else "not mapped"
        top = e.top_mistake()
        rows.append([str(rank), f"<code>{escape(e.name)}</code>", str(e.lost),
                     f"<code>{escape(top)}</code> ({e.mistakes[top]})" if top else "none", link])
    return ('<h2 id="ranked">What to teach again</h2><p>Exercises ranked by how many students lost points on them '
            "(blank ones included), with the most common mistake of each and the lecture section that teaches it.</p>"
            + _table("Exercises by students who lost points", ["rank", "exercise", "lost points", "most common mistake",
                                                               "taught in"], rows, {0, 2}))


def _mistakes(t: Tally, ids: bool) -> str:
    head = ["exercise", "mistake", "students", "of those who attempted"] + (["ids"] if ids else [])
    rows = [[f"<code>{escape(m.exercise)}</code>", f"<code>{escape(m.mistake)}</code>", str(m.count),
             f"{_pct(m.share)} of {m.attempted}"] + ([f'<span class="ids">{escape(" ".join(m.students))}</span>']
                                                   if ids else []) for m in t.mistakes]
    return ('<h2 id="mistakes">Mistakes, one by one</h2><p>A check stops at its first failure: each count is of '
            "the first mistake each check found. <code>unnamed</code> is a failure no check names.</p>"
            + _table("Named mistakes, most common first", head, rows, {2, 3}))


def _similar(pairs: list[Pair]) -> str:
    rows = [[f"<code>{escape(p.exercise)}</code>", escape(p.first), escape(p.second), f"{p.similarity:.2f}"]
            for p in pairs]
    return ('<h2 id="similar">Similar submissions</h2><p>Pairs of answers whose code, with comments, names, '
            f"whitespace and the stub's own lines taken out, shares at least {THRESHOLD:.0%} of its fingerprints "
            f"(answers under {MIN_TOKENS} tokens are not compared). Read both answers before you conclude anything: "
            "this is a flag, never a change of points.</p>"
            + _table("Pairs of similar answers", ["exercise", "student", "student", "similarity"], rows, {3}))


def render(t: Tally, pairs: list[Pair], notes: list[str], ids: bool = True) -> str:
    """The report's page for one lab; ``ids=False``: the copy with no student id."""
    audience = "instructor's copy, with student ids" if ids else "class copy, without student ids"
    noted = ("<h2 id=\"notes\">Notes</h2><ul>" + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>"
             if notes and ids else "")
    parts = [_distribution(t), _exercises(t), _ranked(t), _mistakes(t, ids)] + ([_similar(pairs)] if ids else [])
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
            f'content="width=device-width, initial-scale=1"><title>Class report: {escape(t.lab)}</title>'
            f"<style>{_STYLE}</style></head><body><main><h1>Class report: {escape(t.lab)}</h1>"
            f"<p>{len(t.scores)} students ({audience}).</p>" + "".join(parts) + noted + "</main></body></html>\n")

"""The report's two plots, as data URIs of SVG drawn by matplotlib (no pyplot, no JavaScript):
the score distribution and each exercise's passed / failed / blank. Each has a table beside it
on the page, with the same numbers, and an alt text that says what it shows."""

from __future__ import annotations

import base64
import io
import math

import matplotlib
import matplotlib.style
from matplotlib.figure import Figure

from autograder.grading.grader.report.tally import Tally

# the lectures' colour-blind-safe style (publisher guide); failed and blank are hatched as well
STYLE = "tableau-colorblind10"
PASSED, FAILED, BLANK, BARS = "C0", "C1", "grey", "C0"


def bins(tally: Tally) -> list[tuple[float, float, int]]:
    """(low, high, students) for scores in [low, high): ten bins of the lab's maximum, the last closed."""
    top = max((m for _, _, m in tally.scores), default=0.0) or 1.0
    edges = [top * i / 10 for i in range(11)]
    counts = [0] * 10
    for _, score, _ in tally.scores:
        counts[min(9, max(0, math.floor(score / top * 10)))] += 1
    return [(edges[i], edges[i + 1], counts[i]) for i in range(10)]


def _svg(fig: Figure) -> str:
    buffer = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "class-report"}):  # fixed ids and no date: a rerun, the same bytes
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def distribution(tally: Tally) -> str:
    """A histogram of the class's scores, as a data URI."""
    with matplotlib.style.context(STYLE):
        return _svg(distribution_figure(tally))


def outcomes(tally: Tally) -> str:
    """Per exercise, stacked bars of passed / failed / blank, as a data URI."""
    with matplotlib.style.context(STYLE):
        return _svg(outcomes_figure(tally))


def distribution_figure(tally: Tally) -> Figure:
    """A histogram of the class's scores (drawn in the style that is in force: STYLE for the report)."""
    fig = Figure(figsize=(6, 3), dpi=100)
    ax = fig.add_subplot()
    rows = bins(tally)
    ax.bar([f"{lo:g}-{hi:g}" for lo, hi, _ in rows], [n for *_, n in rows], color=BARS)
    ax.set_xlabel("score (points)")
    ax.set_ylabel("students")
    ax.tick_params(axis="x", labelrotation=45)
    ax.set_title(f"{tally.lab}: scores of {len(tally.scores)} students")
    fig.tight_layout()
    return fig


def outcomes_figure(tally: Tally) -> Figure:
    """Per exercise, stacked bars of passed / failed / blank."""
    fig = Figure(figsize=(6, 0.5 * len(tally.exercises) + 1.5), dpi=100)
    ax = fig.add_subplot()
    names = [e.name for e in tally.exercises][::-1]
    left = [0] * len(names)
    for label, color, attr in (("passed", PASSED, "passed"), ("failed", FAILED, "failed"), ("blank", BLANK, "blank")):
        values = [getattr(e, attr) for e in tally.exercises][::-1]
        ax.barh(names, values, left=left, color=color, label=label, hatch={"failed": "//", "blank": ".."}.get(attr))
        left = [a + b for a, b in zip(left, values, strict=True)]
    ax.set_xlabel("students")
    ax.legend(loc="lower right", fontsize="small")
    ax.set_title(f"{tally.lab}: each exercise")
    fig.tight_layout()
    return fig

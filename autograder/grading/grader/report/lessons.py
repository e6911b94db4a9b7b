"""Where the book teaches each lab exercise: exercise (test cell grade id) -> lecture section.

The table is the course's own data, ``book/lessons.yml``, and the site's address is
``html.baseurl`` in ``_config.yml``, both read once from the course: the repository this package
lives in (an editable install, as ``make venv`` makes it), else the current folder (a course
root, where the package is installed from its wheel, as on the hub); where neither holds them,
no exercise is mapped. The report links an exercise's row to its section, on the published site.
The instructor guide renders the same mapping as a table of MyST links (``markdown_table``), so
the strict build (``-W -n``, with ``myst_heading_anchors``) fails on a page or a heading that is
gone; a test holds that every exercise of every lab has an entry and that the guide's table is
this one.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import NamedTuple

from autograder.authoring import ROOT, course_site

TABLE = Path("book") / "lessons.yml"  # from the course's root


def course_root() -> Path | None:
    """The course whose table and site the report uses: the package's repository, else the current folder."""
    return next((r for r in (ROOT, Path.cwd()) if (r / TABLE).is_file() and (r / "_config.yml").is_file()), None)


@functools.cache
def _site() -> str:
    return course_site(course_root() or ROOT)


class Lesson(NamedTuple):
    """A lecture section: its page (``book/02-self-attention``), heading anchor and title."""

    page: str
    anchor: str  # myst_heading_anchors' slug of the heading ("" for the page's top)
    title: str

    def url(self, site: str | None = None) -> str:
        """The section's address on ``site`` (the course's site when None)."""
        return f"{site or _site()}{self.page}.html" + (f"#{self.anchor}" if self.anchor else "")


@functools.cache
def lessons(root: Path | None = None) -> dict[str, dict[str, Lesson]]:
    """Lab -> exercise -> the section that teaches it, as ``book/lessons.yml`` under ``root`` (the
    course's, when None) says; empty where there is no course."""
    import yaml

    root = root or course_root()
    if root is None:
        return {}
    table = yaml.safe_load((root / TABLE).read_text(encoding="utf-8"))
    return {
        lab: {ex: Lesson(f"book/{s['page']}", s["anchor"], s["heading"]) for ex, s in exercises.items()}
        for lab, exercises in table.items()
    }


def lesson(lab: str, exercise: str) -> Lesson | None:
    """The section that teaches ``exercise`` of ``lab`` (None for an exercise not mapped)."""
    return lessons().get(lab, {}).get(exercise)


def markdown_table(base: str = "../") -> str:
    """The mapping as a MyST table whose links the strict build checks (``base``: from the guide to book/)."""
    rows = ["| lab | exercise | taught in |", "| --- | --- | --- |"]
    for lab, exercises in lessons().items():
        for exercise, where in exercises.items():
            target = f"{base}{where.page.removeprefix('book/')}.md" + (f"#{where.anchor}" if where.anchor else "")
            rows.append(f"| {lab} | `{exercise}` | [{where.title}]({target}) |")
    return "\n".join(rows)

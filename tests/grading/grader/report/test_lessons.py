"""Does every lab exercise link to a lecture section that exists, as the instructor guide shows?"""

from __future__ import annotations

import json
import re
import shutil

import yaml
from mdit_py_plugins.anchors.index import slugify

from autograder.grading.grader.report import lessons as lessons_module
from autograder.grading.grader.report.lessons import lessons, markdown_table
from tests.grading.grader.report import report_class

REPO = report_class.REPO
HEADING = re.compile(r"^#{1,6} +(.+?)\s*$", re.MULTILINE)


def _graded_exercises(lab: str) -> list[str]:
    cells = json.loads((REPO / "notebooks" / lab / f"{lab}.ipynb").read_text())["cells"]
    return [
        c["metadata"]["nbgrader"]["grade_id"]
        for c in cells
        if c["metadata"].get("nbgrader", {}).get("grade") and c["cell_type"] == "code"
    ]


def test_every_exercise_of_every_lab_has_a_lesson():
    """Does each graded test cell of each released lab have exactly one entry, and no entry name nothing?"""
    labs = sorted(p.name for p in (REPO / "notebooks").iterdir() if (p / f"{p.name}.ipynb").is_file())
    assert sorted(lessons()) == labs
    for lab in labs:
        assert list(lessons()[lab]) == _graded_exercises(lab), lab


def test_every_anchor_is_a_heading_of_its_page():
    """Is each section's anchor the slug of a heading of its page (myst_heading_anchors), and its title that heading?"""
    for exercises in lessons().values():
        for exercise, where in exercises.items():
            text = (REPO / f"{where.page}.md").read_text(encoding="utf-8")
            headings = {slugify(h): h for h in HEADING.findall(text) if not h.startswith("!")}
            assert where.anchor in headings, (exercise, where)
            assert where.title == headings[where.anchor].replace("`", ""), (exercise, where)


def test_the_instructor_guide_shows_the_mapping():
    """Does the instructor guide hold the mapping as the table of links the strict build checks?"""
    guide = (REPO / "book" / "guides" / "instructor.md").read_text(encoding="utf-8")
    assert markdown_table() in guide


def test_a_link_is_on_the_site_that_config_names():
    """Is a section's address on the site of ``_config.yml`` (html.baseurl), the one place it is set?"""
    site = yaml.safe_load((REPO / "_config.yml").read_text())["html"]["baseurl"]
    where = lessons()["02-self-attention"]["test_softmax"]
    assert where.url() == f"{site}book/02-self-attention.html#softmax-and-numerical-stability"
    assert where.url("https://example.org/") == "https://example.org/book/02-self-attention.html#" + where.anchor


def test_the_course_is_found_beside_the_package_or_in_the_current_folder(monkeypatch, tmp_path):
    """With the package installed from its wheel (no course beside it), is the table read from the
    course root the command runs in, and is every exercise unmapped, not an error, outside a course?"""
    monkeypatch.setattr(lessons_module, "ROOT", tmp_path / "site-packages")
    monkeypatch.chdir(tmp_path)
    assert lessons_module.course_root() is None
    assert lessons_module.lessons.__wrapped__() == {}
    (tmp_path / "book").mkdir()
    shutil.copy(REPO / "book" / "lessons.yml", tmp_path / "book" / "lessons.yml")
    shutil.copy(REPO / "_config.yml", tmp_path / "_config.yml")
    assert lessons_module.course_root() == tmp_path
    assert lessons_module.lessons.__wrapped__() == lessons()

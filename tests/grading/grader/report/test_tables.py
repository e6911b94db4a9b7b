"""The report's files: the class copy without ids, a page without JavaScript, the CLI and grade's step."""

from __future__ import annotations

import csv
import json
import re
from html.parser import HTMLParser
from pathlib import Path

from autograder.cli import main
from autograder.grading.grader.grading import Outcomes
from autograder.grading.grader.report import lessons
from autograder.grading.grader.report.step import report
from tests.grading.grader.report import report_class

LAB = report_class.LAB


class _Page(HTMLParser):
    """What the tests look for in a page: tags, images' alt texts, links, table captions."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.alts: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        attrs = dict(attrs)
        if tag == "img":
            self.alts.append(attrs.get("alt") or "")
        if tag == "a":
            self.links.append(attrs.get("href") or "")


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def test_the_class_copy_holds_no_student_id(reported):
    """Does no file of class/ name a student, where the instructor's copy does?"""
    folder = reported.root / "reports" / LAB
    ids = re.compile(r"\b(" + "|".join(reported.planted.students) + r")\b")
    shared = sorted(p.name for p in (folder / "class").iterdir())
    assert shared == ["distribution.csv", "exercises.csv", "index.html", "mistakes.csv"]
    for path in (folder / "class").iterdir():
        assert not ids.search(path.read_text(encoding="utf-8")), path
    assert ids.search((folder / "index.html").read_text()) and ids.search((folder / "scores.csv").read_text())
    assert reported.planted.shared[0] in (folder / "similar.csv").read_text()


def test_the_page_is_static_with_plots_described(reported):
    """Is each page free of scripts, its plots images with alt text, a table beside them, and links to the lectures?"""
    folder = reported.root / "reports" / LAB
    for path in (folder / "index.html", folder / "class" / "index.html"):
        page = _parse(path)
        assert "script" not in page.tags and "iframe" not in page.tags
        assert len(page.alts) == 2 and all(len(alt.split()) >= 8 for alt in page.alts), page.alts
        assert page.tags.count("table") >= 4 and page.tags.count("caption") == page.tags.count("table")
        assert {lessons.lesson(LAB, e.name).url() for e in reported.tally.exercises} <= set(page.links)


def test_cli_report_writes_the_lab(reported, tmp_path, capsys):
    """Does `report LAB --out DIR` write both copies there, and a lab without verdicts exit 2 with the reason?"""
    (reported.root / "nbgrader_config.py").touch()  # a course for find_root
    (reported.root / "solutions").mkdir(exist_ok=True)
    assert main(["--course", str(reported.root), "report", LAB, "--out", str(tmp_path)]) == 0
    assert (tmp_path / LAB / "index.html").is_file() and (tmp_path / LAB / "class" / "index.html").is_file()
    assert f"{LAB}: {len(reported.planted.students)} students" in capsys.readouterr().out
    assert main(["--course", str(reported.root), "report", "06-masking", "--out", str(tmp_path)]) == 2
    assert "no verdicts recorded for 06-masking" in capsys.readouterr().err


class _Grading:
    def __init__(self, root: Path, labs: list[str]) -> None:
        self.root, self.pairs, self.not_graded = root, [("s", lab) for lab in labs], Outcomes()


def test_grade_step_turns_a_failure_into_a_note(tmp_path):
    """Does the report step of grade note an unreadable verdicts.json, a lab without any, and never raise?"""
    for student, text in (("good", None), ("bad", "{not json")):
        folder = tmp_path / "autograded" / student / "lab"
        folder.mkdir(parents=True)
        (folder / "verdicts.json").write_text(
            text
            or json.dumps(
                {
                    "schema": "autograder.verdicts/1",
                    "student": student,
                    "original_id": None,
                    "lab": "lab",
                    "exercises": [
                        {
                            "exercise": "test_a",
                            "answer_cells": ["a"],
                            "status": "passed",
                            "points": 1,
                            "max_points": 1,
                            "mistake": None,
                            "message": "",
                        }
                    ],
                    "answers": {"a": "x = 1"},
                }
            )
        )
    g = _Grading(tmp_path, ["lab", "other"])
    report(g)
    assert (tmp_path / "reports" / "lab" / "index.html").is_file()
    assert [n.split(":")[0] for n in g.not_graded.notes] == ["class report of lab", "no class report for other"]
    assert "not JSON" in g.not_graded.notes[0]
    (tmp_path / "reports" / "lab").rename(tmp_path / "blocked")
    (tmp_path / "reports" / "lab").write_text("a file where the folder goes")
    g = _Grading(tmp_path, ["lab"])
    report(g)
    assert "could not be written" in g.not_graded.notes[0] and "grades are unaffected" in g.not_graded.notes[0]


def test_an_unknown_schema_is_refused(tmp_path):
    """Is a verdicts.json of another schema version noted with the version the report reads?"""
    folder = tmp_path / "autograded" / "s" / "lab"
    folder.mkdir(parents=True)
    (folder / "verdicts.json").write_text(json.dumps({"schema": "autograder.verdicts/2"}))  # a later version
    g = _Grading(tmp_path, ["lab"])
    report(g)
    assert "'autograder.verdicts/2' is not 'autograder.verdicts/1'" in g.not_graded.notes[0]


def test_a_rerun_writes_the_same_bytes(reported, tmp_path):
    """Does writing the report again from the same verdicts give byte-identical files?"""
    from autograder.grading.grader.report import write_report

    write_report(reported.root, LAB, tmp_path)
    first = {p.relative_to(tmp_path): p.read_bytes() for p in sorted(tmp_path.rglob("*")) if p.is_file()}
    written = reported.root / "reports"
    assert first == {p.relative_to(written): p.read_bytes() for p in sorted(written.rglob("*")) if p.is_file()}


def test_every_mistake_the_page_names_stands_beside_its_words(reported):
    """Wherever a page or a CSV file names a mistake id, are its words (mistakes.describe) beside it?"""
    from html import escape

    from autograder.checks.kit.mistakes import describe

    folder = reported.root / "reports" / LAB
    for path in (folder / "index.html", folder / "class" / "index.html"):
        text = path.read_text(encoding="utf-8")
        named = re.findall(r"<code>([a-z0-9-]+/[a-z0-9-]+|unnamed)</code>", text)
        assert {m.mistake for m in reported.tally.mistakes} <= set(named)
        for mistake in set(named):
            assert text.count(f"<code>{mistake}</code>") == text.count(
                f"{escape(describe(mistake))} (<code>{mistake}</code>)"
            ), (path, mistake)
    rows = list(csv.DictReader((folder / "mistakes.csv").open(encoding="utf-8")))
    assert rows and all(r["words"] == describe(r["mistake"]) for r in rows)
    ranked = list(csv.DictReader((folder / "exercises.csv").open(encoding="utf-8")))
    assert all(
        r["most_common_mistake_words"] == (describe(r["most_common_mistake"]) if r["most_common_mistake"] else "")
        for r in ranked
    )


def test_the_page_opens_with_the_summary(reported):
    """Does the page's first section say the class size, the median and the middle half, the three most
    common named mistakes in words with their counts and lecture sections, and the pairs to look at?"""
    from autograder.checks.kit.mistakes import describe
    from autograder.grading.grader.report.alike import matches

    text = (reported.root / "reports" / LAB / "index.html").read_text(encoding="utf-8")
    main = text[text.index("<main>") :]
    assert main.index('id="summary"') < main.index("<h2", main.index("</section>"))  # before any other section
    summary = main[: main.index("</section>")]
    median, low, high = reported.tally.spread()
    assert f"{len(reported.planted.students)} students" in summary and f"Median score <strong>{median:g}" in summary
    assert f"the middle half scored {low:g} to {high:g}" in summary
    top = [m for m in reported.tally.mistakes if m.mistake != "unnamed"][:3]
    items = re.findall(r"<li>(.*?)</li>", summary)
    assert len(items) == 3
    for item, m in zip(items, top, strict=True):
        assert item.startswith(f"<strong>{m.count}</strong>") and describe(m.mistake).split(":")[0] in item
        assert lessons.lesson(LAB, m.exercise).url() in item
    found = len(matches(reported.pairs))
    assert f"<strong>{found} pair{'s' if found != 1 else ''}</strong> of students to look at" in summary

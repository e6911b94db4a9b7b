"""The hostile-submission suite: one student per attack on the grade, graded for real (nbgrader,
the sandbox, the independent check) on a temporary course, then a victim graded after all of
them. Each attack earns 0, or exactly what its honest part earns; nothing it did is left
behind (no file, no process, no connection); the victim gets exactly its own score."""

from __future__ import annotations

import base64
import csv
import html
import json
import os
import re
import socket
import tempfile
from pathlib import Path

import nbformat
import pytest

from autograder.grading.grader import grading, pipeline
from autograder.grading.grader.intake.ids import safe_id
from autograder.grading.grader.lab_cells import clear_hidden
from autograder.grading.grader.run import bwrap as sandbox
from autograder.grading.protocol.confinement import Limits
from tests.grading.helpers import LAB, processes_with
from tests.grading.scenarios import hostile_class
from tests.grading.scenarios.hostile_class import ESCAPED, PLANTED


def runnable(page: str) -> list[str]:
    """What in a page of feedback a browser would run: script elements and event-handler or
    javascript: attributes in a tag (the page's own head, MathJax and styles, excepted)."""
    body = page[page.index("<body") :]
    return re.findall(r"<script\b[^>]*>(?:(?!</script>).)*hostile", body, re.S) + re.findall(
        r"<[a-z][^<>]*\s(?:on[a-z]+\s*=|(?:href|src)\s*=\s*[\"\']?\s*javascript:)[^<>]*>", body, re.I
    )


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if "__pycache__" not in p.parts}


def test_every_attack_scores_nothing_and_leaves_nothing(course: Path, tmp_path: Path, monkeypatch) -> None:
    """Does every attack on the grade score 0 (or its honest part), leave no file, process or
    connection behind, and leave the victim graded after it with exactly its own score?"""
    if sandbox.probe() is not None:
        pytest.skip(f"bubblewrap cannot run here: {sandbox.probe()}")
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret.txt").write_text("HOME-SECRET-0451")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AUTOGRADER_TEST_SECRET", "ENV-SECRET-0451")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    package = Path(pipeline.__file__).parents[2]
    package_files = _files(package)
    cases = hostile_class.cases(course, home, port, package)
    inbox = tmp_path / "inbox"
    listed = hostile_class.write_class(inbox, course, home, cases)
    ESCAPED.unlink(missing_ok=True)
    course_files = _files(course)
    # this grading's scratch folders (in its kernels' and children's command lines) tell its
    # processes from those of gradings that other tests may run meanwhile
    scratches: list[str] = []
    mkdtemp = tempfile.mkdtemp

    def recorded_mkdtemp(*args, **kwargs):
        scratches.append(mkdtemp(*args, **kwargs))
        return scratches[-1]

    monkeypatch.setattr(tempfile, "mkdtemp", recorded_mkdtemp)
    try:
        options = grading.Options(jobs=2, limits=Limits(memory_mb=2048), job_timeout=300, progress=False)
        outcomes = pipeline.grade(course, inbox, options)
        planted_exists = (package / "checks" / PLANTED).exists()
    finally:
        (package / "checks" / PLANTED).unlink(missing_ok=True)
    text = grading.summary(outcomes)
    print(text)
    by_student = {o.student: o for o in outcomes}
    for student, (_, score, phrase) in cases.items():
        graded = by_student[safe_id(student)]
        assert (graded.score, graded.max_score) == (score, 5), f"{student!r}: {text}"
        if phrase:
            assert any(
                line.startswith(f"  {safe_id(student)} / {LAB}:") and phrase in line for line in text.splitlines()
            ), f"{student}: no line saying {phrase!r} in\n{text}"
    table = list(csv.reader((course / "grades.csv").open()))
    assert table[0] == ["student_id", "lab", "score", "max_score", "late", "original_id"]
    rows = {r["student_id"]: float(r["score"]) for r in csv.DictReader((course / "grades.csv").open())}
    assert rows == {safe_id(s): float(c[1]) for s, c in cases.items()}
    # names are data: kept in their own column, with no formula a spreadsheet would run
    originals = {r["student_id"]: r["original_id"] for r in csv.DictReader((course / "grades.csv").open())}
    assert originals[safe_id("=1+1")] == "'=1+1" and originals["김민수"] == "김민수"
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for row in table for cell in row)
    assert not any(line.startswith("  zz-victim  00-warmup  forged") for line in text.splitlines())
    assert all(len(row) == 6 for row in table) and len(table) == len(cases) + 1
    # links, hard links and pipes are listed by name, and nothing they lead to was read
    for name, phrase in listed.items():
        assert any(line.startswith(f"  not graded: {name}: ") and phrase in line for line in text.splitlines()), (
            f"{name}: no line saying {phrase!r} in\n{text}"
        )
    assert "  perms-open/: was writable by others (mode 777)" in text
    for folder, expected in (("autograded", [f"{LAB}.ipynb", "verdicts.json"]), ("feedback", [f"{LAB}.html"])):
        assert sorted(p.name for p in (course / folder / "links-extra" / LAB).iterdir()) == expected, folder
    assert not any(b"KEY-SECRET-0451" in p.read_bytes() for p in course.rglob("*") if p.is_file())
    # nothing left behind: no planted module, no file outside the grading outputs, no process, no connection
    assert not planted_exists
    assert _files(package) == package_files
    grading_outputs = ("submitted", "autograded", "feedback", "grading-logs", "gradebook.db", "grades.csv", "reports")
    assert {f for f in _files(course) - course_files if not f.startswith(grading_outputs)} == set()
    assert not (home / "written.txt").exists() and not Path("/tmp/autograder-hostile-written.txt").exists()
    assert not ESCAPED.exists() and not (course / "escaped.txt").exists()
    assert scratches, "the grading made no scratch folder: the process check would see nothing"
    assert processes_with("987654", *scratches) == []
    with pytest.raises(BlockingIOError):
        listener.accept()
    # the forged pass is explained to its author, with the independent check's message
    forged = (course / "feedback" / "transformer" / LAB / f"{LAB}.html").read_text()
    assert "checked again outside it" in forged and "NotImplementedError" in forged
    # nothing secret reached the snoop's feedback
    feedback = (course / "feedback" / "snoop" / LAB / f"{LAB}.html").read_text()
    for secret in ("HOME-SECRET-0451", "ENV-SECRET-0451", "BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "grade_cells"):
        assert secret not in feedback, secret
    autograded = nbformat.read(str(course / "autograded" / "snoop" / LAB / f"{LAB}.ipynb"), as_version=4)
    printed = "".join(o.get("text", "") for c in autograded.cells for o in c.get("outputs", []))
    assert "No such file or directory" in printed or "Permission denied" in printed or "Read-only" in printed
    assert os.environ["AUTOGRADER_TEST_SECRET"] not in printed
    _feedback_holds(course)


def _feedback_holds(course: Path) -> None:
    """The feedback attackers: no hidden test in any form, nothing a browser runs, no 50 MB."""

    def page(student: str) -> str:
        return (course / "feedback" / student / LAB / f"{LAB}.html").read_text()

    source = nbformat.read(str(course / "solutions" / LAB / f"{LAB}.ipynb"), as_version=4)
    tests = [c.source for c in source.cells if "BEGIN HIDDEN TESTS" in c.source]
    visible = {line for t in tests for line in clear_hidden(t, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS").split("\n")}
    hidden = [
        line
        for t in tests
        for line in t.split("BEGIN HIDDEN TESTS")[1].splitlines()[1:-1]
        if len(line) > 12 and line not in visible
    ]  # a re-import the visible part also has is no secret
    assert hidden
    hook = page("feedback-hook")
    autograded = nbformat.read(str(course / "autograded" / "feedback-hook" / LAB / f"{LAB}.ipynb"), as_version=4)
    printed = json.dumps([c.get("outputs", []) for c in autograded.cells])
    assert "LATER:" in hook and "Passed: the grader ran this test again" in hook  # the hook ran; verdicts shown
    assert "HOOK SAW: from autograder.checks" not in hook  # nothing the kernel printed in a test cell
    for text in (hook, printed):
        decoded = [
            base64.b64decode(token).decode(errors="replace")  # what the hook printed in base64
            for token in re.findall(r"[A-Za-z0-9+/]{40,}={0,2}", text)
            if len(token) % 4 == 0
        ]
        assert decoded, "the hook printed nothing in base64"
        for secret in ["BEGIN HIDDEN TESTS", *hidden, *(line[::-1] for line in hidden)]:
            assert html.escape(secret, quote=False) not in text and secret not in text, secret
            assert not [d for d in decoded if secret in d], secret
    script = page("feedback-script")
    assert "click me" in script and runnable(script) == [], runnable(script)
    size = course / "feedback" / "size-line" / LAB / f"{LAB}.html"
    assert size.stat().st_size < 4 * 2**20 and "output cut here" in size.read_text()

"""Does a grading killed half-way (SIGKILL of ``grade`` itself: it cannot stop its workers) end,
once started again, with what one uninterrupted grading writes, grading only what it had not
finished; does a grading with nothing changed grade nothing (not even the start-up check); and
does ``--regrade`` grade again?

Then, on copies of one class graded in shards, each case beside its control: is a class graded
again when a feedback template changes, is a result deleted by hand written again, and does
``--finish`` refuse a result of bytes handed in before the last ``--intake``?"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.grading.grader import grading, pipeline
from autograder.grading.grader.in_parts import stamps
from autograder.grading.layout import CourseLayout
from tests.grading.helpers import LAB, REPO, answered, make_course, released, results_of, submit

STUDENTS = {"ada": answered(), "ben": released(), "cy": answered("relu"), "dee": answered()}


def _grade(root: Path, inbox: Path, *flags: str, shared_check: bool = True) -> subprocess.Popen[str]:
    """``grade`` in a process of its own; ``shared_check=False``: only the course's own record of
    the start-up check counts (not the test session's, ``AUTOGRADER_CHECKED``)."""
    env = {k: v for k, v in os.environ.items() if shared_check or k != stamps.SHARED_RECORD}
    return subprocess.Popen(
        [sys.executable, "-m", "autograder", "--course", str(root), "grade", str(inbox), "--no-progress", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _descendants(pid: int) -> set[int]:
    """The processes started by ``pid``, and by them, on down (Linux /proc)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pids: set[int]) -> set[int]:
    """Those of ``pids`` still running (not zombies)."""
    out = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            out.add(pid)
    return out


def _stamps(root: Path) -> dict[str, int]:
    """Each stamped student's stamp, by the time it was written."""
    return {p.name.split("--")[0]: p.stat().st_mtime_ns for p in (root / "grading-logs").glob(f"*--{LAB}.stamp.json")}


def test_a_grading_killed_half_way_resumes_to_the_same_results(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    for student, nb in STUDENTS.items():
        submit(inbox, student, nb)
    alone = make_course(tmp_path / "alone")
    pipeline.grade(alone, inbox, grading.Options(jobs=1, progress=False))
    root = make_course(tmp_path / "course")
    killed = _grade(root, inbox)
    deadline = time.monotonic() + 240
    while not _stamps(root) and time.monotonic() < deadline:
        time.sleep(0.2)
    started = _descendants(killed.pid)
    os.kill(killed.pid, signal.SIGKILL)
    killed.communicate()
    before = _stamps(root)
    assert 1 <= len(before) < len(STUDENTS), before
    assert started  # the worker, at least, and the kernel it was grading in
    time.sleep(3)  # a worker ends within half a second of the pipeline, with its kernels
    assert _alive(started) == set()
    again = _grade(root, inbox)
    out, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    assert f"{len(before)} submission(s) already graded with the same bytes: not graded again" in err
    after = _stamps(root)
    assert {s: after[s] for s in before} == before  # what was finished was not graded again
    expected = results_of(alone)
    assert {f"autograded/{s}/{LAB}/verdicts.json" for s in STUDENTS} <= expected.keys()
    assert results_of(root) == expected
    # the course unchanged and one notebook changed: no start-up check (the course's own record
    # holds it), the changed notebook graded again, the others not, their results the same
    submit(inbox, "ben", answered())
    changed = _grade(root, inbox, shared_check=False)
    out, err = changed.communicate(timeout=600)
    assert changed.returncode == 0 and "Checking the grader" not in err, err
    assert f"{len(STUDENTS) - 1} submission(s) already graded with the same bytes" in err
    unchanged = [s for s in STUDENTS if s != "ben"]
    assert {s: _stamps(root)[s] for s in unchanged} == {s: after[s] for s in unchanged}
    kept = {path: data for path, data in expected.items() if "/ben/" not in path and path != "grades.csv"}
    assert {path: results_of(root)[path] for path in kept} == kept
    # --regrade grades again what did not change
    regraded = _grade(root, inbox, "--regrade", "--student", "ada")
    assert regraded.communicate(timeout=600)[0] and regraded.returncode == 0
    last = _stamps(root)
    assert last["ada"] != after["ada"] and last["ben"] != after["ben"]
    assert last["cy"] == after["cy"] and last["dee"] == after["dee"]
    assert "ben,00-warmup,5,5" in (root / "grades.csv").read_text()


def test_a_submission_whose_grading_was_lost_gets_no_stamp(tmp_path: Path) -> None:
    """A job with no answer for a reason not the student's (the worker died, grading stopped, the
    grader failed) is graded again next time; a student's own failure (too slow) is final."""
    from autograder.grading.grader.grading import Outcome
    from autograder.grading.grader.job import Result
    from autograder.grading.grader.run.on_workers import record_result

    layout = CourseLayout(tmp_path)
    layout.grading_logs.mkdir()
    cases = {
        "died": Result(crash="the grading process died: ", lost=True),
        "broken": Result(grader_error="the check's module is missing"),
        "slow": Result(crash="grading took longer than 600 s and was stopped"),
    }
    for student, result in cases.items():
        record_result(tmp_path, Outcome(student, LAB), result, key=f"key-{student}")
    assert sorted(_stamps(tmp_path)) == ["slow"]
    stamp = layout.stamp("slow", LAB).read_text()
    assert '"key": "key-slow"' in stamp and '"graded": false' in stamp


def test_the_key_covers_every_file_of_the_package_and_what_renders_feedback(tmp_path: Path, monkeypatch) -> None:
    """Does the course's state change when a feedback template (not a .py file) gains a line, or
    when nbconvert, nh3 or latex2mathml is another version; and stay when only Python's caches
    change (the control)?"""
    root, package = make_course(tmp_path / "course"), tmp_path / "autograder"
    template = package / "grading" / "grader" / "output" / "templates" / "feedback" / "mathjax.html.j2"
    template.parent.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    template.write_text('{%- macro mathjax(url="") -%}{%- endmacro -%}\n')

    def state() -> str:
        return stamps.course_key(CourseLayout(root), package, {"timeout": None})

    before = state()
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"cache")
    assert state() == before
    template.write_text(template.read_text() + "<!-- a line more -->\n")
    assert state() != before
    template.write_text('{%- macro mathjax(url="") -%}{%- endmacro -%}\n')
    assert state() == before
    version = stamps._version
    for name in ("nbconvert", "nh3", "latex2mathml"):
        monkeypatch.setattr(stamps, "_version", lambda n, name=name: "0.0.1" if n == name else version(n))
        assert state() != before, name


def test_a_result_that_is_gone_makes_the_result_incomplete(tmp_path: Path) -> None:
    """Does a stamp count only while every file its grading wrote is there (the feedback page
    deleted: incomplete; all there: complete, the control); and does a stamp of an older grader,
    which lists none, count as incomplete?"""
    layout = CourseLayout(tmp_path)
    for path in (
        layout.autograded_notebook("ada", LAB),
        layout.autograded / "ada" / LAB / "verdicts.json",
        layout.feedback / "ada" / LAB / f"{LAB}.html",
        layout.grading_logs / f"ada--{LAB}.log",
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    written = stamps.results(layout, "ada", LAB)
    assert f"feedback/ada/{LAB}/{LAB}.html" in written and len(written) == 4
    stamps.write_stamp(layout, "ada", LAB, stamps.Stamp("k", True, [], written))
    assert stamps.complete(layout, "ada", LAB, {("ada", LAB)}) == stamps.Stamp("k", True, [], written)
    (layout.feedback / "ada" / LAB / f"{LAB}.html").unlink()
    assert stamps.complete(layout, "ada", LAB, {("ada", LAB)}) is None
    layout.stamp("ada", LAB).write_text('{"key": "k", "graded": false, "notes": []}')
    assert stamps.complete(layout, "ada", LAB, set()) is None


# ----------------------------------------------------------------------------- one class graded in shards

CSV_HEAD = "student_id,lab,score,max_score,late,original_id\n"


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "autograder", "--course", str(root), "grade", "--no-progress", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def sharded_class(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A class of two graded in two shards and finished (ada full marks, ben the release as it
    was: 0/5), in a course with its own copy of the package; the course and the inbox."""
    folder = tmp_path_factory.mktemp("sharded")
    inbox = folder / "inbox"
    submit(inbox, "ada", answered())
    submit(inbox, "ben", released())
    root = make_course(folder / "course")
    shutil.copytree(REPO / "autograder", root / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    for step in ([str(inbox), "--intake"], ["--shard", "1/2"], ["--shard", "2/2"], ["--finish"]):
        done = _run(root, *step)
        assert done.returncode == 0, (step, done.stdout, done.stderr)
    assert (root / "grades.csv").read_text() == f"{CSV_HEAD}ada,{LAB},5,5,,ada\nben,{LAB},0,5,,ben\n"
    return root, inbox


def _copy(graded: tuple[Path, Path], folder: Path) -> Path:
    return Path(shutil.copytree(graded[0], folder / "course", symlinks=True))


def test_a_changed_feedback_template_grades_the_class_again(sharded_class: tuple[Path, Path], tmp_path: Path) -> None:
    """The course's feedback template gains a line: every page is written again with it. The
    control, nothing changed, grades nothing and writes the same results."""
    root, inbox = sharded_class
    same = _copy(sharded_class, tmp_path / "same")
    done = _run(same, str(inbox))
    assert done.returncode == 0 and "2 submission(s) already graded with the same bytes" in done.stderr, done.stderr
    assert results_of(same) == results_of(root)
    changed = _copy(sharded_class, tmp_path / "changed")
    template = changed / "autograder/grading/grader/output/templates/feedback/mathjax.html.j2"
    line = '<meta name="feedback-template-0451" content="round 2">'  # the page is written out again: the name stays
    template.write_text(template.read_text().replace("-%}{%- endmacro", f"-%}}{line}{{%- endmacro"))
    done = _run(changed, str(inbox))
    assert done.returncode == 0 and "already graded" not in done.stderr, done.stderr
    for student in ("ada", "ben"):
        assert "feedback-template-0451" not in (root / "feedback" / student / LAB / f"{LAB}.html").read_text()
        assert "feedback-template-0451" in (changed / "feedback" / student / LAB / f"{LAB}.html").read_text()
    assert (changed / "grades.csv").read_text() == (root / "grades.csv").read_text()


def test_a_feedback_folder_deleted_by_hand_is_written_again(sharded_class: tuple[Path, Path], tmp_path: Path) -> None:
    """ada's feedback folder deleted: the rerun grades ada again (ben, untouched, is skipped) and
    writes what one grading wrote; the control (nothing deleted) is the first rerun of the test above."""
    root, inbox = sharded_class
    course = _copy(sharded_class, tmp_path)
    shutil.rmtree(course / "feedback" / "ada")
    done = _run(course, str(inbox))
    assert done.returncode == 0 and "1 submission(s) already graded with the same bytes" in done.stderr, done.stderr
    assert results_of(course) == results_of(root)


def test_finish_refuses_what_was_graded_before_the_last_intake(
    sharded_class: tuple[Path, Path], tmp_path: Path
) -> None:
    """ben hands in again (full marks now), --intake plans the class again, only shard 1/2 (ada)
    runs: --finish refuses, naming ben, and leaves grades.csv as it was. The control: shard 2/2
    runs too, and --finish gives ben 5/5."""
    root, inbox = sharded_class
    course = _copy(sharded_class, tmp_path)
    again = Path(shutil.copytree(inbox, tmp_path / "inbox"))
    submit(again, "ben", answered())
    for step in ([str(again), "--intake"], ["--shard", "1/2"]):
        done = _run(course, *step)
        assert done.returncode == 0, (step, done.stderr)
    before = (course / "grades.csv").read_text()
    done = _run(course, "--finish")
    assert done.returncode == 2, done.stdout
    assert "--finish: 1 of 2 submission(s) have a result of other bytes or another state of the course" in done.stderr
    assert f"(handed in again since their shard ran): ben/{LAB}." in done.stderr
    assert (course / "grades.csv").read_text() == before
    assert _run(course, "--shard", "2/2").returncode == 0
    done = _run(course, "--finish")
    assert done.returncode == 0, done.stderr
    assert (course / "grades.csv").read_text() == f"{CSV_HEAD}ada,{LAB},5,5,,ada\nben,{LAB},5,5,,ben\n"

"""Does a grading killed half-way (SIGKILL of ``grade`` itself: it cannot stop its workers) end,
once started again, with what one uninterrupted grading writes, grading only what it had not
finished; does a grading with nothing changed grade nothing (not even the start-up check); and
does ``--regrade`` grade again?"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.grading.grader import pipeline
from autograder.grading.layout import CourseLayout
from tests.grading.helpers import LAB, answered, make_course, released, results_of, submit

STUDENTS = {"ada": answered(), "ben": released(), "cy": answered("relu"), "dee": answered()}


def _grade(root: Path, inbox: Path, *flags: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "autograder", "--course", str(root), "grade", str(inbox), "--no-progress", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
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


@pytest.mark.slow
def test_a_grading_killed_half_way_resumes_to_the_same_results(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    for student, nb in STUDENTS.items():
        submit(inbox, student, nb)
    alone = make_course(tmp_path / "alone")
    pipeline.grade(alone, inbox, pipeline.Options(jobs=2, progress=False))
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
    # nothing changed: nothing graded, no start-up check, the same results
    unchanged = _grade(root, inbox)
    out, err = unchanged.communicate(timeout=600)
    assert unchanged.returncode == 0 and "Checking the grader" not in err, err
    assert f"{len(STUDENTS)} submission(s) already graded with the same bytes" in err
    assert _stamps(root) == after and results_of(root) == expected
    # --regrade grades again; a changed notebook is graded again without it
    submit(inbox, "ben", answered())
    regraded = _grade(root, inbox, "--regrade", "--student", "ada")
    assert regraded.communicate(timeout=600)[0] and regraded.returncode == 0
    changed = _grade(root, inbox, "--student", "ben")
    assert changed.communicate(timeout=600)[0] and changed.returncode == 0
    last = _stamps(root)
    assert last["ada"] != after["ada"] and last["ben"] != after["ben"]
    assert last["cy"] == after["cy"] and last["dee"] == after["dee"]
    assert "ben,00-warmup,5,5" in (root / "grades.csv").read_text()


def test_a_submission_whose_grading_was_lost_gets_no_stamp(tmp_path: Path) -> None:
    """A job with no answer for a reason not the student's (the worker died, grading stopped, the
    grader failed) is graded again next time; a student's own failure (too slow) is final."""
    from autograder.grading.grader.job import Result
    from autograder.grading.grader.outcomes import Outcome

    layout = CourseLayout(tmp_path)
    layout.grading_logs.mkdir()
    cases = {
        "died": Result(crash="the grading process died: ", lost=True),
        "broken": Result(grader_error="the check's module is missing"),
        "slow": Result(crash="grading took longer than 600 s and was stopped"),
    }
    for student, result in cases.items():
        pipeline._record_result(tmp_path, Outcome(student, LAB), result, key=f"key-{student}")
    assert sorted(_stamps(tmp_path)) == ["slow"]
    stamp = layout.stamp("slow", LAB).read_text()
    assert '"key": "key-slow"' in stamp and '"graded": false' in stamp

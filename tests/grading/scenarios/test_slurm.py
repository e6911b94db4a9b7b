"""Does a class graded as a Slurm job array (the course's own ``deploy/slurm/submit``: intake,
3 shards, finish) into one PostgreSQL gradebook write what one ``grade`` of the same class
writes, byte for byte after the grading corpus's normaliser, also when a shard is cancelled
half-way and submitted again (and then grades only what it had not finished)?

It starts a one-node Slurm cluster of its own (``tests/grading/slurm_cluster.py``) and a
PostgreSQL server (``tests/grading/postgres_server.py``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.grading.grader import grading, pipeline
from autograder.grading.layout import CourseLayout
from tests.grading.helpers import LAB, REPO, answered, make_course, released, results_of, submit, with_answers
from tests.grading.slurm_cluster import Cluster, cluster, unavailable

SUBMIT = REPO / "deploy" / "slurm" / "submit"


def _class(inbox: Path) -> None:
    """Six students, two to a shard: full, blank, partial and wrong answers."""
    for student, nb in {
        "ada": answered(),
        "ben": released(),
        "cy": answered("relu"),
        "dee": with_answers(LAB, {"relu": "def relu(x):\n    return x"}, answered()),
        "eve": answered(),
        "fay": answered("relu"),
    }.items():
        submit(inbox, student, nb)


def _submit(c: Cluster, *args: str) -> dict[str, str]:
    """Run deploy/slurm/submit; the job ids it printed, by step."""
    done = subprocess.run([str(SUBMIT), *args], env=c.env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    ids = {}
    for line in done.stdout.splitlines():
        step, _, rest = line.partition(":")
        ids[step] = rest.split()[0]
    return ids


def _wait_for_stamp(layout: CourseLayout, students: list[str], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for student in students:
            if layout.stamp(student, LAB).is_file():
                return student
        time.sleep(0.5)
    raise AssertionError(f"no submission of {students} was graded within {timeout} s")


def test_a_job_array_grades_as_one_grade_does(tmp_path: Path, postgres_url: str) -> None:
    if reason := unavailable():
        pytest.skip(reason)
    inbox = tmp_path / "inbox"
    _class(inbox)
    alone = make_course(tmp_path / "alone")
    pipeline.grade(alone, inbox, grading.Options(jobs=1, progress=False))
    sharded = make_course(tmp_path / "sharded")
    layout = CourseLayout(sharded)
    with cluster(tmp_path / "slurm", cpus=2) as c:
        c.env.update(
            AUTOGRADER_COURSE=str(sharded),
            AUTOGRADER_PYTHON=sys.executable,
            AUTOGRADER_DB=postgres_url,
            AUTOGRADER_SUBMISSIONS=str(inbox),
        )
        first = _submit(c, "3", "--", "--cpus-per-task=1")
        # shard 2 of 3 grades ben and eve (every third pair of the sorted plan, from the second)
        half = _wait_for_stamp(layout, ["ben", "eve"], timeout=240)
        c.cancel(f"{first['shards']}_2")
        states = c.wait(first["shards"], timeout=120)
        assert states[f"{first['shards']}_2"] == "CANCELLED", states
        assert {s for task, s in states.items() if not task.endswith("_2")} == {"COMPLETED"}, states
        assert "Dependency" in c.reason(first["finish"])  # afterok: the finish waits for a shard that failed
        c.cancel(first["finish"])
        stamp = layout.stamp(half, LAB)
        finished_before = stamp.stat().st_mtime_ns
        again = _submit(c, "3", "--only", "2", "--", "--cpus-per-task=1")
        assert c.wait(again["finish"], timeout=240) == {again["finish"]: "COMPLETED"}
        assert set(c.wait(again["shards"], timeout=10).values()) == {"COMPLETED"}
    assert stamp.stat().st_mtime_ns == finished_before  # graded once, not again
    log = next(layout.grading_logs.glob(f"slurm-shard-{again['shards']}_2.out")).read_text()
    assert "shard 2/3: 2 of the 6 submission(s) planned" in log
    assert "1 submission(s) already graded with the same bytes: not graded again" in log
    expected = results_of(alone)
    assert {f"feedback/{s}/{LAB}/{LAB}.html" for s in ("ada", "ben", "cy", "dee", "eve", "fay")} <= expected.keys()
    assert b"ada,00-warmup,5,5" in expected["grades.csv"] and b"dee,00-warmup,3,5" in expected["grades.csv"]
    assert results_of(sharded) == expected
    assert not (sharded / "gradebook.db").exists()
    shutil.rmtree(tmp_path / "slurm", ignore_errors=True)

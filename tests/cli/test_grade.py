"""``grade``'s flags for a grading in shards and for resuming: wrong input is a clear error with
nothing written, ``--finish`` waits for every shard and every submission graded as planned (or
marks the missing ones when told), ``--intake`` and a second run of a shard wait for the running
shards, and a shard on the SQLite gradebook says once what several machines need."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from autograder import cli
from autograder.grading.grader.in_parts import shards, stamps
from autograder.grading.layout import CourseLayout
from tests.grading.helpers import LAB, answered, make_course, submit


def _files(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def _grade(root: Path, *args: str) -> int:
    return cli.main(["--course", str(root), "grade", "--no-progress", *args])


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--shard", "3/2"], "--shard 3/2: the shard must be from 1 to 2"),
        (["--shard", "0/0"], "--shard 0/0: the number of shards must be at least 1"),
        (["--shard"], "no shard in the environment"),
        (["--allow-incomplete"], "--allow-incomplete goes with --finish"),
        (["--shard", "1/1"], "no sharded grading is planned"),
        (["--finish"], "no sharded grading is planned"),
    ],
)
def test_wrong_input_is_an_error_with_nothing_written(
    tmp_path: Path, args: list[str], says: str, capsys, monkeypatch
) -> None:
    for name in ("SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"):
        monkeypatch.delenv(name, raising=False)
    root = make_course(tmp_path / "course")
    before = _files(root)
    assert _grade(root, *args) == 2
    assert says in capsys.readouterr().err
    assert _files(root) == before


def _planned(tmp_path: Path) -> Path:
    root = make_course(tmp_path / "course")
    shards.write_plan(CourseLayout(root), shards.Plan([("ada", LAB), ("ben", LAB)], [("notes.txt", "not a notebook")]))
    return root


def test_a_shard_count_unlike_the_started_ones_is_refused(tmp_path: Path, capsys) -> None:
    root = _planned(tmp_path)
    layout = CourseLayout(root)
    with shards.heartbeat(layout, shards.Shard(1, 3)):
        pass
    before = _files(root)
    assert _grade(root, "--shard", "1/2") == 2
    assert "this grading's shards were started as 3 shards" in capsys.readouterr().err
    assert _files(root) == before


def test_finish_waits_for_every_shard_and_every_submission(tmp_path: Path, capsys) -> None:
    root = _planned(tmp_path)
    layout = CourseLayout(root)
    with shards.heartbeat(layout, shards.Shard(1, 2)), shards.heartbeat(layout, shards.Shard(2, 2)):
        before = _files(root)
        assert _grade(root, "--finish") == 2
        err = capsys.readouterr().err
        assert _files(root) == before
    shard = f"(on {socket.gethostname()}, process {os.getpid()})"
    assert f"--finish: shard 1/2 {shard}, shard 2/2 {shard} still running" in err
    # how to clear a record that no shard holds any more
    assert f"remove its record to clear it: {layout.grading_state / 'shard-1-of-2.json'}, " in err
    before = _files(root)
    assert _grade(root, "--finish") == 2
    assert "--finish: 2 of 2 submission(s) have no result: ada/00-warmup, ben/00-warmup." in capsys.readouterr().err
    assert _files(root) == before
    assert _grade(root, "--finish", "--allow-incomplete") == 1
    out = capsys.readouterr().out
    assert f"ada / {LAB}: MISSING: no shard finished it" in out and "not graded: notes.txt: not a notebook" in out
    assert (root / "grades.csv").read_text() == (
        "student_id,lab,score,max_score,late,original_id\n"
        f"ada,{LAB},missing,missing,,ada\nben,{LAB},missing,missing,,ben\n"
    )


def test_finish_is_not_held_up_by_a_live_process_that_is_no_shard(tmp_path: Path, capsys) -> None:
    """A record saying running on this machine whose pid is now an unrelated live process (the
    shard died, its pid was given again): --finish goes on to the submissions; the same record
    naming that process as it is (the control) holds it up."""
    root = _planned(tmp_path)
    layout = CourseLayout(root)
    with shards.heartbeat(layout, shards.Shard(1, 1)):
        record = json.loads(shards.state_path(layout, shards.Shard(1, 1)).read_text())
    unrelated = subprocess.Popen(["sleep", "60"])
    try:
        stale = {**record, "state": "running", "pid": unrelated.pid}
        shards.state_path(layout, shards.Shard(1, 1)).write_text(json.dumps(stale))
        assert _grade(root, "--finish") == 2
        assert "--finish: 2 of 2 submission(s) have no result" in capsys.readouterr().err
        stale["process"] = shards._process(unrelated.pid)
        shards.state_path(layout, shards.Shard(1, 1)).write_text(json.dumps(stale))
        assert _grade(root, "--finish") == 2
        assert f"--finish: shard 1/1 (on {socket.gethostname()}, process {unrelated.pid}) still running" in (
            capsys.readouterr().err
        )
    finally:
        unrelated.kill()
        unrelated.wait()


def test_finish_refuses_a_result_of_other_bytes_than_planned(tmp_path: Path, capsys) -> None:
    """A submission handed in again and planned again by --intake, whose shard did not run since:
    its stamp has the old key, and --finish refuses it, naming it, with nothing written. (Its
    control, the same stamp with the planned key accepted, is in tests/grading/scenarios/test_resume.py:
    test_finish_refuses_what_was_graded_before_the_last_intake.)"""
    root = make_course(tmp_path / "course")
    layout = CourseLayout(root)
    shards.write_plan(layout, shards.Plan([("ada", LAB), ("ben", LAB)], keys={("ada", LAB): "k2", ("ben", LAB): "k1"}))
    for student in ("ada", "ben"):
        stamps.write_stamp(layout, student, LAB, stamps.Stamp("k1", graded=False, notes=["no notebook"]))
    before = _files(root)
    assert _grade(root, "--finish") == 2
    err = capsys.readouterr().err
    assert "--finish: 1 of 2 submission(s) have a result of other bytes or another state of the course " in err
    assert f"than --intake planned (handed in again since their shard ran): ada/{LAB}. Run their shards again" in err
    assert _files(root) == before


def test_intake_waits_for_a_running_shard(tmp_path: Path, capsys) -> None:
    """Does --intake refuse while shard 2/2 runs, naming it, with nothing written (the shard's
    record kept, nothing collected)?"""
    root = _planned(tmp_path)
    submit(tmp_path / "inbox", "cy", answered())
    with shards.heartbeat(CourseLayout(root), shards.Shard(2, 2)):
        before = _files(root)
        assert _grade(root, str(tmp_path / "inbox"), "--intake") == 2
        assert _files(root) == before
    err = capsys.readouterr().err
    assert f"--intake: shard 2/2 (on {socket.gethostname()}, process {os.getpid()}) still running" in err


def test_a_running_shard_is_not_started_twice(tmp_path: Path, capsys) -> None:
    """Does a second --shard 1/1 refuse, naming the running one, with its record unchanged?"""
    root = _planned(tmp_path)
    with shards.heartbeat(CourseLayout(root), shards.Shard(1, 1)):
        before = _files(root)
        assert _grade(root, "--shard", "1/1") == 2
        assert _files(root) == before
    err = capsys.readouterr().err
    assert f"--shard 1/1: shard 1/1 (on {socket.gethostname()}, process {os.getpid()}) still running" in err


def test_a_shard_on_sqlite_says_once_that_several_machines_need_postgresql(tmp_path: Path, capsys) -> None:
    root = make_course(tmp_path / "course")
    shards.write_plan(CourseLayout(root), shards.Plan([]))
    assert _grade(root, "--shard", "1/1") == 0
    err = capsys.readouterr().err
    assert err.count("shards on several machines need PostgreSQL") == 1
    assert "shard 1/1: 0 of the 0 submission(s) planned" in err

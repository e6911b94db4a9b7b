"""``grade``'s flags for a grading in shards and for resuming: wrong input is a clear error with
nothing written, ``--finish`` waits for every shard and every submission (or marks the missing
ones when told), and a shard on the SQLite gradebook says once what several machines need."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from autograder import cli
from autograder.grading.grader import shards
from autograder.grading.layout import CourseLayout
from tests.grading.helpers import LAB, make_course


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
    running = {"state": "running", "host": socket.gethostname(), "pid": os.getpid()}
    shards.state_path(layout, shards.Shard(2, 2)).write_text(json.dumps(running))
    before = _files(root)
    assert _grade(root, "--finish") == 2
    assert f"--finish: shard 2/2 (on {socket.gethostname()}, process {os.getpid()}) still running" in (
        capsys.readouterr().err
    )
    assert _files(root) == before
    shards.state_path(layout, shards.Shard(2, 2)).write_text(json.dumps({**running, "state": "stopped"}))
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


def test_a_shard_on_sqlite_says_once_that_several_machines_need_postgresql(tmp_path: Path, capsys) -> None:
    root = make_course(tmp_path / "course")
    shards.write_plan(CourseLayout(root), shards.Plan([]))
    assert _grade(root, "--shard", "1/1") == 0
    err = capsys.readouterr().err
    assert err.count("shards on several machines need PostgreSQL") == 1
    assert "shard 1/1: 0 of the 0 submission(s) planned" in err

"""Shards: ``I/N`` and the job arrays' environments read right or refused with the reason, the
parts of a plan covering it once and evenly, a shard count that disagrees with the one a
grading started with refused, a running shard told from one that is gone (and from another
process given its pid), a second run of a running shard refused, and no plan written over a
running shard."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from autograder.grading.grader.in_parts import shards
from autograder.grading.grader.in_parts.shards import Shard, ShardError
from autograder.grading.layout import CourseLayout


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("3/2", "the shard must be from 1 to 2"),
        ("0/0", "the number of shards must be at least 1"),
        ("0/3", "the shard must be from 1 to 3"),
        ("2", "expected I/N"),
        ("a/b", "expected I/N"),
        ("-1/2", "expected I/N"),
    ],
)
def test_a_wrong_shard_is_refused_with_the_reason(text: str, problem: str) -> None:
    with pytest.raises(ShardError, match=problem):
        shards.parse(text)


def test_shards_are_read_from_the_job_arrays_environments() -> None:
    assert shards.parse(" 2 / 8 ") == Shard(2, 8)
    slurm = {"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "4", "SLURM_ARRAY_TASK_COUNT": "3"}
    assert shards.from_environment(slurm) == Shard(2, 3)
    # deploy/slurm/submit says the count: the task id is the shard (a shard submitted again alone)
    assert shards.from_environment({**slurm, "SLURM_ARRAY_TASK_COUNT": "1", "AUTOGRADER_SHARDS": "6"}) == Shard(5, 6)
    assert shards.from_environment({"JOB_COMPLETION_INDEX": "0", "AUTOGRADER_SHARDS": "4"}) == Shard(1, 4)
    with pytest.raises(ShardError, match="not AUTOGRADER_SHARDS"):
        shards.from_environment({"JOB_COMPLETION_INDEX": "0"})
    with pytest.raises(ShardError, match="no shard in the environment"):
        shards.from_environment({})
    with pytest.raises(ShardError, match="the shard must be from 1 to 4"):
        shards.from_environment({"JOB_COMPLETION_INDEX": "4", "AUTOGRADER_SHARDS": "4"})
    with pytest.raises(ShardError, match="not a whole number"):
        shards.from_environment({"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "2"})


@pytest.mark.parametrize("count", [1, 2, 3, 7, 10, 11])
def test_the_parts_cover_the_plan_once_and_differ_by_at_most_one(count: int) -> None:
    pairs = [(f"s{i:02d}", lab) for i in range(10) for lab in ("00-warmup", "01-rnn-limits")][::-1]
    parts = [shards.part(pairs, Shard(i, count)) for i in range(1, count + 1)]
    assert sorted(p for part in parts for p in part) == sorted(pairs)
    assert max(map(len, parts)) - min(map(len, parts)) <= 1
    assert parts == [shards.part(list(reversed(pairs)), Shard(i, count)) for i in range(1, count + 1)]


def test_a_count_that_disagrees_with_the_started_shards_is_refused(tmp_path: Path) -> None:
    layout = CourseLayout(tmp_path)
    shards.write_plan(layout, shards.Plan([("ada", "00-warmup")]))
    shards.check_count(layout, Shard(1, 3))  # nothing started yet: any count
    with shards.heartbeat(layout, Shard(1, 3)):
        pass
    shards.check_count(layout, Shard(2, 3))
    with pytest.raises(ShardError, match="started as 3 shards.*--shard I/3"):
        shards.check_count(layout, Shard(1, 2))
    shards.write_plan(layout, shards.Plan([("ada", "00-warmup")]))  # a new plan starts over
    shards.check_count(layout, Shard(1, 2))


def test_a_running_shard_is_told_from_one_that_is_gone(tmp_path: Path) -> None:
    layout = CourseLayout(tmp_path)
    shards.write_plan(layout, shards.Plan([]))
    with shards.heartbeat(layout, Shard(1, 3)):
        assert shards.running(layout) == [f"shard 1/3 (on {socket.gethostname()}, process {os.getpid()})"]
    assert shards.running(layout) == []
    assert json.loads(shards.state_path(layout, Shard(1, 3)).read_text())["state"] == "done"
    with pytest.raises(RuntimeError), shards.heartbeat(layout, Shard(2, 3)):
        raise RuntimeError("killed")
    assert json.loads(shards.state_path(layout, Shard(2, 3)).read_text())["state"] == "stopped"
    here, there = shards.state_path(layout, Shard(3, 3)), {"state": "running", "host": "elsewhere", "pid": 1}
    # the record of a grader older than this one (no process identity): the pid alone
    here.write_text(json.dumps({"state": "running", "host": socket.gethostname(), "pid": 2**22 + 7}))
    assert shards.running(layout) == []  # its process is gone
    here.write_text(json.dumps(there))
    assert shards.running(layout) == ["shard 3/3 (on elsewhere, process 1)"]  # another machine, beating
    old = time.time() - shards.SILENT_SECONDS - 1
    os.utime(here, (old, old))
    assert shards.running(layout) == []  # silent for too long


def test_a_plan_that_is_missing_or_broken_says_what_to_run(tmp_path: Path) -> None:
    layout = CourseLayout(tmp_path)
    with pytest.raises(ShardError, match="run `grade SUBMISSIONS --intake` first"):
        shards.read_plan(layout)
    layout.grading_state.mkdir(parents=True)
    shards.plan_path(layout).write_text("{")
    with pytest.raises(ShardError, match="cannot be read"):
        shards.read_plan(layout)
    plan = shards.Plan([("ada", "00-warmup")], [("x.txt", "not a notebook")], ["a note"], {("ada", "00-warmup"): "k"})
    shards.write_plan(layout, plan)
    assert shards.read_plan(layout) == plan
    data = json.loads(shards.plan_path(layout).read_text())
    del data["keys"]  # a plan of an older grader, with no keys to finish against
    shards.plan_path(layout).write_text(json.dumps(data))
    with pytest.raises(ShardError, match="cannot be read .*--intake` again"):
        shards.read_plan(layout)


@pytest.fixture
def unrelated() -> Iterator[int]:
    """The pid of a live process that is no shard."""
    process = subprocess.Popen(["sleep", "60"])
    try:
        yield process.pid
    finally:
        process.kill()
        process.wait()


def test_a_live_process_given_a_shards_pid_is_not_that_shard(tmp_path: Path, unrelated: int) -> None:
    """A record that says running on this machine, whose pid is now a process that is not the shard
    (the shard died, its pid was given again), counts as ended; the same record naming the
    process as it is counts as running (the control)."""
    layout = CourseLayout(tmp_path)
    shards.write_plan(layout, shards.Plan([]))
    with shards.heartbeat(layout, Shard(1, 1)):
        record = json.loads(shards.state_path(layout, Shard(1, 1)).read_text())
    path = shards.state_path(layout, Shard(1, 1))
    path.write_text(json.dumps({**record, "state": "running", "pid": unrelated}))
    assert shards.running(layout) == []
    path.write_text(json.dumps({**record, "state": "running", "pid": unrelated, "process": shards._process(unrelated)}))
    assert shards.running(layout) == [f"shard 1/1 (on {socket.gethostname()}, process {unrelated})"]


def test_a_second_run_of_a_running_shard_is_refused(tmp_path: Path) -> None:
    """Is a second run of shard 1/2 refused, naming it, while the first runs, and does the first's
    record stay its own (done when it ends), while shard 2/2 runs beside it (the control)?"""
    layout = CourseLayout(tmp_path)
    shards.write_plan(layout, shards.Plan([]))
    path = shards.state_path(layout, Shard(1, 2))
    with shards.heartbeat(layout, Shard(1, 2)), shards.heartbeat(layout, Shard(2, 2)):
        first = path.read_text()
        with (
            pytest.raises(ShardError, match=r"^--shard 1/2: shard 1/2 \(on .*, process \d+\) still running; two runs"),
            shards.heartbeat(layout, Shard(1, 2)),
        ):
            pytest.fail("a second run of shard 1/2 started")
        assert path.read_text() == first
        assert len(shards.running(layout)) == 2
    assert json.loads(path.read_text())["state"] == "done"
    assert shards.running(layout) == []


def test_no_plan_is_written_over_a_running_shard(tmp_path: Path) -> None:
    """Does a new plan refuse, naming the running shard and keeping its record, while a shard runs;
    and replace the records once it has ended (the control)?"""
    layout = CourseLayout(tmp_path)
    shards.write_plan(layout, shards.Plan([("ada", "00-warmup")]))
    with shards.heartbeat(layout, Shard(2, 2)):
        with pytest.raises(ShardError, match=r"^--intake: shard 2/2 \(on .*\) still running"):
            shards.write_plan(layout, shards.Plan([("ben", "00-warmup")]))
        assert shards.state_path(layout, Shard(2, 2)).is_file()
        assert shards.read_plan(layout).pairs == [("ada", "00-warmup")]
    shards.write_plan(layout, shards.Plan([("ben", "00-warmup")]))
    assert not shards.state_path(layout, Shard(2, 2)).exists()

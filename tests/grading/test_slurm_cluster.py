"""Does the one-node Slurm cluster of the tests (tests/grading/slurm_cluster.py) run job arrays,
dependencies and cancellations the way a real cluster does, and leave nothing running afterwards?"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.grading.helpers import processes_with
from tests.grading.slurm_cluster import Cluster, cluster, unavailable

SCRIPT = """#!/bin/sh
echo "$SLURM_ARRAY_TASK_ID $SLURM_ARRAY_TASK_COUNT $MARK" > "task-$SLURM_ARRAY_TASK_ID.txt"
if [ "$SLURM_ARRAY_TASK_ID" = "$SLEEPER" ]; then sleep 120; fi
"""


def _submit_array(c: Cluster, work: Path, sleeper: str) -> str:
    work.mkdir()
    (work / "task.sh").write_text(SCRIPT)
    c.env["SLEEPER"] = sleeper
    return c.sbatch("--array=1-3", f"--chdir={work}", f"--output={work}/slurm-%A_%a.out", str(work / "task.sh"))


def _wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.2)


def test_one_node_cluster(tmp_path: Path) -> None:
    """Does a 3-task array complete with each task's id and count, a job depending on it run after it,
    a cancelled task end CANCELLED and hold back its dependant for good, and no daemon outlive the block?"""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    folder = tmp_path / "slurm"
    with cluster(folder, cpus=2) as c:
        c.env["MARK"] = "exported"
        ok = tmp_path / "ok"
        array = _submit_array(c, ok, sleeper="none")
        after = c.sbatch(
            f"--dependency=afterok:{array}", f"--output={ok}/after.out", "--wrap", f"ls {ok}/task-*.txt | wc -l"
        )
        assert c.wait(array, 30) == {f"{array}_{n}": "COMPLETED" for n in (1, 2, 3)}
        for n in (1, 2, 3):
            assert (ok / f"task-{n}.txt").read_text() == f"{n} 3 exported\n"
        assert c.wait(after, 30) == {after: "COMPLETED"}
        assert (ok / "after.out").read_text().strip() == "3"

        bad = tmp_path / "bad"
        array = _submit_array(c, bad, sleeper="2")
        blocked = c.sbatch(f"--dependency=afterok:{array}", f"--output={bad}/blocked.out", "--wrap", "true")
        _wait_for(lambda: c.states(array).get(f"{array}_2") == "RUNNING", 30, f"task {array}_2 running")
        c.cancel(f"{array}_2")
        assert c.wait(array, 30) == {f"{array}_1": "COMPLETED", f"{array}_2": "CANCELLED", f"{array}_3": "COMPLETED"}
        _wait_for(lambda: c.reason(blocked) == "DependencyNeverSatisfied", 15, f"{blocked} never satisfied")
        assert c.states(blocked) == {blocked: "PENDING"}
        c.cancel(blocked)
        assert c.wait(blocked, 15) == {blocked: "CANCELLED"}
        assert not (bad / "blocked.out").exists()
    assert processes_with(str(folder)) == []

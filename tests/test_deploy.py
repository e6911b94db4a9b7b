"""The ready-made launchers of ``deploy/``: does the Kubernetes submit script apply intake, the
Indexed Job of N shards and finish, one after another, each a Job of ``grading.yaml`` that runs
the right ``grade`` step on the shared course folder; do both submit scripts refuse a wrong N?
(The Slurm launcher runs for real in ``tests/grading/scenarios/test_slurm.py``.)"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
KUBECTL = """#!/bin/sh
# a stand-in for kubectl: records each call, keeps what `apply -f -` read, says every Job is complete
echo "$*" >> "$LOG"
if [ "$1" = apply ]; then cat > "$LOG.$(wc -l < "$LOG")"; fi
if [ "$1" = get ]; then echo Complete; fi
"""


def test_kubernetes_submit_applies_intake_shards_and_finish_in_order(tmp_path: Path) -> None:
    (tmp_path / "kubectl").write_text(KUBECTL)
    (tmp_path / "kubectl").chmod(0o755)
    log = tmp_path / "calls"
    env = dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}", LOG=str(log))
    done = subprocess.run(
        [str(REPO / "deploy" / "kubernetes" / "submit"), "3", "registry.example/course:1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    calls = log.read_text().splitlines()
    assert [c.split()[0] for c in calls] == ["apply", "get", "apply", "get", "apply", "get"]
    applied = [yaml.safe_load((tmp_path / f"calls.{i}").read_text()) for i in (1, 3, 5)]
    assert [job["metadata"]["labels"]["step"] for job in applied] == ["intake", "shards", "finish"]
    containers = [job["spec"]["template"]["spec"]["containers"][0] for job in applied]
    assert all(c["image"] == "registry.example/course:1" for c in containers)
    assert all(c["volumeMounts"] == [{"name": "course", "mountPath": "/course"}] for c in containers)
    commands = [c["command"] + c["args"] for c in containers]
    assert all(cmd[:6] == ["python", "-m", "autograder", "--course", "/course", "grade"] for cmd in commands)
    assert all(cmd[-2:] == ["--db", "$(AUTOGRADER_DB)"] for cmd in commands)
    assert "--intake" in commands[0] and "--finish" in commands[2]
    shards = applied[1]["spec"]
    assert shards["completionMode"] == "Indexed" and shards["completions"] == shards["parallelism"] == 3
    assert commands[1][commands[1].index("--shard") + 1] == "--jobs"  # --shard alone: from the environment
    assert {"name": "AUTOGRADER_SHARDS", "value": "3"} in containers[1]["env"]
    names = {job["metadata"]["name"] for job in applied}
    assert len(names) == 3 and all(f"get job/{name} " in "\n".join(calls) + " " for name in names)


@pytest.mark.parametrize("launcher", ["slurm", "kubernetes"])
@pytest.mark.parametrize("count", ["", "two", "-1"])
def test_a_wrong_number_of_shards_is_refused(launcher: str, count: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(REPO / "deploy" / launcher / "submit"), count, "image"],
        env=dict(os.environ, PATH=f"{tmp_path}:/usr/bin:/bin"),  # no sbatch, no kubectl: nothing submitted
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "usage: submit N" in done.stderr or "whole number" in done.stderr

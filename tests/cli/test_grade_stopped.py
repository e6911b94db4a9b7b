"""Does `grade` stop on SIGTERM as on Ctrl+C, with its workers and kernels?"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.grading import course
from tests.grading.helpers import answered, make_course, submit, with_cell


def _processes_in(token: str) -> dict[int, bytes]:
    """pid -> command line of the live processes whose command line or environment holds
    ``token`` (zombies, already dead, left out)."""
    found = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue
            cmdline = (proc / "cmdline").read_bytes()
            if token.encode() in cmdline + (proc / "environ").read_bytes():
                found[int(proc.name)] = cmdline.replace(b"\0", b" ")[:300]
        except (OSError, IndexError):
            continue
    return found


def test_sigterm_stops_grading_with_its_workers_and_kernels(tmp_path: Path) -> None:
    """When `grade` gets SIGTERM while a kernel runs a student's cell, does it exit with 130,
    saying what was kept, and leave no worker, kernel or sandbox of its own running?"""
    root = make_course(tmp_path / "course")
    submit(tmp_path / "inbox", "ada", with_cell(answered(), "setup", "import time\ntime.sleep(300)"))
    # every process of this grading has it in its TMPDIR or its paths (short: socket paths are in it)
    token = tempfile.mkdtemp(prefix="sigterm-", dir="/tmp")
    grading = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "autograder",
            "--course",
            str(root),
            "grade",
            str(tmp_path / "inbox"),
            "--jobs",
            "2",
            "--no-progress",
        ],
        env=course.tool_env(TMPDIR=token),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 240
        while not any(b"/k/0/" in cmdline for cmdline in _processes_in(token).values()):  # ada's kernel
            assert grading.poll() is None, grading.communicate()
            assert time.monotonic() < deadline, "the student's kernel never started"
            time.sleep(0.5)
        time.sleep(2.0)  # into the sleeping cell
        grading.send_signal(signal.SIGTERM)
        _, err = grading.communicate(timeout=60)
    finally:
        if grading.poll() is None:
            grading.kill()
    time.sleep(1.0)
    left = _processes_in(token)
    shutil.rmtree(token, ignore_errors=True)
    assert grading.returncode == 130, err.decode()
    assert "grading stopped" in err.decode()
    assert not left, f"processes left running after SIGTERM: {left}"

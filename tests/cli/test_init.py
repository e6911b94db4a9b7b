"""Does the command line release, copy a workspace without overwriting, and explain itself?"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from autograder import cli
from autograder.grading import course, workspace
from tests.grading.helpers import LAB, answered, make_course, submit, with_cell


def test_every_flag_has_help() -> None:
    """Does every option of every command carry a help text?"""
    parser = cli._parser()
    subparsers = next(a for a in parser._actions if a.dest == "command").choices
    for name, sub in [("", parser), *subparsers.items()]:
        for action in sub._actions:
            if action.dest != "help":
                assert action.help, f"{name} {action.dest} has no help"


def test_workspace_copies_once_and_never_overwrites(tmp_path: Path, capsys) -> None:
    """Does `workspace DIR` copy the labs the first time, keep a student's edited file, and say which?"""
    root = make_course(tmp_path / "course")
    target = tmp_path / "work"
    assert cli.main(["--course", str(root), "workspace", str(target)]) == 0
    notebook = target / LAB / f"{LAB}.ipynb"
    assert notebook.read_bytes() == (root / "notebooks" / LAB / f"{LAB}.ipynb").read_bytes()
    assert f"{LAB}/{LAB}.ipynb" in capsys.readouterr().out
    notebook.write_text("my answers")
    report = workspace.sync(root, target)
    assert report.copied == [] and report.kept == [f"{LAB}/{LAB}.ipynb"]
    assert notebook.read_text() == "my answers"


def test_unknown_lab_is_refused(tmp_path: Path, capsys) -> None:
    """Does `release` refuse a lab that is not in solutions/ with an exception a library caller
    can catch (not SystemExit), naming the ones that are, and does the command line turn it
    into a message and exit status 2?"""
    root = make_course(tmp_path / "course")
    with pytest.raises(course.UnknownLab, match="00-warmup"):
        course.release(root, ["99-nothing"])
    assert cli.main(["--course", str(root), "release", "99-nothing"]) == 2
    err = capsys.readouterr().err
    assert "99-nothing" in err and "00-warmup" in err


@pytest.mark.slow
def test_release_rerun_is_byte_identical(tmp_path: Path) -> None:
    """Does `python -m autograder release LAB` rewrite the same bytes on a rerun?"""
    root = make_course(tmp_path / "course")
    committed = (root / "notebooks" / LAB / f"{LAB}.ipynb").read_bytes()
    subprocess.run(
        [sys.executable, "-m", "autograder", "--course", str(root), "release", LAB],
        check=True,
        capture_output=True,
        env=course.tool_env(),
    )
    assert (root / "notebooks" / LAB / f"{LAB}.ipynb").read_bytes() == committed


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


@pytest.mark.slow
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

"""The probe's handshake with a sandbox (autograder.grading.grader.run.bwrap): does a machine that
is only slow pass, while one whose sandbox the grader cannot read is still named, and fast?

Each test puts a stand-in for bwrap first on PATH (the launcher finds bwrap there): one that
starts the real bwrap late, as a loaded machine does, and one that tells the launcher a process
whose root is not the sandbox's, as a machine whose /proc the grader cannot read."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from autograder.grading.grader.run import bwrap as sandbox

PROBLEM = sandbox.probe()
pytestmark = pytest.mark.skipif(PROBLEM is not None, reason=f"the sandbox does not work here: {PROBLEM}")
BWRAP = shutil.which("bwrap") or "bwrap"

# bwrap started normally, but the launcher is told (--info-fd) that the sandbox's mounts are
# those of this stand-in's own process, outside the sandbox: the mark the sandbox writes in its
# shared folder is then out of the grader's reach, as where /proc/PID/root cannot be read
UNREACHABLE = f"""#!{sys.executable}
import ctypes, json, os, signal, sys
args = sys.argv[1:]
at = args.index("--info-fd") + 1
told, (ours, theirs) = int(args[at]), os.pipe()
os.set_inheritable(theirs, True)
args[at] = str(theirs)
pid = os.fork()
if pid == 0:
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: bwrap ends with this stand-in
    os.execv({BWRAP!r}, [{BWRAP!r}, *args])
os.close(theirs)
os.read(ours, 4096)
os.write(told, json.dumps({{"child-pid": os.getpid()}}).encode())
os.close(told)
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def _stand_in(folder: Path, script: str, monkeypatch: pytest.MonkeyPatch) -> None:
    folder.mkdir()
    (folder / "bwrap").write_text(script)
    (folder / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")


def test_a_sandbox_that_starts_late_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Does a sandbox that starts 12 s late (a loaded machine; the handshake used to give it 10 s)
    pass the probe of its shared folder?"""
    _stand_in(tmp_path / "bin", f'#!/bin/sh\nsleep 12\nexec {BWRAP} "$@"\n', monkeypatch)
    assert sandbox._shared_folder_problem(None) is None


def test_a_sandbox_the_grader_cannot_read_is_named_fast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Is a sandbox that writes its mark where the grader cannot read it named as such, as soon
    as it has said so, long before the time a slow sandbox is given?"""
    _stand_in(tmp_path / "bin", UNREACHABLE, monkeypatch)
    start = time.monotonic()
    problem = sandbox._shared_folder_problem(None)
    took = time.monotonic() - start
    assert problem is not None and "cannot be read from here" in problem, problem
    assert took < sandbox.HANDSHAKE_SECONDS / 4, f"named after {took:.0f} s"


def test_a_sandbox_that_never_answers_is_not_called_unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the sandbox says nothing within the handshake's time, does the probe say that it did
    not answer (and how long it waited), not that its folder cannot be read?"""
    _stand_in(tmp_path / "bin", "#!/bin/sh\nexec sleep 30\n", monkeypatch)
    monkeypatch.setattr(sandbox, "HANDSHAKE_SECONDS", 2.0)
    start = time.monotonic()
    problem = sandbox._shared_folder_problem(None)
    assert time.monotonic() - start < 15
    assert problem is not None and "did not answer within 2 s" in problem, problem
    assert "cannot be read" not in problem

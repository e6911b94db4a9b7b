"""``lab``: a student's JupyterLab on their workspace (``make lab``).

The command puts ``autograder/jupyter_student/`` first on ``JUPYTER_CONFIG_PATH``. Its
``labconfig/page_config.json`` disables the instructor plugins of nbgrader's lab extension
(Create Assignment, Formgrader, Course List) and its ``jupyter_server_config.json`` the matching
server extensions, so a student keeps only the Validate button and the Assignment List. An
instructor's own ``jupyter lab`` in the course root does not read that folder and keeps Formgrader.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

STUDENT_CONFIG = Path(__file__).resolve().parents[1] / "jupyter_student"


def command(
    workspace: Path,
    port: int | None = None,
    ip: str = "127.0.0.1",
    token: str | None = None,
    browser: bool = True,
    as_root: bool | None = None,
) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that start JupyterLab on ``workspace`` with the student's settings."""
    if as_root is None:
        as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    args = [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--ServerApp.root_dir={Path(workspace).resolve()}",
        f"--ServerApp.ip={ip}",
    ]
    if port is not None:
        args.append(f"--ServerApp.port={port}")
    if token is not None:
        args.append(f"--IdentityProvider.token={token}")
    if not browser:
        args.append("--no-browser")
    if as_root:
        args.append("--allow-root")
    env = dict(os.environ)
    # Not course.tool_env: its one thread per kernel suits grading, not a student's training run.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(filter(None, [str(STUDENT_CONFIG), env.get("JUPYTER_CONFIG_PATH")]))
    return args, env


def run(args: list[str], env: dict[str, str]) -> int:
    """Start JupyterLab in place of this process (so Ctrl+C and a kill by process id reach the server)."""
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        os.execve(args[0], args, env)
    return subprocess.call(args, env=env)

"""``python -m autograder lab [DIR]``: copy the labs into DIR as ``workspace`` does, then open a
student's JupyterLab there (``make lab``; the server is ``autograder.grading.lab``'s)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from autograder.cli import workspace


def add_parser(sub: Any) -> None:
    lab = sub.add_parser(
        "lab", help="copy the labs into DIR as `workspace` does, then open JupyterLab there with a student's tools only"
    )
    lab.add_argument(
        "dir",
        type=Path,
        nargs="?",
        default=Path("workspace"),
        metavar="DIR",
        help="the student's folder (default: workspace)",
    )
    lab.add_argument(
        "--lab",
        action="append",
        default=None,
        metavar="LAB",
        dest="labs",
        help="copy or refresh only this lab before starting, such as 02-self-attention (repeatable)",
    )
    lab.add_argument("--port", type=int, default=None, help="the server's port (default: 8888, or the next free one)")
    lab.add_argument("--ip", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    lab.add_argument("--token", default=None, help="the login token (default: a random one, shown in the URL)")
    lab.add_argument("--no-browser", action="store_true", help="do not open a browser")


def run(root: Path, args: argparse.Namespace) -> int:
    """Copy the labs into args.dir, then replace this process by JupyterLab on it."""
    from autograder.grading import lab

    workspace.copy_labs(root, args.dir, args.labs)
    command, env = lab.command(args.dir, port=args.port, ip=args.ip, token=args.token, browser=not args.no_browser)
    if "--allow-root" in command:
        print("running as root (a container?): JupyterLab refuses that unless told, so --allow-root is passed")
    return lab.run(command, env)

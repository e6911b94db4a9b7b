"""Does `python -m autograder lab` (make lab) build the right JupyterLab command, with a student's settings?"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from autograder import cli
from autograder.grading import lab
from tests.grading.helpers import LAB, REPO, make_course

NBGRADER_LAB = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "@jupyter" / "nbgrader"


def test_command_serves_the_workspace(tmp_path: Path) -> None:
    """Does the command start JupyterLab with DIR as its root (never JupyterLab's `workspace` subcommand)?"""
    args, _ = lab.command(tmp_path / "workspace", port=9999, token="secret", browser=False, as_root=False)
    assert args[:3] == [sys.executable, "-m", "jupyterlab"]
    assert f"--ServerApp.root_dir={(tmp_path / 'workspace').resolve()}" in args
    assert {
        "--ServerApp.ip=127.0.0.1",
        "--ServerApp.port=9999",
        "--IdentityProvider.token=secret",
        "--no-browser",
    } <= set(args)
    assert "workspace" not in args[3:] and "--allow-root" not in args


def test_command_defaults_open_a_browser(tmp_path: Path) -> None:
    """By default: does it open the browser, leave port and token to JupyterLab, and allow root only as root?"""
    args, _ = lab.command(tmp_path, as_root=False)
    assert not [a for a in args if a.startswith(("--ServerApp.port", "--IdentityProvider", "--no-browser"))]
    assert "--allow-root" in lab.command(tmp_path, as_root=True)[0]


def test_student_settings_come_first(tmp_path: Path, monkeypatch) -> None:
    """Is the course's student settings folder first on JUPYTER_CONFIG_PATH, before the user's own?"""
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", "/elsewhere")
    _, env = lab.command(tmp_path)
    assert env["JUPYTER_CONFIG_PATH"].split(":") == [str(lab.STUDENT_CONFIG), "/elsewhere"]
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)


def test_student_settings_name_real_nbgrader_pieces() -> None:
    """Do the disabled plugins and server extensions exist in the installed nbgrader, and Validate stay on?"""
    page = json.loads((lab.STUDENT_CONFIG / "labconfig" / "page_config.json").read_text())
    disabled = set(page["disabledExtensions"])
    assert disabled == {f"@jupyter/nbgrader:{p}" for p in ("create-assignment", "formgrader", "course-list")}
    bundle = "".join(p.read_text() for p in (NBGRADER_LAB / "static").glob("*.js"))
    assert all(f'"{plugin}"' in bundle for plugin in disabled), "a plugin id no longer in nbgrader's lab extension"
    server = json.loads((lab.STUDENT_CONFIG / "jupyter_server_config.json").read_text())
    extensions = server["ServerApp"]["jpserver_extensions"]
    assert extensions == {
        "nbgrader.server_extensions.formgrader": False,
        "nbgrader.server_extensions.course_list": False,
    }
    for name in extensions:
        __import__(name)


def test_cli_copies_then_starts(tmp_path: Path, monkeypatch, capsys) -> None:
    """Does `lab DIR --port --token --no-browser` copy the labs as `workspace` does, then run that command?"""
    root = make_course(tmp_path / "course")
    started = []
    monkeypatch.setattr(lab, "run", lambda args, env: started.append(args) or 0)
    assert (
        cli.main(
            ["--course", str(root), "lab", str(tmp_path / "work"), "--port", "9000", "--token", "t", "--no-browser"]
        )
        == 0
    )
    assert (tmp_path / "work" / LAB / f"{LAB}.ipynb").is_file()
    assert f"{LAB}/{LAB}.ipynb" in capsys.readouterr().out
    assert started and {"--ServerApp.port=9000", "--IdentityProvider.token=t", "--no-browser"} <= set(started[0])


def test_lab_defaults_to_workspace() -> None:
    """Does `python -m autograder lab` default to the folder workspace on 127.0.0.1?"""
    args = cli._parser().parse_args(["lab"])
    assert (args.dir, args.ip, args.port, args.token, args.no_browser) == (
        Path("workspace"),
        "127.0.0.1",
        None,
        None,
        False,
    )


def test_make_lab_runs_the_lab_command() -> None:
    """Does `make lab` run `python -m autograder lab workspace`, not JupyterLab's `workspace` subcommand?"""
    makefile = (REPO / "Makefile").read_text()
    recipe = makefile.split("\nlab:", 1)[1].split("\n\n", 1)[0]
    assert "$(BIN)/python -m autograder lab workspace" in recipe
    assert "jupyter lab" not in recipe

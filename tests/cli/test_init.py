"""Does the command line put every command's parser together, one module a command, each flag
explained?"""

from __future__ import annotations

from pathlib import Path

from autograder import cli


def _commands() -> dict:
    """Command name -> its parser, as `python -m autograder --help` lists them."""
    return next(a for a in cli._parser()._actions if a.dest == "command").choices


def test_every_flag_has_help() -> None:
    """Does every option of every command carry a help text?"""
    for name, sub in [("", cli._parser()), *_commands().items()]:
        for action in sub._actions:
            if action.dest != "help":
                assert action.help, f"{name} {action.dest} has no help"


def test_each_command_is_a_module_of_its_own() -> None:
    """Is each command that `--help` lists a module of autograder/cli/ of the same name, and each
    module there a command?"""
    package = Path(cli.__file__).parent
    assert set(_commands()) == {path.stem for path in package.glob("*.py")} - {"__init__"}

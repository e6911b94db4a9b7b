"""Do the checks a contributor's commit runs (pre-commit) and the checks of ``make lint`` agree:
ruff's formatter, ruff's linter and mypy, from the project's own environment, over all of
``autograder/``?"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def _lint_recipe() -> list[str]:
    text = (REPO / "Makefile").read_text()
    recipe = re.search(r"^lint:.*\n((?:\t.*\n)+)", text, re.M)
    assert recipe, "the Makefile has a lint target"
    return [line.strip().replace("$(BIN)/", ".venv/bin/") for line in recipe.group(1).splitlines()]


def test_pre_commit_runs_what_make_lint_runs() -> None:
    """Is every tool of ``make lint`` a hook of .pre-commit-config.yaml, run from .venv (the
    versions requirements.txt pins), and nothing fetched from elsewhere?"""
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    assert [repo["repo"] for repo in config["repos"]] == ["local"]
    hooks = [hook["entry"] for repo in config["repos"] for hook in repo["hooks"]]
    assert all(hook.startswith(".venv/bin/") for hook in hooks)
    tools = {" ".join(line.split()[:2]) if "ruff" in line else line.split()[0] for line in _lint_recipe()}
    assert tools == {".venv/bin/ruff format", ".venv/bin/ruff check", ".venv/bin/mypy"}
    assert tools == {" ".join(hook.split()[:2]) if "ruff" in hook else hook.split()[0] for hook in hooks}


def test_mypy_covers_all_of_autograder() -> None:
    """Does mypy check the whole package, not a list of its folders?"""
    settings = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    assert settings["files"] == ["autograder"]

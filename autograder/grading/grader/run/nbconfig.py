"""The course's nbgrader configuration (its ``nbgrader_config.py``), with a job's overrides.

The grader's nbgrader classes moved when ``grader/`` was laid out in stations: a course folder
with an older copy of the config names the old dotted paths, which no longer import. Loading it
raises ``OutdatedConfig`` naming each old path and its new one, before nbgrader would fail on it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

_G = "autograder.grading.grader."
MOVED = {  # an older nbgrader_config.py's dotted path -> the path that replaces it
    _G + "hidden.HideHiddenTests": _G + "run.hide_hidden_tests.HideHiddenTests",
    _G + "hidden.RestoreHiddenTests": _G + "run.restore_hidden_tests.RestoreHiddenTests",
    _G + "limits.CapOutputBytes": _G + "run.cap_output_bytes.CapOutputBytes",
    _G + "feedback.ClearHiddenTestsAndPaths": _G + "output.clear_hidden_tests_and_paths.ClearHiddenTestsAndPaths",
    _G + "sanitize.SanitizeNotebook": _G + "output.sanitize_notebook.SanitizeNotebook",
    _G + "formgrader": "autograder.grading.formgrader",
    _G + "output.formgrader": "autograder.grading.formgrader",
}


class OutdatedConfig(ValueError):
    """The course's nbgrader_config.py names a class of the grader by a path it no longer has."""


def check_paths(root: Path) -> None:
    """OutdatedConfig when ``ROOT/nbgrader_config.py`` names a moved class or module by its old path."""
    config = Path(root) / "nbgrader_config.py"
    text = config.read_text(errors="replace") if config.is_file() else ""
    old = [path for path in MOVED if re.search(re.escape(path) + r"\b", text)]
    if old:
        raise OutdatedConfig(
            f"{Path(root) / 'nbgrader_config.py'} names classes of the grader by paths they no longer have; "
            "replace each (the course's current nbgrader_config.py has them all):\n"
            + "\n".join(f"    {path}  ->  {MOVED[path]}" for path in old)
        )


def load_config(root: Path, overrides: dict[str, Any]) -> Any:
    """``ROOT/nbgrader_config.py`` read as traitlets' ``Config``, then ``overrides``
    (``"Section.name": value``) merged over it; OutdatedConfig for an older copy of the config."""
    from traitlets.config import Config, PyFileConfigLoader

    check_paths(root)

    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    extra = Config()
    for key, value in overrides.items():
        section, name = key.split(".", 1)
        extra[section][name] = value
    config.merge(extra)
    return config


def course_id(root: Path) -> str:
    """The course id the gradebook files submissions under (``default_course`` when unset)."""
    return load_config(root, {}).CourseDirectory.course_id or "default_course"

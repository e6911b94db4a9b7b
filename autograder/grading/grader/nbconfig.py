"""The course's nbgrader configuration (its ``nbgrader_config.py``), with a job's overrides."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def load_config(root: Path, overrides: dict[str, Any]) -> Any:
    """``ROOT/nbgrader_config.py`` read as traitlets' ``Config``, then ``overrides``
    (``"Section.name": value``) merged over it."""
    from traitlets.config import Config, PyFileConfigLoader

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

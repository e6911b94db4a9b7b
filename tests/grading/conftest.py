"""Fixtures of the grading tests: a temporary course holding the warm-up lab."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.grading.helpers import make_course


@pytest.fixture
def course(tmp_path: Path) -> Path:
    return make_course(tmp_path / "course")

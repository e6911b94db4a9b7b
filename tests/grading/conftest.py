"""Fixtures of the grading tests: a temporary course holding the warm-up lab."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.grading import postgres_server
from tests.grading.helpers import make_course


@pytest.fixture
def course(tmp_path: Path) -> Path:
    return make_course(tmp_path / "course")


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server of the test's own, with an empty gradebook database: its URL."""
    if reason := postgres_server.unavailable():
        pytest.skip(reason)
    with postgres_server.server() as url:
        yield url

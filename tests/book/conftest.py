"""Fixtures for the tests of the course site: the book is built once per test session.

The build runs the same command as ``make book`` into ``_build/html``, reusing the
execution cache in ``_build/.jupyter_cache``, so ``make test`` after ``make book`` only
checks that nothing changed.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
from pathlib import Path

import pytest

from ._book import BUILD_ARGS, BUILD_LOG, HTML, ROOT, jupyter_book


@pytest.fixture(scope="session")
def built_site() -> Path:
    """Build the book as ``make book`` does and return ``_build/html``; fail with the build's warnings."""
    (ROOT / "_build").mkdir(exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    # A lock, so that parallel test workers (pytest -n) build one after the other, not at once.
    with open(ROOT / "_build" / ".book-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = subprocess.run([jupyter_book(), *BUILD_ARGS], cwd=ROOT, env=env, capture_output=True, text=True)
    BUILD_LOG.write_text(result.stdout + result.stderr)  # what test_build_log.py reads
    if result.returncode != 0:
        log = result.stdout + result.stderr
        problems = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
        pytest.fail(
            f"`jupyter-book {' '.join(BUILD_ARGS)}` failed (exit {result.returncode}):\n"
            + "\n".join(problems[:50] or log.splitlines()[-50:])
        )
    return HTML

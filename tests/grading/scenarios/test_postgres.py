"""Does grading work against a real PostgreSQL gradebook (several graders, a JupyterHub)?

The test starts its own server from Debian's `postgresql` package on a free loopback port,
as an unprivileged user (initdb refuses root), and stops it afterwards."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from autograder.grading.grader import pipeline
from tests.grading.helpers import answered, make_course, released, submit


def _pg_bin() -> Path | None:
    found = shutil.which("initdb") or next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))[-1:]), None)
    return Path(found).resolve().parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def postgres_url():
    bin_dir = _pg_bin()
    if bin_dir is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql; .ci/run does it)")
    data = Path(tempfile.mkdtemp(prefix="autograder-pg-"))  # pytest's own folders are private to root
    as_user: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: cannot start PostgreSQL as an unprivileged user")
        shutil.chown(data, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = _free_port()

    def run(*args: str) -> None:
        proc = subprocess.run([*as_user, *args], capture_output=True, text=True, cwd="/")
        assert proc.returncode == 0, f"{args[0]} failed: {proc.stderr}"

    run(str(bin_dir / "initdb"), "-D", str(data / "db"), "-A", "trust", "-U", "postgres")
    run(
        str(bin_dir / "pg_ctl"),
        "-D",
        str(data / "db"),
        "-w",
        "-l",
        str(data / "log"),
        "-o",
        f"-p {port} -k {data} -h 127.0.0.1",
        "start",
    )
    try:
        run(str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "gradebook")
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/gradebook"
    finally:
        run(str(bin_dir / "pg_ctl"), "-D", str(data / "db"), "-w", "-m", "fast", "stop")
        shutil.rmtree(data, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.postgres
def test_grades_into_postgresql(tmp_path: Path, postgres_url: str) -> None:
    """Do two students graded in parallel into PostgreSQL give the right grades.csv, with
    no SQLite gradebook made on the side?"""
    root = make_course(tmp_path / "course")
    inbox = tmp_path / "inbox"
    submit(inbox, "ada", answered())
    submit(inbox, "ben", released())
    pipeline.grade(root, inbox, pipeline.Options(jobs=2, db_url=postgres_url, progress=False))
    assert (
        root / "grades.csv"
    ).read_text() == "student_id,lab,score,max_score,late,original_id\nada,00-warmup,5,5,,ada\nben,00-warmup,0,5,,ben\n"
    assert not (root / "gradebook.db").exists()

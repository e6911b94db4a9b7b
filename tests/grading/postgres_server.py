"""A PostgreSQL server of a test's own: Debian's ``postgresql`` package, on a free loopback port,
as an unprivileged user (initdb refuses root), stopped afterwards. Used by the tests that grade
into PostgreSQL and by the benchmark of shards."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path


def _pg_bin() -> Path | None:
    found = shutil.which("initdb") or next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))[-1:]), None)
    return Path(found).resolve().parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unavailable() -> str | None:
    """Why no server can be started here, or None."""
    if _pg_bin() is None:
        return "PostgreSQL is not installed (apt-get install postgresql; .ci/run does it)"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser: cannot start PostgreSQL as an unprivileged user"
    return None


@contextlib.contextmanager
def server(database: str = "gradebook") -> Iterator[str]:
    """A running server with an empty ``database``; yields its SQLAlchemy URL."""
    bin_dir = _pg_bin()
    assert bin_dir is not None, unavailable()
    data = Path(tempfile.mkdtemp(prefix="autograder-pg-"))  # pytest's own folders are private to root
    as_user: list[str] = []
    if os.geteuid() == 0:
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
        f"-p {port} -k {data} -h 127.0.0.1 -c max_connections=200",
        "start",
    )
    try:
        run(str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", database)
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/{database}"
    finally:
        run(str(bin_dir / "pg_ctl"), "-D", str(data / "db"), "-w", "-m", "fast", "stop")
        shutil.rmtree(data, ignore_errors=True)

"""Grading in shards against one grading with ``--jobs``: the same class graded as
``grade --jobs 2`` and as ``grade --intake``, 2 shards side by side (``--shard 1/2`` and
``--shard 2/2``, one notebook at a time each) and ``grade --finish``, on one machine, into a
PostgreSQL gradebook each; then ``grade --jobs 2`` again with nothing changed. It prints the
ratio of the wall times (the target: shards at most 1.15x ``--jobs 2``) and the unchanged
rerun's share of the first run (the target: at most 5%), and checks the two grades.csv agree.

Every grading is ``python -m autograder grade`` in a child process, as an instructor runs it;
PostgreSQL is a server of the benchmark's own (``tests/grading/postgres_server.py``: Debian's
``postgresql`` package), or the SQLite gradebook where it is not installed (said in the output).

    python benchmarks/bench_shards.py [--students 40] [--json benchmarks/results/grading-shards.json]
    python benchmarks/bench_shards.py --smoke     # 2 students: a test that it runs
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # a script: the repository's tests package importable

from tests.grading import postgres_server  # noqa: E402
from tests.grading.helpers import LAB, answered, make_course, released, submit  # noqa: E402


def _class(inbox: Path, students: int) -> None:
    """``students`` submissions of the warm-up lab: full, blank and partial answers in turn."""
    for i in range(students):
        submit(inbox, f"student{i:03d}", [answered(), released(), answered("relu")][i % 3])


def _grade(course: Path, db: str | None, *args: str) -> subprocess.Popen[bytes]:
    flags = ["--db", db] if db else []
    return subprocess.Popen(
        [sys.executable, "-m", "autograder", "--course", str(course), "grade", "--no-progress", *flags, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _wait(*procs: subprocess.Popen[bytes]) -> None:
    for proc in procs:
        out, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(map(str, proc.args))} failed:\n{err.decode()[-3000:]}")


@contextlib.contextmanager
def _gradebook() -> Iterator[str | None]:
    """A PostgreSQL database of its own (None: the SQLite gradebook, where PostgreSQL is missing)."""
    if reason := postgres_server.unavailable():
        print(f"no PostgreSQL here ({reason}): the SQLite gradebook instead")
        yield None
        return
    with postgres_server.server() as url:
        yield url


def _jobs2(course: Path, inbox: Path, db: str | None) -> float:
    start = time.perf_counter()
    _wait(_grade(course, db, str(inbox), "--jobs", "2"))
    return time.perf_counter() - start


def _sharded(course: Path, inbox: Path, db: str | None) -> float:
    start = time.perf_counter()
    _wait(_grade(course, db, str(inbox), "--intake"))
    _wait(*(_grade(course, db, "--shard", f"{i}/2", "--jobs", "1") for i in (1, 2)))
    _wait(_grade(course, db, "--finish"))
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=40, help="submissions in the class (default: 40)")
    parser.add_argument("--json", type=Path, default=None, help="where to write the figures (default: nowhere)")
    parser.add_argument("--smoke", action="store_true", help="2 students: a test that it runs")
    args = parser.parse_args()
    students = 2 if args.smoke else args.students
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as tmp:
        folder = Path(tmp)
        _class(folder / "inbox", students)
        print(f"class: {students} submissions of {LAB}, on {len(os.sched_getaffinity(0))} CPU(s)", flush=True)
        with _gradebook() as db_a:
            one = make_course(folder / "jobs2")
            first = _jobs2(one, folder / "inbox", db_a)
            print(f"--jobs 2: {first:.1f} s", flush=True)
            again = _jobs2(one, folder / "inbox", db_a)
        with _gradebook() as db_b:
            two = make_course(folder / "shards")
            sharded = _sharded(two, folder / "inbox", db_b)
        print(f"2 shards (intake, --shard 1/2 and 2/2 side by side, finish): {sharded:.1f} s", flush=True)
        same = (one / "grades.csv").read_text() == (two / "grades.csv").read_text()
        print(f"identical grades.csv: {same}")
        print(f"shards / --jobs 2: {sharded / first:.2f}x (target: at most 1.15x)")
        print(f"unchanged rerun: {again:.1f} s, {100 * again / first:.1f}% of the first run (target: at most 5%)")
    if args.json:
        record = dict(
            date=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            commit=subprocess.run(
                ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True
            ).stdout.strip(),
            cpus=len(os.sched_getaffinity(0)),
            students=students,
            gradebook="postgresql" if db_a else "sqlite",
            jobs2_seconds=round(first, 1),
            shards_seconds=round(sharded, 1),
            ratio=round(sharded / first, 3),
            rerun_seconds=round(again, 1),
            rerun_share=round(again / first, 4),
            identical_grades=same,
        )
        args.json.write_text(json.dumps(record, indent=1) + "\n")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())

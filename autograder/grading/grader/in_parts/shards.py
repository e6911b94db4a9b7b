"""A grading cut into shards that run side by side (a Slurm job array, a Kubernetes Indexed
Job, several processes on one machine), and what they share in the course folder.

``grade --intake`` collects the class once and writes the plan, ``grading-logs/state/plan.json``:
the (student, lab) pairs to grade, the key each is to be graded with (``in_parts/stamps``), and
what intake found for no one pair. Shard I of N grades every N-th pair of the plan from the
I-th (``part``: sizes differ by at most one pair), and keeps its state in
``grading-logs/state/shard-I-of-N.json`` (running, with a heartbeat, then done or stopped);
``grade --finish`` reads the plan, the shards' states and the stamps of ``in_parts/stamps``.

A shard counts as running while the process its state names is still that process (on this
machine: the same pid, started at the same time since the same boot), or, on another machine,
while its heartbeat is recent. The steps read and change the states under one lock
(``locked``), so that no two shards of one index run at once and no intake or finish runs
beside a shard.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.grader.in_parts.atomic import write_atomic
from autograder.grading.layout import CourseLayout

HEARTBEAT_SECONDS = 20.0
SILENT_SECONDS = 120.0  # a running shard on another machine that has not beaten for this long is taken as gone
COUNT_VARIABLE = "AUTOGRADER_SHARDS"  # the number of shards, where the engine does not say it (Kubernetes)


class ShardError(ValueError):
    """A shard or a finish that cannot run as asked; the message says why and what to do."""


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (from 1) of ``count``."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse(text: str) -> Shard:
    """``I/N`` as a shard: I from 1 to N, N at least 1; ShardError names what is wrong."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match:
        raise ShardError(f"--shard {text}: expected I/N, such as 2/8 (shard I of N, I from 1 to N)")
    index, count = int(match[1]), int(match[2])
    if count < 1:
        raise ShardError(f"--shard {text}: the number of shards must be at least 1")
    if not 1 <= index <= count:
        raise ShardError(f"--shard {text}: the shard must be from 1 to {count}")
    return Shard(index, count)


def _integer(env: Mapping[str, str], name: str) -> int:
    try:
        return int(env[name])
    except ValueError:
        raise ShardError(f"{name}={env[name]!r} is not a whole number") from None


def from_environment(env: Mapping[str, str] = os.environ) -> Shard:
    """The shard a job array's task is: Kubernetes' ``JOB_COMPLETION_INDEX`` (from 0) with the
    count in ``AUTOGRADER_SHARDS``, or Slurm's ``SLURM_ARRAY_TASK_ID`` (the shard itself when
    ``AUTOGRADER_SHARDS`` gives the count, else counted from ``SLURM_ARRAY_TASK_MIN`` of
    ``SLURM_ARRAY_TASK_COUNT``)."""
    count = _integer(env, COUNT_VARIABLE) if env.get(COUNT_VARIABLE) else None
    if env.get("JOB_COMPLETION_INDEX"):
        if count is None:
            raise ShardError(f"JOB_COMPLETION_INDEX is set but not {COUNT_VARIABLE} (the number of shards)")
        return parse(f"{_integer(env, 'JOB_COMPLETION_INDEX') + 1}/{count}")
    if env.get("SLURM_ARRAY_TASK_ID"):
        task = _integer(env, "SLURM_ARRAY_TASK_ID")
        if count is not None:
            return parse(f"{task}/{count}")
        first = _integer(env, "SLURM_ARRAY_TASK_MIN") if env.get("SLURM_ARRAY_TASK_MIN") else 1
        return parse(f"{task - first + 1}/{_integer(env, 'SLURM_ARRAY_TASK_COUNT')}")
    raise ShardError(
        "--shard without I/N: no shard in the environment (SLURM_ARRAY_TASK_ID of a Slurm job array, "
        f"or Kubernetes' JOB_COMPLETION_INDEX with {COUNT_VARIABLE})"
    )


def part(pairs: list[tuple[str, str]], shard: Shard) -> list[tuple[str, str]]:
    """The pairs shard ``shard`` grades: every N-th of the sorted pairs from the I-th, so that
    the parts of one plan cover it once and differ in size by at most one pair."""
    return sorted(pairs)[shard.index - 1 :: shard.count]


# ----------------------------------------------------------------------------- the plan


@dataclass
class Plan:
    """What intake found, for the shards and the finish: the pairs to grade, the key each is to
    be graded with ("" for one that cannot be graded), the files handed in but not graded (file,
    reason), and the notes about no one submission."""

    pairs: list[tuple[str, str]]
    not_graded: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    keys: dict[tuple[str, str], str] = field(default_factory=dict)

    def to_json(self) -> str:
        keys = [[student, lab, key] for (student, lab), key in sorted(self.keys.items())]
        return json.dumps(
            {"pairs": self.pairs, "keys": keys, "not_graded": self.not_graded, "notes": self.notes},
            indent=1,
            ensure_ascii=False,
        )


def plan_path(layout: CourseLayout) -> Path:
    return layout.grading_state / "plan.json"


def write_plan(layout: CourseLayout, plan: Plan) -> None:
    """The plan of a new sharded grading; the shards' states of any earlier one are removed.
    ShardError, with nothing changed, while one of them runs (call it inside ``locked``)."""
    layout.grading_state.mkdir(parents=True, exist_ok=True)
    if busy := refusal(
        layout, "--intake", "a new plan would change the class under it: plan once every shard has ended"
    ):
        raise ShardError(busy)
    for old in layout.grading_state.glob("shard-*-of-*.json"):
        old.unlink(missing_ok=True)
    os.close(_lock_file(layout))
    write_atomic(plan_path(layout), plan.to_json() + "\n")


def read_plan(layout: CourseLayout) -> Plan:
    """The plan ``grade --intake`` wrote; ShardError when there is none."""
    try:
        data = json.loads(plan_path(layout).read_text(encoding="utf-8"))
        return Plan(
            [(str(s), str(lab)) for s, lab in data["pairs"]],
            [(str(f), str(r)) for f, r in data.get("not_graded", [])],
            [str(n) for n in data.get("notes", [])],
            {(str(s), str(lab)): str(key) for s, lab, key in data["keys"]},  # a plan of an older grader has none
        )
    except FileNotFoundError:
        raise ShardError(
            f"no sharded grading is planned in {layout.root}: run `grade SUBMISSIONS --intake` first "
            "(it collects the class once for every shard)"
        ) from None
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ShardError(f"{plan_path(layout)} cannot be read ({err}): run `grade SUBMISSIONS --intake` again") from err


# ----------------------------------------------------------------------------- the shards' states


def state_path(layout: CourseLayout, shard: Shard) -> Path:
    return layout.grading_state / f"shard-{shard.index}-of-{shard.count}.json"


def states(layout: CourseLayout) -> dict[Shard, dict]:
    """Every shard's recorded state, by shard."""
    found = {}
    for path in sorted(layout.grading_state.glob("shard-*-of-*.json")):
        match = re.fullmatch(r"shard-(\d+)-of-(\d+)\.json", path.name)
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(path.read_text(encoding="utf-8"))
            if match and isinstance(data, dict):
                data["beat"] = path.stat().st_mtime
                found[Shard(int(match[1]), int(match[2]))] = data
    return found


def check_count(layout: CourseLayout, shard: Shard) -> None:
    """ShardError when a shard of this plan already ran with another number of shards: the
    parts would overlap and leave pairs out."""
    other = sorted({s.count for s in states(layout)} - {shard.count})
    if other:
        raise ShardError(
            f"--shard {shard}: this grading's shards were started as {other[0]} shards "
            f"({layout.grading_state}): use --shard I/{other[0]}, or run `grade SUBMISSIONS --intake` "
            "again to plan a new grading"
        )


def _lock_file(layout: CourseLayout) -> int:
    """The lock's file, opened (made with the plan, so that a step refused later writes nothing)."""
    layout.grading_state.mkdir(parents=True, exist_ok=True)
    return os.open(layout.grading_state / "lock", os.O_RDWR | os.O_CREAT, 0o644)


@contextlib.contextmanager
def locked(layout: CourseLayout) -> Iterator[None]:
    """While the block runs, no other step of a grading in shards reads or changes the shards'
    states: an exclusive lock on ``grading-logs/state/lock`` (on one machine; on several, as far
    as their shared file system's locks reach)."""
    fd = _lock_file(layout)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # gives the lock back


def _process(pid: int) -> str | None:
    """Which process ``pid`` is: the machine's boot and the time the process started (clock
    ticks since that boot, from /proc/PID/stat), which a later process given the same pid does
    not share; None where /proc does not say (no such process, or not Linux)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        return f"{boot} {Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[19]}"
    except (OSError, IndexError):
        return None


def _alive(state: dict) -> bool:
    """Is a shard recorded as running still running: on this machine, its process, still the
    one that wrote the record; on another, a recent heartbeat."""
    if state.get("state") != "running":
        return False
    if state.get("host") != socket.gethostname():
        return time.time() - float(state.get("beat", 0)) < SILENT_SECONDS
    try:
        pid = int(state.get("pid", 0))
    except (TypeError, ValueError):
        return False
    if pid <= 0:
        return False
    if state.get("process") and (now := _process(pid)) is not None:
        return now == state["process"]
    try:
        os.kill(pid, 0)  # where /proc cannot say: the pid alone
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _running(layout: CourseLayout) -> list[tuple[Shard, dict]]:
    found = sorted(states(layout).items(), key=lambda item: (item[0].count, item[0].index))
    return [(shard, state) for shard, state in found if _alive(state)]


def _named(shard: Shard, state: dict) -> str:
    return f"shard {shard} (on {state.get('host', '?')}, process {state.get('pid', '?')})"


def running(layout: CourseLayout) -> list[str]:
    """The shards still running, each described in a few words."""
    return [_named(shard, state) for shard, state in _running(layout)]


def refusal(layout: CourseLayout, step: str, why: str, only: Shard | None = None) -> str:
    """Why ``step`` does not run beside the shards still running (only shard ``only`` counts, when
    given), and how to clear the record of a shard that no longer runs; "" when none runs."""
    busy = [(shard, state) for shard, state in _running(layout) if only in (None, shard)]
    if not busy:
        return ""
    named = ", ".join(_named(shard, state) for shard, state in busy)
    files = ", ".join(str(state_path(layout, shard)) for shard, _ in busy)
    return (
        f"{step}: {named} still running; {why}. A shard's record counts as ended once its process on this "
        f"machine has ended, or once it has not beaten for {SILENT_SECONDS:.0f} s on another machine; if it "
        f"no longer runs (its machine went down), remove its record to clear it: {files}"
    )


def _claim(layout: CourseLayout, shard: Shard) -> dict:
    """Record ``shard`` as running in this process; ShardError while a shard of that index runs,
    or when the grading's shards were started as another number of shards."""
    with locked(layout):
        if busy := refusal(
            layout, f"--shard {shard}", "two runs of one shard would grade the same submissions at once", shard
        ):
            raise ShardError(busy)
        check_count(layout, shard)
        record = {
            "state": "running",
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "process": _process(os.getpid()),
            "token": uuid.uuid4().hex,
            "started": time.time(),
        }
        write_atomic(state_path(layout, shard), json.dumps(record) + "\n")
    return record


def _end(layout: CourseLayout, shard: Shard, record: dict, ended: str) -> None:
    """Record how the shard ended, unless its record is no longer this run's (another run of the
    index took it over once this one counted as gone)."""
    path = state_path(layout, shard)
    with locked(layout):
        with contextlib.suppress(OSError, ValueError):
            if json.loads(path.read_text(encoding="utf-8")).get("token") != record["token"]:
                return
        write_atomic(path, json.dumps({**record, "state": ended, "ended": time.time()}) + "\n")


@contextlib.contextmanager
def heartbeat(layout: CourseLayout, shard: Shard) -> Iterator[None]:
    """While the block runs, the shard's state file says running and is touched every
    ``HEARTBEAT_SECONDS``; it says done when the block ends normally, stopped otherwise.
    ShardError, before the block, while a shard of that index runs or when the count differs
    from the started shards' (``check_count``)."""
    record = _claim(layout, shard)
    path, stop = state_path(layout, shard), threading.Event()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_SECONDS):
            with contextlib.suppress(OSError):
                os.utime(path)

    thread = threading.Thread(target=beat, name="shard-heartbeat", daemon=True)
    thread.start()
    ended = "stopped"
    try:
        yield
        ended = "done"
    finally:
        stop.set()
        thread.join()
        _end(layout, shard, record, ended)

"""What the test suite costs, per cost marker: seconds, tests and the assertions that ran.

As a pytest plugin it writes one JSON line per test phase (its id, seconds, outcome, CPU seconds,
the time it ended and, for the call, how many ``assert`` statements passed in it) to
``$SUITE_COSTS/WORKER.jsonl``; as a script it adds those up per marker (``costs()`` of
``tests/conftest.py``), so that two runs, before and after a change, can be compared marker by marker:

    SUITE_COSTS=/tmp/costs PYTHONPATH=tools .venv/bin/python -m pytest -n 2 -p suite_costs \\
        -o enable_assertion_pass_hook=true
    python tools/suite_costs.py /tmp/costs [/tmp/costs-before]

Assertions are counted by pytest's ``pytest_assertion_pass`` hook, which needs
``-o enable_assertion_pass_hook=true`` and no bytecode pytest rewrote before without it (a fresh
clone, ``PYTHONDONTWRITEBYTECODE=1``, or ``find . -name '*-pytest-*.pyc' -delete``): the plain
``assert`` statements of test modules and conftest files that run before a test's call ends
(its set-up and its body, not its teardown); an assertion in a helper module or a
``pytest.raises`` is not counted. CPU seconds are those of the pytest worker and of every process
below it that was waited for, since the test started or its previous phase ended: a test whose CPU
is far below its seconds waits (on a time limit, a sleep, a poll) while a core may sit idle, or
spent it in processes nobody waited for (a killed worker's kernels, reaped by init). The hook
itself costs: a passing assertion's operands are then formatted, and may outlive it, so a test that
frees what it asserted on can find it alive (test_remote.py's freed-address test then collects
garbage each turn, 0.45 s each): compare runs made the same way, not with ``make test``. Lines are appended:
give each run an empty folder.
"""

from __future__ import annotations

import collections
import glob
import importlib.util
import json
import os
import resource
import sys
import time
from pathlib import Path

_passed: collections.Counter[str] = collections.Counter()


def _cpu() -> float:
    """CPU seconds of this process and of every descendant it (or they) waited for."""
    return sum(
        usage.ru_utime + usage.ru_stime
        for usage in (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))
    )


_last_cpu = [0.0]  # set at each test's start (pytest_runtest_logstart)


def pytest_runtest_logstart(nodeid, location) -> None:  # pytest's hook signature: both are passed
    _last_cpu[0] = _cpu()  # from the test's start: not the collection before it, nor the gap after the last


def pytest_assertion_pass(item, lineno, orig, expl) -> None:  # pytest's hook signature: all four are passed
    _passed[item.nodeid] += 1


def pytest_runtest_logreport(report) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER") is None and hasattr(report, "node"):
        return  # pytest-xdist's controller: its workers wrote it
    now = _cpu()
    cpu, _last_cpu[0] = now - _last_cpu[0], now
    folder = Path(os.environ.get("SUITE_COSTS", "suite-costs"))
    folder.mkdir(parents=True, exist_ok=True)
    line = {
        "nodeid": report.nodeid,
        "when": report.when,
        "duration": report.duration,
        "outcome": report.outcome,
        "asserts": _passed.get(report.nodeid, 0) if report.when == "call" else None,
        "cpu": cpu,
        "end": time.time(),
    }
    with open(folder / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.jsonl", "a") as out:
        out.write(json.dumps(line) + "\n")


def _costs():
    spec = importlib.util.spec_from_file_location("tests_conftest", Path(__file__).parents[1] / "tests" / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.costs


def table(folder: str) -> dict[str, list[float]]:
    """Per marker group: [tests, seconds, assertions, skipped, CPU seconds]."""
    costs = _costs()
    seconds: dict[str, float] = collections.defaultdict(float)
    asserts: dict[str, int] = {}
    skipped: set[str] = set()
    cpu: dict[str, float] = collections.defaultdict(float)
    for path in glob.glob(os.path.join(folder, "*.jsonl")):
        for text in open(path):
            row = json.loads(text)
            seconds[row["nodeid"]] += row["duration"]
            cpu[row["nodeid"]] += row.get("cpu", 0.0)  # absent from lines written before it was recorded
            if row["when"] == "call":
                asserts[row["nodeid"]] = row["asserts"] or 0
            if row["outcome"] == "skipped":
                skipped.add(row["nodeid"])
    groups: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0, 0, 0.0])
    for nodeid, spent in seconds.items():
        group = groups["+".join(costs(nodeid)) or "(no cost marker)"]
        group[0] += 1
        group[1] += spent
        group[2] += asserts.get(nodeid, 0)
        group[3] += nodeid in skipped
        group[4] += cpu[nodeid]
    groups["all"] = [sum(g[i] for g in list(groups.values())) for i in range(5)]
    return groups


def main(argv: list[str]) -> int:
    after = table(argv[0])
    before = table(argv[1]) if len(argv) > 1 else None
    print(f"{'markers':24s} {'tests':>6s} {'seconds':>8s} {'asserts':>8s} {'skipped':>7s} {'cpu s':>7s}", end="")
    print(f"   {'before: tests':>13s} {'seconds':>8s} {'asserts':>8s} {'cpu s':>7s}" if before else "")
    for name, (tests, spent, asserted, skipped, used) in sorted(
        after.items(), key=lambda kv: (kv[0] == "all", -kv[1][1])
    ):
        print(f"{name:24s} {tests:6.0f} {spent:8.0f} {asserted:8.0f} {skipped:7.0f} {used:7.0f}", end="")
        old = (before or {}).get(name)
        print(
            f"   {old[0]:13.0f} {old[1]:8.0f} {old[2]:8.0f} {old[4]:7.0f}"
            if old
            else ("" if before is None else "   (none)")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

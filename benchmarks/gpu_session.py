"""The GPU figures of issue 39 in one run on a lent GPU machine: the CUDA-only tests, the step
benchmark, the base model on the addition task, and the training command with its defaults.

    PYTHONUNBUFFERED=1 python3 benchmarks/gpu_session.py "$OUT"    # on the GPU machine, in the repo root
    python benchmarks/gpu_session.py /tmp/session --smoke           # every stage, tiny, on a CPU (a minute)

It needs only the machine's own Python with torch, numpy, pytest and tqdm (no virtual environment,
no network, the course package not installed): every stage is a child process with the repository
on PYTHONPATH. The run keeps to ``--total`` seconds, and each stage to its budget (``BUDGETS``); a
stage that runs past it is stopped, with every process it started, and the next one begins. Each
stage writes its files as it goes, so what a stopped stage had done is kept:

    OUT/session.log                    the machine and its software; each stage's command, exit status
                                       and seconds, and the figures it printed (pytest's summary line,
                                       the held-out exact match, the precision --amp auto decided)
    OUT/test-gpu.txt                   `make test-gpu`'s tests: pytest tests/reference -k on_cuda -rs
    OUT/bench-train-step.txt           what bench_train_step.py printed
    OUT/train-console.txt              what the two training stages printed (their logs hold the same)
    OUT/results/train-step-gpu.json    the step benchmark (bench_train_step.py --json), case by case
    OUT/results/add-gpu.log            the appendix's recipe for the addition task, for the seconds
                                       left or --add-limit (--time-limit; benchmarks/train_log.py)
    OUT/results/train-recipe-gpu.log   `python -m autograder train --no-progress`: the recipe as it is

The files under ``results/`` are in the repository's own format: copied into ``benchmarks/results/``
they are what the appendix renders. When the multi-shape CUDA-graph test fails, the addition task
trains without ``--cuda-graph`` (eager, bfloat16); when a graphed run fails, it is run again so,
and the failed log is kept as ``OUT/add-gpu-graph-failed.log``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# seconds each stage may take at most (the addition task takes what the others leave, less TRAIN's)
BUDGETS = {"tests": 90, "bench": 170, "train": 55}
ADD_OVERHEAD = 55  # seconds of the addition stage outside --time-limit: start, 200,000 pairs, test, checkpoint
MIN_ADD_TRAINING = 30  # fewer seconds of training than this are not worth a log
# the step benchmark's cases, in the order they run: every fast case first (a few seconds each), then the
# compiled ones (30 to 50 s of compiling each on an H100, torch 2.11), the likeliest default first
BENCH_CASES = [
    "small:fp32:nn_transformer",
    "small:fp32:eager",
    "small:fp32:graphed",
    "base:bf16:nn_transformer",
    "base:bf16:eager",
    "base:bf16:graphed",
    "base:fp32:nn_transformer",
    "base:fp32:eager",
    "base:fp32:graphed",
    "small:bf16:nn_transformer",
    "small:bf16:eager",
    "small:bf16:graphed",
    "small:fp32:compiled:loss+fused-adam",
    "base:bf16:compiled:loss+fused-adam",
    "small:fp32:compiled:model",
    "small:fp32:compiled:loss+fused-adam+fused-kernels",
    "base:bf16:compiled:loss+fused-adam+fused-kernels",
    "base:fp32:compiled:loss+fused-adam",
    "base:bf16:compiled:model",
    "small:fp32:compiled:model+fused-adam",
    "small:fp32:compiled:loss",
    "base:fp32:compiled:model",
]
STAGES = ("tests", "bench", "add", "train")  # in the order they run
# the tests whose failure means that the addition task must not train in CUDA graphs
GRAPH_TESTS = ("test_cuda_graph_step_equals_eager_on_cuda", "test_cuda_graphs_of_several_shapes")
# the appendix's recipe for the addition task (book/appendix-training.md, "A task that needs a GPU"): an
# evaluation every 500 steps for the curve, no checkpoint on the way, and a stop at 99% validation exact match
ADD_RECIPE = [
    "--task",
    "add",
    "--num-train",
    "200000",
    "--num-valid",
    "500",
    "--num-test",
    "1000",
    "--d-model",
    "256",
    "--num-heads",
    "4",
    "--num-layers",
    "3",
    "--d-ff",
    "1024",
    "--batch-size",
    "256",
    "--dropout",
    "0.0",
    "--warmup",
    "1000",
    "--lr-factor",
    "1.0",
    "--steps",
    "40000",
    "--eval-every",
    "500",
    "--stop-at",
    "0.99",
]
SMOKE_ADD = [
    "--task",
    "add",
    "--num-train",
    "64",
    "--num-valid",
    "8",
    "--num-test",
    "8",
    "--d-model",
    "16",
    "--num-heads",
    "2",
    "--num-layers",
    "1",
    "--d-ff",
    "32",
    "--batch-size",
    "8",
    "--steps",
    "1000",
    "--eval-every",
    "1000",
    "--eval-size",
    "8",
    "--device",
    "cpu",
]  # validated once: where time ran out
SMOKE_TRAIN = [
    "--task",
    "reverse",
    "--num-train",
    "64",
    "--num-valid",
    "8",
    "--num-test",
    "8",
    "--batch-size",
    "8",
    "--d-model",
    "16",
    "--num-heads",
    "2",
    "--num-layers",
    "1",
    "--d-ff",
    "32",
    "--steps",
    "4",
    "--eval-every",
    "2",
    "--eval-size",
    "8",
    "--device",
    "cpu",
]
# a stand-in for tqdm, used only where the machine has none: the training command draws no bar with
# --no-progress, but imports tqdm and writes its validation lines through tqdm.write
TQDM_SHIM = """
import sys


class tqdm:
    def __init__(self, iterable=(), *args, **kwargs):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)

    def set_postfix(self, *args, **kwargs):
        pass

    def close(self):
        pass

    @staticmethod
    def write(line, file=None):
        print(line, file=file or sys.stdout, flush=True)
"""


class Session:
    """The output folder, the clock of the whole run, and the log every line also goes to."""

    def __init__(self, out: Path, total: float) -> None:
        self.out, self.start, self.total = out, time.monotonic(), total
        (out / "results").mkdir(parents=True, exist_ok=True)
        self.log = (out / "session.log").open("a")
        self.env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
            "PYTHONUNBUFFERED": "1",
        }
        self.scratch = Path(tempfile.mkdtemp(prefix="gpu-session-"))  # checkpoints: not for OUT (hundreds of MB)
        self.status, self.seconds = "not run", 0.0  # the last stage's

    def say(self, line: str) -> None:
        print(line, flush=True)
        self.log.write(line + "\n")
        self.log.flush()

    def left(self) -> float:
        return self.total - (time.monotonic() - self.start)

    def run(self, name: str, args: list[str], budget: float, output: Path, *, append: bool = False) -> int | None:
        """Run ``python ARGS`` in the repository root for at most ``budget`` seconds, its output to
        ``output``; return its exit status (None: stopped at the budget, with all it started)."""
        budget = max(1.0, min(budget, self.left()))
        command = shlex.join(["python3", *args])
        self.say(f"--- stage {name} (budget {budget:.0f} s, {self.left():.0f} s of the session left): {command}")
        began = time.monotonic()
        with output.open("a" if append else "w") as sink:
            child = subprocess.Popen(
                [sys.executable, *args],
                cwd=REPO,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                status: int | None = child.wait(timeout=budget)
            except subprocess.TimeoutExpired:
                status = None
                stop(child)
        seconds = time.monotonic() - began
        self.status = "stopped at its budget" if status is None else f"exit {status}"
        self.seconds = seconds
        return status

    def done(self, name: str, quoted: str = "") -> None:
        self.say(f"stage {name}: {self.status} after {self.seconds:.0f} s" + (f"; {quoted}" if quoted else ""))


def stop(child: subprocess.Popen) -> None:
    """End a stage's process group: SIGTERM, then SIGKILL 5 s later."""
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            return
        try:
            child.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def machine(session: Session, commit: str | None) -> bool:
    """Describe the machine and its software; return whether CUDA is there."""
    import torch

    cuda = torch.cuda.is_available()
    gpu = torch.cuda.get_device_name() if cuda else "no CUDA GPU"
    repo = git_head() or commit or "at a commit not recorded (no git here: give --commit)"
    session.say(
        f"machine: {gpu}; {os.cpu_count()} CPU cores; Python {platform.python_version()}; "
        f"torch {torch.__version__} (CUDA {torch.version.cuda or 'none'}); "
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; repo {repo}"
    )
    try:
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout.strip()
        session.say(f"nvidia-smi: {smi}")
    except (OSError, subprocess.TimeoutExpired):
        session.say("nvidia-smi: not found")
    missing = []
    for module in ("numpy", "pytest", "tqdm"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if "tqdm" in missing:
        shim = session.scratch / "shim"
        (shim / "tqdm").mkdir(parents=True)
        (shim / "tqdm" / "__init__.py").write_text(TQDM_SHIM)
        session.env["PYTHONPATH"] += os.pathsep + str(shim)  # after the machine's own packages
    session.say(
        "modules missing: "
        + (", ".join(missing) + (" (tqdm: a stand-in is used)" if "tqdm" in missing else "") if missing else "none")
    )
    return cuda


def git_head() -> str:
    """The checkout's commit, with ``+changes`` when its files differ from it; "" without git."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return head + (" +changes" if head and dirty else "")


def last_line(path: Path, pattern: str) -> str:
    """The last line of ``path`` that ``pattern`` matches (searched), stripped of pytest's '=' frame."""
    lines = [line for line in path.read_text(errors="replace").splitlines() if re.search(pattern, line)]
    return lines[-1].strip("= ") if lines else "(no such line)"


def train_log(session: Session, name: str, log: Path, args: list[str], budget: float) -> int | None:
    """Run ``benchmarks/train_log.py LOG -- ARGS`` as stage ``name``."""
    status = session.run(
        name, ["benchmarks/train_log.py", str(log), "--", *args], budget, session.out / "train-console.txt", append=True
    )
    found = (
        [line for line in log.read_text().splitlines() if line.startswith(("model:", "step ", "held-out"))]
        if log.exists()
        else []
    )
    picked = next((line for line in found if line.startswith("model:")), "")
    amp = re.search(r"precision [^;]+", picked)
    rate = next((line for line in reversed(found) if line.startswith("step ")), "no validation")
    held = next((line for line in found if line.startswith("held-out")), "no held-out line (not finished)")
    session.done(name, "; ".join(p for p in (amp.group(0) if amp else "", rate, held) if p))
    return status


def tests_stage(session: Session) -> bool:
    """(a) the CUDA-only tests, as `make test-gpu` runs them (-v: each test's verdict as it comes; on a
    CPU: all skipped); return whether the CUDA-graph tests passed."""
    tests = session.out / "test-gpu.txt"
    session.run(
        "tests",
        ["-m", "pytest", "tests/reference", "-k", "on_cuda", "-rs", "-v", "-p", "no:cacheprovider"],
        BUDGETS["tests"],
        tests,
    )
    failed = [line for line in tests.read_text(errors="replace").splitlines() if "FAILED" in line]
    session.done("tests", "pytest: " + last_line(tests, r"\d+ (passed|failed|skipped|deselected|errors?)\b"))
    for line in failed:
        session.say(f"  {line}")
    return not any(test in line for line in failed for test in GRAPH_TESTS)


def add_stage(session: Session, options: argparse.Namespace, graphs_ok: bool) -> None:
    """(c) the appendix's recipe for the addition task, trained for ``--add-limit`` seconds or what the
    session leaves (less the last stage's budget), as one CUDA graph where the graph tests passed;
    a graphed run that fails is run again eagerly, in bfloat16, for the seconds then left."""
    after = 0 if "train" in options.skip else BUDGETS["train"]  # what the last stage needs
    least = 1 if options.smoke else MIN_ADD_TRAINING  # seconds of training worth a log

    def limit(budget: float) -> float:
        seconds = 3.0 if options.smoke else budget - ADD_OVERHEAD
        return seconds if options.add_limit is None else min(seconds, options.add_limit)

    budget = session.left() - after - 5
    if limit(budget) < least:
        session.say(f"stage add: skipped, {budget:.0f} s left for it")
        return
    add_log = session.out / "results" / "add-gpu.log"
    flags = (SMOKE_ADD if options.smoke else ADD_RECIPE) + [
        "--no-progress",
        "--time-limit",
        f"{limit(budget):.0f}",
        "--out",
        str(session.scratch / "add.pt"),
    ]
    graph = ["--cuda-graph"] if graphs_ok else ["--amp", "bf16"]  # (on a CPU the graph's step runs eagerly)
    if not graphs_ok:
        session.say("the multi-shape CUDA-graph test failed: the addition task trains eagerly, in bfloat16")
    status = train_log(session, "add", add_log, flags + graph, budget)
    budget = session.left() - after - 5
    if graph == ["--cuda-graph"] and status not in (0, None) and limit(budget) >= least:
        add_log.rename(session.out / "add-gpu-graph-failed.log")
        session.say("the graphed run failed (its log: add-gpu-graph-failed.log): again eagerly, in bfloat16")
        flags[flags.index("--time-limit") + 1] = f"{limit(budget):.0f}"
        train_log(session, "add (eager)", add_log, flags + ["--amp", "bf16"], budget)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, nargs="?", help="the folder to write into ($OUT on the GPU machine)")
    parser.add_argument(
        "--total",
        type=float,
        default=520.0,
        help="seconds for the whole session (a stage stopped at its budget may add 10)",
    )
    parser.add_argument("--skip", action="append", default=[], choices=STAGES, help="leave this stage out (repeatable)")
    parser.add_argument(
        "--add-limit", type=float, help="seconds of training for the addition task (default: what the session leaves)"
    )
    parser.add_argument("--commit", help="the commit the copied working tree is at, for the log (where it has no git)")
    parser.add_argument(
        "--smoke", action="store_true", help="every stage with a tiny model and budget, on the CPU: tests this script"
    )
    options = parser.parse_args(argv)
    if options.out is None:
        if not options.smoke:
            parser.error("the output folder is needed (or --smoke)")
        options.out = Path(tempfile.mkdtemp(prefix="gpu-session-smoke-"))
    session = Session(options.out, options.total)
    cuda = machine(session, options.commit)
    if not cuda and not options.smoke:
        session.say("no CUDA GPU is visible: this session measures one (--smoke runs its stages on a CPU)")
        return 2
    results = session.out / "results"

    # (a) the CUDA-only tests: what `make test-gpu` runs
    graphs_ok = "tests" in options.skip or tests_stage(session)

    # (b) the step benchmark, its JSON rewritten after every case
    if "bench" not in options.skip:
        bench = ["benchmarks/bench_train_step.py", "--json", str(results / "train-step-gpu.json")]
        bench += ["--smoke", "--plans", "model", "loss+fused-adam"] if options.smoke else ["--cases", *BENCH_CASES]
        session.run("bench", bench, BUDGETS["bench"], session.out / "bench-train-step.txt")
        session.done("bench", last_line(session.out / "bench-train-step.txt", r"ms/step|n/a|Error|error"))

    # (c) the addition task, for the seconds the last stage leaves (or --add-limit)
    if "add" not in options.skip:
        add_stage(session, options, graphs_ok)

    # (d) the training command with its defaults: the best weights' test figure, and the precision --amp auto decided
    if "train" not in options.skip:
        train_log(
            session,
            "train",
            results / "train-recipe-gpu.log",
            (SMOKE_TRAIN if options.smoke else []) + ["--no-progress", "--out", str(session.scratch / "dates.pt")],
            BUDGETS["train"],
        )

    written = sorted(str(p.relative_to(session.out)) for p in session.out.rglob("*") if p.is_file())
    session.say(f"written in {session.out}: {', '.join(written)}")
    session.say("copy: the files of results/ into benchmarks/results/ (the names are the ones the appendix reads)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run ``python -m autograder train ARGS`` and write what it prints to a log that the book renders.

    python benchmarks/train_log.py benchmarks/results/train-recipe-cpu.log -- --no-progress
    python benchmarks/train_log.py --smoke      # a tiny run, logged to a temporary file

The log's first line is the command, with the date, the torch version, the machine and its
load average when the run started; then every line the command printed (stdout and stderr, in
the order they came), each written as it comes, so that a run stopped from outside leaves the
lines up to there; then its exit status. The appendix reads the figures from these lines, so none is typed by
hand. Without ARGS the command runs the course's recipe as it is (``make train``).
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

SMOKE = [
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
    "--no-progress",
]


def header(args: list[str]) -> str:
    """The log's first line: the command, then where and when it ran."""
    import torch

    load = os.getloadavg()[0]
    machine = f"{os.cpu_count()}-core CPU machine" + (
        f", CUDA {torch.cuda.get_device_name()}" if torch.cuda.is_available() else ""
    )
    command = shlex.join(["python", "-m", "autograder", "train", *args])
    return (
        f"$ {command}   # {datetime.date.today().isoformat()}, torch {torch.__version__}, {machine} "
        f"(load average {load:.2f} at the start)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path, nargs="?", help="the log file to write")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="-- then the flags of python -m autograder train")
    parser.add_argument("--smoke", action="store_true", help="a tiny run logged to a temporary file (seconds)")
    options = parser.parse_args(argv)
    args = options.args[1:] if options.args[:1] == ["--"] else options.args
    if options.smoke:
        folder = Path(tempfile.mkdtemp())
        options.log, args = folder / "smoke.log", [*SMOKE, "--out", str(folder / "smoke.pt")]
    elif options.log is None:
        parser.error("the log file to write is needed (or --smoke)")
    options.log.parent.mkdir(parents=True, exist_ok=True)
    with options.log.open("w") as log:

        def put(line: str) -> None:
            log.write(line + "\n")
            log.flush()
            print(line, flush=True)

        put(header(args))
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # each line as it is printed
        with subprocess.Popen(
            [sys.executable, "-m", "autograder", "train", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        ) as run:
            assert run.stdout is not None
            for line in run.stdout:
                put(line.rstrip("\n"))
        put(f"(exit status {run.returncode})")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())

"""Does every script in benchmarks/ still run, and print the lines it promises?

Each benchmark runs with ``--smoke`` (its smallest configuration: seconds, numbers that mean
nothing) in a process of its own; the test reads what it printed. A new benchmark is picked up
by the glob and fails here until ``PROMISES`` says which lines it must print.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = sorted(p.name for p in (REPO / "benchmarks").glob("*.py"))
LIMIT = 300  # seconds a smoke run may take on a busy machine (each takes seconds when idle)

NUMBER = r"\d+(?:\.\d+)?"

# benchmark -> regular expressions, each of which must match a whole line of its --smoke output
PROMISES: dict[str, list[str]] = {
    "bench_grading.py": [
        r"grading \d+ notebooks of 00-warmup .*",
        rf"first grading of a new state of the course, its start-up check included .*: {NUMBER} s, --jobs 1",
        rf"--jobs 1: {NUMBER} s in all, {NUMBER} s per graded notebook .*",
        r"where a notebook's seconds go \(--jobs 1, mean per notebook\):",
        rf"  autograde +{NUMBER}",
        rf"  independent_check +{NUMBER}",
        rf"  check child start +{NUMBER}",
        r"identical grades\.csv: True",
        rf"speed-up of --jobs 2 over --jobs 1: {NUMBER}x",
        rf"  00-warmup +{NUMBER} s \+ +{NUMBER} s = +{NUMBER} s +score 5 / 5",
        rf"slowest lab: {NUMBER} s",
    ],
    "bench_shards.py": [
        r"class: 2 submissions of 00-warmup, on \d+ CPU\(s\)",
        r"identical grades\.csv: True",
        rf"shards / --jobs 2: {NUMBER}x \(target: at most 1\.15x\)",
        rf"unchanged rerun: {NUMBER} s, {NUMBER}% of the first run \(target: at most 5%\)",
    ],
    # its --smoke builds the corpus and hashes it, grading nothing: the full run takes minutes
    "grading_corpus.py": [r"corpus: \d+ submissions, \d+ input files in .*"],
    "bench_reference.py": [
        rf"reference, default \(hand-written\) +{NUMBER} ms/step +ratio to nn\.Transformer {NUMBER}",
        rf"reference, fused_kernels=True +{NUMBER} ms/step +ratio to nn\.Transformer {NUMBER}",
        rf"nn\.Transformer +{NUMBER} ms/step +ratio to nn\.Transformer 1\.000",
    ],
    "bench_annotated.py": [
        rf"seed \d+: +{NUMBER} ms/step +exact match +{NUMBER}% +token accuracy +{NUMBER}%",
        rf"mean of \d+ seed\(s\): {NUMBER} ms/step, exact match {NUMBER}% .*",
    ],
    "bench_modern_block.py": [
        r"task reverse as one sequence: \d+ training, \d+ held-out sequences, vocab \d+; \d+ steps of \d+, seeds .*",
        rf" *(2017|modern) seed \d+: \d+ parameters, {NUMBER} s, target loss {NUMBER}, exact match {NUMBER}%",
        rf" *(2017|modern) mean of \d+ seed\(s\): target loss {NUMBER}, exact match {NUMBER}%",
    ],
    "bench_bpe.py": [
        r"corpus: the course's lectures, [\d,]+ characters; tokenizers on \d+ thread\(s\); same merges: True",
        r" *vocab_size +ours s +tokenizers s +ours/tokenizers",
        rf" *\d+ +{NUMBER} +{NUMBER} +{NUMBER}",
    ],
    "bench_report.py": [
        r"class of \d+ students on 02-self-attention: recorded verdicts, 4 exercises",
        rf"report: {NUMBER} s \(median of \d+\), \d+ mistakes, "
        r"\d+ pairs of students with similar answers \(\d+ answers alike\), \d+ KiB",
    ],
    "bench_decode.py": [
        r".*; tokens identical in every round",
        r" *max_len +uncached ms +cached ms +uncached/cached",
        rf" *\d+ +{NUMBER} +{NUMBER} +{NUMBER}",
    ],
    "bench_train_step.py": [
        rf"small d\d+ L\d+ B\d+ S\d+ fp32  nn\.Transformer eager +{NUMBER} ms/step  ratio to nn\.Transformer 1\.000",
        rf"small .* fp32  course eager +{NUMBER} ms/step  ratio to nn\.Transformer {NUMBER}",
        # on a machine without CUDA the graph is named and skipped, with the reason
        rf"small .* fp32  course graphed +(n/a \(a CUDA graph needs CUDA\)|{NUMBER} ms/step .*)",
    ],
    # every stage of the GPU session, tiny, on the CPU: the CUDA-only tests skipped, the graph named n/a
    "gpu_session.py": [
        r"machine: .*; torch .*",
        rf"stage tests: exit 0 after \d+ s; pytest: \d+ (passed|skipped).* in {NUMBER}s",
        r"stage bench: exit 0 after \d+ s; small .* course compiled loss\+fused-adam .* ms/step .*",
        r"stage add: exit 0 after \d+ s; precision fp32; step +\d+ .*; held-out test exact match .*",
        r"stage train: exit 0 after \d+ s; precision fp32; step +4 .*; held-out test exact match .*",
        r"written in .*: .*results/add-gpu\.log, results/train-recipe-gpu\.log, results/train-step-gpu\.json.*",
    ],
    "train_log.py": [
        r"\$ python -m autograder train --task reverse .*\(load average .*\)",
        rf"held-out test exact match {NUMBER}% .*",
        r"\(exit status 0\)",
    ],
    "time_to_accuracy.py": [
        rf"ours +\d+ +\d+ +{NUMBER} +{NUMBER} +{NUMBER}",
        rf"pytorch +\d+ +\d+ +{NUMBER} +{NUMBER} +{NUMBER}",
        # with the same initial weights both reach the target at the same step
        rf"ratio ours/PyTorch: time {NUMBER}, steps 1\.00, time per step {NUMBER} .*",
    ],
}


@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int | None, str]]:
    """Every benchmark's --smoke run: (exit status, None if it ran past LIMIT; its output).
    They all start at once, since much of their time is spent waiting on the processes and
    kernels they start; each writes to a file, so none blocks on a full pipe."""
    folder = tmp_path_factory.mktemp("benchmarks")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    started = {}
    for name in BENCHMARKS:
        out = (folder / f"{name}.out").open("w")
        started[name] = (
            subprocess.Popen(
                [sys.executable, str(REPO / "benchmarks" / name), "--smoke"],
                cwd=REPO,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            ),
            out,
        )
    runs = {}
    for name, (proc, out) in started.items():
        try:
            status: int | None = proc.wait(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            status = None
        out.close()
        runs[name] = (status, (folder / f"{name}.out").read_text())
    return runs


@pytest.mark.parametrize("name", BENCHMARKS)
def test_benchmark_smoke_run_prints_what_it_promises(name: str, smoke_runs) -> None:
    """Does `python benchmarks/NAME --smoke` finish with status 0 and print every line it promises?"""
    status, output = smoke_runs[name]
    shown = f"\n--- output of {name} --smoke ---\n{output[-4000:]}"
    assert status is not None, f"{name} --smoke ran past {LIMIT} s{shown}"
    assert status == 0, f"{name} --smoke exited with status {status}{shown}"
    assert name in PROMISES, (
        f"{name}: add the lines its --smoke output promises to PROMISES in {__file__} "
        f"(for example its ratio line){shown}"
    )
    lines = output.splitlines()
    missing = [p for p in PROMISES[name] if not any(re.fullmatch(p, line) for line in lines)]
    assert not missing, f"{name} --smoke did not print a line matching {missing}{shown}"


def test_every_promised_benchmark_exists() -> None:
    """Does every benchmark named in PROMISES still exist (a renamed one must be renamed here too)?"""
    assert sorted(set(PROMISES) - set(BENCHMARKS)) == []


def test_committed_add_log_shows_the_small_model_on_a_plateau_below_95_percent() -> None:
    """Does the committed CPU log of the small model on the full addition task (which the
    appendix renders) show what the page says: a finished run, held-out exact match below 95%,
    and a loss that stays on a plateau (the last evaluation within 5% of the first)?"""
    log = (REPO / "benchmarks" / "results" / "add-small-cpu.log").read_text()
    assert "--task add" in log.splitlines()[0] and log.rstrip().endswith("(exit status 0)")
    losses = [float(m) for m in re.findall(r"^step +\d+ +loss ([\d.]+)", log, re.MULTILINE)]
    assert len(losses) >= 4, "too few evaluations to show a plateau"
    assert abs(losses[-1] - losses[0]) <= 0.05 * losses[0], losses
    exact = float(re.search(r"held-out test exact match ([\d.]+)%", log).group(1))
    assert exact < 95.0

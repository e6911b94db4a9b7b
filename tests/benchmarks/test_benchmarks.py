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
    "add_layouts.py": [
        r"\$ python benchmarks/add_layouts.py --smoke +# .*\(load average .*\)",
        r"digits: source vocabulary 13, .*",
        r"places: source vocabulary 103, .*",
        rf"(digits|places) +step +\d+  loss {NUMBER}  validation exact match {NUMBER}  \(\d+ s\)",
        rf"digits: best validation exact match {NUMBER} \(step \d+\) in \d+ steps, \d+ s",
        rf"places: best validation exact match {NUMBER} \(step \d+\) in \d+ steps, \d+ s",
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


def _held_out(log: str) -> float:
    return float(re.search(r"^held-out test exact match ([\d.]+)%", log, re.MULTILINE).group(1))


# the loss of a digit under the recipe's label smoothing (0.1, over the 11 tokens that are neither
# the digit nor padding): predicting the average digit, as a model blind to the source can at best;
# predicting the smoothed target itself, as a perfect model does (the appendix computes both)
BLIND, FLOOR = 2.364, 0.565


def test_committed_layout_log_shows_the_digits_on_a_plateau_and_the_places_learnt() -> None:
    """Does the committed log of ``add_layouts.py`` (which the appendix prints) show what the page says:
    the script's defaults (8 to 16 digits); with the digits interleaved no answer right at any
    validation and, from the third validation on, a loss within 5% of a source-blind model's; by places
    most answers right at the last two validations (and 90% at the best), the loss near its floor?"""
    log = (REPO / "benchmarks" / "results" / "add-layouts-cpu.log").read_text()
    lines = log.splitlines()
    assert re.match(r"\$ python benchmarks/add_layouts.py +# ", lines[0]), "not the script's defaults"
    assert lines[1].startswith("widths 8 to 16 digits"), lines[1]
    curves = {
        layout: [
            (float(loss), float(em))
            for loss, em in re.findall(
                rf"^{layout} +step +\d+ +loss ([\d.]+) +validation exact match ([\d.]+)", log, re.MULTILINE
            )
        ]
        for layout in ("digits", "places")
    }
    digits, places = curves["digits"], curves["places"]
    assert len(digits) >= 4 and len(digits) == len(places), curves
    settled = digits[2:]  # at the first two validations the loss is still falling
    assert all(em == 0.0 for _, em in digits), digits
    assert all(abs(loss - BLIND) <= 0.05 * BLIND for loss, _ in settled), digits
    assert max(em for _, em in places) >= 0.9 and min(em for _, em in places[-2:]) >= 0.5, places
    assert places[-1][0] <= 1.1 * FLOOR, places


def _command(text: str) -> str:
    """A train command with what only says where it runs and writes left out, and no comment."""
    text = re.sub(r" +#.*", "", text.replace("\\\n", " "))
    return " ".join(re.sub(r" --(device|out) \S+| --cuda-graph| --no-progress", "", text).split())


def test_committed_addition_logs_show_the_gpu_past_95_percent_in_six_minutes_and_the_cpu_far_from_it() -> None:
    """Do the committed logs of the appendix's recipe say what the page says: the page's command, on
    an H200 held-out exact match of 95% or more after at most 360 s of training (and the final step),
    on this CPU in the same time limit a finished run far below it?"""
    results = REPO / "benchmarks" / "results"
    gpu, cpu = (results / "add-gpu.log").read_text(), (results / "add-cpu.log").read_text()
    page = (REPO / "book" / "appendix-training.md").read_text()
    block = re.search(r"^python -m autograder train --task add .*?(?<!\\)\n", page, re.MULTILINE | re.DOTALL)
    assert block, "the page's recipe for the addition task"
    for log in (gpu, cpu):
        assert _command(log.splitlines()[0]) == "$ " + _command(block.group(0)), "not the page's recipe"
        assert log.rstrip().endswith("(exit status 0)")
    assert "H200" in gpu.splitlines()[0] and "device cuda" in gpu and "device cpu" in cpu
    seconds = float(re.search(r"training took ([\d.]+) s", gpu).group(1))
    assert _held_out(gpu) >= 95.0 and seconds <= 370, (_held_out(gpu), seconds)
    steps = re.findall(r"^step +(\d+) .*validation exact match ([\d.]+)", gpu, re.MULTILINE)
    best = re.search(r"^held-out .* weights, step (\d+) ", gpu, re.MULTILINE).group(1)
    assert best == steps[-1][0] and float(steps[-1][1]) < 0.99, (
        "the page: the best was the last, the time limit ended it"
    )
    assert "2-core" in cpu.splitlines()[0] and _held_out(cpu) < 50.0

"""Tests of `python -m autograder train` (autograder/cli.py) and `make train`."""

import subprocess
from pathlib import Path

import torch

from autograder import cli

ROOT = Path(__file__).resolve().parents[2]
TINY = [
    "--task",
    "reverse",
    "--num-train",
    "120",
    "--num-valid",
    "20",
    "--num-test",
    "20",
    "--batch-size",
    "16",
    "--d-model",
    "16",
    "--num-heads",
    "2",
    "--num-layers",
    "1",
    "--d-ff",
    "32",
    "--warmup",
    "5",
    "--eval-every",
    "3",
    "--eval-size",
    "20",
    "--dropout",
    "0.1",
    "--no-progress",
    "--device",
    "cpu",
]


def test_help_lists_the_flags(capsys):
    """Does `train --help` document every flag the issue names?"""
    try:
        cli.main(["train", "--help"])
    except SystemExit:
        pass
    text = capsys.readouterr().out
    for flag in (
        "--task",
        "--steps",
        "--batch-size",
        "--seed",
        "--out",
        "--dropout",
        "--device",
        "--amp",
        "--resume",
        "--eval-every",
        "torchrun",
    ):
        assert flag in text, flag


def test_train_prints_exact_match_and_resumes_exactly(tmp_path, capsys):
    """Does the command print the held-out exact match and write a checkpoint, and does --resume with
    --steps as the total go on to the same parameters as one uninterrupted run (ignoring recipe flags)?"""
    assert cli.main(["train", *TINY, "--steps", "10", "--out", str(tmp_path / "straight.pt")]) == 0
    out = capsys.readouterr().out
    assert "held-out test exact match" in out and "validation exact match" in out
    assert cli.main(["train", *TINY, "--steps", "4", "--out", str(tmp_path / "part.pt")]) == 0
    assert (
        cli.main(
            ["train", "--resume", str(tmp_path / "part.pt"), "--steps", "10", "--no-progress", "--batch-size", "99"]
        )
        == 0
    )  # goes on in part.pt itself; --batch-size is ignored
    captured = capsys.readouterr()
    assert "from step 4 to step 10" in captured.out and "--batch-size" in captured.err
    a, b = torch.load(tmp_path / "straight.pt"), torch.load(tmp_path / "part.pt")
    assert a["step"] == b["step"] == 10 and a["history"] == b["history"]
    for name, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][name]), f"{name} differs after the resume"


def test_make_train_runs_the_command():
    """Does `make train` call `python -m autograder train` with the chapter's recipe (a dry run)?"""
    dry = subprocess.run(["make", "-n", "train", "STAMP="], cwd=ROOT, capture_output=True, text=True, check=True)
    assert "-m autograder train" in dry.stdout

"""Tests of `python -m autograder train` (autograder/cli/train.py): the flags made from the recipe, the
run they describe, and `make train`."""

import argparse
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from autograder import cli
from autograder.cli import train
from autograder.reference.training import recipe
from autograder.reference.training.recipe import TRAIN_RECIPE, TrainRecipe

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


def _train_parser() -> argparse.ArgumentParser:
    parser = cli._parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["train"]


def _flag(parser: argparse.ArgumentParser, name: str) -> argparse.Action:
    return next(a for a in parser._actions if a.dest == name)


def test_every_field_has_a_flag_whose_default_is_the_recipes():
    """Does `train` have one flag for each field of the recipe, named after it, defaulting to its value,
    with help that states that default?"""
    parser = _train_parser()
    for field in dataclasses.fields(TrainRecipe):
        action = _flag(parser, field.name)
        assert "--" + field.name.replace("_", "-") in action.option_strings, field.name
        assert parser.get_default(field.name) == getattr(TRAIN_RECIPE, field.name), field.name
        assert action.help and "(default: " in action.help, field.name
    assert train.from_args(parser.parse_args([])) == TRAIN_RECIPE


def test_a_changed_recipe_changes_the_parser(monkeypatch):
    """Does the command line follow the recipe: a changed field, a changed default and help?"""
    monkeypatch.setattr(recipe, "TRAIN_RECIPE", dataclasses.replace(TRAIN_RECIPE, d_model=96, warmup=7))
    parser = _train_parser()
    assert parser.get_default("d_model") == 96 and "(default: 96" in _flag(parser, "d_model").help
    assert train.from_args(parser.parse_args([])).warmup == 7


def test_flags_set_the_recipe_and_are_noted():
    """Do flags reach the recipe with their types, and are the ones given (and only they) noted, split by
    what --resume does with them?"""
    args = _train_parser().parse_args(
        [
            "--d-model",
            "32",
            "--dropout",
            "0.2",
            "--amp",
            "bf16",
            "--no-progress",
            "--compile",
            "--steps",
            "9",
            "--out",
            "x.pt",
        ]
    )
    got = train.from_args(args)
    assert (got.d_model, got.dropout, got.amp, got.progress, got.compile, got.steps, got.out) == (
        32,
        0.2,
        "bf16",
        False,
        "inductor",
        9,
        Path("x.pt"),
    )
    assert train.given_flags(args, recipe.SAVED) == ["d_model", "dropout"]
    assert train.given_flags(args, recipe.KEPT) == ["amp"]


@pytest.mark.parametrize("field", ["task", "amp", "device"])
def test_choices_refuse_a_wrong_value(field, capsys):
    """Is a value outside a field's choices refused by the parser, naming the flag?"""
    with pytest.raises(SystemExit):
        _train_parser().parse_args([f"--{field}", "nonsense"])
    assert f"--{field}" in capsys.readouterr().err


def test_make_train_runs_the_recipe_as_it_is():
    """Does `make train` call `python -m autograder train` with no flag of its own (a dry run), so that it
    runs the recipe as it is and nothing in the Makefile can disagree with it?"""
    dry = subprocess.run(["make", "-n", "train", "STAMP="], cwd=ROOT, capture_output=True, text=True, check=True)
    line = next(x for x in dry.stdout.splitlines() if "-m autograder train" in x)
    assert line.split("-m autograder train", 1)[1].strip() == ""


def test_the_command_line_starts_without_torch():
    """Is the command line made, for any command but train, without importing torch (which the train
    command's flags and run import when it trains: 1.7 s that another command would wait for)?"""
    code = "import sys; from autograder import cli; cli._parser(train_flags=False); print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False", done.stderr

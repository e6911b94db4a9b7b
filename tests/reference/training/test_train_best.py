"""Tests of the best validated weights kept beside the last state (issue 24, item 2)."""

import torch

from autograder import cli
from autograder.data import make_task
from autograder.reference.model import EncoderDecoder, TransformerConfig
from autograder.reference.training import checkpoint
from autograder.reference.training import train as training
from autograder.reference.training.train import TrainConfig, train

TASK = dict(num_train=60, num_valid=10, num_test=0, seed=0, num_symbols=6, max_len=6)
# validation exact match at steps 2, 4, 6, 8: the best is at step 4, and the run ends worse
SCRIPTED = [0.5, 0.9, 0.7, 0.6]


def _model():
    torch.manual_seed(0)
    return EncoderDecoder(
        TransformerConfig(9, 9, d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.0, max_len=16)
    )


def _scripted_evaluate(monkeypatch):
    scores = iter(SCRIPTED)
    monkeypatch.setattr(training, "evaluate", lambda *a, **k: {"exact_match": next(scores), "token_accuracy": 0.5})


def _run(tmp_path, steps, snapshots=None, resume=None):
    model = _model()

    def keep(step, metrics):
        if snapshots is not None:
            snapshots[step] = {k: v.clone() for k, v in model.state_dict().items()}

    config = TrainConfig(steps=steps, batch_size=16, warmup=5, eval_every=2, progress=False)
    train(
        model,
        make_task("reverse", **TASK),
        config,
        device="cpu",
        callback=keep,
        out=tmp_path / "run.pt",
        resume=checkpoint.load(resume) if resume else None,
    )
    return model


def test_checkpoint_keeps_the_best_validated_weights_beside_the_last(tmp_path, monkeypatch):
    """When validation peaks at step 4 of 8, does the checkpoint keep step 4's weights and step as the best,
    the last weights as the state to resume, and does load_model give the best (and "last" the last)?"""
    _scripted_evaluate(monkeypatch)
    snapshots: dict = {}
    last = _run(tmp_path, 8, snapshots)
    state = checkpoint.load(tmp_path / "run.pt")
    assert state["step"] == 8 and state["best"]["step"] == 4
    assert state["best"]["metrics"]["exact_match"] == 0.9
    for name, tensor in snapshots[4].items():
        assert torch.equal(state["best"]["model"][name], tensor), f"best {name} is not step 4's"
        assert torch.equal(state["model"][name], last.state_dict()[name]), f"last {name} is not step 8's"
    best = checkpoint.load_model(tmp_path / "run.pt")
    assert all(torch.equal(p, snapshots[4][k]) for k, p in best.state_dict().items())
    assert not torch.equal(best.generator.weight, last.generator.weight)
    latest = checkpoint.load_model(tmp_path / "run.pt", which="last")
    assert torch.equal(latest.generator.weight, last.generator.weight)


def test_resume_goes_on_from_the_last_state_and_keeps_the_best(tmp_path, monkeypatch):
    """Does a resume from step 4 (best so far: step 4) continue from the last state and keep the earlier best
    when the later validations are worse?"""
    _scripted_evaluate(monkeypatch)
    _run(tmp_path, 4)
    (tmp_path / "run.pt").rename(tmp_path / "part.pt")
    _run(tmp_path, 8, resume=tmp_path / "part.pt")  # validations at 6 and 8 score 0.7 and 0.6
    state = checkpoint.load(tmp_path / "run.pt")
    assert state["step"] == 8 and state["best"]["step"] == 4


def test_cli_scores_the_test_split_with_the_best_weights(tmp_path, capsys):
    """Does `train` print the held-out figure of the best validated weights and name their step?"""
    args = [
        "train",
        "--task",
        "reverse",
        "--num-train",
        "60",
        "--num-valid",
        "10",
        "--num-test",
        "10",
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
        "2",
        "--eval-size",
        "10",
        "--no-progress",
        "--device",
        "cpu",
        "--steps",
        "4",
        "--out",
        str(tmp_path / "run.pt"),
    ]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    step = checkpoint.load(tmp_path / "run.pt")["best"]["step"]
    assert f"with the best validated weights, step {step}" in out

"""Tests of autograder.reference.training.checkpoint: one file, and a resume that changes nothing."""

import pytest
import torch

from autograder.data import make_task
from autograder.reference.model import EncoderDecoder, TransformerConfig
from autograder.reference.training import checkpoint
from autograder.reference.training.train import TrainConfig, TrainingBatches, train

# 150 pairs in batches of 16: an epoch is 10 batches, so a stop at step 7 and the run on to 16
# cross an epoch boundary after the resume; dropout makes the random generators matter.
TASK = dict(num_train=150, num_valid=20, num_test=0, seed=0, num_symbols=6, max_len=6)
RECIPE = dict(batch_size=16, warmup=5, lr_factor=0.3, eval_every=4, eval_size=20, progress=False)


def _model(dropout=0.1):
    torch.manual_seed(0)
    return EncoderDecoder(
        TransformerConfig(9, 9, d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=dropout, max_len=16)
    )


def _run(steps, out, resume=None):
    task = make_task("reverse", **TASK)
    model = _model()
    if resume is not None:
        torch.manual_seed(12345)  # whatever the generators hold now, the checkpoint's states must win
    history = train(
        model,
        task,
        TrainConfig(steps=steps, **RECIPE),
        device="cpu",
        out=out,
        resume=checkpoint.load(resume) if resume else None,
        task_spec=dict(name="reverse", **TASK),
    )
    return model, history


def test_resume_is_bit_for_bit(tmp_path):
    """Do 16 steps in one go, and 7 steps then a resume up to 16, give the same parameters bit for bit
    (data order across an epoch boundary, dropout masks, Adam's moments, the schedule)?"""
    straight, history = _run(16, tmp_path / "straight.pt")
    _run(7, tmp_path / "half.pt")
    resumed, history2 = _run(16, tmp_path / "resumed.pt", resume=tmp_path / "half.pt")
    assert history2 == history and len(history) == 16
    for (name, p), q in zip(straight.named_parameters(), resumed.parameters(), strict=True):
        assert torch.equal(p, q), f"{name} differs after the resume"
    a, b = checkpoint.load(tmp_path / "straight.pt"), checkpoint.load(tmp_path / "resumed.pt")
    assert a["step"] == b["step"] == 16
    assert torch.equal(a["rng"][0]["cpu"], b["rng"][0]["cpu"])


def test_checkpoint_holds_everything_and_rebuilds_the_model(tmp_path):
    """Does the file open with torch.load(weights_only=True), hold model, optimizer, scheduler, step,
    random states and configs, and rebuild a model that computes what the trained one does?"""
    model, _ = _run(4, tmp_path / "run.pt")
    state = torch.load(tmp_path / "run.pt", weights_only=True)
    for key in ("model", "optimizer", "scheduler", "step", "rng", "model_config", "train_config", "data", "task"):
        assert key in state, key
    assert state["step"] == 4 and state["optimizer"]["state"], "Adam's moments are missing"
    assert state["scheduler"]["last_epoch"] == 4 and state["train_config"]["batch_size"] == 16
    assert state["task"]["name"] == "reverse" and state["model_config"]["d_model"] == 16
    rebuilt = checkpoint.load_model(tmp_path / "run.pt").eval()
    src, tgt_in = torch.tensor([[3, 4, 5, 2]]), torch.tensor([[1, 5, 4]])
    with torch.no_grad():
        torch.testing.assert_close(rebuilt(src, tgt_in), model.eval()(src, tgt_in), rtol=0, atol=0)
    assert not list(tmp_path.glob("*.tmp")), "the temporary file of the atomic write was left behind"


def test_batch_stream_restores_its_place():
    """Does a TrainingBatches stream restored from its state_dict give the same next batches,
    also when the saved place is the end of an epoch?"""
    task = make_task("reverse", **TASK)
    for taken in (3, 10, 13):
        a = TrainingBatches(task.train, 16, 0, seed=5)
        for _ in range(taken):
            next(a)
        b = TrainingBatches(task.train, 16, 0, seed=99)
        b.load_state_dict(a.state_dict())
        for _ in range(12):
            (sa, ta), (sb, tb) = next(a), next(b)
            assert torch.equal(sa, sb) and torch.equal(ta, tb)


def test_load_refuses_other_files(tmp_path):
    """Is a file that is not a training checkpoint (a bare state_dict) refused with a message?"""
    torch.save(_model().state_dict(), tmp_path / "weights.pt")
    with pytest.raises(ValueError, match="not a training checkpoint"):
        checkpoint.load(tmp_path / "weights.pt")

"""Tests of the device and precision a run records, and keeps on resume (issue 24, items 1 and 3).

No GPU is needed: a CUDA machine is simulated by telling the code that CUDA is there, and what
the checkpoint stores is compared, never a step run on a device that is absent.
"""

import warnings

import pytest
import torch

from autograder import cli
from autograder.data import make_task
from autograder.reference import device
from autograder.reference.model import EncoderDecoder, TransformerConfig
from autograder.reference.training import checkpoint
from autograder.reference.training.train import AUTO_LOW_PRECISION_MIN_D_MODEL, TrainConfig, amp_dtype, train

CUDA = torch.device("cuda")
TINY = [
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
]


def _tiny_run(tmp_path, steps, amp="none", resume=None):
    task = make_task("reverse", num_train=60, num_valid=10, num_test=0, seed=0, num_symbols=6, max_len=6)
    torch.manual_seed(0)
    model = EncoderDecoder(
        TransformerConfig(9, 9, d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.0, max_len=16)
    )
    out = tmp_path / "run.pt"
    train(
        model,
        task,
        TrainConfig(steps=steps, batch_size=16, warmup=5, amp=amp, progress=False),
        device="cpu",
        out=out,
        resume=checkpoint.load(resume) if resume else None,
    )
    return checkpoint.load(out)


def test_checkpoint_records_device_type_and_precision(tmp_path):
    """Does a checkpoint store the device type and the precision the steps actually used (what "auto"
    chose, not the word "auto")?"""
    state = _tiny_run(tmp_path, 2, amp="auto")
    assert state["device_type"] == "cpu" and state["precision"] == "fp32"
    assert state["train_config"]["amp"] == "none", "the recipe must keep the precision chosen, not 'auto'"
    assert _tiny_run(tmp_path, 2, amp="bf16")["precision"] == "bf16"


def test_resume_that_changes_precision_says_so(tmp_path):
    """Does a resume in another precision than the checkpoint's warn that it will not repeat the run?"""
    _tiny_run(tmp_path, 2, amp="none")
    (tmp_path / "run.pt").rename(tmp_path / "part.pt")
    with pytest.warns(UserWarning, match=r"precision fp32 -> bf16"):
        _tiny_run(tmp_path, 4, amp="bf16", resume=tmp_path / "part.pt")


def test_resume_keeps_the_checkpoints_device_where_cuda_is_present(tmp_path, monkeypatch, capsys):
    """With CUDA present (simulated: best_device() says cuda), does `train --resume` without --device keep
    training on the CPU where the checkpoint was written, silently, and give the losses of one run?"""
    assert cli.main(["train", *TINY, "--device", "cpu", "--steps", "6", "--out", str(tmp_path / "straight.pt")]) == 0
    assert cli.main(["train", *TINY, "--device", "cpu", "--steps", "3", "--out", str(tmp_path / "part.pt")]) == 0
    monkeypatch.setattr(device, "best_device", lambda: CUDA)  # what a GPU machine's auto picks
    with warnings.catch_warnings():  # a resume that keeps everything says nothing
        warnings.simplefilter("error", UserWarning)
        assert cli.main(["train", "--resume", str(tmp_path / "part.pt"), "--steps", "6", "--no-progress"]) == 0
    assert "device cpu" in capsys.readouterr().out
    a, b = checkpoint.load(tmp_path / "straight.pt"), checkpoint.load(tmp_path / "part.pt")
    assert b["device_type"] == "cpu" and b["precision"] == "fp32" and a["history"] == b["history"]


def test_saved_device_and_amp_on_a_simulated_cuda_machine(monkeypatch):
    """Is a CUDA checkpoint resumed on CUDA where there is one, on the best device where there is not,
    and is the recorded precision what the resume asks for?"""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert checkpoint.saved_device({"device_type": "cuda"}) == CUDA
    assert checkpoint.saved_device({"device_type": "cpu"}).type == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(device, "best_device", lambda: torch.device("cpu"))
    assert checkpoint.saved_device({"device_type": "cuda"}).type == "cpu"
    assert checkpoint.saved_amp({"precision": "bf16"}) == "bf16"
    assert checkpoint.saved_amp({"precision": "fp32"}) == "none"
    assert checkpoint.saved_amp({}) is None  # an older checkpoint: the recipe's amp decides
    changes = checkpoint.warn_if_changed({"device_type": "cuda", "precision": "bf16"}, "cuda", "bf16")
    assert changes == []
    with pytest.warns(UserWarning, match="device cuda -> cpu and precision bf16 -> fp32"):
        checkpoint.warn_if_changed({"device_type": "cuda", "precision": "bf16"}, "cpu", "fp32")


def test_auto_precision_follows_the_measured_threshold(monkeypatch):
    """On CUDA (simulated), does amp "auto" keep float32 for an eager step and for a small captured one,
    and pick bf16 only for a captured step of a model at least the threshold wide?"""
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert amp_dtype(CUDA, "auto", d_model=64) is None
    assert amp_dtype(CUDA, "auto", d_model=64, captured=True) is None
    assert amp_dtype(CUDA, "auto", d_model=AUTO_LOW_PRECISION_MIN_D_MODEL) is None
    assert amp_dtype(CUDA, "auto", d_model=AUTO_LOW_PRECISION_MIN_D_MODEL, captured=True) == torch.bfloat16
    assert amp_dtype(CUDA, "bf16", d_model=64) == torch.bfloat16  # asked for: given
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert amp_dtype(CUDA, "auto", d_model=1024, captured=True) == torch.float16

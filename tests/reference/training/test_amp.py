"""Tests of mixed precision in autograder.reference.training.train, proven on the CPU.

The CPU runs the same autocast code as CUDA with ``device.type`` swapped: bfloat16, and
float16 with a GradScaler. A few steps from the same weights on the same batches must
lower the loss and stay within a stated tolerance of float32.
"""

import pytest
import torch

from autograder.data import make_task
from autograder.reference.model import EncoderDecoder, TransformerConfig
from autograder.reference.training.train import (
    TrainConfig,
    amp_dtype,
    autocast_for,
    make_optimizer,
    train_step,
    training_batches,
)

CPU = torch.device("cpu")
STEPS = 12
# bfloat16 keeps 8 bits of mantissa (2 to 3 decimal digits), float16 11 bits. Over 12 steps the
# loss (3.0 falling to 2.0) stayed within 0.006 of float32's in bfloat16 and within 0.0011 in
# float16 (torch 2.13, CPU); the bounds leave a margin of about three.
TOLERANCE = {"bf16": 2e-2, "fp16": 5e-3}


def _losses(amp: str) -> tuple[list[float], torch.amp.GradScaler | None]:
    task = make_task("reverse", num_train=400, num_valid=0, num_test=0, seed=0, num_symbols=8, max_len=8)
    torch.manual_seed(0)
    model = EncoderDecoder(
        TransformerConfig(
            len(task.src_vocab),
            len(task.tgt_vocab),
            d_model=32,
            num_heads=4,
            num_layers=2,
            d_ff=64,
            dropout=0.0,
            max_len=16,
        )
    )
    recipe = TrainConfig(batch_size=32, warmup=10, lr_factor=0.2, amp=amp)
    optimizer, scheduler = make_optimizer(model, recipe)
    autocast, scaler = autocast_for(CPU, amp)
    data = training_batches(task, recipe)
    losses = [
        train_step(
            model,
            *next(data),
            optimizer,
            scheduler,
            recipe.smoothing,
            task.tgt_vocab.pad_id,
            autocast=autocast,
            scaler=scaler,
        )
        for _ in range(STEPS)
    ]
    return losses, scaler


@pytest.fixture(scope="module")
def float32_losses():
    return _losses("none")[0]


def test_amp_modes():
    """Does "auto" mean float32 on a CPU, do True/False read as auto/none, and is a typo refused?"""
    assert amp_dtype(CPU, "auto") is None and amp_dtype(CPU, True) is None and amp_dtype(CPU, False) is None
    assert amp_dtype(CPU, "bf16") == torch.bfloat16 and amp_dtype(CPU, "fp16") == torch.float16
    with pytest.raises(ValueError, match="bf16"):
        amp_dtype(CPU, "float16")
    ctx, scaler = autocast_for(CPU, "none")
    assert scaler is None and not isinstance(ctx, torch.autocast)


def test_autocast_runs_matmuls_in_low_precision():
    """Inside the context, does a linear layer compute in the chosen dtype, and only fp16 get a scaler?"""
    for amp, dtype in [("bf16", torch.bfloat16), ("fp16", torch.float16)]:
        ctx, scaler = autocast_for(CPU, amp)
        with ctx:
            out = torch.nn.Linear(4, 4)(torch.randn(2, 4))
        assert out.dtype == dtype
        assert (scaler is not None) == (amp == "fp16")


def test_bf16_training_tracks_float32(float32_losses):
    """Under CPU autocast in bfloat16, does the loss go down and stay within 0.02 of float32's?"""
    losses, _ = _losses("bf16")
    assert losses[-1] < losses[0] - 0.3
    diff = max(abs(a - b) for a, b in zip(losses, float32_losses, strict=True))
    assert diff < TOLERANCE["bf16"], f"bf16 loss differs from float32's by up to {diff:.4f}"


def test_fp16_with_grad_scaler_tracks_float32(float32_losses):
    """In float16 with a GradScaler on the CPU, does the loss go down, stay within 0.005 of float32's,
    and no step get skipped for an overflow (the scale never drops)?"""
    losses, scaler = _losses("fp16")
    assert losses[-1] < losses[0] - 0.3
    diff = max(abs(a - b) for a, b in zip(losses, float32_losses, strict=True))
    assert diff < TOLERANCE["fp16"], f"fp16 loss differs from float32's by up to {diff:.4f}"
    assert scaler is not None and scaler.get_scale() == 2.0**16  # the initial scale: no step was skipped

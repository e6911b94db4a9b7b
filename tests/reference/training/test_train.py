"""Tests of autograder.reference.training.train (and of training autograder.reference.oracles.baseline)."""

import copy

import pytest
import torch
from torch import nn

from autograder.data import PAD_ID, make_task
from autograder.reference.model import EncoderDecoder, TransformerConfig
from autograder.reference.oracles.baseline import TorchTransformer
from autograder.reference.training.train import TrainConfig, evaluate, train, train_step


def tiny(model_cls=EncoderDecoder, seed=0, **kw):
    torch.manual_seed(seed)
    cfg = dict(
        src_vocab_size=7, tgt_vocab_size=7, d_model=8, num_heads=2, num_layers=1, d_ff=16, dropout=0.0, max_len=16
    )
    return model_cls(TransformerConfig(**{**cfg, **kw}))


SRC = torch.tensor([[3, 4, 5, 2], [6, 2, 0, 0]])
TGT = torch.tensor([[1, 5, 4, 3, 2], [1, 6, 2, 0, 0]])


def smoothed_loss_by_hand(logits, target, eps, pad):
    """Cross-entropy against the smoothed distribution, one position at a time."""
    logp = torch.log_softmax(logits.double(), -1)
    vocab, total, count = logits.size(-1), 0.0, 0
    for b in range(target.size(0)):
        for t in range(target.size(1)):
            y = int(target[b, t])
            if y == pad:
                continue
            q = torch.full((vocab,), eps / (vocab - 2), dtype=torch.float64)
            q[y], q[pad] = 1 - eps, 0.0
            total += float(-(q * logp[b, t]).sum())
            count += 1
    return total / count


def test_train_step_loss_and_one_update():
    """Does train_step return the smoothed loss of the shifted target and take exactly one SGD step?"""
    model = tiny()
    before = copy.deepcopy(model)
    with torch.no_grad():
        expected_loss = smoothed_loss_by_hand(before(SRC, TGT[:, :-1]), TGT[:, 1:], 0.1, PAD_ID)
    # the gradient the step should use, computed separately
    from autograder.reference.loss import label_smoothed_loss

    label_smoothed_loss(before(SRC, TGT[:, :-1]), TGT[:, 1:], 0.1, PAD_ID).backward()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: 0.5**i)
    loss = train_step(model, SRC, TGT, opt, sched, 0.1, PAD_ID, clip_norm=None)
    assert isinstance(loss, float)
    assert loss == pytest.approx(expected_loss, rel=1e-5)
    for (name, p), p0 in zip(model.named_parameters(), before.parameters(), strict=True):
        torch.testing.assert_close(p, p0 - 0.1 * p0.grad, msg=lambda m: f"{name}: {m}")
    assert opt.param_groups[0]["lr"] == pytest.approx(0.05)  # the scheduler stepped once


def test_train_step_clips_gradients():
    """Does train_step clip the global gradient norm before the optimizer step?"""
    model = tiny()
    before = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    train_step(model, SRC, TGT, opt, None, 0.0, PAD_ID, clip_norm=1e-3)
    moved = torch.cat([(p.detach() - p0).flatten() for p, p0 in zip(model.parameters(), before, strict=True)])
    assert moved.norm().item() == pytest.approx(1e-3, rel=1e-3)


class CopyOracle(nn.Module):
    """Predicts target position t as source token t: perfect on the copy task."""

    def __init__(self, vocab, wrong_from=None):
        super().__init__()
        self.config = TransformerConfig(vocab, vocab)
        self.weight = nn.Parameter(torch.zeros(()))
        self.decoder = nn.Module()
        self.decoder.layers = []
        self.wrong_from = wrong_from

    def encode(self, src):
        return src, (src != PAD_ID)[:, None, None, :]

    def decode(self, tgt_in, memory, src_mask, cache=None):
        t = tgt_in.size(1)
        src = nn.functional.pad(memory, (0, t), value=PAD_ID)[:, :t].clone()  # (B, T)
        if self.wrong_from is not None:
            src[self.wrong_from :, 0] = 3 if src[self.wrong_from, 0] != 3 else 4
        return nn.functional.one_hot(src, self.config.tgt_vocab_size).float()  # (B, T, V)


def test_evaluate_exact_match_and_token_accuracy():
    """Does evaluate give 1.0 for a perfect model, and the right fractions for a partly wrong one?"""
    task = make_task("copy", num_train=10, num_valid=0, num_test=8, max_len=5)
    assert evaluate(CopyOracle(len(task.tgt_vocab)), task.test, task.tgt_vocab, batch_size=3) == {
        "exact_match": 1.0,
        "token_accuracy": 1.0,
    }
    got = evaluate(CopyOracle(len(task.tgt_vocab), wrong_from=6), task.test, task.tgt_vocab, batch_size=8)
    tokens = sum(len(t) - 1 for _, t in task.test)
    assert got["exact_match"] == pytest.approx(6 / 8)
    assert got["token_accuracy"] == pytest.approx((tokens - 2) / tokens)


REVERSE = dict(num_train=4000, num_valid=500, num_test=500, seed=0, num_symbols=8, min_len=3, max_len=5)
MODEL = dict(d_model=64, num_heads=4, num_layers=2, d_ff=128, dropout=0.0, max_len=16)
# Noam peak 0.2 * 64^-0.5 * 100^-0.5 = 2.5e-3: higher rates make this post-norm model oscillate.
RECIPE = dict(
    steps=1200,
    batch_size=128,
    warmup=100,
    lr_factor=0.2,
    smoothing=0.1,
    eval_every=100,
    eval_size=500,
    stop_at=0.995,
    progress=False,
)


def _train_reverse(model_cls, **recipe):
    task = make_task("reverse", **REVERSE)
    torch.manual_seed(0)
    model = model_cls(TransformerConfig(len(task.src_vocab), len(task.tgt_vocab), **MODEL))
    seen = []
    history = train(
        model, task, TrainConfig(**{**RECIPE, **recipe}), device="cpu", callback=lambda s, m: seen.append((s, m))
    )
    return model, task, history, seen


def test_reverse_reaches_99_percent():
    """Does a small model learn to reverse strings (>= 99% held-out exact match) within the test suite?"""
    model, task, history, seen = _train_reverse(EncoderDecoder)
    assert len(history) == seen[-1][0] and all(isinstance(x, float) for x in history)
    assert seen[-1][1]["exact_match"] >= 0.995, f"stopped at step {seen[-1][0]} without reaching the target"
    assert evaluate(model, task.test, task.tgt_vocab)["exact_match"] >= 0.99


def test_baseline_trains():
    """Does the nn.Transformer baseline train with the same loop and recipe?"""
    model, task, history, seen = _train_reverse(TorchTransformer, steps=300, eval_every=0)
    assert len(history) == 300 and history[-1] < history[0] / 2
    assert evaluate(model, task.test, task.tgt_vocab)["exact_match"] >= 0.7


def test_time_limit_stops_and_validates_at_the_step_where_time_ran_out(tmp_path):
    """With a time limit shorter than one step, does training stop after its first step, validate there
    (off the eval_every schedule), and write that step's checkpoint; and without one, run every step?"""
    from autograder.reference.training import checkpoint

    task = make_task("reverse", num_train=60, num_valid=10, num_test=0, seed=0, num_symbols=6, max_len=6)
    seen = []
    config = TrainConfig(steps=20, batch_size=16, warmup=5, eval_every=7, eval_size=10, progress=False, time_limit=1e-9)
    history = train(
        _tiny(), task, config, device="cpu", callback=lambda step, m: seen.append(step), out=tmp_path / "run.pt"
    )
    assert len(history) == 1 and seen == [1]
    assert checkpoint.load(tmp_path / "run.pt")["step"] == 1
    seen.clear()
    assert (
        len(
            train(
                _tiny(),
                task,
                TrainConfig(steps=20, batch_size=16, warmup=5, eval_every=7, eval_size=10, progress=False),
                device="cpu",
                callback=lambda step, m: seen.append(step),
            )
        )
        == 20
    )
    assert seen == [7, 14, 20]


def _tiny():
    torch.manual_seed(0)
    return EncoderDecoder(
        TransformerConfig(9, 9, d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.0, max_len=16)
    )

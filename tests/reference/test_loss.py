"""Label smoothing and the warmup schedule (chapter 8)."""

import pytest
import torch
import torch.nn.functional as F

from autograder import reference as ref


def test_label_smoothing_equals_cross_entropy_with_the_smoothed_distribution():
    """Is the loss the cross-entropy with 1-s on the truth, s/(V-2) elsewhere, 0 on pad,
    averaged over non-pad positions?"""
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 4, 6, generator=g, dtype=torch.float64)
    target = torch.tensor([[3, 4, 0, 0], [5, 1, 2, 0]])
    s, pad = 0.2, 0
    q = torch.full((2, 4, 6), s / 4, dtype=torch.float64)
    q.scatter_(-1, target[..., None], 1 - s)
    q[..., pad] = 0
    per = -(q * F.log_softmax(logits, -1)).sum(-1)
    keep = target != pad
    expected = per[keep].mean()
    assert ref.label_smoothed_loss(logits, target, s, pad).item() == pytest.approx(expected.item(), abs=1e-12)
    torch.testing.assert_close(q.sum(-1)[keep], torch.ones(5, dtype=torch.float64))


def test_no_smoothing_is_plain_cross_entropy_ignoring_pad():
    """With smoothing 0, is it F.cross_entropy with ignore_index=pad?"""
    logits = torch.randn(3, 5, 7)
    target = torch.randint(0, 7, (3, 5))
    expected = F.cross_entropy(logits.reshape(-1, 7), target.reshape(-1), ignore_index=0)
    torch.testing.assert_close(ref.label_smoothed_loss(logits, target, 0.0, 0), expected)


def test_label_smoothing_is_finite_for_confident_logits():
    """No log(0) trap: do extreme logits give a finite loss?"""
    logits = torch.tensor([[[1e4, -1e4, -1e4, -1e4]]])
    assert torch.isfinite(ref.label_smoothed_loss(logits, torch.tensor([[0 + 1]]), 0.1, 0))


def test_noam_schedule_values():
    """Does noam_lr rise linearly to its peak at step == warmup and then decay as 1/sqrt(step)?"""
    d, w = 64, 100
    assert ref.noam_lr(1, d, w) == pytest.approx(d**-0.5 * w**-1.5)
    assert ref.noam_lr(w, d, w) == pytest.approx(d**-0.5 * w**-0.5)
    assert ref.noam_lr(4 * w, d, w) == pytest.approx(ref.noam_lr(w, d, w) / 2)
    assert max(range(1, 400), key=lambda s: ref.noam_lr(s, d, w)) == w


def test_noam_schedule_refuses_step_zero():
    """Is step 0 refused (steps count from 1)?"""
    with pytest.raises(ValueError, match="counted from 1"):
        ref.noam_lr(0, 64, 10)


def test_noam_scheduler_drives_the_optimizer():
    """Is the learning rate at the n-th optimizer step factor * noam_lr(n)?"""
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=1.0)
    sched = ref.noam_scheduler(opt, 32, 4, factor=2.0)
    for n in range(1, 6):
        assert opt.param_groups[0]["lr"] == pytest.approx(2.0 * ref.noam_lr(n, 32, 4))
        opt.step()
        sched.step()

"""Tests of the checks of lab 01-rnn-limits: right answers pass, known mistakes are named."""

from __future__ import annotations

import pytest
import torch

from autograder import reference
from autograder.checks import ForbiddenCall
from autograder.checks.lab01_rnn_limits.rnn_limits import (
    check_hidden_gradient_norms,
    check_receptive_field,
    check_rnn_forward,
)
from tests.checks.student_copies import as_student

# ----------------------------------------------------------------------------- rnn_forward


def rnn_forward_einsum(x, h0, W_xh, W_hh, b):
    h, outputs = h0, []
    for t in range(x.shape[1]):
        h = torch.tanh(torch.einsum("bi,ih->bh", x[:, t], W_xh) + torch.einsum("bj,jh->bh", h, W_hh) + b)
        outputs.append(h)
    return torch.stack(outputs, 1), h


def rnn_forward_preprojected(x, h0, W_xh, W_hh, b):
    """All input projections at once (they do not depend on h), then the sequential part."""
    a = x @ W_xh + b  # (B, L, H)
    out = torch.empty(x.shape[0], x.shape[1], W_hh.shape[0], dtype=x.dtype)
    h = h0
    for t in range(x.shape[1]):
        h = torch.tanh(a[:, t] + h @ W_hh)
        out[:, t] = h
    return out, out[:, -1]


def rnn_no_tanh(x, h0, W_xh, W_hh, b):
    h, outputs = h0, []
    for t in range(x.shape[1]):
        h = x[:, t] @ W_xh + h @ W_hh + b
        outputs.append(h)
    return torch.stack(outputs, 1), h


def rnn_swapped(x, h0, W_xh, W_hh, b):
    h, outputs = h0, []
    for t in range(x.shape[1]):
        h = torch.tanh(x[:, t] @ W_hh + h @ W_xh + b)
        outputs.append(h)
    return torch.stack(outputs, 1), h


def rnn_returns_first(x, h0, W_xh, W_hh, b):
    out, _ = rnn_forward_einsum(x, h0, W_xh, W_hh, b)
    return out, out[:, 0]


def rnn_includes_h0(x, h0, W_xh, W_hh, b):
    out, h = rnn_forward_einsum(x, h0, W_xh, W_hh, b)
    return torch.cat([h0[:, None], out], dim=1), h


def rnn_no_bias(x, h0, W_xh, W_hh, b):
    return rnn_forward_einsum(x, h0, W_xh, W_hh, torch.zeros_like(b))


def rnn_shifted(x, h0, W_xh, W_hh, b):
    out, h = rnn_forward_einsum(x, h0, W_xh, W_hh, b)
    return torch.cat([h0[:, None], out[:, :-1]], dim=1), h


def rnn_time_first(x, h0, W_xh, W_hh, b):
    out, h = rnn_forward_einsum(x, h0, W_xh, W_hh, b)
    return out.transpose(0, 1), h


def rnn_returns_h0(x, h0, W_xh, W_hh, b):
    return rnn_forward_einsum(x, h0, W_xh, W_hh, b)[0], h0


def rnn_transposed(x, h0, W_xh, W_hh, b):
    return rnn_forward_einsum(x, h0, W_xh, W_hh.T, b)


def rnn_uses_torch(x, h0, W_xh, W_hh, b):
    rnn = torch.nn.RNN(W_xh.shape[0], W_hh.shape[0], batch_first=True).to(x.dtype)
    with torch.no_grad():
        rnn.weight_ih_l0.copy_(W_xh.T)
        rnn.weight_hh_l0.copy_(W_hh.T)
        rnn.bias_ih_l0.copy_(b)
        rnn.bias_hh_l0.zero_()
    out, h = rnn(x, h0[None])
    return out, h[0]


def rnn_uses_reference(x, h0, W_xh, W_hh, b):
    return reference.rnn_forward(x, h0, W_xh, W_hh, b)


def rnn_stub(x, h0, W_xh, W_hh, b):
    raise NotImplementedError()


@pytest.mark.parametrize("candidate", [as_student(reference.rnn_forward), rnn_forward_einsum, rnn_forward_preprojected])
def test_rnn_forward_accepts_right_answers(candidate):
    """Do the reference and two equivalent loops (einsum; input projections precomputed) pass?"""
    for seed in (0, 1, 2):
        check_rnn_forward(candidate, seed=seed)


@pytest.mark.parametrize(
    "candidate, words",
    [
        (rnn_no_tanh, "no tanh"),
        (rnn_swapped, "W_xh and W_hh swapped"),
        (rnn_returns_first, "first hidden state"),
        (rnn_transposed, "W_hh.T"),
        (rnn_includes_h0, "outputs include h0"),
        (rnn_no_bias, "the bias b is left out"),
        (rnn_shifted, "outputs shifted by one step"),
        (rnn_time_first, "not stacked along dim 1"),
        (rnn_returns_h0, "returns the initial state h0"),
    ],
)
def test_rnn_forward_names_mistakes(candidate, words, fails):
    """Does each known mistake of the recurrence fail with a message naming it?"""
    fails(check_rnn_forward, candidate, mistake=words)


@pytest.mark.parametrize(
    "candidate, words", [(rnn_uses_torch, "torch.nn.RNN"), (rnn_uses_reference, "autograder.reference.rnn_forward")]
)
def test_rnn_forward_forbids_ready_made_rnns(candidate, words, fails):
    """Does a candidate that calls nn.RNN or the reference fail with ForbiddenCall?"""
    fails(check_rnn_forward, candidate, error=ForbiddenCall, said=words)


def test_rnn_forward_lets_stub_through(fails):
    """Does an untouched stub raise NotImplementedError, not a check failure?"""
    fails(check_rnn_forward, rnn_stub, error=NotImplementedError)


# ----------------------------------------------------------------------------- gradient norms


def norms_by_autograd(x, h0, W_xh, W_hh, b):
    """Jacobian of h_L with respect to each h_t by rerunning the rest of the sequence."""
    hs, _ = rnn_forward_einsum(x[:1], h0[:1], W_xh, W_hh, b)
    length = x.shape[1]
    norms = []
    for t in range(length):

        def rest(h, t=t):
            for s in range(t + 1, length):
                h = torch.tanh(x[0, s] @ W_xh + h @ W_hh + b)
            return h

        norms.append(torch.autograd.functional.jacobian(rest, hs[0, t].detach()).norm())
    return torch.stack(norms)


def norms_backward_loop(x, h0, W_xh, W_hh, b):
    """The Jacobian product written with einsum, accumulated from the end."""
    hs = rnn_forward_einsum(x[:1], h0[:1], W_xh, W_hh, b)[0][0]  # (L, H)
    jac = torch.eye(hs.shape[1], dtype=x.dtype)
    out = [jac.norm()]
    for t in range(hs.shape[0] - 2, -1, -1):
        # d h_{t+1} / d h_t [i, j] = (1 - h_{t+1, i}^2) W_hh[j, i]
        jac = torch.einsum("ij,j,kj->ik", jac, 1 - hs[t + 1] ** 2, W_hh)
        out.append(jac.norm())
    return torch.stack(out[::-1])


def norms_reversed(x, h0, W_xh, W_hh, b):
    return norms_by_autograd(x, h0, W_xh, W_hh, b).flip(0)


def norms_forward(x, h0, W_xh, W_hh, b):
    """d h_t / d h_1 for every t: the wrong pair of states."""
    hs, _ = rnn_forward_einsum(x[:1], h0[:1], W_xh, W_hh, b)
    norms = []
    for t in range(x.shape[1]):

        def first_to_t(h, t=t):
            for s in range(1, t + 1):
                h = torch.tanh(x[0, s] @ W_xh + h @ W_hh + b)
            return h

        norms.append(torch.autograd.functional.jacobian(first_to_t, hs[0, 0].detach()).norm())
    return torch.stack(norms)


def norms_without_tanh_derivative(x, h0, W_xh, W_hh, b):
    length, hidden = x.shape[1], W_hh.shape[0]
    jac, out = torch.eye(hidden, dtype=x.dtype), [torch.eye(hidden, dtype=x.dtype).norm()]
    for _ in range(length - 1):
        jac = jac @ W_hh.T
        out.append(jac.norm())
    return torch.stack(out[::-1])


def norms_uses_reference(x, h0, W_xh, W_hh, b):
    return reference.hidden_gradient_norms(x, h0, W_xh, W_hh, b)


def norms_stub(x, h0, W_xh, W_hh, b):
    raise NotImplementedError()


@pytest.mark.parametrize(
    "candidate", [as_student(reference.hidden_gradient_norms), norms_by_autograd, norms_backward_loop]
)
def test_hidden_gradient_norms_accepts_right_answers(candidate):
    """Do the reference, an autograd Jacobian and an einsum Jacobian product pass?"""
    for seed in (0, 1):
        check_hidden_gradient_norms(candidate, seed=seed)


@pytest.mark.parametrize(
    "candidate, words",
    [
        (norms_reversed, "reversed in time"),
        (norms_forward, "d h_t / d h_1"),
        (norms_without_tanh_derivative, "tanh derivative"),
    ],
)
def test_hidden_gradient_norms_names_mistakes(candidate, words, fails):
    """Does each known mistake of the gradient norms fail with a message naming it?"""
    fails(check_hidden_gradient_norms, candidate, mistake=words)


def test_hidden_gradient_norms_forbids_reference(fails):
    """Does a candidate that calls the reference fail with ForbiddenCall?"""
    fails(check_hidden_gradient_norms, norms_uses_reference, error=ForbiddenCall, match="hidden_gradient_norms")


def test_hidden_gradient_norms_lets_stub_through(fails):
    """Does an untouched stub raise NotImplementedError?"""
    fails(check_hidden_gradient_norms, norms_stub, error=NotImplementedError)


# ----------------------------------------------------------------------------- receptive field


def field_by_simulation(kernel_size, num_layers):
    """Push a one-hot impulse through the stack and count the positions it reaches."""
    width = 1 + 2 * num_layers * kernel_size
    x = torch.zeros(1, 1, width)
    x[..., width // 2] = 1.0
    for _ in range(num_layers):
        x = torch.nn.functional.conv1d(x, torch.ones(1, 1, kernel_size), padding=kernel_size - 1)
    return int((x > 0).sum())


def field_closed_form(kernel_size, num_layers):
    return num_layers * kernel_size - num_layers + 1


@pytest.mark.parametrize("candidate", [as_student(reference.receptive_field), field_by_simulation, field_closed_form])
def test_receptive_field_accepts_right_answers(candidate):
    """Do the reference, a convolution experiment and an expanded formula pass?"""
    for seed in (0, 1, 2):
        check_receptive_field(candidate, seed=seed)


@pytest.mark.parametrize(
    "candidate, words",
    [
        (lambda k, n: k * n, "k * n"),
        (lambda k, n: n * (k - 1), "forgets the output position"),
        (lambda k, n: n * (k - 1) + 2, "one position too many"),
        (lambda k, n: k**n, "k ** n"),
    ],
)
def test_receptive_field_names_mistakes(candidate, words, fails):
    """Does k * n, or an off-by-one, fail with a message naming it?"""
    fails(check_receptive_field, candidate, mistake=words)


def test_receptive_field_wants_an_int(fails):
    """Does a float answer (true division) fail with a hint to return an int?"""
    fails(check_receptive_field, lambda k, n: 1 + n * (k - 1) / 1, match="Python int")


def test_receptive_field_forbids_reference(fails):
    """Does a candidate that calls the reference fail with ForbiddenCall?"""
    fails(check_receptive_field, lambda k, n: reference.receptive_field(k, n), error=ForbiddenCall)


def test_receptive_field_lets_stub_through(fails):
    """Does an untouched stub raise NotImplementedError?"""

    def stub(kernel_size, num_layers):
        raise NotImplementedError()

    fails(check_receptive_field, stub, error=NotImplementedError)

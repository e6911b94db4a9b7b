"""Checks for lab 01-rnn-limits (chapter 1).

Shape letters: B batch, L length, I input size, H hidden size.
"""

from __future__ import annotations

import numbers

import torch

from autograder import reference
from autograder.checks.kit.core import check, random_tensor
from autograder.checks.kit.expect import call, describe, expect_close, expect_equal, fail
from autograder.checks.kit.sentinels import forbidden

_RNN_OPS = [
    "torch.nn.RNN.forward",
    "torch.nn.RNNCell.forward",
    "torch.rnn_tanh",
    "torch.rnn_tanh_cell",
    "autograder.reference.rnn_forward",
]
_BUILD_RNN = "Write the loop over time yourself: h_t = tanh(x_t @ W_xh + h_{t-1} @ W_hh + b)."
_BUILD_NORMS = (
    "Compute the Jacobians d h_L / d h_t yourself, by autograd "
    "(torch.autograd.functional.jacobian) or as a product of one-step Jacobians."
)
_BUILD_FIELD = "Count the positions yourself: each layer of kernel size k widens the view by k - 1."


def _rnn_inputs(
    batch: int,
    length: int,
    inputs: int,
    hidden: int,
    seed: int,
    dtype: torch.dtype,
    recurrent_scale: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """x, h0, W_xh, W_hh, b with W_hh scaled so that its gain is about ``recurrent_scale``."""
    x = random_tensor((batch, length, inputs), seed, dtype)
    h0 = random_tensor((batch, hidden), seed + 1, dtype, 0.5)
    w_xh = random_tensor((inputs, hidden), seed + 2, dtype, inputs**-0.5)
    w_hh = random_tensor((hidden, hidden), seed + 3, dtype, recurrent_scale * hidden**-0.5)
    b = random_tensor((hidden,), seed + 4, dtype, 0.1)
    return x, h0, w_xh, w_hh, b


def _loop(x, h0, w_xh, w_hh, b, *, act=torch.tanh, swap=False, transpose=False, bias=True):
    """The recurrence with one thing changed: the catalogue of wrong answers."""
    h, outs = h0, []
    for t in range(x.size(1)):
        if swap:  # x_t multiplied by W_hh and h_{t-1} by W_xh (only possible when I == H)
            a = x[:, t] @ w_hh + h @ w_xh
        else:
            a = x[:, t] @ w_xh + h @ (w_hh.T if transpose else w_hh)
        h = act(a + b if bias else a)
        outs.append(h)
    return torch.stack(outs, dim=1), h  # (B, L, H), (B, H)


@check
def check_rnn_forward(rnn_forward, seed: int = 0) -> None:
    """Compare ``rnn_forward(x, h0, W_xh, W_hh, b) -> (outputs, h_last)`` with the reference:
    I == H (so swapped weights are caught by value), length 1, I != H, float64."""
    cases = [(2, 5, 4, 4, torch.float32), (1, 1, 3, 5, torch.float32), (3, 7, 2, 6, torch.float64)]
    for i, (batch, length, inputs, hidden, dtype) in enumerate(cases):
        args = _rnn_inputs(batch, length, inputs, hidden, seed * 100 + 10 * i, dtype)
        x, h0, w_xh, w_hh, b = args
        what = (
            f"rnn_forward for x {tuple(x.shape)}, h0 {tuple(h0.shape)}, W_xh {tuple(w_xh.shape)}, "
            f"W_hh {tuple(w_hh.shape)}, {str(dtype)[6:]} (seed {seed})"
        )
        expected_out, expected_last = reference.rnn_forward(*args)
        with forbidden(rnn_forward, _RNN_OPS, _BUILD_RNN):
            found = call(rnn_forward, *args, what=what)
        if not isinstance(found, tuple) or len(found) != 2:
            fail(what, "a tuple (outputs (B, L, H), h_last (B, H))", describe(found))
        outputs, last = found
        expect_close(
            f"{what}: outputs",
            outputs,
            expected_out,
            mistakes={
                "no tanh: the hidden state must go through h_t = tanh(...)": lambda args=args: _loop(
                    *args, act=lambda a: a
                )[0],
                "x_t and h_{t-1} multiplied by each other's weights (W_xh and W_hh swapped)": lambda args=args: _loop(
                    *args, swap=True
                )[0],
                "h_{t-1} @ W_hh.T instead of h_{t-1} @ W_hh (nn.RNN stores its weights transposed)": lambda args=args: (
                    _loop(*args, transpose=True)[0]
                ),
                "the bias b is left out": lambda args=args: _loop(*args, bias=False)[0],
                "outputs include h0 as well (L + 1 states): return h_1 .. h_L only": lambda expected_out=expected_out, h0=h0: (  # noqa: E501
                    torch.cat([h0[:, None], expected_out], dim=1)
                ),
                "outputs shifted by one step: they start with h0 and miss h_L": lambda expected_out=expected_out, h0=h0: (  # noqa: E501
                    torch.cat([h0[:, None], expected_out[:, :-1]], dim=1)
                ),
                "the outputs are not stacked along dim 1 (batch first: (B, L, H))": lambda expected_out=expected_out: (
                    expected_out.transpose(0, 1)
                ),
            },
        )
        expect_close(
            f"{what}: h_last",
            last,
            expected_last,
            mistakes={
                "returns the first hidden state h_1 instead of the last, h_L": lambda expected_out=expected_out: (
                    expected_out[:, 0]
                ),
                "returns the initial state h0 instead of the last, h_L": h0,
                "no tanh: the hidden state must go through h_t = tanh(...)": lambda args=args: _loop(
                    *args, act=lambda a: a
                )[1],
            },
        )


def _wrong_norms(kind: str, x, h0, w_xh, w_hh, b) -> torch.Tensor:
    """Norms computed with one known mistake (batch element 0)."""
    hs = reference.rnn_forward(x[:1], h0[:1], w_xh, w_hh, b)[0][0]  # (L, H)
    length, hidden = hs.shape
    eye = torch.eye(hidden, dtype=hs.dtype)
    steps = [(1 - hs[t] ** 2)[:, None] * w_hh.T for t in range(length)]  # steps[t] = d h_{t+1} / d h_t (0-based h)
    if kind == "forward":  # d h_t / d h_1 for every t
        jac, norms = eye, [eye.norm()]
        for t in range(1, length):
            jac = steps[t] @ jac
            norms.append(jac.norm())
        return torch.stack(norms)
    if kind == "gradient":  # the gradient of sum(h_L): a vector, not the Jacobian
        jac, norms = torch.ones(1, hidden, dtype=hs.dtype), []
        norms.append(jac.norm())
        for t in range(length - 1, 0, -1):
            jac = jac @ steps[t]
            norms.append(jac.norm())
        return torch.stack(norms[::-1])
    jac, norms = eye, [eye.norm()]
    for t in range(length - 1, 0, -1):
        if kind == "order":
            jac = steps[t] @ jac
        elif kind == "no_tanh":
            jac = jac @ w_hh.T
        elif kind == "w_hh":
            jac = jac @ ((1 - hs[t] ** 2)[:, None] * w_hh)
        norms.append(jac.norm())
    return torch.stack(norms[::-1])


@check
def check_hidden_gradient_norms(hidden_gradient_norms, seed: int = 0) -> None:
    """Compare ``hidden_gradient_norms(x, h0, W_xh, W_hh, b)`` (Frobenius norms of
    d h_L / d h_t for t = 1..L, batch element 0) with the reference: a small and a large
    recurrent gain, length 1, float64."""
    cases = [
        (2, 6, 3, 4, 0.7, torch.float32),
        (1, 1, 2, 3, 1.0, torch.float32),
        (1, 9, 3, 5, 2.0, torch.float64),
        (3, 12, 2, 4, 0.5, torch.float64),
    ]
    for i, (batch, length, inputs, hidden, gain, dtype) in enumerate(cases):
        args = _rnn_inputs(batch, length, inputs, hidden, seed * 100 + 10 * i, dtype, gain)
        what = (
            f"hidden_gradient_norms for B={batch}, L={length}, I={inputs}, H={hidden}, "
            f"recurrent gain {gain:g}, {str(dtype)[6:]} (seed {seed})"
        )
        expected = reference.hidden_gradient_norms(*args)
        with forbidden(hidden_gradient_norms, ["autograder.reference.hidden_gradient_norms"], _BUILD_NORMS):
            found = call(hidden_gradient_norms, *args, what=what)
        expect_close(
            what,
            found,
            expected,
            atol=1e-9,
            rtol=1e-4,
            mistakes={
                "the norms are reversed in time: result[t-1] must be the norm for h_t, so the last entry "
                "(t = L, the identity) is sqrt(H)": lambda expected=expected: expected.flip(0),
                "norms of d h_t / d h_1 (how h_t depends on the start) instead of d h_L / d h_t": lambda args=args: (
                    _wrong_norms("forward", *args)
                ),
                "the one-step Jacobians are multiplied in the wrong order: "
                "d h_L / d h_t = J_L J_(L-1) ... J_(t+1)": lambda args=args: _wrong_norms("order", *args),
                "the tanh derivative diag(1 - h^2) is left out of the one-step Jacobian": lambda args=args: (
                    _wrong_norms("no_tanh", *args)
                ),
                "the one-step Jacobian uses W_hh where it needs W_hh.T (h_{t+1} = tanh(h_t @ W_hh + ...))": lambda args=args: (  # noqa: E501
                    _wrong_norms("w_hh", *args)
                ),
                "norms of the gradient of sum(h_L), a vector, instead of the full Jacobian d h_L / d h_t": lambda args=args: (  # noqa: E501
                    _wrong_norms("gradient", *args)
                ),
            },
        )


@check
def check_receptive_field(receptive_field, seed: int = 0) -> None:
    """Compare ``receptive_field(kernel_size, num_layers)`` with 1 + n (k - 1) on fixed and
    seeded random sizes, including one layer, no layer and kernel size 1."""
    gen = torch.Generator().manual_seed(seed)
    cases = [(3, 3), (3, 1), (2, 4), (5, 0), (1, 10), (7, 3)]
    cases += [
        (int(torch.randint(2, 10, (1,), generator=gen)), int(torch.randint(1, 12, (1,), generator=gen)))
        for _ in range(4)
    ]
    for k, n in cases:
        what = f"receptive_field(kernel_size={k}, num_layers={n})"
        expected = reference.receptive_field(k, n)
        with forbidden(receptive_field, ["autograder.reference.receptive_field"], _BUILD_FIELD):
            found = call(receptive_field, k, n, what=what)
        if isinstance(found, torch.Tensor) and found.numel() == 1 and not found.is_floating_point():
            found = int(found)
        if not isinstance(found, numbers.Integral) or isinstance(found, bool):
            fail(what, f"the int {expected}", describe(found), hint="return a Python int (use // not /).")
        mistakes = {
            "k * n: the layers overlap, each adds only k - 1 new positions": k * n,
            "off by one: n (k - 1) forgets the output position itself": n * (k - 1),
            "off by one: one position too many": n * (k - 1) + 2,
            "k ** n: that is the growth with dilations multiplied by k at each layer, not of a plain stack": k**n,
        }
        expect_equal(what, int(found), expected, {m: v for m, v in mistakes.items() if v != expected})

"""The RNN of chapter 1 and the low-rank view of chapter 3."""

import pytest
import torch
from torch import nn

from autograder import reference as ref


def test_rnn_forward_equals_nn_rnn():
    """With the weights copied (transposed: nn.RNN stores (out, in)), does rnn_forward equal nn.RNN?"""
    torch.manual_seed(0)
    rnn = nn.RNN(4, 3, batch_first=True).double()
    x, h0 = torch.randn(2, 6, 4, dtype=torch.float64), torch.randn(2, 3, dtype=torch.float64)
    expected, h_last = rnn(x, h0[None])
    out, h = ref.rnn_forward(x, h0, rnn.weight_ih_l0.T, rnn.weight_hh_l0.T, rnn.bias_ih_l0 + rnn.bias_hh_l0)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(h, h_last[0])


def test_hidden_gradient_norms_equal_autograd():
    """Are the Jacobian-product norms ||dh_L/dh_t|| equal to those autograd computes?"""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, 5, 3, generator=g, dtype=torch.float64)
    h0 = torch.zeros(1, 4, dtype=torch.float64)
    w_xh = torch.randn(3, 4, generator=g, dtype=torch.float64)
    w_hh = torch.randn(4, 4, generator=g, dtype=torch.float64)
    b = torch.zeros(4, dtype=torch.float64)
    norms = ref.hidden_gradient_norms(x, h0, w_xh, w_hh, b)
    outputs, _ = ref.rnn_forward(x, h0, w_xh, w_hh, b)
    hs = outputs[0]

    def h_last_from(t):
        def f(h_t):
            h = h_t[None]
            for s in range(t + 1, 5):
                h = torch.tanh(x[:, s] @ w_xh + h @ w_hh + b)
            return h[0]

        return f

    for t in range(5):
        jac = torch.autograd.functional.jacobian(h_last_from(t), hs[t])
        assert norms[t].item() == pytest.approx(jac.norm().item(), rel=1e-10)


def test_receptive_field_grows_linearly():
    """Does a stack of n stride-1 convolutions of width k see 1 + n (k - 1) positions?"""
    assert [ref.receptive_field(3, n) for n in range(4)] == [1, 3, 5, 7]
    conv = nn.Sequential(*[nn.Conv1d(1, 1, 5, padding=2, bias=False) for _ in range(3)])
    x = torch.zeros(1, 1, 31, requires_grad=True)
    conv(x)[0, 0, 15].backward()
    assert int((x.grad != 0).sum()) == ref.receptive_field(5, 3)


def test_low_rank_factorization_is_the_best_approximation():
    """Eckart-Young: is A B^T of rank k, with residual norm sqrt(sum of the tail sigma^2),
    no worse than a random rank-k product?"""
    torch.manual_seed(0)
    w = torch.randn(12, 12, dtype=torch.float64)
    s = torch.linalg.svdvals(w)
    for k in (0, 1, 4, 12):
        a, b = ref.low_rank_factorize(w, k)
        assert a.shape == (12, k) and b.shape == (12, k)
        residual = torch.linalg.matrix_norm(w - a @ b.T)
        assert residual.item() == pytest.approx(s[k:].pow(2).sum().sqrt().item(), abs=1e-10)
        assert ref.low_rank_error(w, k).item() == pytest.approx(residual.item(), abs=1e-10)
        if 0 < k < 12:
            other = torch.randn(12, k, dtype=torch.float64) @ torch.randn(k, 12, dtype=torch.float64)
            assert torch.linalg.matrix_norm(w - other) > residual


def test_merged_form_gives_the_same_scores():
    """Are x W_q (x W_k)^T and x (W_q W_k^T) x^T the same scores, with rank <= Dh?"""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(6, 8, generator=g, dtype=torch.float64)
    w_q, w_k = torch.randn(8, 2, generator=g, dtype=torch.float64), torch.randn(8, 2, generator=g, dtype=torch.float64)
    w = ref.merged_qk(w_q, w_k)
    torch.testing.assert_close(ref.bilinear_scores(x, w, 0.5), 0.5 * (x @ w_q) @ (x @ w_k).T)
    assert torch.linalg.matrix_rank(w) == 2

"""RMSNorm, SwiGLU and grouped-query attention with a cache (chapter 10) against PyTorch's own."""

import pytest
import torch
import torch.nn.functional as F

from autograder.reference import modern
from autograder.reference.rope import apply_rope


def _x(shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@pytest.mark.parametrize("eps", [1e-6, 1e-5, 0.1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rms_norm_equals_torch_rmsnorm(eps, dtype):
    """Does rms_norm equal torch.nn.RMSNorm with the same eps set explicitly on both, weights included?"""
    x, w = _x((3, 5, 12), 0, dtype), _x((12,), 1, dtype)
    norm = torch.nn.RMSNorm(12, eps=eps, dtype=dtype)
    with torch.no_grad():
        norm.weight.copy_(w)
    tol = dict(atol=1e-6, rtol=1e-5) if dtype == torch.float32 else dict(atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(modern.rms_norm(x, w, eps), norm(x), **tol)
    module = modern.RMSNorm(12, eps).to(dtype)
    module.weight.data.copy_(w)
    torch.testing.assert_close(module(x), norm(x), **tol)


def test_swiglu_hidden_keeps_the_parameters_of_a_4d_relu_ffn():
    """Does 3 * D * F come within one rounding of 2 * D * 4D?"""
    for d in (64, 96, 128, 4096):
        f = modern.swiglu_hidden(d, multiple_of=1)
        assert abs(3 * d * f - 2 * d * 4 * d) <= 3 * d
    assert modern.swiglu_hidden(4096, 256) == 11008  # Llama 2 7B's hidden width


def test_swiglu_module_equals_raw_weights_and_the_formula():
    """Does SwiGLU (nn.Linear) equal swiglu with the transposed raw weights, and silu(a) * b by hand?"""
    m = modern.SwiGLU(8, 12).double()
    x = _x((2, 3, 8))
    raw = modern.swiglu(x, m.gate_proj.weight.T, m.up_proj.weight.T, m.down_proj.weight.T)
    torch.testing.assert_close(m(x), raw)
    a, b = x @ m.gate_proj.weight.T, x @ m.up_proj.weight.T
    torch.testing.assert_close(raw, (a * torch.sigmoid(a) * b) @ m.down_proj.weight.T)


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_gqa_equals_sdpa_enable_gqa(groups):
    """Does grouped_query_attention equal F.scaled_dot_product_attention(enable_gqa=True), masked and not?"""
    q, k, v = _x((2, 4, 5, 8), 0), _x((2, groups, 7, 8), 1), _x((2, groups, 7, 8), 2)
    mask = torch.rand(2, 1, 5, 7, generator=torch.Generator().manual_seed(3)) > 0.3
    mask[..., 0] = True
    for m in (None, mask):
        expected = F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True)
        torch.testing.assert_close(modern.grouped_query_attention(q, k, v, m), expected, atol=1e-12, rtol=1e-12)


def test_gqa_refuses_heads_not_a_multiple():
    """Are 4 query heads over 3 key/value heads refused?"""
    with pytest.raises(ValueError, match="multiple"):
        modern.grouped_query_attention(_x((1, 4, 2, 4)), _x((1, 3, 2, 4)), _x((1, 3, 2, 4)))


def test_attend_with_cache_equals_sdpa_on_the_whole_sequence():
    """Do steps of attend_with_cache (a prompt of 4, then 1, then 2 tokens) give SDPA's causal GQA
    output over the whole rotated sequence, and a cache of rotated keys and plain values?"""
    b, h, g, n, dh = 2, 6, 2, 7, 8
    q, k, v = _x((b, h, n, dh), 0), _x((b, g, n, dh), 1), _x((b, g, n, dh), 2)
    positions = torch.arange(n)
    expected = F.scaled_dot_product_attention(
        apply_rope(q, positions), apply_rope(k, positions), v, is_causal=True, enable_gqa=True
    )
    cache_k, cache_v = q.new_zeros(b, g, 0, dh), q.new_zeros(b, g, 0, dh)
    outs = []
    for lo, hi in [(0, 4), (4, 5), (5, 7)]:
        out, cache_k, cache_v = modern.attend_with_cache(
            q[:, :, lo:hi], k[:, :, lo:hi], v[:, :, lo:hi], cache_k, cache_v
        )
        outs.append(out)
    torch.testing.assert_close(torch.cat(outs, dim=2), expected, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(cache_k, apply_rope(k, positions))
    torch.testing.assert_close(cache_v, v)


def test_kv_cache_bytes():
    """Is the cache 2 x layers x tokens x G x Dh numbers, divided by H / G against multi-head?"""
    full = modern.kv_cache_bytes(32, 32, 128, 4096, batch=1, bytes_per_number=2)
    assert full == 2 * 32 * 4096 * 4096 * 2  # 2 x layers x tokens x D, 2 bytes each
    assert modern.kv_cache_bytes(32, 8, 128, 4096) * 4 == full

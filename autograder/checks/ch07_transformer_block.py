"""Checks for lab 07-transformer-block (chapter 7).

Shape letters: B batch, S source length, T target length, L any length, D d_model,
H heads, F d_ff. Masks are boolean, True = may attend.

The layers are compared with the reference (same weights, copied in with
``load_reference_weights``) and, where no row is fully masked, with PyTorch's own
``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer`` holding the same weights
(``torch_layer_like`` packs them; ``torch_attn_mask`` turns our masks into PyTorch's), in
eval mode; then in training mode, where ``dropout.fixed_dropout`` makes the reference and
the candidate drop the same entries, so that a missing or misplaced dropout is named.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from autograder import reference
from autograder.checks import variants as v
from autograder.checks.core import (
    call,
    check,
    dtype_name,
    expect_close,
    forbidden,
    generator,
    random_tensor,
    seeded,
)
from autograder.checks.dropout import expect_dropout
from autograder.checks.weights import load_reference_weights
from autograder.reference.interop import torch_layer_from
from autograder.reference.norms import layer_norm as _reference_layer_norm

_M = TypeVar("_M", bound=nn.Module)
_LAYER_NORM_OPS = [
    "torch.nn.functional.layer_norm", "torch.layer_norm", "torch.native_layer_norm",
    "torch.nn.LayerNorm.forward", "autograder.reference.norms.layer_norm", "autograder.reference.LayerNorm",
    # the other norms compute the same thing once x is reshaped so that D is their reduced axis
    "torch.nn.functional.group_norm", "torch.group_norm", "torch.nn.functional.instance_norm",
    "torch.instance_norm", "torch.nn.functional.batch_norm", "torch.batch_norm", "torch.native_batch_norm",
]
_BUILD_LAYER_NORM = "Build layer_norm from a mean and a (biased) variance over the last dimension."
_FFN_OPS = ["autograder.reference.PositionwiseFeedForward", "torch.nn.TransformerEncoderLayer._ff_block"]
_BUILD_FFN = "Build the FFN from two nn.Linear layers, a ReLU and nn.Dropout."
_LAYER_OPS = [
    "autograder.reference.EncoderLayer", "autograder.reference.DecoderLayer",
    "autograder.reference.Encoder", "autograder.reference.Decoder", "autograder.reference.EncoderDecoder",
    "torch.nn.TransformerEncoderLayer.__init__", "torch.nn.TransformerEncoderLayer.forward",
    "torch.nn.TransformerDecoderLayer.__init__", "torch.nn.TransformerDecoderLayer.forward",
    "torch.nn.Transformer.forward", "torch._transformer_encoder_layer_fwd",
]
_BUILD_LAYER = ("Build the layer from reference.MultiHeadAttention, reference.LayerNorm (or nn.LayerNorm) "
                "and reference.PositionwiseFeedForward, with residual connections of your own.")


# ----------------------------------------------------------------------------- PyTorch's layers

def torch_attn_mask(mask: Tensor | None, batch: int, num_heads: int, lq: int, lk: int) -> Tensor | None:
    """Our mask (True = may attend, broadcastable to ``(B, H, Lq, Lk)``) as the ``attn_mask``
    of PyTorch's layers: ``(B * H, Lq, Lk)`` with True = blocked."""
    if mask is None:
        return None
    return ~mask.expand(batch, num_heads, lq, lk).reshape(batch * num_heads, lq, lk)  # (B*H, Lq, Lk)


def torch_layer_like(layer: v.Layer) -> nn.Module:
    """PyTorch's own layer (batch first, ReLU, no dropout) holding the weights of a
    reference ``EncoderLayer`` or ``DecoderLayer``: q/k/v are packed into ``in_proj_weight``."""
    return torch_layer_from(layer, layer.self_attn.num_heads, decoder=hasattr(layer, "cross_attn"),
                            norm_first=layer.norm_first, eps=layer.norm1.eps).eval()


# ----------------------------------------------------------------------------- inputs

def _lengths_mask(lengths: list[int], length: int) -> Tensor:
    """Padding mask ``(B, 1, 1, L)``: True for the first ``lengths[b]`` positions."""
    return (torch.arange(length)[None, :] < torch.tensor(lengths)[:, None])[:, None, None, :]  # (B, 1, 1, L)


def _seeded_layer(make: Callable[..., _M], seed: int, *args, **kwargs) -> _M:
    """A reference module built from a fixed seed, with LayerNorm gains and shifts that are
    not 1 and 0 (so that a misplaced norm shows), in eval mode."""
    module = seeded(make, seed, *args, **kwargs)
    g = generator(seed + 7)
    with torch.no_grad():
        for sub in module.modules():
            if isinstance(sub, reference.LayerNorm):
                sub.weight.copy_(1 + 0.3 * torch.randn(sub.weight.shape, generator=g))
                sub.bias.copy_(0.3 * torch.randn(sub.bias.shape, generator=g))
    return module.eval()


def _make_candidate(candidate: type, args: tuple, ref: nn.Module, what: str, **kwargs) -> nn.Module:
    __tracebackhide__ = True
    module = call(candidate, *args, what=what, **kwargs)
    load_reference_weights(module, ref, what)
    return module.to(next(ref.parameters()).dtype).eval()


# ----------------------------------------------------------------------------- layer_norm

def _layer_norm_mistakes(x: Tensor, w: Tensor, b: Tensor, eps: float) -> dict[str, Any]:
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return {
        "unbiased variance (divided by D - 1, as torch.var and torch.std do by default); "
        "LayerNorm uses the biased variance (divide by D)":
            lambda: (x - mean) / torch.sqrt(x.var(-1, keepdim=True) + eps) * w + b,
        "eps outside the square root, (x - mean) / (sqrt(var) + eps); it belongs inside, sqrt(var + eps)":
            lambda: (x - mean) / (torch.sqrt(var) + eps) * w + b,
        "statistics over the batch axis (BatchNorm): LayerNorm normalises each position over its own "
        "D features": lambda: v.batch_stats_norm(x, w, b, eps),
        "eps left out, so a constant row gives 0 / 0 = NaN": lambda: (x - mean) / torch.sqrt(var) * w + b,
        "the mean is not subtracted": lambda: x / torch.sqrt(var + eps) * w + b,
        "divided by the variance instead of the standard deviation": lambda: (x - mean) / (var + eps) * w + b,
        "weight and bias not applied": lambda: (x - mean) / torch.sqrt(var + eps),
        "weight and bias swapped": lambda: (x - mean) / torch.sqrt(var + eps) * b + w,
        **{v.NORM_OVER.format(d): (lambda d=d: v.norm_over(x, w, b, eps, d)) for d in v.wrong_axes(x.dim(), -1)},
    }


@check
def check_layer_norm(layer_norm, seed: int = 0) -> None:
    """Compare ``layer_norm(x, weight, bias, eps)`` with the reference: several shapes,
    length 1, values with a small variance (where eps matters), a large eps, a constant
    row (bias, not NaN), float64."""
    cases = [  # shape, dtype, scale, shift, eps
        ((2, 3, 8), torch.float32, 1.0, 0.0, 1e-5), ((4, 16), torch.float64, 2.0, 3.0, 1e-5),
        ((1, 1, 6), torch.float32, 1.0, 0.5, 1e-5),
        ((2, 5, 8), torch.float32, 0.01, 0.0, 1e-5),  # var ~ 1e-4: sqrt(var + eps) != sqrt(var) + eps
        ((3, 4, 6), torch.float64, 1.0, 0.0, 0.1)]
    for i, (shape, dtype, scale, shift, eps) in enumerate(cases):
        s = seed * 100 + i
        x = random_tensor(shape, s, dtype, scale) + shift
        if i == 2 or i == 4:
            x[0, 0] = 1.5  # a constant row: zero variance
        w = 1 + 0.5 * random_tensor(shape[-1:], s + 50, dtype)
        b = 0.5 * random_tensor(shape[-1:], s + 60, dtype)
        what = (f"layer_norm(x, weight, bias, eps={eps:g}) for x of shape {shape}, {dtype_name(dtype)}, "
                f"values ~{shift:g} +- {scale:g} (seed {seed})")
        expected = _reference_layer_norm(x, w, b, eps)
        with forbidden(layer_norm, _LAYER_NORM_OPS, _BUILD_LAYER_NORM):
            found = call(layer_norm, x, w, b, eps, what=what)
        expect_close(what, found, expected, mistakes=_layer_norm_mistakes(x, w, b, eps), atol=1e-5, rtol=1e-4)


# ----------------------------------------------------------------------------- feed-forward

@check
def check_positionwise_feed_forward(PositionwiseFeedForward, seed: int = 0) -> None:
    """Build ``PositionwiseFeedForward(d_model, d_ff, dropout)``, copy the reference's weights
    in, compare outputs in eval mode (several sizes, length 1, float64), then in training mode
    with the same entries dropped as in the reference (dropout on the hidden units)."""
    cases = [(8, 32, 2, 5, torch.float32), (6, 24, 1, 1, torch.float32), (4, 16, 3, 7, torch.float64)]
    for i, case in enumerate(cases):
        _check_ffn_case(PositionwiseFeedForward, seed, seed * 100 + i, *case)
    ref = _seeded_layer(reference.PositionwiseFeedForward, seed, 8, 64, 0.5).double().train()
    x = random_tensor((2, 6, 8), seed, torch.float64)
    what = (f"PositionwiseFeedForward(d_model=8, d_ff=64, dropout=0.5) on x (2, 6, 8), float64, in training mode "
            f"(dropout drawn from the check's seed {seed})")

    def dropped(t: Tensor) -> Tensor:
        return F.dropout(t, 0.5)

    with forbidden(PositionwiseFeedForward, _FFN_OPS, _BUILD_FFN):
        module = _make_candidate(PositionwiseFeedForward, (8, 64, 0.5), ref, what)
    expect_dropout(what, module, (x,), seed, lambda: ref(x), {
        v.FFN_DROPOUT_NOT_APPLIED: lambda: ref.linear2(torch.relu(ref.linear1(x))),
        v.DROPOUT_IN_FFN_ONLY_AT_OUTPUT: lambda: dropped(ref.linear2(torch.relu(ref.linear1(x)))),
        v.DROPOUT_ON_FFN_INPUT: lambda: ref.linear2(torch.relu(ref.linear1(dropped(x)))),
    }, {(2, 6, 64): ("the hidden units (B, L, F)", 1)}, (PositionwiseFeedForward, _FFN_OPS, _BUILD_FFN),
        atol=1e-10, rtol=1e-8)


def _check_ffn_case(PositionwiseFeedForward, seed: int, s: int, d: int, f: int, b: int, length: int, dtype) -> None:
    __tracebackhide__ = True
    what = (f"PositionwiseFeedForward(d_model={d}, d_ff={f}, dropout=0.1) on x of shape {(b, length, d)}, "
            f"{dtype_name(dtype)}, eval mode (seed {seed})")
    ref = _seeded_layer(reference.PositionwiseFeedForward, s, d, f, 0.1).to(dtype)
    x = random_tensor((b, length, d), s, dtype)
    expected = ref(x)
    lin1, lin2 = ref.linear1, ref.linear2
    mistakes = {
        "no ReLU between the two linear layers": lambda: lin2(lin1(x)),
        "ReLU after the second linear layer as well": lambda: torch.relu(ref(x)),
        "ReLU after the second linear layer instead of after the first": lambda: torch.relu(lin2(lin1(x))),
    }
    with forbidden(PositionwiseFeedForward, _FFN_OPS, _BUILD_FFN):
        module = _make_candidate(PositionwiseFeedForward, (d, f, 0.1), ref, what)
        found = call(module, x, what=what)
    expect_close(what, found, expected, mistakes=mistakes)


# ----------------------------------------------------------------------------- the layers

def _compare_layer(what: str, found: Tensor, expected: Tensor, oracle: Tensor | None, oracle_name: str,
                   mistakes: dict[str, Callable[[], Tensor]]) -> None:
    __tracebackhide__ = True
    atol, rtol = (1e-5, 1e-4) if expected.dtype == torch.float64 else (2e-5, 2e-4)
    expect_close(what, found, expected, mistakes=mistakes, atol=atol, rtol=rtol)
    if oracle is not None:
        expect_close(f"{what}, against {oracle_name} with the same weights", found, oracle, mistakes=mistakes,
                     atol=1e-4, rtol=1e-3)


def _layer_dropout(Layer: type, name: str, seed: int, norm_first: bool, d: int, h: int, f: int, inputs: tuple,
                   lengths: tuple[int, ...]) -> None:
    """The layer in training mode, dropout 0.3, float64: the reference's output under the same
    fixed dropout masks, or the name of the misplaced or missing dropout."""
    __tracebackhide__ = True
    p, decoder = 0.3, name == "DecoderLayer"
    make: Callable[..., v.Layer] = reference.DecoderLayer if decoder else reference.EncoderLayer
    ref = _seeded_layer(make, seed * 100 + 50 + norm_first, d_model=d, num_heads=h, d_ff=f, dropout=p,
                        norm_first=norm_first).double().train()
    b, t_len = inputs[0].shape[:2]
    what = (f"{name}(d_model={d}, num_heads={h}, d_ff={f}, dropout={p}, norm_first={norm_first}) on inputs of "
            f"shapes {[tuple(x.shape) for x in inputs[:2 if decoder else 1]]}, float64, in training mode "
            f"(dropout drawn from the check's seed {seed})")
    args = inputs if decoder else (inputs[0], None, inputs[1], None)  # as variants.layer_variant takes them
    sites = {(b, h, t_len, t_len): ("the self-attention weights", 1), (b, t_len, f): ("the FFN's hidden units", 1),
             (b, t_len, d): ("the sublayer outputs", 2 + decoder)}
    if decoder:
        sites[(b, h, t_len, lengths[1])] = ("the cross-attention weights", 1)
    with forbidden(Layer, _LAYER_OPS, _BUILD_LAYER):
        layer = _make_candidate(Layer, (d, h, f, p), ref, what, norm_first=norm_first)
    expect_dropout(what, layer, inputs, seed, lambda: ref(*inputs), v.dropout_mistakes(ref, args, norm_first, p),
                   sites, (Layer, _LAYER_OPS, _BUILD_LAYER), atol=1e-9, rtol=1e-7)


def _encoder_cases(seed: int) -> list[tuple]:
    return [  # d_model, heads, d_ff, batch, S, lengths (None: no mask), dtype
        (8, 2, 32, 2, 5, [5, 3], torch.float32),
        (12, 3, 24, 1, 1, None, torch.float32),
        (8, 4, 16, 3, 6, [6, 2, 0], torch.float64),  # a fully padded sequence: zeros, not NaN
    ]


@check
def check_encoder_layer(EncoderLayer, seed: int = 0) -> None:
    """Build ``EncoderLayer(d_model, num_heads, d_ff, dropout, norm_first=...)`` for both norm
    placements, copy the reference's weights in, and compare ``layer(x, src_mask)`` (eval
    mode) with the reference and with ``nn.TransformerEncoderLayer`` holding the same
    weights: padding masks, length 1, a fully padded sequence, float64. Then in training
    mode: dropout on the attention weights, the FFN's hidden units and each sublayer's
    output before the residual add."""
    for norm_first in (False, True):
        for i, case in enumerate(_encoder_cases(seed)):
            _check_encoder_case(EncoderLayer, seed, seed * 100 + i + 10 * norm_first, norm_first, *case)
    for norm_first in (False, True):
        x = random_tensor((2, 5, 8), seed * 100 + 60, torch.float64)
        _layer_dropout(EncoderLayer, "EncoderLayer", seed, norm_first, 8, 2, 16, (x, _lengths_mask([5, 3], 5)),
                       (5,))


def _check_encoder_case(EncoderLayer, seed: int, s: int, norm_first: bool, d: int, h: int, f: int, b: int,
                        s_len: int, lengths: list[int] | None, dtype) -> None:
    __tracebackhide__ = True
    what = (f"EncoderLayer(d_model={d}, num_heads={h}, d_ff={f}, dropout=0.1, norm_first={norm_first}) "
            f"on x {(b, s_len, d)}, {dtype_name(dtype)}, src_mask "
            f"{'None' if lengths is None else f'for lengths {lengths}'}, eval mode (seed {seed})")
    ref = _seeded_layer(reference.EncoderLayer, s, d_model=d, num_heads=h, d_ff=f, dropout=0.1,
                        norm_first=norm_first).to(dtype)
    x = random_tensor((b, s_len, d), s, dtype)
    mask = None if lengths is None else _lengths_mask(lengths, s_len)
    expected = ref(x, mask)
    oracle = None
    if lengths is None or min(lengths) > 0:  # PyTorch gives NaN for fully masked rows
        oracle = torch_layer_like(ref)(x, src_mask=torch_attn_mask(mask, b, h, s_len, s_len)).detach()
    mistakes = v.layer_mistakes(ref, (x, None, mask, None), norm_first,
                                {v.SRC_MASK_IGNORED: dict(ignore_tgt_mask=True)})
    with forbidden(EncoderLayer, _LAYER_OPS, _BUILD_LAYER):
        layer = _make_candidate(EncoderLayer, (d, h, f, 0.1), ref, what, norm_first=norm_first)
        found = call(layer, x, mask, what=what)
    _compare_layer(what, found, expected, oracle, "nn.TransformerEncoderLayer", mistakes)


def _decoder_cases(seed: int) -> list[tuple]:
    return [  # d_model, heads, d_ff, batch, T, S, target lengths, source lengths, dtype
        (8, 2, 32, 2, 5, 5, [5, 4], [5, 3], torch.float32),  # T == S, so a swapped query still has the right shape
        (8, 2, 16, 2, 4, 7, None, [7, 2], torch.float32),
        (12, 3, 24, 1, 1, 1, None, None, torch.float32),
        (8, 4, 16, 3, 3, 6, [3, 2, 3], [6, 1, 0], torch.float64),  # a fully padded source
    ]


_DECODER_MISTAKES: dict[str, dict[str, Any]] = {  # name: keywords of variants.layer_variant
    v.TGT_MASK_IGNORED: dict(ignore_tgt_mask=True),
    v.MEMORY_MASK_IGNORED: dict(ignore_memory_mask=True),
    v.MEMORY_IN_LAST_RESIDUAL: dict(memory_in_last_residual=True),
    v.CROSS_KV_FROM_DECODER: dict(cross="kv_from_decoder"),
    v.CROSS_KV_FROM_DECODER_TGT_MASK: dict(cross="kv_from_decoder_tgt_mask"),
    v.CROSS_MEMORY_AS_QUERY: dict(cross="memory_as_query"),
    v.CROSS_ROLES_SWAPPED: dict(cross="roles_swapped"),
    f"{v.CROSS_KV_FROM_DECODER}, {v.CROSS_WITHOUT_MASK}": dict(cross="kv_from_decoder", ignore_memory_mask=True),
    f"{v.CROSS_MEMORY_AS_QUERY}, {v.CROSS_WITHOUT_MASK}": dict(cross="memory_as_query", ignore_memory_mask=True),
    f"{v.CROSS_ROLES_SWAPPED}, {v.CROSS_WITHOUT_MASK}": dict(cross="roles_swapped", ignore_memory_mask=True),
}


@check
def check_decoder_layer(DecoderLayer, seed: int = 0) -> None:
    """Build ``DecoderLayer(d_model, num_heads, d_ff, dropout, norm_first=...)`` for both norm
    placements, copy the reference's weights in, and compare
    ``layer(y, memory, tgt_mask, memory_mask)`` (eval mode) with the reference and with
    ``nn.TransformerDecoderLayer`` holding the same weights: causal and padding masks,
    T != S, length 1, a fully padded source, float64. Then in training mode: dropout on both
    attentions' weights, the FFN's hidden units and each sublayer's output."""
    for norm_first in (False, True):
        for i, case in enumerate(_decoder_cases(seed)):
            _check_decoder_case(DecoderLayer, seed, seed * 100 + i + 10 * norm_first, norm_first, *case)
    for norm_first in (False, True):
        y, memory = (random_tensor((2, n, 8), seed * 100 + 70 + n, torch.float64) for n in (4, 6))
        tgt_mask = reference.causal_mask(4) & _lengths_mask([4, 3], 4)  # (B, 1, T, T)
        _layer_dropout(DecoderLayer, "DecoderLayer", seed, norm_first, 8, 2, 16,
                       (y, memory, tgt_mask, _lengths_mask([6, 2], 6)), (4, 6))


def _check_decoder_case(DecoderLayer, seed: int, s: int, norm_first: bool, d: int, h: int, f: int, b: int,
                        t_len: int, s_len: int, tgt_lengths: list[int] | None, src_lengths: list[int] | None,
                        dtype) -> None:
    __tracebackhide__ = True
    what = (f"DecoderLayer(d_model={d}, num_heads={h}, d_ff={f}, dropout=0.1, norm_first={norm_first}) "
            f"on y {(b, t_len, d)} and memory {(b, s_len, d)}, {dtype_name(dtype)}, causal tgt_mask"
            f"{'' if tgt_lengths is None else f' and target lengths {tgt_lengths}'}, memory_mask "
            f"{'None' if src_lengths is None else f'for source lengths {src_lengths}'}, eval mode (seed {seed})")
    ref = _seeded_layer(reference.DecoderLayer, s, d_model=d, num_heads=h, d_ff=f, dropout=0.1,
                        norm_first=norm_first).to(dtype)
    y = random_tensor((b, t_len, d), s, dtype)
    memory = random_tensor((b, s_len, d), s + 1, dtype)
    tgt_mask = reference.causal_mask(t_len)  # (T, T)
    if tgt_lengths is not None:
        tgt_mask = tgt_mask & _lengths_mask(tgt_lengths, t_len)  # (B, 1, T, T)
    memory_mask = None if src_lengths is None else _lengths_mask(src_lengths, s_len)
    expected = ref(y, memory, tgt_mask, memory_mask)
    oracle = None
    if src_lengths is None or min(src_lengths) > 0:
        oracle = torch_layer_like(ref)(
            y, memory, tgt_mask=torch_attn_mask(tgt_mask, b, h, t_len, t_len),
            memory_mask=torch_attn_mask(memory_mask, b, h, t_len, s_len)).detach()
    mistakes = v.layer_mistakes(ref, (y, memory, tgt_mask, memory_mask), norm_first, _DECODER_MISTAKES)
    with forbidden(DecoderLayer, _LAYER_OPS, _BUILD_LAYER):
        layer = _make_candidate(DecoderLayer, (d, h, f, 0.1), ref, what, norm_first=norm_first)
        found = call(layer, y, memory, tgt_mask, memory_mask, what=what)
    _compare_layer(what, found, expected, oracle, "nn.TransformerDecoderLayer", mistakes)

"""Checks for lab 07-transformer-block (chapter 7): the encoder and decoder layers. The
sublayers' checks (``layer_norm``, the feed-forward network) are in ``sublayers``.

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
from typing import Any

import torch
from torch import Tensor

from autograder import reference
from autograder.checks.kit import variants as v
from autograder.checks.kit.core import check, random_tensor
from autograder.checks.kit.dropout import expect_dropout
from autograder.checks.kit.expect import call, dtype_name, expect_close
from autograder.checks.kit.sentinels import forbidden
from autograder.checks.lab07_transformer_block.sublayers import make_candidate, seeded_layer
from autograder.reference.oracles.interop import torch_attn_mask, torch_layer_like

_LAYER_OPS = [
    "autograder.reference.EncoderLayer",
    "autograder.reference.DecoderLayer",
    "autograder.reference.Encoder",
    "autograder.reference.Decoder",
    "autograder.reference.EncoderDecoder",
    "torch.nn.TransformerEncoderLayer.__init__",
    "torch.nn.TransformerEncoderLayer.forward",
    "torch.nn.TransformerDecoderLayer.__init__",
    "torch.nn.TransformerDecoderLayer.forward",
    "torch.nn.Transformer.forward",
    "torch._transformer_encoder_layer_fwd",
]
_BUILD_LAYER = (
    "Build the layer from reference.MultiHeadAttention, reference.LayerNorm (or nn.LayerNorm) "
    "and reference.PositionwiseFeedForward, with residual connections of your own."
)


# ----------------------------------------------------------------------------- inputs


def _lengths_mask(lengths: list[int], length: int) -> Tensor:
    """Padding mask ``(B, 1, 1, L)``: True for the first ``lengths[b]`` positions."""
    return (torch.arange(length)[None, :] < torch.tensor(lengths)[:, None])[:, None, None, :]  # (B, 1, 1, L)


# ----------------------------------------------------------------------------- the layers


def _compare_layer(
    what: str,
    found: Tensor,
    expected: Tensor,
    oracle: Tensor | None,
    oracle_name: str,
    mistakes: dict[str, Callable[[], Tensor]],
) -> None:
    __tracebackhide__ = True
    atol, rtol = (1e-5, 1e-4) if expected.dtype == torch.float64 else (2e-5, 2e-4)
    expect_close(what, found, expected, mistakes=mistakes, atol=atol, rtol=rtol)
    if oracle is not None:
        expect_close(
            f"{what}, against {oracle_name} with the same weights",
            found,
            oracle,
            mistakes=mistakes,
            atol=1e-4,
            rtol=1e-3,
        )


def _layer_dropout(
    Layer: type, name: str, seed: int, norm_first: bool, d: int, h: int, f: int, inputs: tuple, lengths: tuple[int, ...]
) -> None:
    """The layer in training mode, dropout 0.3, float64: the reference's output under the same
    fixed dropout masks, or the name of the misplaced or missing dropout."""
    __tracebackhide__ = True
    p, decoder = 0.3, name == "DecoderLayer"
    make: Callable[..., v.Layer] = reference.DecoderLayer if decoder else reference.EncoderLayer
    ref = (
        seeded_layer(
            make, seed * 100 + 50 + norm_first, d_model=d, num_heads=h, d_ff=f, dropout=p, norm_first=norm_first
        )
        .double()
        .train()
    )
    b, t_len = inputs[0].shape[:2]
    what = (
        f"{name}(d_model={d}, num_heads={h}, d_ff={f}, dropout={p}, norm_first={norm_first}) on inputs of "
        f"shapes {[tuple(x.shape) for x in inputs[: 2 if decoder else 1]]}, float64, in training mode "
        f"(dropout drawn from the check's seed {seed})"
    )
    args = inputs if decoder else (inputs[0], None, inputs[1], None)  # as variants.layer_variant takes them
    sites = {
        (b, h, t_len, t_len): ("the self-attention weights", 1),
        (b, t_len, f): ("the FFN's hidden units", 1),
        (b, t_len, d): ("the sublayer outputs", 2 + decoder),
    }
    if decoder:
        sites[(b, h, t_len, lengths[1])] = ("the cross-attention weights", 1)
    with forbidden(Layer, _LAYER_OPS, _BUILD_LAYER):
        layer = make_candidate(Layer, (d, h, f, p), ref, what, norm_first=norm_first)
    expect_dropout(
        what,
        layer,
        inputs,
        seed,
        lambda: ref(*inputs),
        v.dropout_mistakes(ref, args, norm_first, p),
        sites,
        (Layer, _LAYER_OPS, _BUILD_LAYER),
        atol=1e-9,
        rtol=1e-7,
    )


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
        _layer_dropout(EncoderLayer, "EncoderLayer", seed, norm_first, 8, 2, 16, (x, _lengths_mask([5, 3], 5)), (5,))


def _check_encoder_case(
    EncoderLayer,
    seed: int,
    s: int,
    norm_first: bool,
    d: int,
    h: int,
    f: int,
    b: int,
    s_len: int,
    lengths: list[int] | None,
    dtype,
) -> None:
    __tracebackhide__ = True
    what = (
        f"EncoderLayer(d_model={d}, num_heads={h}, d_ff={f}, dropout=0.1, norm_first={norm_first}) "
        f"on x {(b, s_len, d)}, {dtype_name(dtype)}, src_mask "
        f"{'None' if lengths is None else f'for lengths {lengths}'}, eval mode (seed {seed})"
    )
    ref = seeded_layer(
        reference.EncoderLayer, s, d_model=d, num_heads=h, d_ff=f, dropout=0.1, norm_first=norm_first
    ).to(dtype)
    x = random_tensor((b, s_len, d), s, dtype)
    mask = None if lengths is None else _lengths_mask(lengths, s_len)
    expected = ref(x, mask)
    oracle = None
    if lengths is None or min(lengths) > 0:  # PyTorch gives NaN for fully masked rows
        oracle = torch_layer_like(ref)(x, src_mask=torch_attn_mask(mask, b, h, s_len, s_len)).detach()
    mistakes = v.layer_mistakes(
        ref, (x, None, mask, None), norm_first, {v.SRC_MASK_IGNORED: dict(ignore_tgt_mask=True)}
    )
    with forbidden(EncoderLayer, _LAYER_OPS, _BUILD_LAYER):
        layer = make_candidate(EncoderLayer, (d, h, f, 0.1), ref, what, norm_first=norm_first)
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
        _layer_dropout(
            DecoderLayer,
            "DecoderLayer",
            seed,
            norm_first,
            8,
            2,
            16,
            (y, memory, tgt_mask, _lengths_mask([6, 2], 6)),
            (4, 6),
        )


def _check_decoder_case(
    DecoderLayer,
    seed: int,
    s: int,
    norm_first: bool,
    d: int,
    h: int,
    f: int,
    b: int,
    t_len: int,
    s_len: int,
    tgt_lengths: list[int] | None,
    src_lengths: list[int] | None,
    dtype,
) -> None:
    __tracebackhide__ = True
    what = (
        f"DecoderLayer(d_model={d}, num_heads={h}, d_ff={f}, dropout=0.1, norm_first={norm_first}) "
        f"on y {(b, t_len, d)} and memory {(b, s_len, d)}, {dtype_name(dtype)}, causal tgt_mask"
        f"{'' if tgt_lengths is None else f' and target lengths {tgt_lengths}'}, memory_mask "
        f"{'None' if src_lengths is None else f'for source lengths {src_lengths}'}, eval mode (seed {seed})"
    )
    ref = seeded_layer(
        reference.DecoderLayer, s, d_model=d, num_heads=h, d_ff=f, dropout=0.1, norm_first=norm_first
    ).to(dtype)
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
            y,
            memory,
            tgt_mask=torch_attn_mask(tgt_mask, b, h, t_len, t_len),
            memory_mask=torch_attn_mask(memory_mask, b, h, t_len, s_len),
        ).detach()
    mistakes = v.layer_mistakes(ref, (y, memory, tgt_mask, memory_mask), norm_first, _DECODER_MISTAKES)
    with forbidden(DecoderLayer, _LAYER_OPS, _BUILD_LAYER):
        layer = make_candidate(DecoderLayer, (d, h, f, 0.1), ref, what, norm_first=norm_first)
        found = call(layer, y, memory, tgt_mask, memory_mask, what=what)
    _compare_layer(what, found, expected, oracle, "nn.TransformerDecoderLayer", mistakes)

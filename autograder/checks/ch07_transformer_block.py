"""Checks for lab 07-transformer-block (chapter 7).

Shape letters: B batch, S source length, T target length, L any length, D d_model,
H heads, F d_ff. Masks are boolean, True = may attend.

The layers are compared with the reference (same weights, copied in with
``load_reference_weights``) and, where no row is fully masked, with PyTorch's own
``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer`` holding the same weights
(``torch_layer_like`` packs them; ``torch_attn_mask`` turns our masks into PyTorch's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
from torch import Tensor, nn

from autograder import reference
from autograder.checks.core import (
    call, check, expect_close, fail, forbidden, generator, load_reference_weights, random_tensor,
)
from autograder.reference.interop import torch_layer_from
from autograder.reference.norms import layer_norm as _reference_layer_norm

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


def torch_layer_like(layer: nn.Module) -> nn.TransformerEncoderLayer | nn.TransformerDecoderLayer:
    """PyTorch's own layer (batch first, ReLU, no dropout) holding the weights of a
    reference ``EncoderLayer`` or ``DecoderLayer``: q/k/v are packed into ``in_proj_weight``."""
    return torch_layer_from(layer, layer.self_attn.num_heads, decoder=hasattr(layer, "cross_attn"),
                            norm_first=layer.norm_first, eps=layer.norm1.eps).eval()


# ----------------------------------------------------------------------------- inputs

def _lengths_mask(lengths: list[int], length: int) -> Tensor:
    """Padding mask ``(B, 1, 1, L)``: True for the first ``lengths[b]`` positions."""
    return (torch.arange(length)[None, :] < torch.tensor(lengths)[:, None])[:, None, None, :]  # (B, 1, 1, L)


def _seeded(make: Callable[[], nn.Module], seed: int) -> nn.Module:
    """Build a reference module from a fixed seed, with LayerNorm gains and shifts that are
    not 1 and 0 (so that a misplaced norm shows)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = make()
    g = generator(seed + 7)
    with torch.no_grad():
        for sub in module.modules():
            if isinstance(sub, reference.LayerNorm):
                sub.weight.copy_(1 + 0.3 * torch.randn(sub.weight.shape, generator=g))
                sub.bias.copy_(0.3 * torch.randn(sub.bias.shape, generator=g))
    return module.eval()


def _make_candidate(candidate: type, args: tuple, ref: nn.Module, what: str) -> nn.Module:
    __tracebackhide__ = True
    module = call(candidate, *args, what=what)
    load_reference_weights(module, ref, what)
    return module.to(next(ref.parameters()).dtype).eval()


# ----------------------------------------------------------------------------- layer_norm

def _batch_stats_norm(x: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5) -> Tensor:
    """The BatchNorm mistake: per-feature statistics over every axis but the last."""
    dims = tuple(range(x.dim() - 1))
    mean = x.mean(dim=dims, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=dims, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def _layer_norm_mistakes(x: Tensor, w: Tensor, b: Tensor, eps: float) -> dict[str, Callable[[], Tensor]]:
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return {
        "unbiased variance (divided by D - 1, as torch.var and torch.std do by default); "
        "LayerNorm uses the biased variance (divide by D)":
            lambda: (x - mean) / torch.sqrt(x.var(-1, keepdim=True) + eps) * w + b,
        "eps outside the square root, (x - mean) / (sqrt(var) + eps); it belongs inside, sqrt(var + eps)":
            lambda: (x - mean) / (torch.sqrt(var) + eps) * w + b,
        "statistics over the batch axis (BatchNorm): LayerNorm normalises each position over its own "
        "D features": lambda: _batch_stats_norm(x, w, b, eps),
        "eps left out, so a constant row gives 0 / 0 = NaN": lambda: (x - mean) / torch.sqrt(var) * w + b,
        "the mean is not subtracted": lambda: x / torch.sqrt(var + eps) * w + b,
        "divided by the variance instead of the standard deviation": lambda: (x - mean) / (var + eps) * w + b,
        "weight and bias not applied": lambda: (x - mean) / torch.sqrt(var + eps),
        "weight and bias swapped": lambda: (x - mean) / torch.sqrt(var + eps) * b + w,
    }


@check
def check_layer_norm(layer_norm, seed: int = 0) -> None:
    """Compare ``layer_norm(x, weight, bias, eps)`` with the reference: several shapes,
    length 1, values with a small variance (where eps matters), a large eps, a constant
    row (bias, not NaN), float64."""
    cases = [  # shape, dtype, scale, shift, eps
        ((2, 3, 8), torch.float32, 1.0, 0.0, 1e-5),
        ((4, 16), torch.float64, 2.0, 3.0, 1e-5),
        ((1, 1, 6), torch.float32, 1.0, 0.5, 1e-5),
        ((2, 5, 8), torch.float32, 0.01, 0.0, 1e-5),  # var ~ 1e-4: sqrt(var + eps) != sqrt(var) + eps
        ((3, 4, 6), torch.float64, 1.0, 0.0, 0.1),
    ]
    for i, (shape, dtype, scale, shift, eps) in enumerate(cases):
        s = seed * 100 + i
        x = random_tensor(shape, s, dtype, scale) + shift
        if i == 2 or i == 4:
            x[0, 0] = 1.5  # a constant row: zero variance
        w = 1 + 0.5 * random_tensor(shape[-1:], s + 50, dtype)
        b = 0.5 * random_tensor(shape[-1:], s + 60, dtype)
        what = (f"layer_norm(x, weight, bias, eps={eps:g}) for x of shape {shape}, {str(dtype)[6:]}, "
                f"values ~{shift:g} +- {scale:g} (seed {seed})")
        expected = _reference_layer_norm(x, w, b, eps)
        with forbidden(layer_norm, _LAYER_NORM_OPS, _BUILD_LAYER_NORM):
            found = call(layer_norm, x, w, b, eps, what=what)
        expect_close(what, found, expected, mistakes=_layer_norm_mistakes(x, w, b, eps), atol=1e-5, rtol=1e-4)


# ----------------------------------------------------------------------------- feed-forward

@check
def check_positionwise_feed_forward(PositionwiseFeedForward, seed: int = 0) -> None:
    """Build ``PositionwiseFeedForward(d_model, d_ff, dropout)``, copy the reference's weights
    in, compare outputs in eval mode (several sizes, length 1, float64), and make sure
    dropout acts in training mode."""
    cases = [(8, 32, 2, 5, torch.float32), (6, 24, 1, 1, torch.float32), (4, 16, 3, 7, torch.float64)]
    for i, (d, f, b, length, dtype) in enumerate(cases):
        s = seed * 100 + i
        what = f"PositionwiseFeedForward(d_model={d}, d_ff={f}, dropout=0.1) on x of shape {(b, length, d)}, " \
               f"{str(dtype)[6:]}, eval mode (seed {seed})"
        ref = _seeded(lambda: reference.PositionwiseFeedForward(d, f, 0.1), s).to(dtype)
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
    # Dropout: active while training, off in eval (checked above).
    ref = _seeded(lambda: reference.PositionwiseFeedForward(8, 64, 0.5), seed)
    x = random_tensor((2, 6, 8), seed)
    what = "PositionwiseFeedForward(d_model=8, d_ff=64, dropout=0.5) in training mode"
    with forbidden(PositionwiseFeedForward, _FFN_OPS, _BUILD_FFN):
        module = _make_candidate(PositionwiseFeedForward, (8, 64, 0.5), ref, what)
        module.train()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            trained = call(module, x, what=what)
    if torch.allclose(trained, ref(x)):
        fail(what, "an output that differs from eval mode (dropout zeroes half of the hidden units)",
             "the same output as in eval mode", "dropout is not applied (store nn.Dropout(dropout) as "
             "self.dropout and apply it to the hidden activations)")


# ----------------------------------------------------------------------------- the layers, wrong

def _add_norm(x: Tensor, sublayer: Callable[[Tensor], Tensor], norm: Callable[[Tensor], Tensor],
              post: bool, residual: str = "add") -> Tensor:
    """One sublayer with its residual and norm; ``residual`` is "add", "none" or
    "after_norm" (pre-norm only: h = norm(x); h + sublayer(h))."""
    if post:
        return norm(sublayer(x)) if residual == "none" else norm(x + sublayer(x))
    h = norm(x)
    return {"add": x, "none": 0, "after_norm": h}[residual] + sublayer(h)


def _batch_norm_of(ln: nn.Module) -> Callable[[Tensor], Tensor]:
    return lambda x: _batch_stats_norm(x, ln.weight, ln.bias, ln.eps)


def _encoder_variant(ref: nn.Module, x: Tensor, mask: Tensor | None, *, post: bool, residual: str = "add",
                     batch_stats: bool = False, ignore_mask: bool = False) -> Tensor:
    norms = [_batch_norm_of(n) if batch_stats else n for n in (ref.norm1, ref.norm2)]
    m = None if ignore_mask else mask
    x = _add_norm(x, lambda h: ref.self_attn(h, h, h, m), norms[0], post, residual)
    return _add_norm(x, ref.ff, norms[1], post, residual)


def _layer_mistakes(ref: nn.Module, variant: Callable[..., Tensor], args: tuple, norm_first: bool,
                    mask_names: dict[str, str]) -> dict[str, Callable[[], Tensor]]:
    post = not norm_first
    out = {
        "the residual connection is missing (x + sublayer(...) is needed around every sublayer)":
            lambda: variant(ref, *args, post=post, residual="none"),
        ("post-norm computed although norm_first=True" if norm_first else
         "pre-norm computed although norm_first=False"): lambda: variant(ref, *args, post=not post),
        "statistics over the batch and positions (BatchNorm) instead of LayerNorm over each position's "
        "features": lambda: variant(ref, *args, post=post, batch_stats=True),
    }
    if norm_first:
        out["in pre-norm the residual is added after the norm (h = norm(x); h + sublayer(h)); "
            "it must add the un-normalised x: x + sublayer(norm(x))"] = \
            lambda: variant(ref, *args, post=post, residual="after_norm")
    for flag, name in mask_names.items():
        out[name] = lambda flag=flag: variant(ref, *args, post=post, **{flag: True})
    return out


def _decoder_variant(ref: nn.Module, y: Tensor, memory: Tensor, tgt_mask: Tensor | None,
                     memory_mask: Tensor | None, *, post: bool, residual: str = "add", batch_stats: bool = False,
                     ignore_tgt_mask: bool = False, ignore_memory_mask: bool = False, cross: str = "right",
                     memory_in_last_residual: bool = False) -> Tensor:
    n1, n2, n3 = [_batch_norm_of(n) if batch_stats else n for n in (ref.norm1, ref.norm2, ref.norm3)]
    tm = None if ignore_tgt_mask else tgt_mask
    mm = None if ignore_memory_mask else memory_mask
    cross_attn = {
        "right": lambda h: ref.cross_attn(h, memory, memory, mm),
        "kv_from_decoder_memory_mask": lambda h: ref.cross_attn(h, h, h, mm),
        "kv_from_decoder_tgt_mask": lambda h: ref.cross_attn(h, h, h, tm),
        "memory_as_query": lambda h: ref.cross_attn(memory, memory, h, mm),
        "memory_as_query_kv_decoder": lambda h: ref.cross_attn(memory, h, h, mm),
    }[cross]
    y = _add_norm(y, lambda h: ref.self_attn(h, h, h, tm), n1, post, residual)
    y = _add_norm(y, cross_attn, n2, post, residual)
    if memory_in_last_residual:
        return n3(memory + ref.ff(y)) if post else memory + ref.ff(n3(y))
    return _add_norm(y, ref.ff, n3, post, residual)


# ----------------------------------------------------------------------------- the layers, checked

def _compare_layer(what: str, found: Tensor, expected: Tensor, oracle: Tensor | None, oracle_name: str,
                   mistakes: dict[str, Callable[[], Tensor]]) -> None:
    __tracebackhide__ = True
    tol = {"atol": 1e-5, "rtol": 1e-4} if expected.dtype == torch.float64 else {"atol": 2e-5, "rtol": 2e-4}
    expect_close(what, found, expected, mistakes=mistakes, **tol)
    if oracle is not None:
        expect_close(f"{what}, against {oracle_name} with the same weights", found, oracle, mistakes=mistakes,
                           atol=1e-4, rtol=1e-3)


def _encoder_cases(seed: int) -> Iterator[tuple]:
    # d_model, heads, d_ff, batch, S, lengths (None: no mask), dtype
    yield 8, 2, 32, 2, 5, [5, 3], torch.float32
    yield 12, 3, 24, 1, 1, None, torch.float32
    yield 8, 4, 16, 3, 6, [6, 2, 0], torch.float64  # a fully padded sequence: zeros, not NaN


@check
def check_encoder_layer(EncoderLayer, seed: int = 0) -> None:
    """Build ``EncoderLayer(d_model, num_heads, d_ff, dropout, norm_first=...)`` for both norm
    placements, copy the reference's weights in, and compare ``layer(x, src_mask)`` (eval
    mode) with the reference and with ``nn.TransformerEncoderLayer`` holding the same
    weights: padding masks, length 1, a fully padded sequence, float64."""
    for norm_first in (False, True):
        for i, (d, h, f, b, s_len, lengths, dtype) in enumerate(_encoder_cases(seed)):
            s = seed * 100 + i + 10 * norm_first
            args = (d, h, f, 0.1)
            what = (f"EncoderLayer(d_model={d}, num_heads={h}, d_ff={f}, dropout=0.1, norm_first={norm_first}) "
                    f"on x {(b, s_len, d)}, {str(dtype)[6:]}, src_mask "
                    f"{'None' if lengths is None else f'for lengths {lengths}'}, eval mode (seed {seed})")
            ref = _seeded(lambda: reference.EncoderLayer(*args, norm_first=norm_first), s).to(dtype)
            x = random_tensor((b, s_len, d), s, dtype)
            mask = None if lengths is None else _lengths_mask(lengths, s_len)
            expected = ref(x, mask)
            oracle = None
            if lengths is None or min(lengths) > 0:  # PyTorch gives NaN for fully masked rows
                oracle = torch_layer_like(ref)(x, src_mask=torch_attn_mask(mask, b, h, s_len, s_len)).detach()
            mistakes = _layer_mistakes(ref, _encoder_variant, (x, mask), norm_first,
                                       {"ignore_mask": "the padding mask (src_mask) is ignored"})
            with forbidden(EncoderLayer, _LAYER_OPS, _BUILD_LAYER):
                layer = _make_candidate(EncoderLayer, (*args, norm_first), ref, what)
                found = call(layer, x, mask, what=what)
            _compare_layer(what, found, expected, oracle, "nn.TransformerEncoderLayer", mistakes)


def _decoder_cases(seed: int) -> Iterator[tuple]:
    # d_model, heads, d_ff, batch, T, S, target lengths, source lengths, dtype
    yield 8, 2, 32, 2, 5, 5, [5, 4], [5, 3], torch.float32  # T == S, so a swapped query still has the right shape
    yield 8, 2, 16, 2, 4, 7, None, [7, 2], torch.float32
    yield 12, 3, 24, 1, 1, 1, None, None, torch.float32
    yield 8, 4, 16, 3, 3, 6, [3, 2, 3], [6, 1, 0], torch.float64  # a fully padded source


@check
def check_decoder_layer(DecoderLayer, seed: int = 0) -> None:
    """Build ``DecoderLayer(d_model, num_heads, d_ff, dropout, norm_first=...)`` for both norm
    placements, copy the reference's weights in, and compare
    ``layer(y, memory, tgt_mask, memory_mask)`` (eval mode) with the reference and with
    ``nn.TransformerDecoderLayer`` holding the same weights: causal and padding masks,
    T != S, length 1, a fully padded source, float64."""
    for norm_first in (False, True):
        for i, (d, h, f, b, t_len, s_len, tgt_lengths, src_lengths, dtype) in enumerate(_decoder_cases(seed)):
            s = seed * 100 + i + 10 * norm_first
            args = (d, h, f, 0.1)
            what = (f"DecoderLayer(d_model={d}, num_heads={h}, d_ff={f}, dropout=0.1, norm_first={norm_first}) "
                    f"on y {(b, t_len, d)} and memory {(b, s_len, d)}, {str(dtype)[6:]}, causal tgt_mask"
                    f"{'' if tgt_lengths is None else f' and target lengths {tgt_lengths}'}, memory_mask "
                    f"{'None' if src_lengths is None else f'for source lengths {src_lengths}'}, "
                    f"eval mode (seed {seed})")
            ref = _seeded(lambda: reference.DecoderLayer(*args, norm_first=norm_first), s).to(dtype)
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
            mistakes = _layer_mistakes(ref, _decoder_variant, (y, memory, tgt_mask, memory_mask), norm_first, {
                "ignore_tgt_mask": "the causal mask (tgt_mask) is ignored in self-attention",
                "ignore_memory_mask": "the memory mask (memory_mask) is ignored in cross-attention",
                "memory_in_last_residual": "the last residual adds the encoder output (memory) "
                                           "instead of the decoder's own state",
            })
            post = not norm_first
            cross_mistakes = {
                "kv_from_decoder_memory_mask": "cross-attention takes its keys and values from the decoder "
                                               "(y) instead of the encoder output (memory)",
                "kv_from_decoder_tgt_mask": "cross-attention takes its keys and values from the decoder "
                                            "(y) instead of the encoder output (memory), with the target mask",
                "memory_as_query": "the encoder output is the query of cross-attention (and the decoder "
                                   "state its value); queries come from the decoder, keys and values "
                                   "from memory",
                "memory_as_query_kv_decoder": "the encoder output is the query of cross-attention and the "
                                              "decoder gives the keys and values: the roles are swapped",
            }
            for cross, name in cross_mistakes.items():
                mistakes[name] = lambda cross=cross: _decoder_variant(
                    ref, y, memory, tgt_mask, memory_mask, post=post, cross=cross)
            with forbidden(DecoderLayer, _LAYER_OPS, _BUILD_LAYER):
                layer = _make_candidate(DecoderLayer, (*args, norm_first), ref, what)
                found = call(layer, y, memory, tgt_mask, memory_mask, what=what)
            _compare_layer(what, found, expected, oracle, "nn.TransformerDecoderLayer", mistakes)

"""Wrong answers shared by the checks: attention and Transformer layers with one known mistake.

A check computes these variants only when the candidate differs from the reference, and
names the mistake whose output the candidate matches. The names are constants, so that the
checks' messages and the tests of the checks say the same thing.

Shape letters: B batch, H heads, Lq query length, Lk key length, D d_model, Dh = D // H.
Masks are boolean, True = may attend, broadcastable to (B, H, Lq, Lk).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from autograder import reference

# ----------------------------------------------------------------------------- attention

NO_SCALE = "scores not scaled by 1/sqrt(Dh)"
SCALE_BY_DH = "scores divided by Dh instead of sqrt(Dh)"
SCALE_BY_D_MODEL = "scores scaled by 1/sqrt(d_model) instead of 1/sqrt(Dh) (the head size)"
SOFTMAX_OVER_QUERIES = "softmax over the queries (dim -2) instead of over the keys (dim -1)"


def softmax_over(dim: int) -> str:
    """The mistake of a softmax over axis ``dim`` (counted from 0) of the scores, a batch or head
    axis: neither the keys' nor the queries' (``SOFTMAX_OVER_QUERIES``)."""
    return f"softmax over dim {dim} of the scores instead of over the keys (dim -1)"


def softmax_axis_mistakes(scores_ndim: int) -> dict[str, int]:
    """``{mistake: the axis its softmax runs over}`` for every wrong axis of scores (..., Lq, Lk)
    with ``scores_ndim`` axes: each leading axis, and the queries'."""
    return {**{softmax_over(a): a for a in range(scores_ndim - 2)}, SOFTMAX_OVER_QUERIES: -2}


def wrong_axes(ndim: int, right: int) -> list[int]:
    """Every axis of an ``ndim``-D tensor but ``right``, counted from 0 (as a shape is read)."""
    return [a for a in range(ndim) if a != right % ndim]


MASK_AFTER_SOFTMAX = (
    "mask applied after the softmax: masked weights were zeroed but the rest no longer sum "
    "to 1; fill the masked scores with -inf BEFORE the softmax"
)
MASK_INVERTED = (
    "mask polarity inverted: in this course True means 'may attend' (nn.MultiheadAttention's "
    "boolean masks mean the opposite, True = blocked)"
)
MASK_FILLED_WITH_ZERO = "masked scores set to 0 instead of -inf, so masked keys still get weight"
MASK_FILLED_FINITE = (
    "masked scores filled with a finite value such as -1e4 instead of -inf: masked keys "
    "still get weight (a fully masked row averages every value, and large scores leak)"
)
NAN_ROWS = "a fully masked row gives NaN (softmax of a row of -inf is 0/0): give it zero weights and a zero output"
NO_OUT_PROJ = "output projection out_proj not applied"
HEADS_WITHOUT_TRANSPOSE = "heads reshaped without the transpose (heads mixed with positions)"

MASK_MISTAKES = (MASK_AFTER_SOFTMAX, MASK_INVERTED, MASK_FILLED_WITH_ZERO, MASK_FILLED_FINITE, NAN_ROWS)


def wrong_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None,
    mistake: str,
    d_model: int | None = None,
    softmax_dim: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Scaled dot-product attention ``(output, weights)`` with ``mistake`` (one of the
    constants above, or a ``softmax_axis_mistakes`` key with its ``softmax_dim``) made;
    ``d_model`` for ``SCALE_BY_D_MODEL``."""
    raw = q @ k.transpose(-2, -1)  # (..., Lq, Lk)
    divisor = {NO_SCALE: 1.0, SCALE_BY_DH: q.size(-1), SCALE_BY_D_MODEL: math.sqrt(d_model or q.size(-1))}.get(
        mistake, math.sqrt(q.size(-1))
    )
    scores = raw / divisor
    dim = softmax_dim if softmax_dim is not None else -2 if mistake == SOFTMAX_OVER_QUERIES else -1
    if mask is None:
        weights = reference.softmax(scores, dim=dim)
    elif mistake == MASK_AFTER_SOFTMAX:
        weights = reference.softmax(scores, dim=-1).masked_fill(~mask, 0.0)
    elif mistake == MASK_INVERTED:
        weights = reference.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    elif mistake == MASK_FILLED_WITH_ZERO:
        weights = reference.softmax(scores.masked_fill(~mask, 0.0), dim=-1)
    elif mistake == MASK_FILLED_FINITE:
        weights = reference.softmax(scores.masked_fill(~mask, -1e4), dim=-1)
    elif mistake == NAN_ROWS:
        weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    else:
        weights = reference.softmax(scores.masked_fill(~mask, float("-inf")), dim=dim)
    return weights @ v, weights  # (..., Lq, Dv), (..., Lq, Lk)


def wrong_multi_head_attention(
    mha: reference.MultiHeadAttention,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None,
    mistake: str,
    softmax_dim: int | None = None,
) -> tuple[Tensor, Tensor]:
    """The reference module ``mha``'s computation ``(output, weights)`` with ``mistake`` made:
    an attention mistake (a softmax over ``softmax_dim``), ``NO_OUT_PROJ`` or ``HEADS_WITHOUT_TRANSPOSE``."""
    h = mha.num_heads

    def split(t: Tensor) -> Tensor:
        b, length, d = t.shape
        if mistake == HEADS_WITHOUT_TRANSPOSE:
            return t.reshape(b, h, length, d // h)  # (B, H, L, Dh), heads mixed with positions
        return reference.split_heads(t, h)  # (B, H, L, Dh)

    q, k, v = split(mha.q_proj(query)), split(mha.k_proj(key)), split(mha.v_proj(value))
    out, weights = wrong_attention(q, k, v, mask, mistake, query.size(-1), softmax_dim)  # (B, H, Lq, Dh)
    if mistake == HEADS_WITHOUT_TRANSPOSE:
        merged = out.reshape(query.size(0), query.size(1), -1)  # (B, Lq, D)
    else:
        merged = reference.merge_heads(out)  # (B, Lq, D)
    return (merged if mistake == NO_OUT_PROJ else mha.out_proj(merged)), weights


# ----------------------------------------------------------------------------- losses and layers

LOG_SOFTMAX_OVER = "log_softmax over dim {} instead of over the vocabulary (dim -1)"  # labs 8 and 9; {}: the axis

NO_RESIDUAL = "the residual connection is missing (x + sublayer(...) is needed around every sublayer)"
POST_NORM_INSTEAD = "post-norm computed although norm_first=True"
PRE_NORM_INSTEAD = "pre-norm computed although norm_first=False"
BATCH_STATISTICS = (
    "statistics over the batch and positions (BatchNorm) instead of LayerNorm over each position's features"
)
RESIDUAL_AFTER_NORM = (
    "in pre-norm the residual is added after the norm (h = norm(x); h + sublayer(h)); "
    "it must add the un-normalised x: x + sublayer(norm(x))"
)
SRC_MASK_IGNORED = "the padding mask (src_mask) is ignored"
TGT_MASK_IGNORED = "the causal mask (tgt_mask) is ignored in self-attention"
MEMORY_MASK_IGNORED = "the memory mask (memory_mask) is ignored in cross-attention"
MEMORY_IN_LAST_RESIDUAL = "the last residual adds the encoder output (memory) instead of the decoder's own state"
CROSS_KV_FROM_DECODER = (
    "cross-attention takes its keys and values from the decoder (y) instead of the encoder output (memory)"
)
CROSS_KV_FROM_DECODER_TGT_MASK = CROSS_KV_FROM_DECODER + ", with the target mask"
CROSS_MEMORY_AS_QUERY = (
    "the encoder output is the query of cross-attention (and the decoder state its value); "
    "queries come from the decoder, keys and values from memory"
)
CROSS_ROLES_SWAPPED = (
    "the encoder output is the query of cross-attention and the decoder gives the keys and "
    "values: the roles are swapped"
)
CROSS_WITHOUT_MASK = (
    "with no mask: cross-attention needs memory_mask too, so that no query attends to the source's padding"
)

# where a layer's dropout acts (training mode)
NO_DROPOUT = (
    "no dropout at all in training mode (nn.Dropout acts only while the module is training; "
    "F.dropout needs training=self.training)"
)
NO_ATTENTION_DROPOUT = (
    "dropout missing on the attention weights: build the attention as MultiHeadAttention(d_model, num_heads, dropout)"
)
NO_CROSS_ATTENTION_DROPOUT = (
    "dropout missing on the cross-attention weights: build cross_attn as "
    "MultiHeadAttention(d_model, num_heads, dropout)"
)
NO_FFN_DROPOUT = (
    "no dropout on the feed-forward hidden units: build the FFN as PositionwiseFeedForward(d_model, d_ff, dropout)"
)
NO_SUBLAYER_DROPOUT = (
    "no dropout on the sublayer output: each sublayer's output is dropped before the residual "
    "add, x + dropout(sublayer(x))"
)
DROPOUT_AFTER_RESIDUAL = (
    "dropout after the residual add, dropout(x + sublayer(x)), which drops the residual "
    "path too: drop the sublayer's output only, x + dropout(sublayer(x))"
)
DROPOUT_AFTER_NORM = "dropout after the norm, dropout(norm(x + sublayer(x))): it goes inside, on sublayer(x)"
DROPOUT_ON_SUBLAYER_INPUT = "dropout on the sublayer's input instead of its output"
FFN_DROPOUT_NOT_APPLIED = (
    "dropout is not applied to the hidden units: store nn.Dropout(dropout) as self.dropout "
    "and apply it between the ReLU and linear2"
)
DROPOUT_IN_FFN_ONLY_AT_OUTPUT = (
    "dropout after the second linear layer instead of on the hidden units (between the ReLU and linear2)"
)
DROPOUT_ON_FFN_INPUT = "dropout on the FFN's input instead of its hidden units (between the ReLU and linear2)"

Layer = reference.EncoderLayer | reference.DecoderLayer  # the reference layer whose mistakes are made here


@contextlib.contextmanager
def _without_dropout(*modules: nn.Module) -> Iterator[None]:
    """``modules`` in eval mode for the block (their dropout off), then as they were."""
    states = [m.training for m in modules]
    for m in modules:
        m.eval()
    try:
        yield
    finally:
        for m, state in zip(modules, states, strict=True):
            m.train(state)


def batch_stats_norm(x: Tensor, weight: Tensor, bias: Tensor, eps: float = 1e-5) -> Tensor:
    """The BatchNorm mistake: per-feature statistics over every axis but the last."""
    dims = tuple(range(x.dim() - 1))
    mean = x.mean(dim=dims, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=dims, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def _add_norm(
    x: Tensor,
    sublayer: Callable[[Tensor], Tensor],
    norm: Callable[[Tensor], Tensor],
    post: bool,
    residual: str,
    drop: Callable[[Tensor], Tensor],
    where: str,
) -> Tensor:
    """One sublayer with its residual, norm and dropout. ``residual``: "add", "none" or
    "after_norm" (pre-norm: h = norm(x); h + sublayer(h)); ``where`` dropout acts: "output"
    (right), "none", "after_residual", "after_norm", "input"."""

    def on(place: str) -> Callable[[Tensor], Tensor]:
        return drop if where == place else (lambda t: t)

    if post:
        out = on("output")(sublayer(on("input")(x)))
        total = out if residual == "none" else x + out
        return on("after_norm")(norm(on("after_residual")(total)))
    h = norm(x)
    out = on("output")(sublayer(on("input")(h)))
    shortcut: dict[str, Tensor | int] = {"add": x, "none": 0, "after_norm": h}
    return on("after_residual")(shortcut[residual] + out)


def layer_variant(
    ref: Layer,
    y: Tensor,
    memory: Tensor | None,
    tgt_mask: Tensor | None,
    memory_mask: Tensor | None,
    *,
    post: bool,
    residual: str = "add",
    batch_stats: bool = False,
    ignore_tgt_mask: bool = False,
    ignore_memory_mask: bool = False,
    cross: str = "right",
    memory_in_last_residual: bool = False,
    p: float = 0.0,
    drop_where: str = "output",
    attention_dropout: bool = True,
    cross_attention_dropout: bool = True,
    ffn_dropout: bool = True,
) -> Tensor:
    """A reference ``EncoderLayer`` (``memory`` None: ``tgt_mask`` is its src_mask) or
    ``DecoderLayer`` with one or more mistakes. In training mode the sublayer outputs get
    ``F.dropout(p)`` where ``drop_where`` says (under ``dropout.fixed_dropout`` its masks are
    the candidate's)."""
    decoder = memory is not None
    dec = cast(reference.DecoderLayer, ref)  # its decoder parts, read only when memory is given
    own_norms = [ref.norm1, ref.norm2, dec.norm3] if decoder else [ref.norm1, ref.norm2]
    norms: list[Callable[[Tensor], Tensor]] = [batch_stats_norm_of(n) if batch_stats else n for n in own_norms]
    tm = None if ignore_tgt_mask else tgt_mask
    mm = None if ignore_memory_mask else memory_mask
    off: list[nn.Module] = [] if attention_dropout else [ref.self_attn, *([dec.cross_attn] if decoder else [])]
    off += [] if cross_attention_dropout or not decoder else [dec.cross_attn]
    off += [] if ffn_dropout else [ref.ff]

    def drop(t: Tensor) -> Tensor:
        return F.dropout(t, p) if p > 0 and ref.training else t

    blocks: list[Callable[[Tensor], Tensor]] = [lambda h: ref.self_attn(h, h, h, tm)]
    if decoder:
        blocks.append(
            {
                "right": lambda h: dec.cross_attn(h, memory, memory, mm),
                "kv_from_decoder": lambda h: dec.cross_attn(h, h, h, mm),
                "kv_from_decoder_tgt_mask": lambda h: dec.cross_attn(h, h, h, tm),
                "memory_as_query": lambda h: dec.cross_attn(memory, memory, h, mm),
                "roles_swapped": lambda h: dec.cross_attn(memory, h, h, mm),
            }[cross]
        )
    with _without_dropout(*off):
        for block, norm in zip(blocks, norms, strict=False):
            y = _add_norm(y, block, norm, post, residual, drop, drop_where)
        if memory_in_last_residual:
            return norms[-1](memory + ref.ff(y)) if post else memory + ref.ff(norms[-1](y))
        return _add_norm(y, ref.ff, norms[-1], post, residual, drop, drop_where)


NORM_OVER = "mean and variance over dim {} instead of over the last, each position's D features (dim -1)"


def norm_over(x: Tensor, weight: Tensor, bias: Tensor, eps: float, dim: int) -> Tensor:
    """The ``NORM_OVER`` mistake: LayerNorm's statistics over axis ``dim`` instead of the last."""
    mean = x.mean(dim, keepdim=True)
    return (x - mean) / torch.sqrt(((x - mean) ** 2).mean(dim, keepdim=True) + eps) * weight + bias


def batch_stats_norm_of(ln: reference.LayerNorm) -> Callable[[Tensor], Tensor]:
    return lambda x: batch_stats_norm(x, ln.weight, ln.bias, ln.eps)


def layer_mistakes(ref: Layer, args: tuple, norm_first: bool, flags: dict[str, dict]) -> dict[str, Callable]:
    """``{name: function giving the wrong output}``: the mistakes every layer can make, and
    ``flags`` (``{name: keywords of layer_variant}``) of its own. ``args``: (y, memory,
    tgt_mask, memory_mask) as ``layer_variant`` takes them."""
    post = not norm_first
    own: dict[str, dict] = {
        NO_RESIDUAL: dict(residual="none"),
        POST_NORM_INSTEAD if norm_first else PRE_NORM_INSTEAD: dict(post=not post),
        BATCH_STATISTICS: dict(batch_stats=True),
    }
    if norm_first:
        own[RESIDUAL_AFTER_NORM] = dict(residual="after_norm")
    own.update(flags)
    return {name: (lambda kw=kw: layer_variant(ref, *args, **{"post": post, **kw})) for name, kw in own.items()}


def dropout_mistakes(ref: Layer, args: tuple, norm_first: bool, p: float) -> dict[str, Callable]:
    """Where a layer in training mode can misplace or forget its dropout."""
    flags: dict[str, dict] = {
        NO_DROPOUT: dict(drop_where="none", attention_dropout=False, ffn_dropout=False),
        NO_ATTENTION_DROPOUT: dict(attention_dropout=False),
        NO_FFN_DROPOUT: dict(ffn_dropout=False),
        NO_SUBLAYER_DROPOUT: dict(drop_where="none"),
        DROPOUT_AFTER_RESIDUAL: dict(drop_where="after_residual"),
        DROPOUT_ON_SUBLAYER_INPUT: dict(drop_where="input"),
    }
    if not norm_first:
        flags[DROPOUT_AFTER_NORM] = dict(drop_where="after_norm")
    if args[1] is not None:  # a decoder layer
        flags[NO_CROSS_ATTENTION_DROPOUT] = dict(cross_attention_dropout=False)
    post = not norm_first
    return {name: (lambda kw=kw: layer_variant(ref, *args, post=post, p=p, **kw)) for name, kw in flags.items()}

"""Tests of the checks of lab 07-transformer-block: right answers pass, known wrong
answers fail with a message that names their mistake, forbidden shortcuts are caught."""

from __future__ import annotations

import inspect
import sys
import textwrap

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from autograder import reference
from autograder.checks import ForbiddenCall
from autograder.checks.kit import variants
from autograder.checks.lab07_transformer_block.sublayers import check_layer_norm, check_positionwise_feed_forward
from autograder.checks.lab07_transformer_block.transformer_block import (
    check_decoder_layer,
    check_encoder_layer,
)
from autograder.reference.norms import layer_norm as reference_layer_norm


def fresh_copy(obj):
    """The reference's source compiled anew, as a student who copied it would have it:
    not the object the checks block."""
    namespace = dict(vars(sys.modules[obj.__module__]), __name__="copied_reference")
    source = "from __future__ import annotations\n" + textwrap.dedent(inspect.getsource(obj))
    exec(compile(source, f"<copy of {obj.__qualname__}>", "exec"), namespace)  # our own source
    return namespace[obj.__name__]


# ----------------------------------------------------------------------------- layer_norm


def ln_var_mean(x, weight, bias, eps=1e-5):
    var, mean = torch.var_mean(x, dim=-1, keepdim=True, unbiased=False)
    return (x - mean) * torch.rsqrt(var + eps) * weight + bias


def ln_in_float64(x, weight, bias, eps=1e-5):
    x64 = x.double()
    centred = x64 - x64.sum(-1, keepdim=True) / x.size(-1)
    var = torch.einsum("...d,...d->...", centred, centred)[..., None] / x.size(-1)
    return (centred / (var + eps).sqrt() * weight.double() + bias.double()).to(x.dtype)


def ln_unbiased(x, weight, bias, eps=1e-5):
    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + eps) * weight + bias


def ln_eps_outside(x, weight, bias, eps=1e-5):
    return (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True, unbiased=False) + eps) * weight + bias


def ln_batch_stats(x, weight, bias, eps=1e-5):
    dims = tuple(range(x.dim() - 1))
    mean, var = x.mean(dims, keepdim=True), x.var(dims, keepdim=True, unbiased=False)
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def ln_no_eps(x, weight, bias, eps=1e-5):
    return (x - x.mean(-1, keepdim=True)) / x.std(-1, keepdim=True, unbiased=False) * weight + bias


def ln_no_centring(x, weight, bias, eps=1e-5):
    return x / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + eps) * weight + bias


def ln_over_variance(x, weight, bias, eps=1e-5):
    return (x - x.mean(-1, keepdim=True)) / (x.var(-1, keepdim=True, unbiased=False) + eps) * weight + bias


def ln_no_affine(x, weight, bias, eps=1e-5):
    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + eps)


def ln_affine_swapped(x, weight, bias, eps=1e-5):
    return ln_no_affine(x, weight, bias, eps) * bias + weight


def ln_torch(x, weight, bias, eps=1e-5):
    return F.layer_norm(x, x.shape[-1:], weight, bias, eps)


def ln_stub(x, weight, bias, eps=1e-5):
    raise NotImplementedError()


@pytest.mark.parametrize("candidate", [fresh_copy(reference_layer_norm), ln_var_mean, ln_in_float64])
def test_layer_norm_right_answers_pass(candidate):
    """Do the reference, a var_mean/rsqrt version and a float64 einsum version pass?"""
    for seed in (0, 1, 2):
        check_layer_norm(candidate, seed=seed)


@pytest.mark.parametrize(
    "candidate, words",
    [
        (ln_unbiased, ["unbiased variance"]),
        (ln_eps_outside, ["eps outside the square root"]),
        (ln_batch_stats, ["BatchNorm"]),
        (ln_no_eps, ["eps left out", "NaN"]),
        (ln_no_centring, ["the mean is not subtracted"]),
        (ln_over_variance, ["divided by the variance"]),
        (ln_no_affine, ["weight and bias not applied"]),
        (ln_affine_swapped, ["weight and bias swapped"]),
    ],
)
def test_layer_norm_wrong_answers_named(candidate, words, fails):
    """Does each known mistake of layer_norm fail with a message that names it?"""
    fails(check_layer_norm, candidate, said=["check_layer_norm failed", *words])


@pytest.mark.parametrize(
    "shape, axis",
    [((2, 3, 8), 0), ((2, 3, 8), 1), ((4, 16), 0), ((2, 5, 8), 0), ((2, 5, 8), 1), ((3, 4, 6), 0), ((3, 4, 6), 1)],
)
def test_layer_norm_names_statistics_over_each_wrong_axis(shape, axis, fails):
    """Do a mean and variance over each axis but the last (right on the other inputs) fail, naming the
    axis used? (On a 2-D input, axis 0 is BatchNorm's statistics, named as such.)"""

    def layer_norm(x, weight, bias, eps=1e-5):
        dim = axis if tuple(x.shape) == shape else -1
        var, mean = torch.var_mean(x, dim=dim, keepdim=True, unbiased=False)
        return (x - mean) / torch.sqrt(var + eps) * weight + bias

    words = (
        "statistics over the batch axis (BatchNorm)"
        if len(shape) == 2
        else f"mean and variance over dim {axis} instead of over the last"
    )
    fails(check_layer_norm, layer_norm, mistake=words)


def test_layer_norm_forbids_pytorch_op(fails):
    """Is F.layer_norm refused with a message saying what to build?"""
    fails(check_layer_norm, ln_torch, said=["torch.nn.functional.layer_norm", "Build layer_norm"], error=ForbiddenCall)


def ln_group_norm(x, weight, bias, eps=1e-5):
    rows = x.reshape(-1, 1, x.size(-1))  # (N, 1, D): one group holding the D features
    return F.group_norm(rows, 1, eps=eps).reshape(x.shape) * weight + bias


def test_layer_norm_forbids_group_norm_shortcut(fails):
    """Is group_norm over a reshaped x, the same computation, refused too?"""
    fails(check_layer_norm, ln_group_norm, said="group_norm", error=ForbiddenCall)


def test_layer_norm_forbids_reference(fails):
    """Is the reference's own layer_norm refused?"""

    def lazy(x, weight, bias, eps=1e-5):
        return reference_layer_norm(x, weight, bias, eps)

    fails(check_layer_norm, lazy, said="autograder.reference.norms.layer_norm", error=ForbiddenCall)


def test_layer_norm_stub_raises_not_implemented(fails):
    """Does an untouched stub raise NotImplementedError, unchanged?"""
    fails(check_layer_norm, ln_stub, error=NotImplementedError)


# ----------------------------------------------------------------------------- feed-forward


def make_ffn(mode="right"):
    class PositionwiseFeedForward(nn.Module):
        def __init__(self, d_model, d_ff, dropout=0.0):
            super().__init__()
            self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
            self.p = dropout

        def forward(self, x):
            if mode == "einsum":  # a 1x1 convolution written out
                h = torch.einsum("bld,fd->blf", x, self.linear1.weight) + self.linear1.bias
                h = F.dropout(h.clamp(min=0), self.p, self.training)
                return torch.einsum("blf,df->bld", h, self.linear2.weight) + self.linear2.bias
            h = self.linear1(x)
            if mode != "no_relu":
                h = F.relu(h)
            if mode != "no_dropout":
                h = F.dropout(h, self.p, self.training)
            out = self.linear2(h)
            return F.relu(out) if mode == "relu_twice" else out

    return PositionwiseFeedForward


class FfnFromReference(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.inner = reference.PositionwiseFeedForward(d_model, d_ff, dropout)

    def forward(self, x):
        return self.inner(x)


class FfnStub(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        raise NotImplementedError()


@pytest.mark.parametrize("candidate", [fresh_copy(reference.PositionwiseFeedForward), make_ffn(), make_ffn("einsum")])
def test_ffn_right_answers_pass(candidate):
    """Do the reference, a functional version and an einsum (1x1 convolution) version pass?"""
    for seed in (0, 1):
        check_positionwise_feed_forward(candidate, seed=seed)


@pytest.mark.parametrize(
    "mode, words",
    [
        ("no_relu", ["no ReLU between the two linear layers"]),
        ("relu_twice", ["ReLU after the second linear layer as well"]),
        ("no_dropout", [variants.FFN_DROPOUT_NOT_APPLIED]),
    ],
)
def test_ffn_wrong_answers_named(mode, words, fails):
    """Does each known mistake of the FFN fail with a message that names it?"""
    fails(check_positionwise_feed_forward, make_ffn(mode), said=words)


def test_ffn_forbids_reference(fails):
    """Is wrapping the reference's FFN refused?"""
    fails(check_positionwise_feed_forward, FfnFromReference, said="PositionwiseFeedForward", error=ForbiddenCall)


def test_ffn_stub_raises_not_implemented(fails):
    """Does an untouched stub raise NotImplementedError, unchanged?"""
    fails(check_positionwise_feed_forward, FfnStub, error=NotImplementedError)


# ----------------------------------------------------------------------------- layers, written independently


def _stats_norm(norm, x, batch_stats):
    if not batch_stats:
        return norm(x)
    dims = tuple(range(x.dim() - 1))
    mean, var = x.mean(dims, keepdim=True), x.var(dims, keepdim=True, unbiased=False)
    return (x - mean) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias


def _sublayer(x, fn, norm, pre, residual, batch_stats, dropout, drop="output"):
    """One sublayer written out; ``drop`` says where its dropout acts: "output" (right),
    "none", "after_residual", "functional" (right, by F.dropout)."""

    def out_of(h):
        if drop == "functional":
            return F.dropout(fn(h), dropout.p, dropout.training)
        return dropout(fn(h)) if drop == "output" else fn(h)

    after = dropout if drop == "after_residual" else (lambda t: t)
    if not pre:
        out = out_of(x)
        return _stats_norm(norm, after(out if residual == "none" else x + out), batch_stats)
    h = _stats_norm(norm, x, batch_stats)
    base = {"add": x, "none": 0.0, "after_norm": h}[residual]
    return after(base + out_of(h))


class EinsumAttention(nn.Module):
    """Multi-head attention written with einsum and a -inf fill, the reference's names."""

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.h, self.p = num_heads, dropout
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, query, key, value, mask=None):
        b, lq, d = query.shape
        q = self.q_proj(query).view(b, lq, self.h, d // self.h)  # (B, Lq, H, Dh)
        k = self.k_proj(key).view(b, key.size(1), self.h, d // self.h)  # (B, Lk, H, Dh)
        v = self.v_proj(value).view(b, value.size(1), self.h, d // self.h)  # (B, Lk, H, Dh)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / (d // self.h) ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = F.dropout(torch.nan_to_num(scores.softmax(-1)), self.p, self.training)  # fully masked: zeros
        return self.out_proj(torch.einsum("bhqk,bkhd->bqhd", weights, v).reshape(b, lq, d))


def make_encoder_layer(
    residual="add",
    placement="right",
    batch_stats=False,
    ignore_mask=False,
    attention=reference.MultiHeadAttention,
    drop="output",
    attention_dropout=True,
    ffn_dropout=True,
):
    class EncoderLayer(nn.Module):
        def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=False):
            super().__init__()
            self.norm_first = norm_first
            self.self_attn = attention(d_model, num_heads, dropout if attention_dropout else 0.0)
            self.ff = reference.PositionwiseFeedForward(d_model, d_ff, dropout if ffn_dropout else 0.0)
            self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
            self.dropout = nn.Dropout(dropout)  # one module for both sublayers: the same thing

        def forward(self, x, src_mask=None):
            pre = {"right": self.norm_first, "always_post": False, "always_pre": True}[placement]
            mask = None if ignore_mask else src_mask
            x = _sublayer(
                x, lambda h: self.self_attn(h, h, h, mask), self.norm1, pre, residual, batch_stats, self.dropout, drop
            )
            return _sublayer(x, self.ff, self.norm2, pre, residual, batch_stats, self.dropout, drop)

    return EncoderLayer


def make_decoder_layer(
    residual="add",
    cross="right",
    ignore_tgt_mask=False,
    ignore_memory_mask=False,
    memory_in_last_residual=False,
    drop="output",
    cross_dropout=True,
    cross_output_dropout=True,
):
    class DecoderLayer(nn.Module):
        def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=False):
            super().__init__()
            self.norm_first = norm_first
            self.self_attn = reference.MultiHeadAttention(d_model, num_heads, dropout)
            self.cross_attn = reference.MultiHeadAttention(d_model, num_heads, dropout if cross_dropout else 0.0)
            self.ff = reference.PositionwiseFeedForward(d_model, d_ff, dropout)
            self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model) for _ in range(3))
            self.dropout1, self.dropout2, self.dropout3 = (nn.Dropout(dropout) for _ in range(3))

        def forward(self, y, memory, tgt_mask=None, memory_mask=None):
            pre = self.norm_first
            tm = None if ignore_tgt_mask else tgt_mask
            mm = None if ignore_memory_mask else memory_mask

            def cross_block(h):
                if cross == "kv_from_decoder":
                    return self.cross_attn(h, h, h, mm)
                if cross == "memory_as_query":  # the circulating pseudocode: MSA(enc, enc, dec)
                    return self.cross_attn(memory, memory, h, mm)
                return self.cross_attn(h, memory, memory, mm)

            y = _sublayer(
                y, lambda h: self.self_attn(h, h, h, tm), self.norm1, pre, residual, False, self.dropout1, drop
            )
            y = _sublayer(
                y,
                cross_block,
                self.norm2,
                pre,
                residual,
                False,
                self.dropout2,
                drop if cross_output_dropout else "none",
            )
            if memory_in_last_residual:
                return self.norm3(memory + self.ff(y))
            return _sublayer(y, self.ff, self.norm3, pre, residual, False, self.dropout3, drop)

    return DecoderLayer


class EncoderFromTorch(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.inner = nn.TransformerEncoderLayer(
            d_model, num_heads, d_ff, dropout, batch_first=True, norm_first=norm_first
        )

    def forward(self, x, src_mask=None):
        return self.inner(x)


class DecoderFromReference(reference.DecoderLayer):
    pass


class EncoderStub(nn.Module):
    """What the released lab holds: both bodies replaced by ``raise NotImplementedError()``."""

    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        raise NotImplementedError()

    def forward(self, x, src_mask=None):
        raise NotImplementedError()


# ----------------------------------------------------------------------------- encoder layer


@pytest.mark.parametrize(
    "candidate",
    [
        fresh_copy(reference.EncoderLayer),
        make_encoder_layer(),
        make_encoder_layer(attention=EinsumAttention),
        make_encoder_layer(drop="functional"),
    ],
)
def test_encoder_layer_right_answers_pass(candidate):
    """Do the reference, an independent version built on nn.LayerNorm (one nn.Dropout for both
    sublayers), one with einsum attention of its own and one with F.dropout pass, both norm
    placements, in eval and training mode?"""
    for seed in (0, 1):
        check_encoder_layer(candidate, seed=seed)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"residual": "none"}, ["residual connection is missing"]),
        ({"residual": "after_norm"}, ["residual is added after the norm"]),
        ({"placement": "always_post"}, ["post-norm computed although norm_first=True"]),
        ({"placement": "always_pre"}, ["pre-norm computed although norm_first=False"]),
        ({"batch_stats": True}, ["BatchNorm"]),
        ({"ignore_mask": True}, ["padding mask (src_mask) is ignored"]),
    ],
)
def test_encoder_layer_wrong_answers_named(kwargs, words, fails):
    """Does each known mistake of the encoder layer fail with a message that names it?"""
    fails(check_encoder_layer, make_encoder_layer(**kwargs), said=["check_encoder_layer failed", *words])


def test_encoder_layer_forbids_pytorch_layer(fails):
    """Is wrapping nn.TransformerEncoderLayer refused?"""
    fails(check_encoder_layer, EncoderFromTorch, said="TransformerEncoderLayer", error=ForbiddenCall)


def test_encoder_layer_stub_raises_not_implemented(fails):
    """Does an untouched stub raise NotImplementedError, unchanged?"""
    fails(check_encoder_layer, EncoderStub, error=NotImplementedError)


# ----------------------------------------------------------------------------- decoder layer


@pytest.mark.parametrize("candidate", [fresh_copy(reference.DecoderLayer), make_decoder_layer()])
def test_decoder_layer_right_answers_pass(candidate):
    """Do the reference and an independent version built on nn.LayerNorm pass, both norm placements?"""
    for seed in (0, 1):
        check_decoder_layer(candidate, seed=seed)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"cross": "kv_from_decoder"}, ["keys and values from the decoder"]),
        ({"cross": "memory_as_query"}, ["encoder output is the query of cross-attention"]),
        ({"ignore_tgt_mask": True}, ["causal mask (tgt_mask) is ignored"]),
        ({"ignore_memory_mask": True}, ["memory mask (memory_mask) is ignored"]),
        ({"residual": "after_norm"}, ["residual is added after the norm"]),
        ({"memory_in_last_residual": True}, ["last residual adds the encoder output"]),
    ],
)
def test_decoder_layer_wrong_answers_named(kwargs, words, fails):
    """Does each known mistake of the decoder layer fail with a message that names it?"""
    fails(check_decoder_layer, make_decoder_layer(**kwargs), said=["check_decoder_layer failed", *words])


class DecoderFromTorch(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.inner = nn.TransformerDecoderLayer(
            d_model, num_heads, d_ff, dropout, batch_first=True, norm_first=norm_first
        )

    def forward(self, y, memory, tgt_mask=None, memory_mask=None):
        return self.inner(y, memory)


def test_decoder_layer_forbids_pytorch_layer(fails):
    """Is wrapping nn.TransformerDecoderLayer refused?"""
    fails(check_decoder_layer, DecoderFromTorch, said="TransformerDecoderLayer", error=ForbiddenCall)


def test_decoder_layer_forbids_reference_layer(fails):
    """Is subclassing the reference's DecoderLayer refused?"""
    fails(check_decoder_layer, DecoderFromReference, said="DecoderLayer", error=ForbiddenCall)


class FfnHiddenWhileTraining(nn.Module):
    """Right in eval mode; in training mode returns the hidden units (B, L, F)."""

    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        h = self.dropout(torch.relu(self.linear1(x)))
        return h if self.training else self.linear2(h)


def test_ffn_training_output_is_validated_before_it_is_compared(fails):
    """Does a wrong-shaped output in training mode fail the check (naming the shape) instead
    of crashing it?"""
    fails(check_positionwise_feed_forward, FfnHiddenWhileTraining, said="shape")


@pytest.mark.parametrize("cross", ["memory_as_query", "kv_from_decoder"])
def test_decoder_layer_cross_attention_without_a_mask_is_named(cross, fails):
    """Is cross-attention written with no mask at all (as in some pseudocode), its roles
    also swapped, named as such?"""
    fails(check_decoder_layer, make_decoder_layer(cross=cross, ignore_memory_mask=True), mistake="no mask")


@pytest.mark.parametrize(
    "kwargs, mistake",
    [
        (dict(drop="none", attention_dropout=False, ffn_dropout=False), variants.NO_DROPOUT),
        (dict(drop="none"), variants.NO_SUBLAYER_DROPOUT),
        (dict(drop="after_residual"), variants.DROPOUT_AFTER_RESIDUAL),
        (dict(attention_dropout=False), variants.NO_ATTENTION_DROPOUT),
        (dict(ffn_dropout=False), variants.NO_FFN_DROPOUT),
        (dict(attention=EinsumAttention, attention_dropout=False), variants.NO_ATTENTION_DROPOUT),
    ],
)
def test_encoder_layer_missing_or_misplaced_dropout_is_named(kwargs, mistake, fails):
    """Does an encoder layer right in eval mode but with its dropout missing or in the wrong
    place fail in training mode, naming where?"""
    fails(check_encoder_layer, make_encoder_layer(**kwargs), mistake=mistake, said="training mode")


@pytest.mark.parametrize(
    "kwargs, mistake",
    [
        (dict(drop="none"), variants.NO_SUBLAYER_DROPOUT),
        (dict(drop="after_residual"), variants.DROPOUT_AFTER_RESIDUAL),
        (dict(cross_dropout=False), variants.NO_CROSS_ATTENTION_DROPOUT),
    ],
)
def test_decoder_layer_missing_or_misplaced_dropout_is_named(kwargs, mistake, fails):
    """Does a decoder layer whose dropout is missing or misplaced fail in training mode, naming it?"""
    fails(check_decoder_layer, make_decoder_layer(**kwargs), mistake=mistake, said="training mode")


def test_decoder_layer_dropout_missing_on_one_sublayer_says_where(fails):
    """Is a decoder layer that skips dropout on the cross-attention output only told where
    its dropout acted and where it should have?"""
    fails(
        check_decoder_layer,
        make_decoder_layer(cross_output_dropout=False),
        said=["the sublayer outputs (2x)", "expected:", "the sublayer outputs (3x)"],
    )


def test_ffn_dropout_at_the_output_is_named(fails):
    """Is an FFN that drops its output instead of its hidden units named?"""

    class FfnDropsOutput(nn.Module):
        def __init__(self, d_model, d_ff, dropout=0.0):
            super().__init__()
            self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
            self.dropout = nn.Dropout(dropout)

        def forward(self, x):
            return self.dropout(self.linear2(torch.relu(self.linear1(x))))

    fails(check_positionwise_feed_forward, FfnDropsOutput, mistake=variants.DROPOUT_IN_FFN_ONLY_AT_OUTPUT)

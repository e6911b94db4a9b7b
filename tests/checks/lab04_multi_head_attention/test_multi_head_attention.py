"""Tests of the checks of lab 04-multi-head-attention: the reference and valid
alternatives pass, known mistakes fail with a message that names them, forbidden calls
(nn.MultiheadAttention, the reference's module and functions) are caught."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from autograder import reference
from autograder.checks import ForbiddenCall, check_merge_heads, check_multi_head_attention, check_split_heads
from autograder.checks.kit import variants
from tests.checks.student_copies import as_student

# ----------------------------------------------------------------------------- split / merge


def test_reference_split_and_merge_pass():
    """Do the reference's split_heads and merge_heads pass their own checks?"""
    for seed in (0, 1, 2):
        check_split_heads(as_student(reference.split_heads), seed=seed)
        check_merge_heads(as_student(reference.merge_heads), seed=seed)


def test_alternative_split_heads_pass():
    """Do unflatten + permute, and einops-free rearrangement by stacking chunks, pass?"""
    check_split_heads(lambda x, num_heads: x.unflatten(-1, (num_heads, -1)).permute(0, 2, 1, 3))
    check_split_heads(lambda x, num_heads: torch.stack(x.chunk(num_heads, dim=-1), dim=1))


def test_alternative_merge_heads_pass():
    """Do permute + flatten, and concatenating the heads with torch.cat, pass?"""
    check_merge_heads(lambda x: x.permute(0, 2, 1, 3).flatten(2))
    check_merge_heads(lambda x: torch.cat(x.unbind(1), dim=-1))


@pytest.mark.parametrize(
    "wrong, words",
    [
        (lambda x, num_heads: x.view(x.shape[0], num_heads, x.shape[1], -1), "without the transpose"),
        (lambda x, num_heads: x.view(x.shape[0], x.shape[1], num_heads, -1), "transpose(1, 2) missing"),
        (lambda x, num_heads: x.view(x.shape[0], x.shape[1], -1, num_heads).permute(0, 3, 1, 2), "in turn"),
    ],
)
def test_wrong_split_heads_fails_naming_the_mistake(wrong, words, fails):
    """Is each known mistake of split_heads rejected with its name?"""
    fails(check_split_heads, wrong, mistake=words)


@pytest.mark.parametrize(
    "wrong, words",
    [
        (lambda x: x.reshape(x.shape[0], x.shape[2], -1), "merged without the transpose"),
        (lambda x: x.permute(0, 2, 3, 1).reshape(x.shape[0], x.shape[2], -1), "interleaved"),
        (lambda x: x.transpose(1, 2), "not concatenated"),
    ],
)
def test_wrong_merge_heads_fails_naming_the_mistake(wrong, words, fails):
    """Is each known mistake of merge_heads rejected with its name?"""
    fails(check_merge_heads, wrong, mistake=words)


def test_merge_heads_view_after_transpose_fails_with_the_error(fails):
    """Does .view on a transposed (non-contiguous) tensor fail with PyTorch's own error shown?"""
    fails(check_merge_heads, lambda x: x.transpose(1, 2).view(x.shape[0], x.shape[2], -1), match="RuntimeError")


def test_split_and_merge_using_the_reference_are_forbidden(fails):
    """Are split_heads and merge_heads that call the reference caught?"""
    fails(check_split_heads, lambda x, num_heads: reference.split_heads(x, num_heads), error=ForbiddenCall)
    fails(check_merge_heads, lambda x: reference.merge_heads(x), error=ForbiddenCall)


def test_head_stubs_raise_not_implemented(fails):
    """Do untouched stubs reach nbgrader as NotImplementedError?"""

    def stub(*args):
        raise NotImplementedError()

    for check in (check_split_heads, check_merge_heads):
        fails(check, stub, error=NotImplementedError)


# ----------------------------------------------------------------------------- MultiHeadAttention


class _Base(nn.Module):
    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.q_proj, self.k_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.v_proj, self.out_proj = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.attn_weights = None


class Written(_Base):
    """The reference's math, written out as a student would (the reference class itself
    is forbidden inside the check)."""

    scale_by = "Dh"
    softmax_dim = -1
    project = True
    invert = False
    transpose = True
    softmax = staticmethod(reference.softmax)

    def split(self, t):
        if self.transpose:
            return reference.split_heads(t, self.num_heads)
        return t.reshape(t.shape[0], self.num_heads, t.shape[1], -1)

    def forward(self, query, key, value, attn_mask=None):
        q, k, v = self.split(self.q_proj(query)), self.split(self.k_proj(key)), self.split(self.v_proj(value))
        size = q.size(-1) if self.scale_by == "Dh" else 1 if self.scale_by == "none" else query.size(-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(size)
        if attn_mask is not None:
            scores = scores.masked_fill(attn_mask if self.invert else ~attn_mask, float("-inf"))
        self.attn_weights = self.softmax(scores, dim=self.softmax_dim)
        out = self.attn_weights @ v
        merged = reference.merge_heads(out) if self.transpose else out.reshape(query.shape[0], query.shape[1], -1)
        return self.out_proj(merged) if self.project else merged


class WithChapter2(_Base):
    """Projections, split, the reference's scaled_dot_product_attention (allowed), merge."""

    def forward(self, query, key, value, attn_mask=None):
        h = self.num_heads
        q, k, v = (
            reference.split_heads(p(t), h) for p, t in ((self.q_proj, query), (self.k_proj, key), (self.v_proj, value))
        )
        out, self.attn_weights = reference.scaled_dot_product_attention(q, k, v, attn_mask)
        return self.out_proj(reference.merge_heads(out))


class PerHeadEinsum(_Base):
    """A loop over heads that slices the projection weights, with einsum: same maths."""

    def forward(self, query, key, value, attn_mask=None):
        h, d = self.num_heads, query.size(-1)
        dh = d // h
        q, k, v = self.q_proj(query), self.k_proj(key), self.v_proj(value)
        heads, weights = [], []
        for i in range(h):
            cols = slice(i * dh, (i + 1) * dh)
            scores = torch.einsum("bqd,bkd->bqk", q[..., cols], k[..., cols]) / dh**0.5
            if attn_mask is not None:
                m = attn_mask.expand(q.shape[0], h, q.shape[1], k.shape[1])[:, i]
                scores = scores.masked_fill(~m, float("-inf"))
            w = reference.softmax(scores, dim=-1)
            weights.append(w)
            heads.append(torch.einsum("bqk,bkd->bqd", w, v[..., cols]))
        self.attn_weights = torch.stack(weights, dim=1)
        return self.out_proj(torch.cat(heads, dim=-1))


@pytest.mark.parametrize("module", [Written, WithChapter2, PerHeadEinsum])
def test_valid_multi_head_attention_passes(module):
    """Do the reference's math written out, a version on chapter 2's attention and a
    per-head einsum loop pass?"""
    for seed in (0, 1):
        check_multi_head_attention(module, seed=seed)


def _wrong(**changes):
    return type("Wrong", (Written,), changes)


@pytest.mark.parametrize(
    "module, words",
    [
        (_wrong(scale_by="none"), variants.NO_SCALE),
        (_wrong(scale_by="D"), variants.SCALE_BY_D_MODEL),
        (_wrong(softmax_dim=-2), variants.SOFTMAX_OVER_QUERIES),
        (_wrong(softmax_dim=0), variants.softmax_over(0)),  # the batch axis of the scores (B, H, Lq, Lk)
        (_wrong(softmax_dim=1), variants.softmax_over(1)),  # the heads
        (_wrong(project=False), variants.NO_OUT_PROJ),
        (_wrong(transpose=False), variants.HEADS_WITHOUT_TRANSPOSE),
        (_wrong(invert=True), variants.MASK_INVERTED),
    ],
)
def test_wrong_multi_head_attention_fails_naming_the_mistake(module, words, fails):
    """Is each known mistake of multi-head attention rejected with its name?"""
    fails(check_multi_head_attention, module, mistake=words)


def test_torch_softmax_fails_on_a_fully_padded_sequence(fails):
    """Does a version whose fully masked rows give NaN fail, saying so?"""
    module = _wrong(softmax=staticmethod(lambda s, dim: torch.softmax(s, dim=dim)))
    fails(check_multi_head_attention, module, said="fully padded", match="NaN")


def test_missing_attn_weights_fails(fails):
    """Is a module that keeps no attn_weights rejected, saying what to store?"""

    class NoWeights(WithChapter2):
        def forward(self, *args, **kwargs):
            out = super().forward(*args, **kwargs)
            self.attn_weights = None
            return out

    fails(check_multi_head_attention, NoWeights, match="self.attn_weights")


def test_wrong_parameter_names_fail(fails):
    """Is a module with a packed in_proj (not PyTorch's per-projection names) rejected?"""

    class Packed(nn.Module):
        def __init__(self, d_model, num_heads):
            super().__init__()
            self.in_proj = nn.Linear(d_model, 3 * d_model)
            self.out_proj = nn.Linear(d_model, d_model)

        def forward(self, query, key, value, attn_mask=None):
            return query

    fails(check_multi_head_attention, Packed, match="missing")


def test_wrapping_torch_multihead_attention_is_forbidden(fails):
    """Is a module that calls nn.MultiheadAttention caught?"""

    class Wrapper(_Base):
        def forward(self, query, key, value, attn_mask=None):
            mha = nn.MultiheadAttention(query.size(-1), self.num_heads, batch_first=True)
            out, self.attn_weights = mha(query, key, value)
            return out

    fails(check_multi_head_attention, Wrapper, error=ForbiddenCall, match="PyTorch's own")


def test_wrapping_the_reference_module_is_forbidden(fails):
    """Is a module built on the reference's MultiHeadAttention caught?"""

    class Wrapper(_Base):
        def forward(self, query, key, value, attn_mask=None):
            ref = reference.MultiHeadAttention(query.size(-1), self.num_heads)
            ref.load_state_dict(self.state_dict())
            out = ref(query, key, value, attn_mask)
            self.attn_weights = ref.attn_weights
            return out

    fails(check_multi_head_attention, Wrapper, error=ForbiddenCall, match="reference")


def test_multi_head_attention_stub_raises_not_implemented(fails):
    """Does an untouched stub (its __init__ raises) reach nbgrader as NotImplementedError?"""

    class Stub(nn.Module):
        def __init__(self, d_model, num_heads):
            super().__init__()
            raise NotImplementedError()

    fails(check_multi_head_attention, Stub, error=NotImplementedError)


def test_multi_head_attention_check_leaves_the_global_random_state():
    """Does running the check leave torch's global random state as it found it, so a
    notebook's later random numbers do not depend on whether its tests ran?"""
    torch.manual_seed(123)
    before = torch.get_rng_state()
    check_multi_head_attention(WithChapter2)
    assert torch.equal(torch.get_rng_state(), before)

"""Checks for lab 04-multi-head-attention (chapter 4).

Shape letters: B batch, L length, Lq query length, Lk key length, D d_model, H heads,
Dh = D // H. Masks are boolean, True = may attend, broadcastable to (B, H, Lq, Lk).
The candidate module is compared with the reference with the same weights, and with
PyTorch's ``nn.MultiheadAttention`` with those weights packed into ``in_proj_weight``
(its boolean masks mean True = blocked, so they are inverted here).
"""

from __future__ import annotations

from typing import Any, cast

import torch
from torch import Tensor

from autograder import reference
from autograder.checks.kit import variants
from autograder.checks.kit.core import check, random_tensor
from autograder.checks.kit.expect import call, dtype_name, expect_close, expect_shape, fail
from autograder.checks.kit.sentinels import forbidden
from autograder.checks.kit.weights import load_reference_weights
from autograder.reference.oracles.interop import torch_mha_from

_SPLIT_OPS = ["autograder.reference.split_heads"]
_MERGE_OPS = ["autograder.reference.merge_heads"]
_MHA_OPS = [
    "torch.nn.MultiheadAttention.forward",
    "torch.nn.functional.multi_head_attention_forward",
    "autograder.reference.MultiHeadAttention",
]
_BUILD_HEADS = "Build it with .reshape (or .view) and .transpose."
_BUILD_MHA = (
    "Build it from the four nn.Linear projections, your split_heads/merge_heads and "
    "scaled dot-product attention (autograder.reference.scaled_dot_product_attention may be used)."
)


@check
def check_split_heads(split_heads, seed: int = 0) -> None:
    """Compare ``split_heads(x, num_heads)`` with the reference: several shapes, one head,
    one position, Dh = 1, float64."""
    cases = [
        ((2, 5, 8), 2, torch.float32),
        ((1, 1, 6), 3, torch.float32),
        ((3, 4, 12), 4, torch.float64),
        ((2, 3, 4), 1, torch.float32),
        ((1, 2, 4), 4, torch.float32),
    ]
    for i, ((b, length, d), h, dtype) in enumerate(cases):
        _check_split_case(split_heads, seed, random_tensor((b, length, d), seed * 100 + i, dtype), h)


def _check_split_case(split_heads, seed: int, x: torch.Tensor, h: int) -> None:
    __tracebackhide__ = True
    b, length, d = x.shape
    dh = d // h
    what = f"split_heads(x, num_heads={h}) for x of shape {(b, length, d)}, {dtype_name(x.dtype)} (seed {seed})"
    expected = reference.split_heads(x, h)
    with forbidden(split_heads, _SPLIT_OPS, _BUILD_HEADS):
        found = call(split_heads, x, h, what=what)
    expect_shape(
        what,
        found,
        (b, h, length, dh),
        mistakes={
            "transpose(1, 2) missing: the shape is still (B, L, H, Dh)": (b, length, h, dh),
            "heads not split off: (B, L, D) returned": (b, length, d),
        },
    )
    expect_close(
        what,
        found,
        expected,
        mistakes={
            "reshaped straight to (B, H, L, Dh) without the transpose, which mixes heads "
            "with positions (reshape to (B, L, H, Dh) first, then transpose(1, 2))": lambda: x.reshape(
                b, h, length, dh
            ),
            "features dealt out to the heads in turn (view(B, L, Dh, H)) instead of contiguous blocks of Dh": lambda: (
                x.reshape(b, length, dh, h).permute(0, 3, 1, 2)
            ),
        },
        hint="head h owns features h*Dh to (h+1)*Dh - 1 of every position.",
    )


@check
def check_merge_heads(merge_heads, seed: int = 0) -> None:
    """Compare ``merge_heads(x)`` with the reference: several shapes, one head, one
    position, float64, and the round trip ``merge_heads(split_heads(x)) == x``."""
    cases = [
        ((2, 2, 5, 4), torch.float32),
        ((1, 3, 1, 2), torch.float32),
        ((3, 4, 4, 3), torch.float64),
        ((2, 1, 3, 4), torch.float32),
        ((1, 4, 2, 1), torch.float32),
    ]
    for i, ((b, h, length, dh), dtype) in enumerate(cases):
        _check_merge_case(merge_heads, seed, random_tensor((b, h, length, dh), seed * 100 + i, dtype))
    x = random_tensor((2, 3, 12), seed * 100 + 50)
    what = f"merge_heads(split_heads(x, 4)) for x of shape (2, 3, 12) (seed {seed})"
    with forbidden(merge_heads, _MERGE_OPS, _BUILD_HEADS):
        found = call(merge_heads, reference.split_heads(x, 4), what=what)
    expect_close(what, found, x, hint="merge_heads must undo split_heads exactly.")


def _check_merge_case(merge_heads, seed: int, x: torch.Tensor) -> None:
    __tracebackhide__ = True
    b, h, length, dh = x.shape
    what = f"merge_heads(x) for x of shape {(b, h, length, dh)}, {dtype_name(x.dtype)} (seed {seed})"
    expected = reference.merge_heads(x)
    with forbidden(merge_heads, _MERGE_OPS, _BUILD_HEADS):
        found = call(merge_heads, x, what=what)
    expect_shape(
        what,
        found,
        (b, length, h * dh),
        mistakes={
            "the heads were not concatenated: (B, L, H, Dh) returned": (b, length, h, dh),
            "heads merged with positions: (B, H * L, Dh)": (b, h * length, dh),
        },
    )
    expect_close(
        what,
        found,
        expected,
        mistakes={
            "merged without the transpose: reshape(B, L, D) straight from (B, H, L, Dh) mixes "
            "heads with positions (transpose(1, 2) first)": lambda: x.reshape(b, length, h * dh),
            "features interleaved across heads (permute(0, 2, 3, 1)) instead of concatenating whole heads": lambda: (
                x.permute(0, 2, 3, 1).reshape(b, length, h * dh)
            ),
        },
        hint="the output is Concat(head_1, ..., head_H) along the features, position by position.",
    )


def _mha_cases(seed: int) -> list[dict]:
    g = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([6, 3])  # keys kept per batch element
    padding = torch.arange(6)[None, :] < lengths[:, None]  # (B, Lk)
    fully_padded = padding.clone()
    fully_padded[1] = False  # the second sequence has no key left at all
    return [
        dict(d=8, h=2, b=2, lq=5, lk=5, mask=None, kind="self-attention", dtype=torch.float32),
        dict(
            d=12,
            h=4,
            b=2,
            lq=3,
            lk=6,
            mask=padding[:, None, None, :],
            kind="cross-attention, padding mask (B, 1, 1, Lk)",
            dtype=torch.float32,
            torch_kpm=~padding,
        ),
        dict(
            d=6,
            h=3,
            b=1,
            lq=4,
            lk=4,
            mask=torch.ones(4, 4, dtype=torch.bool).tril(),
            kind="causal mask (L, L)",
            dtype=torch.float64,
            torch_attn_mask=~torch.ones(4, 4, dtype=torch.bool).tril(),
        ),
        dict(d=4, h=1, b=2, lq=1, lk=3, mask=None, kind="one head, one query", dtype=torch.float32),
        dict(
            d=8,
            h=4,
            b=2,
            lq=2,
            lk=6,
            mask=fully_padded[:, None, None, :],
            kind="a fully padded sequence (its rows must give zero weights, not NaN)",
            dtype=torch.float32,
        ),
        dict(
            d=16,
            h=4,
            b=3,
            lq=int(torch.randint(1, 7, (1,), generator=g)),
            lk=int(torch.randint(1, 7, (1,), generator=g)),
            mask=None,
            kind="random lengths",
            dtype=torch.float64,
        ),
    ]


@check
def check_multi_head_attention(MultiHeadAttention, seed: int = 0) -> None:
    """Instantiate ``MultiHeadAttention(d_model, num_heads)``, copy the reference's weights
    in, and compare outputs and ``attn_weights`` with the reference (self- and
    cross-attention, padding and causal masks, a fully padded sequence, one head, float64),
    and outputs with ``nn.MultiheadAttention`` holding the same weights. The global random
    state is left as it was (the modules' initialisations draw from a forked one)."""
    with torch.random.fork_rng(devices=[]):
        for i, case in enumerate(_mha_cases(seed)):
            _check_mha_case(MultiHeadAttention, seed, i, case)


def _mha_mistakes(ref, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None) -> dict[str, Any]:
    """Mistake -> the (output, attention weights) of multi-head attention computed with that mistake."""
    names = [variants.NO_SCALE, variants.SCALE_BY_D_MODEL, variants.NO_OUT_PROJ, variants.HEADS_WITHOUT_TRANSPOSE]
    if mask is not None:
        names.append(variants.MASK_INVERTED)
    wrong = {name: variants.wrong_multi_head_attention(ref, query, key, value, mask, name) for name in names}
    wrong.update(
        {
            name: variants.wrong_multi_head_attention(ref, query, key, value, mask, name, softmax_dim=dim)
            for name, dim in variants.softmax_axis_mistakes(4).items()
        }
    )  # scores (B, H, Lq, Lk)
    return wrong


def _expect_attn_weights(what: str, module, expected: Tensor, wrong: dict[str, Any]) -> None:
    """The weights the candidate kept in ``attn_weights`` after its forward pass, against the reference's."""
    __tracebackhide__ = True
    found = getattr(module, "attn_weights", None)
    if found is None:
        fail(
            f"{what}: attn_weights",
            f"a tensor of shape {tuple(expected.shape)} kept after forward",
            "None or no attribute",
            hint="store the attention weights: self.attn_weights = weights",
        )
    expect_close(
        f"{what}: attn_weights",
        found,
        expected,
        atol=1e-5,
        rtol=1e-4,
        mistakes={name: w for name, (_, w) in wrong.items()},
    )


def _check_mha_case(MultiHeadAttention, seed: int, i: int, case: dict) -> None:
    __tracebackhide__ = True
    d, h, b, lq, lk, mask, dtype = (case[n] for n in ("d", "h", "b", "lq", "lk", "mask", "dtype"))
    what = (
        f"MultiHeadAttention(d_model={d}, num_heads={h}) on {case['kind']}: query {(b, lq, d)}, "
        f"key/value {(b, lk, d)}, {dtype_name(dtype)} (seed {seed})"
    )
    torch.manual_seed(seed * 100 + i)
    ref = reference.MultiHeadAttention(d, h).to(dtype).eval()
    query = random_tensor((b, lq, d), seed * 100 + 3 * i, dtype)
    key = query if case["kind"] == "self-attention" else random_tensor((b, lk, d), seed * 100 + 3 * i + 1, dtype)
    value = key if case["kind"] == "self-attention" else random_tensor((b, lk, d), seed * 100 + 3 * i + 2, dtype)
    with torch.no_grad():
        expected = ref(query, key, value, mask)
        expected_weights = cast(Tensor, ref.attn_weights)  # set by the forward pass above
        torch_out = None
        if "fully padded" not in case["kind"]:
            torch_out, _ = torch_mha_from(ref, h).eval()(
                query,
                key,
                value,
                key_padding_mask=case.get("torch_kpm"),
                attn_mask=case.get("torch_attn_mask"),
                need_weights=False,
            )
        wrong = _mha_mistakes(ref, query, key, value, mask)
    with forbidden(MultiHeadAttention, _MHA_OPS, _BUILD_MHA):
        module = call(MultiHeadAttention, d, h, what=f"MultiHeadAttention(d_model={d}, num_heads={h})")
        load_reference_weights(module, ref, f"MultiHeadAttention(d_model={d}, num_heads={h})")
        module = module.to(dtype).eval()
        with torch.no_grad():
            found = call(module, query, key, value, mask, what=what)
    expect_close(
        f"{what}: output",
        found,
        expected,
        atol=1e-5,
        rtol=1e-4,
        mistakes={name: out for name, (out, _) in wrong.items()},
        hint="a fully masked row must give zero weights: softmax by "
        "autograder.reference.softmax or scaled_dot_product_attention, not torch.softmax."
        if "fully padded" in case["kind"]
        else None,
    )
    _expect_attn_weights(what, module, expected_weights, wrong)
    if torch_out is not None:
        expect_close(
            f"{what}: output against nn.MultiheadAttention with the same weights",
            found,
            torch_out,
            atol=1e-5,
            rtol=1e-4,
        )

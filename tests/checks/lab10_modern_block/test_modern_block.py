"""The checks of lab 10-modern-block: right answers pass (both pairings, loops and vectorised
versions), known wrong ones fail by name, on both sides of the grading boundary (conftest.py)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from autograder.checks import ForbiddenCall
from autograder.checks.lab10_modern_block.kv_cache import check_attend_with_cache
from autograder.checks.lab10_modern_block.modern_block import check_apply_rope, check_rms_norm, check_swiglu
from autograder.checks.lab10_modern_block.tiles_and_perplexity import check_perplexity, check_tiled_attention
from autograder.reference import modern, rope, tiled
from tests.checks.student_copies import as_student


def _stub(*args, **kwargs):
    raise NotImplementedError()


# ----------------------------------------------------------------------------- apply_rope


def make_rope(
    base_fixed=None, exponent=2.0, sign=1.0, swap=False, pairing_swapped=False, ignore_positions=False, shift=0
):
    """A vectorised RoPE as a student might write it; each option makes one known mistake."""

    def apply_rope(x, positions, base=10000.0, pairing="adjacent"):
        d = x.size(-1)
        b = base if base_fixed is None else base_fixed
        w = 1.0 / b ** (exponent * torch.arange(d // 2, dtype=torch.float64) / d)
        pos = torch.arange(x.size(-2)) if ignore_positions else positions + shift
        t = pos.double()[..., None] * w
        if t.dim() == 3:
            t = t[:, None]
        c, s = t.cos().to(x.dtype), (sign * t.sin()).to(x.dtype)
        if swap:
            c, s = s, c
        halves = (pairing == "halves") != pairing_swapped
        if halves:
            a, bb = x[..., : d // 2], x[..., d // 2 :]
            return torch.cat([a * c - bb * s, a * s + bb * c], -1)
        a, bb = x[..., 0::2], x[..., 1::2]
        return torch.stack([a * c - bb * s, a * s + bb * c], -1).flatten(-2)

    return apply_rope


def rope_loop(x, positions, base=10000.0, pairing="adjacent"):
    """Pair by pair, in a Python loop over the frequencies."""
    d = x.size(-1)
    out = x.clone()
    pos = positions.to(x.dtype)
    if pos.dim() == 2:
        pos = pos[:, None]
    for i in range(d // 2):
        j, k = (2 * i, 2 * i + 1) if pairing == "adjacent" else (i, i + d // 2)
        theta = pos * base ** (-2 * i / d)
        out[..., j] = x[..., j] * torch.cos(theta) - x[..., k] * torch.sin(theta)
        out[..., k] = x[..., j] * torch.sin(theta) + x[..., k] * torch.cos(theta)
    return out


def rope_complex(x, positions, base=10000.0, pairing="adjacent"):
    """Meta's Llama way: adjacent pairs as complex numbers times e^(i theta); halves through the permutation."""
    d = x.size(-1)
    perm = torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])
    if pairing == "halves":
        return rope_complex(x[..., torch.argsort(perm)], positions, base)[..., perm]
    theta = positions.double()[..., None] * base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    if theta.dim() == 3:
        theta = theta[:, None]
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(theta), theta)).flatten(-2).to(x.dtype)


@pytest.mark.parametrize("candidate", [make_rope(), rope_loop, rope_complex, as_student(rope.apply_rope)])
def test_rope_right_answers_pass(candidate):
    """Do a vectorised RoPE, a loop over pairs, complex numbers (halves by permutation) and the reference pass?"""
    for seed in (0, 1):
        check_apply_rope(candidate, seed=seed)


@pytest.mark.parametrize(
    "options,mistake",
    [
        (dict(base_fixed=10000.0), "the base argument ignored"),
        (dict(exponent=1.0), "written as i/Dh"),
        (dict(exponent=4.0), "giving 4i/Dh"),
        (dict(sign=-1.0), "rotated backwards"),
        (dict(swap=True), "sin and cos swapped"),
        (dict(pairing_swapped=True), "pairs taken as halves"),
        (dict(ignore_positions=True), "positions ignored"),
        (dict(shift=1), "positions off by one (position + 1)"),
    ],
)
def test_rope_wrong_answers_fail_by_name(options, mistake, fails):
    """Does each known mistake of RoPE fail with its name?"""
    fails(check_apply_rope, make_rope(**options), mistake=mistake)


def test_rope_halves_mistake_named(fails):
    """Is an answer right for 'adjacent' but adjacent for 'halves' too told which pairing it missed?"""
    right = make_rope()
    fails(
        check_apply_rope,
        lambda x, p, base=10000.0, pairing="adjacent": right(x, p, base, "adjacent"),
        mistake="pairs taken as adjacent",
    )


def test_rope_forbidden_and_stub(fails):
    """Is the reference caught, and an untouched stub let through as NotImplementedError?"""
    fails(check_apply_rope, lambda *a: rope.apply_rope(*a), error=ForbiddenCall, said="apply_rope")
    fails(check_apply_rope, _stub, error=NotImplementedError)


# ----------------------------------------------------------------------------- rms_norm


def make_rms(center=False, eps_out=False, no_eps=False, no_root=False, norm=False, weight=True, fixed_eps=None):
    def rms_norm(x, w, eps=1e-6):
        e = eps if fixed_eps is None else fixed_eps
        if center:
            x = x - x.mean(-1, keepdim=True)
        ms = (x * x).sum(-1, keepdim=True) if norm else (x * x).mean(-1, keepdim=True)
        if no_eps:
            y = x / ms.sqrt()
        elif eps_out:
            y = x / (ms.sqrt() + e)
        elif no_root:
            y = x / (ms + e)
        else:
            y = x / torch.sqrt(ms + e)
        return y * w if weight else y

    return rms_norm


def rms_torch_module_free(x, w, eps=1e-6):
    """The root mean square through torch.linalg.vector_norm, in float64, cast back."""
    x64 = x.double()
    rms = torch.linalg.vector_norm(x64, dim=-1, keepdim=True) / math.sqrt(x.size(-1))
    return (x64 * torch.rsqrt(rms * rms + eps) * w.double()).to(x.dtype)


@pytest.mark.parametrize("candidate", [make_rms(), rms_torch_module_free, as_student(modern.rms_norm)])
def test_rms_right_answers_pass(candidate):
    """Do a mean of squares, vector_norm in float64, and the reference pass?"""
    for seed in (0, 1):
        check_rms_norm(candidate, seed=seed)


@pytest.mark.parametrize(
    "options,mistake",
    [
        (dict(center=True), "the mean subtracted first"),
        (dict(eps_out=True), "eps outside the square root"),
        (dict(no_eps=True), "eps left out"),
        (dict(no_root=True), "divided by the mean square"),
        (dict(norm=True), "divided by the norm"),
        (dict(weight=False), "weight not applied"),
        (dict(fixed_eps=1e-6), "the eps argument ignored"),
        (dict(fixed_eps=1e-5), "the eps argument ignored"),
    ],
)
def test_rms_wrong_answers_fail_by_name(options, mistake, fails):
    """Does each known mistake of RMSNorm fail with its name?"""
    fails(check_rms_norm, make_rms(**options), mistake=mistake)


def test_rms_pytorch_is_forbidden(fails):
    """Are F.rms_norm and nn.RMSNorm caught, and a stub let through?"""
    fails(check_rms_norm, lambda x, w, eps: F.rms_norm(x, (x.size(-1),), w, eps), error=ForbiddenCall, said="rms_norm")
    fails(check_rms_norm, _stub, error=NotImplementedError)


# ----------------------------------------------------------------------------- swiglu


def make_swiglu(act="silu", swap=False, gate=True, after=False):
    def swiglu(x, w_gate, w_up, w_down):
        a, b = x @ w_gate, x @ w_up
        if swap:
            a, b = b, a
        f = {"silu": lambda z: z * torch.sigmoid(z), "relu": torch.relu, "sigmoid": torch.sigmoid, "gelu": F.gelu}[act]
        if after:
            return f(a * b) @ w_down
        return (f(a) * b) @ w_down if gate else f(a) @ w_down

    return swiglu


def swiglu_einsum(x, w_gate, w_up, w_down):
    return torch.einsum(
        "...f,fd->...d",
        F.silu(torch.einsum("...d,df->...f", x, w_gate)) * torch.einsum("...d,df->...f", x, w_up),
        w_down,
    )


@pytest.mark.parametrize("candidate", [make_swiglu(), swiglu_einsum, as_student(modern.swiglu)])
def test_swiglu_right_answers_pass(candidate):
    """Do z * sigmoid(z), einsum with F.silu, and the reference pass?"""
    for seed in (0, 1):
        check_swiglu(candidate, seed=seed)


@pytest.mark.parametrize(
    "options,mistake",
    [
        (dict(swap=True), "gate and up swapped"),
        (dict(act="relu"), "ReLU instead of SiLU"),
        (dict(act="sigmoid"), "that is GLU"),
        (dict(act="gelu"), "GELU instead of SiLU"),
        (dict(gate=False), "no gate"),
        (dict(after=True), "SiLU applied after the product"),
    ],
)
def test_swiglu_wrong_answers_fail_by_name(options, mistake, fails):
    """Does each known mistake of SwiGLU fail with its name?"""
    fails(check_swiglu, make_swiglu(**options), mistake=mistake)


def test_swiglu_forbidden_and_stub(fails):
    """Is the reference caught, and a stub let through?"""
    fails(check_swiglu, lambda *a: modern.swiglu(*a), error=ForbiddenCall, said="swiglu")
    fails(check_swiglu, _stub, error=NotImplementedError)


# ----------------------------------------------------------------------------- attend_with_cache


def make_cache(
    start=None,
    rotate_values=False,
    tile=False,
    rerotate=False,
    rotate_keys=True,
    causal=True,
    scale=True,
    store_unrotated=False,
):
    """A vectorised step with the course's own RoPE written out; each option makes one known mistake."""
    rot = make_rope()

    def attend_with_cache(q, k, v, cache_k, cache_v, base=10000.0):
        past, new = cache_k.size(2), q.size(2)
        first = past if start is None else (start if isinstance(start, int) else past + start[0])
        pos = torch.arange(first, first + new)
        k_rot = rot(k, pos, base) if rotate_keys else k
        old = rot(cache_k, torch.arange(past), base) if rerotate else cache_k
        keys = torch.cat([old, k_rot], 2)
        values = torch.cat([cache_v, rot(v, pos, base) if rotate_values else v], 2)
        reps = q.size(1) // k.size(1)
        kk = keys.repeat(1, reps, 1, 1) if tile else keys.repeat_interleave(reps, 1)
        vv = values.repeat(1, reps, 1, 1) if tile else values.repeat_interleave(reps, 1)
        s = rot(q, pos, base) @ kk.transpose(-2, -1) / (math.sqrt(q.size(-1)) if scale else 1.0)
        if causal:
            s = s.masked_fill(~torch.ones(new, past + new, dtype=torch.bool).tril(past), float("-inf"))
        out = torch.softmax(s, -1) @ vv
        return out, (torch.cat([cache_k, k], 2) if store_unrotated else keys), values

    return attend_with_cache


def cache_loop(q, k, v, cache_k, cache_v, base=10000.0):
    """Head by head and query by query, with the reference's chapter-2 attention and the loop RoPE."""
    past, new = cache_k.size(2), q.size(2)
    pos = torch.arange(past, past + new)
    keys = torch.cat([cache_k, rope_loop(k, pos, base)], 2)
    values = torch.cat([cache_v, v], 2)
    qr = rope_loop(q, pos, base)
    out = torch.zeros_like(q)
    group = q.size(1) // k.size(1)
    from autograder.reference import scaled_dot_product_attention

    for h in range(q.size(1)):
        for t in range(new):
            kh, vh = keys[:, h // group, : past + t + 1], values[:, h // group, : past + t + 1]
            out[:, h, t] = scaled_dot_product_attention(qr[:, h, t : t + 1], kh, vh)[0][:, 0]
    return out, keys, values


@pytest.mark.parametrize("candidate", [make_cache(), cache_loop])
def test_cache_right_answers_pass(candidate):
    """Do a vectorised step and a loop over heads and queries pass?"""
    for seed in (0, 1):
        check_attend_with_cache(candidate, seed=seed)


@pytest.mark.parametrize(
    "options,mistake",
    [
        (dict(rotate_values=True), "values rotated as well"),
        (dict(tile=True), "tiled with repeat"),
        (dict(rotate_keys=False), "keys not rotated"),
        (dict(causal=False), "no causal mask among the new tokens"),
        (dict(scale=False), "scores not scaled by 1/sqrt(Dh)"),
        (dict(start=0), "placed at positions 0 .. Lq - 1"),
        (dict(start=(1,)), "placed at P + 1"),
        (dict(start=(-1,)), "placed at P - 1"),
        (dict(rerotate=True), "the cached keys rotated again"),
        (dict(store_unrotated=True), "the cache keeps the keys before rotation"),
    ],
)
def test_cache_wrong_answers_fail_by_name(options, mistake, fails):
    """Does each known mistake of attention with a cache fail with its name?"""
    fails(check_attend_with_cache, make_cache(**options), mistake=mistake)


def test_cache_sdpa_forbidden_and_stub(fails):
    """Is PyTorch's SDPA with enable_gqa caught, and a stub let through?"""
    rot = make_rope()

    def with_sdpa(q, k, v, ck, cv, base=10000.0):
        pos = torch.arange(ck.size(2), ck.size(2) + q.size(2))
        keys, values = torch.cat([ck, rot(k, pos, base)], 2), torch.cat([cv, v], 2)
        mask = torch.ones(q.size(2), keys.size(2), dtype=torch.bool).tril(ck.size(2))
        return F.scaled_dot_product_attention(rot(q, pos, base), keys, values, mask, enable_gqa=True), keys, values

    fails(check_attend_with_cache, with_sdpa, error=ForbiddenCall, said="scaled_dot_product_attention")
    fails(check_attend_with_cache, _stub, error=NotImplementedError)


# ----------------------------------------------------------------------------- tiled_attention


def make_tiled(
    rescale_sum=True, rescale_acc=True, scale=True, drop_last=False, use_mask=True, nan_rows=False, max_from=None
):
    def tiled_attention(q, k, v, attn_mask=None, tile=64):
        m = torch.full(q.shape[:-1], float("-inf") if max_from is None else max_from, dtype=q.dtype)
        total = torch.zeros(q.shape[:-1], dtype=q.dtype)
        acc = torch.zeros(*q.shape[:-1], v.size(-1), dtype=q.dtype)
        n = k.size(-2)
        stop = n - n % tile if drop_last and n % tile else n
        for s0 in range(0, stop, tile):
            s = q @ k[..., s0 : s0 + tile, :].transpose(-2, -1) / (math.sqrt(q.size(-1)) if scale else 1.0)
            if attn_mask is not None and use_mask:
                s = s.masked_fill(~attn_mask[..., s0 : s0 + tile], float("-inf"))
            new_m = torch.maximum(m, s.amax(-1))
            safe = new_m if nan_rows else torch.where(torch.isinf(new_m), torch.zeros_like(new_m), new_m)
            r = torch.exp(m - safe)
            p = torch.exp(s - safe[..., None])
            total = (total * r if rescale_sum else total) + p.sum(-1)
            acc = (acc * r[..., None] if rescale_acc else acc) + p @ v[..., s0 : s0 + tile, :]
            m = new_m
        return acc / (total[..., None] if nan_rows else total.clamp_min(torch.finfo(q.dtype).tiny)[..., None])

    return tiled_attention


def tiled_lse(q, k, v, attn_mask=None, tile=64):
    """A running log-sum-exp instead of a running maximum and sum: the output stays normalised."""
    lse = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype)
    out = torch.zeros(*q.shape[:-1], v.size(-1), dtype=q.dtype)
    for s0 in range(0, k.size(-2), tile):
        s = torch.einsum("bhqd,bhkd->bhqk", q, k[..., s0 : s0 + tile, :]) / q.size(-1) ** 0.5
        if attn_mask is not None:
            s = s.masked_fill(~attn_mask[..., s0 : s0 + tile], float("-inf"))
        new = torch.logaddexp(lse, torch.logsumexp(s, -1))
        safe = torch.where(torch.isinf(new), torch.zeros_like(new), new)
        out = out * torch.exp(lse - safe)[..., None] + torch.exp(s - safe[..., None]) @ v[..., s0 : s0 + tile, :]
        lse = new
    return out


def tiled_blocks(q, k, v, attn_mask=None, tile=64):
    """Blocks of queries as well as tiles of keys (FlashAttention's two loops), computed in float64."""
    mask = None if attn_mask is None else attn_mask.expand(*q.shape[:-1], k.size(-2))
    rows = []
    for r0 in range(0, q.size(-2), tile):
        qb = q[..., r0 : r0 + tile, :].double()
        m = torch.full(qb.shape[:-1], float("-inf"), dtype=torch.float64)
        total = torch.zeros_like(m)
        acc = torch.zeros(*qb.shape[:-1], v.size(-1), dtype=torch.float64)
        for s0 in range(0, k.size(-2), tile):
            s = qb @ k[..., s0 : s0 + tile, :].double().transpose(-2, -1) / math.sqrt(q.size(-1))
            if mask is not None:
                s = s.masked_fill(~mask[..., r0 : r0 + tile, s0 : s0 + tile], float("-inf"))
            new_m = torch.maximum(m, s.amax(-1))
            shift = new_m.nan_to_num(neginf=0.0)
            p = torch.exp(s - shift[..., None])
            r = torch.exp(m - shift)
            total = total * r + p.sum(-1)
            acc = acc * r[..., None] + p @ v[..., s0 : s0 + tile, :].double()
            m = new_m
        rows.append(acc / total.clamp_min(1e-300)[..., None])
    return torch.cat(rows, -2).to(q.dtype)


def tiled_broadcast(q, k, v, attn_mask=None, tile=64):
    """Each tile's scores by broadcasting q against the tile's keys and summing over Dh (a
    tile-sized tensor Dh times larger than the tile's scores, still far below the whole matrix)."""
    m = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype)
    total, acc = torch.zeros_like(m), torch.zeros(*q.shape[:-1], v.size(-1), dtype=q.dtype)
    for s0 in range(0, k.size(-2), tile):
        s = (q[..., :, None, :] * k[..., None, s0 : s0 + tile, :]).sum(-1) / math.sqrt(q.size(-1))
        if attn_mask is not None:
            s = s.masked_fill(~attn_mask[..., s0 : s0 + tile], float("-inf"))
        new_m = torch.maximum(m, s.amax(-1))
        shift = torch.where(torch.isinf(new_m), torch.zeros_like(new_m), new_m)
        p, r = torch.exp(s - shift[..., None]), torch.exp(m - shift)
        total, acc = total * r + p.sum(-1), acc * r[..., None] + p @ v[..., s0 : s0 + tile, :]
        m = new_m
    return acc / total.clamp_min(torch.finfo(q.dtype).tiny)[..., None]


def whole_matrix(q, k, v, attn_mask=None, tile=64):
    """The tiles ignored: every score at once, the softmax by hand with torch.exp."""
    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, Lq, Lk)
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf"))
    m = s.amax(-1, keepdim=True)
    e = torch.exp(s - torch.where(torch.isinf(m), torch.zeros_like(m), m))
    return e @ v / e.sum(-1, keepdim=True).clamp_min(torch.finfo(q.dtype).tiny)


def tiled_per_row(q, k, v, attn_mask=None, tile=64):
    """One query row at a time, tiles in a Python loop with scalars kept as 0-d tensors."""
    out = torch.zeros(*q.shape[:-1], v.size(-1), dtype=q.dtype)
    mask = None if attn_mask is None else attn_mask.expand(*q.shape[:-1], k.size(-2))
    for idx in torch.cartesian_prod(*[torch.arange(n) for n in q.shape[:-1]]).view(-1, q.dim() - 1):
        i = tuple(int(j) for j in idx)
        qi, kk, vv = q[i], k[i[:-1]], v[i[:-1]]
        m, total, acc = torch.tensor(float("-inf"), dtype=q.dtype), torch.zeros((), dtype=q.dtype), 0
        for s0 in range(0, k.size(-2), tile):
            s = kk[s0 : s0 + tile] @ qi / math.sqrt(q.size(-1))
            if mask is not None:
                s = torch.where(mask[i][s0 : s0 + tile], s, torch.tensor(float("-inf"), dtype=q.dtype))
            new_m = torch.maximum(m, s.max())
            if torch.isinf(new_m):
                continue
            p = torch.exp(s - new_m)
            total = total * torch.exp(m - new_m) + p.sum()
            acc = acc * torch.exp(m - new_m) + p @ vv[s0 : s0 + tile]
            m = new_m
        if total > 0:
            out[i] = acc / total
    return out


@pytest.mark.parametrize(
    "candidate",
    [make_tiled(), tiled_per_row, tiled_lse, tiled_blocks, tiled_broadcast, as_student(tiled.tiled_attention)],
)
def test_tiled_right_answers_pass(candidate):
    """Do a vectorised tiled attention, one row at a time, a running log-sum-exp, blocks of queries
    and keys in float64, tiles of scores made by broadcasting, and the reference pass?"""
    for seed in (0, 1):
        check_tiled_attention(candidate, seed=seed)


@pytest.mark.parametrize(
    "options,mistake",
    [
        (dict(rescale_sum=False), "the running sum not rescaled"),
        (dict(rescale_acc=False), "the accumulated values not rescaled"),
        (dict(scale=False), "scores not scaled by 1/sqrt(Dh)"),
        (dict(drop_last=True), "the last tile dropped"),
        (dict(use_mask=False), "the mask ignored"),
        (dict(nan_rows=True), "a fully masked row gives NaN"),
        (dict(max_from=0.0), "the running maximum started at 0 instead of -inf"),
        (dict(max_from=0.0, nan_rows=True), "a fully masked row gives NaN"),
    ],
)
def test_tiled_wrong_answers_fail_by_name(options, mistake, fails):
    """Does each known mistake of the online softmax fail with its name?"""
    fails(check_tiled_attention, make_tiled(**options), mistake=mistake)


def tiles_averaged(q, k, v, attn_mask=None, tile=64):
    outs = []
    for s0 in range(0, k.size(-2), tile):
        s = q @ k[..., s0 : s0 + tile, :].transpose(-2, -1) / math.sqrt(q.size(-1))
        if attn_mask is not None:
            s = s.masked_fill(~attn_mask[..., s0 : s0 + tile], float("-inf"))
        e = torch.exp(s - s.amax(-1, keepdim=True).nan_to_num(0.0, 0.0, 0.0).clamp_min(-1e30))
        outs.append(e / e.sum(-1, keepdim=True).clamp_min(1e-300) @ v[..., s0 : s0 + tile, :])
    return torch.stack(outs).mean(0)


def test_tiled_max_from_zero_without_clamp(fails):
    """Does a running maximum started at 0, dividing by an unclamped sum, fail by name on the rows
    whose scores are all far below 0 (where it gives 0/0)?"""

    def tiled_attention(q, k, v, attn_mask=None, tile=64):
        m = torch.zeros(q.shape[:-1], dtype=q.dtype)
        total, acc = torch.zeros_like(m), torch.zeros(*q.shape[:-1], v.size(-1), dtype=q.dtype)
        for s0 in range(0, k.size(-2), tile):
            s = q @ k[..., s0 : s0 + tile, :].transpose(-2, -1) / math.sqrt(q.size(-1))
            if attn_mask is not None:
                s = s.masked_fill(~attn_mask[..., s0 : s0 + tile], float("-inf"))
            new_m = torch.maximum(m, s.amax(-1))
            total = total * torch.exp(m - new_m) + torch.exp(s - new_m[..., None]).sum(-1)
            acc = acc * torch.exp(m - new_m)[..., None] + torch.exp(s - new_m[..., None]) @ v[..., s0 : s0 + tile, :]
            m = new_m
        if attn_mask is None:
            return acc / total[..., None]
        open_rows = attn_mask.expand(*q.shape[:-1], k.size(-2)).any(-1, keepdim=True)  # fully masked rows: 0
        return torch.where(open_rows, acc / total[..., None], torch.zeros_like(acc))

    message = fails(check_tiled_attention, tiled_attention, mistake="the running maximum started at 0")
    assert "NaN in the rows [0, 5]" in message


def test_tiled_whole_matrix_fails_by_name(fails):
    """Does building the whole score matrix at once (right values, no tiles) fail by name, with the
    size of the tensor it made?"""
    message = fails(check_tiled_attention, whole_matrix, mistake="the whole Lq x Lk score matrix built at once")
    assert "a tensor of 65,536 numbers (shape (1, 1, 256, 256))" in message


def test_tiled_per_tile_and_softmax(fails):
    """Is normalising each tile alone named, torch.softmax caught, and a stub let through?"""
    fails(check_tiled_attention, tiles_averaged, mistake="each tile normalised on its own")
    fails(
        check_tiled_attention,
        lambda q, k, v, m=None, tile=64: torch.softmax(q @ k.transpose(-2, -1), -1) @ v,
        error=ForbiddenCall,
        said="softmax",
    )
    fails(check_tiled_attention, _stub, error=NotImplementedError)


# ----------------------------------------------------------------------------- perplexity


def make_ppl(how="right"):
    def perplexity(logits, tokens, pad_id):
        lg, tg = (logits, tokens) if how == "unshifted" else (logits[:, :-1], tokens[:, 1:])
        nll = -lg.log_softmax(-1).gather(-1, tg[..., None])[..., 0]
        keep = (tg != pad_id).to(nll.dtype)
        mean = (nll * keep).sum() / keep.sum()
        if how == "loss":
            return mean
        if how == "two":
            return 2**mean
        if how == "sum":
            return (nll * keep).sum().exp()
        if how == "rows":
            rows = keep.sum(-1) > 0
            return ((nll * keep).sum(-1)[rows] / keep.sum(-1)[rows]).exp().mean()
        if how == "numel":
            return ((nll * keep).sum() / nll.numel()).exp()
        return mean.exp()

    return perplexity


def ppl_cross_entropy(logits, tokens, pad_id):
    """F.cross_entropy with ignore_index, exponentiated: allowed."""
    return torch.exp(F.cross_entropy(logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten(), ignore_index=pad_id))


def ppl_geometric(logits, tokens, pad_id):
    """The geometric mean of 1 / p(target), in float64 with math on a list."""
    p = logits[:, :-1].double().softmax(-1).gather(-1, tokens[:, 1:, None])[..., 0]
    keep = tokens[:, 1:] != pad_id
    logs = [math.log(x) for x in p[keep].tolist()]
    return torch.tensor(math.exp(-sum(logs) / len(logs)))


@pytest.mark.parametrize("candidate", [make_ppl(), ppl_cross_entropy, ppl_geometric])
def test_perplexity_right_answers_pass(candidate):
    """Do exp of the masked mean, exp of F.cross_entropy, and a geometric mean of 1/p pass?"""
    for seed in (0, 1):
        check_perplexity(candidate, seed=seed)


@pytest.mark.parametrize(
    "how,mistake",
    [
        ("loss", "not exponentiated"),
        ("two", "2 ** loss"),
        ("sum", "exp of the summed loss"),
        ("rows", "per-row perplexities"),
        ("numel", "padding counted in the mean of the losses"),
        ("unshifted", "targets not shifted"),
    ],
)
def test_perplexity_wrong_answers_fail_by_name(how, mistake, fails):
    """Does each known mistake of perplexity fail with its name?"""
    fails(check_perplexity, make_ppl(how), mistake=mistake)


def test_perplexity_reference_forbidden_and_stub(fails):
    """Is the reference's next_token_loss caught, and a stub let through?"""
    from autograder.reference import families

    fails(
        check_perplexity,
        lambda lg, tk, pad: families.next_token_loss(lg, tk, pad).exp(),
        error=ForbiddenCall,
        said="next_token_loss",
    )
    fails(check_perplexity, _stub, error=NotImplementedError)

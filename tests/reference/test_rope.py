"""RoPE (chapter 10) against Hugging Face transformers' Llama rotary code, and its offset property.

transformers implements the two-halves pairing only (``rotate_half``); the adjacent pairing is
verified through the permutation that maps one layout to the other. No weights are downloaded:
only functions and a weight-free rotary module are used.
"""

import pytest
import torch

from autograder import reference as ref
from autograder.reference.rope import apply_rope, halves_permutation, rope_frequencies, rope_scores

llama = pytest.importorskip("transformers.models.llama.modeling_llama")


def _x(shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _hf_cos_sin(positions, head_dim, base):
    """cos and sin as Llama builds them: the frequencies concatenated twice, (L, Dh)."""
    angles = positions.double()[..., None] * rope_frequencies(head_dim, base)  # (..., L, Dh/2)
    emb = torch.cat([angles, angles], dim=-1)  # (..., L, Dh)
    return emb.cos(), emb.sin()


@pytest.mark.parametrize("base", [10000.0, 500000.0])
def test_halves_equal_transformers_apply_rotary_pos_emb(base):
    """Does the halves pairing equal transformers' apply_rotary_pos_emb (queries and keys, per-row positions)?"""
    q, k = _x((2, 4, 7, 16), 0), _x((2, 2, 7, 16), 1)
    positions = torch.tensor([[0, 1, 2, 3, 4, 5, 6], [3, 4, 5, 6, 7, 8, 9]])  # (B, L)
    cos, sin = _hf_cos_sin(positions, 16, base)  # (B, L, Dh)
    hf_q, hf_k = llama.apply_rotary_pos_emb(q, k, cos, sin)  # unsqueeze_dim=1: over the heads
    torch.testing.assert_close(apply_rope(q, positions, base, "halves"), hf_q, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(apply_rope(k, positions, base, "halves"), hf_k, atol=1e-12, rtol=1e-12)


def test_rotate_half_is_the_halves_pairing_at_a_quarter_turn():
    """Is transformers' rotate_half the halves rotation by 90 degrees (cos 0, sin 1)?"""
    x = _x((3, 8))
    cos, sin = torch.zeros(8, dtype=torch.float64), torch.ones(8, dtype=torch.float64)
    torch.testing.assert_close(x * cos + llama.rotate_half(x) * sin, torch.cat([-x[..., 4:], x[..., :4]], -1))


def test_rotary_embedding_module_gives_the_same_frequencies():
    """Does transformers' LlamaRotaryEmbedding (built from a config, no weights) give our cos and sin?"""
    config = llama.LlamaConfig(
        hidden_size=64, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, rope_theta=10000.0
    )
    rotary = llama.LlamaRotaryEmbedding(config=config)
    positions = torch.arange(20)[None]  # (1, L)
    cos, sin = rotary(torch.zeros(1, 20, 64), positions)
    mine_cos, mine_sin = _hf_cos_sin(positions, 16, 10000.0)
    torch.testing.assert_close(cos.double(), mine_cos, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(sin.double(), mine_sin, atol=1e-5, rtol=1e-5)


def test_adjacent_equals_transformers_through_the_permutation():
    """Is the adjacent pairing transformers' halves pairing with the features reordered by halves_permutation?"""
    x = _x((2, 3, 9, 12))
    positions = torch.arange(5, 14)
    perm = halves_permutation(12)
    cos, sin = _hf_cos_sin(positions, 12, 10000.0)
    hf, _ = llama.apply_rotary_pos_emb(x[..., perm], x[..., perm], cos[None], sin[None])  # (1, L, Dh)
    torch.testing.assert_close(apply_rope(x, positions)[..., perm], hf, atol=1e-12, rtol=1e-12)
    inverse = torch.argsort(perm)
    torch.testing.assert_close(apply_rope(x, positions), hf[..., inverse], atol=1e-12, rtol=1e-12)


def test_adjacent_is_chapter_5_rotation_transposed():
    """Does the adjacent pairing rotate each vector by chapter 5's R(position) transposed (R(-position))?"""
    x = _x((6, 10))
    positions = torch.arange(6)
    rotated = torch.stack([ref.rotation_matrix(int(p), 10, torch.float64).T @ x[i] for i, p in enumerate(positions)])
    torch.testing.assert_close(apply_rope(x, positions), rotated, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("pairing", ["adjacent", "halves"])
def test_scores_depend_only_on_the_offset(pairing):
    """For a random W_Q and W_K, is every score q_m . k_n a function of n - m alone (to float precision)?"""
    d, length = 16, 24
    w_q, w_k, token = _x((d, d), 1), _x((d, d), 2), _x((d,), 3)
    q = (token @ w_q).expand(length, d)  # (L, D): the same token at every position
    k = (token @ w_k).expand(length, d)
    positions = torch.arange(length)
    scores = apply_rope(q, positions, pairing=pairing) @ apply_rope(k, positions, pairing=pairing).T  # (L, L)
    for offset in range(-length + 1, length):
        diagonal = torch.diagonal(scores, offset)
        assert (diagonal - diagonal[0]).abs().max() < 1e-10


def test_rope_scores_shift_invariant():
    """Does moving both positions by the same amount leave rope_scores unchanged?"""
    q, k = _x((5, 8), 1), _x((7, 8), 2)
    a = rope_scores(q, k, torch.arange(5), torch.arange(7))
    b = rope_scores(q, k, torch.arange(5) + 100, torch.arange(7) + 100)
    torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-10)


def test_rope_keeps_norms_dtype_and_refuses_odd_width():
    """Is RoPE a rotation (norms kept), in the input's dtype, and is an odd head width refused?"""
    x = _x((2, 3, 4, 8), dtype=torch.float32)
    y = apply_rope(x, torch.arange(4))
    assert y.dtype == torch.float32
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))
    with pytest.raises(ValueError, match="even"):
        apply_rope(_x((2, 5)), torch.arange(2))
    with pytest.raises(ValueError, match="pairing"):
        apply_rope(x, torch.arange(4), pairing="interleaved")  # type: ignore[arg-type]

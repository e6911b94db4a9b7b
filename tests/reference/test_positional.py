"""Sinusoidal encoding and its rotation property (chapter 5)."""

import math

import pytest
import torch

from autograder import reference as ref


def test_encoding_follows_the_formula():
    """Is PE[t, 2i] = sin(t / 10000^(2i/D)) and PE[t, 2i+1] the cosine of the same angle?"""
    pe = ref.sinusoidal_encoding(20, 8, dtype=torch.float64)
    for t in (0, 3, 19):
        for i in range(4):
            angle = t / 10000 ** (2 * i / 8)
            assert pe[t, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-12)
            assert pe[t, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-12)


def test_rotation_property_for_every_offset():
    """Is R(k) PE[t] = PE[t + k] for every offset k in 0..L-1 and every t (L = 128)?"""
    length, d = 128, 32
    pe = ref.sinusoidal_encoding(2 * length, d, dtype=torch.float64)
    for k in range(length):
        moved = pe[:length] @ ref.rotation_matrix(k, d, dtype=torch.float64).T  # rows R(k) PE[t]
        torch.testing.assert_close(moved, pe[k : k + length], atol=1e-9, rtol=0)


def test_rotation_matrix_is_orthogonal_and_composes():
    """Is R(k) orthogonal, with R(a) R(b) = R(a + b)?"""
    r3, r4, r7 = (ref.rotation_matrix(k, 16, dtype=torch.float64) for k in (3, 4, 7))
    torch.testing.assert_close(r3 @ r3.T, torch.eye(16, dtype=torch.float64))
    torch.testing.assert_close(r3 @ r4, r7)


def test_similarity_depends_only_on_offset():
    """Do dot products PE[s] . PE[t] depend on t - s only, and symmetrically?"""
    sim = ref.pe_similarity(ref.sinusoidal_encoding(40, 16, dtype=torch.float64))
    for offset in range(-10, 11):
        diag = torch.diagonal(sim, offset)
        torch.testing.assert_close(diag, torch.full_like(diag, diag[0].item()))
    torch.testing.assert_close(sim, sim.T)


def test_odd_width_is_refused():
    """Is an odd d_model refused (sin/cos pairs need an even width)?"""
    with pytest.raises(ValueError, match="even"):
        ref.sinusoidal_encoding(4, 7)


def test_add_positions_scales_then_adds():
    """Is add_positions = embeddings * sqrt(D) + pe[:L]?"""
    emb = torch.randn(2, 5, 8)
    pe = ref.sinusoidal_encoding(10, 8)
    torch.testing.assert_close(ref.add_positions(emb, pe), emb * math.sqrt(8) + pe[:5])

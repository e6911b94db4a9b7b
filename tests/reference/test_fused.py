"""PyTorch's fused kernels in place of the hand-written math (reference.fused)."""

import pytest
import torch
import torch.nn.functional as F

from autograder import reference as ref
from autograder.reference.fused import FusedLayerNorm, FusedMultiHeadAttention, fuse


def _pair(d_model=16, num_heads=4):
    torch.manual_seed(0)
    hand = ref.MultiHeadAttention(d_model, num_heads).double()
    fused = ref.MultiHeadAttention(d_model, num_heads).double()
    fused.load_state_dict(hand.state_dict())
    return hand, fuse(fused)


def test_fused_self_attention_equals_the_hand_written_path():
    """Does the fused self-attention (one matrix product for Q, K, V, then SDPA) give the same output?"""
    hand, fused = _pair()
    assert type(fused) is FusedMultiHeadAttention
    x = torch.randn(3, 6, 16, dtype=torch.float64)
    mask = ref.causal_mask(6)
    torch.testing.assert_close(fused(x, x, x, mask), hand(x, x, x, mask), atol=1e-10, rtol=1e-10)


def test_fused_cross_attention_with_a_fully_masked_row_gives_zeros_not_nan():
    """Does fused cross-attention equal the hand-written one, a source made only of padding included
    (zero output before the output projection, never NaN: torch >= 2.5)?"""
    hand, fused = _pair()
    y, memory = torch.randn(2, 3, 16, dtype=torch.float64), torch.randn(2, 5, 16, dtype=torch.float64)
    mask = torch.ones(2, 1, 1, 5, dtype=torch.bool)
    mask[1] = False  # the second source is all padding
    out = fused(y, memory, memory, mask)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, hand(y, memory, memory, mask), atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(out[1], fused.out_proj.bias.expand(3, 16))  # zero attention output, then W_O


def test_fused_layer_norm_equals_ours_and_pytorchs():
    """Does the fused LayerNorm give ours and F.layer_norm's result with the same weights?"""
    torch.manual_seed(0)
    hand = ref.LayerNorm(8).double()
    with torch.no_grad():
        hand.weight.normal_(), hand.bias.normal_()
    fused = fuse(ref.LayerNorm(8).double())
    fused.load_state_dict(hand.state_dict())
    assert type(fused) is FusedLayerNorm
    x = torch.randn(4, 5, 8, dtype=torch.float64)
    torch.testing.assert_close(fused(x), hand(x))
    torch.testing.assert_close(fused(x), F.layer_norm(x, (8,), hand.weight, hand.bias))


@pytest.mark.parametrize("norm_first", [False, True])
def test_fused_kernels_model_equals_hand_written(norm_first):
    """Does fused_kernels=True give the same logits, with the same state-dict names, as the hand-written model?"""
    cfg = dict(
        src_vocab_size=13,
        tgt_vocab_size=11,
        d_model=32,
        num_heads=4,
        num_layers=2,
        d_ff=64,
        dropout=0.0,
        norm_first=norm_first,
    )
    torch.manual_seed(0)
    hand = ref.EncoderDecoder(ref.TransformerConfig(**cfg)).double().eval()
    fused = ref.EncoderDecoder(ref.TransformerConfig(**cfg, fused_kernels=True)).double().eval()
    assert list(fused.state_dict()) == list(hand.state_dict())
    fused.load_state_dict(hand.state_dict())
    g = torch.Generator().manual_seed(1)
    src, tgt = torch.randint(3, 13, (3, 7), generator=g), torch.randint(3, 11, (3, 5), generator=g)
    src[2, 4:] = 0
    torch.testing.assert_close(fused(src, tgt), hand(src, tgt), atol=1e-10, rtol=1e-10)
    kinds = {type(m) for m in fused.modules()}
    assert ref.MultiHeadAttention not in kinds and ref.LayerNorm not in kinds


def test_fuse_leaves_the_teaching_classes_alone():
    """Does fusing one model leave another model's modules, and the classes themselves, unchanged?"""
    cfg = ref.TransformerConfig(src_vocab_size=7, tgt_vocab_size=7, d_model=16, num_heads=2, num_layers=1, d_ff=32)
    fused, plain = fuse(ref.EncoderDecoder(cfg)), ref.EncoderDecoder(cfg)
    assert type(plain.encoder.layers[0].self_attn) is ref.MultiHeadAttention
    assert type(fused.encoder.layers[0].self_attn) is FusedMultiHeadAttention
    assert ref.MultiHeadAttention.forward is not FusedMultiHeadAttention.forward

"""Boolean masks, True = may attend (chapter 6)."""

import torch

from autograder import reference as ref


def test_padding_mask_shape_and_polarity():
    """Is the padding mask (B, 1, 1, L) and True exactly at real tokens?"""
    tokens = torch.tensor([[5, 6, 0, 0], [7, 0, 0, 0]])
    mask = ref.padding_mask(tokens, pad_id=0)
    assert mask.shape == (2, 1, 1, 4) and mask.dtype == torch.bool
    assert mask[:, 0, 0].tolist() == [[True, True, False, False], [True, False, False, False]]


def test_causal_mask_keeps_the_diagonal():
    """May position i attend to itself and earlier positions only?"""
    assert ref.causal_mask(3).tolist() == [[True, False, False], [True, True, False], [True, True, True]]


def test_decoder_mask_combines_causal_and_padding():
    """Is the decoder self-attention mask the AND of causal and target padding, (B, 1, T, T)?"""
    tgt = torch.tensor([[1, 4, 0]])
    mask = ref.decoder_self_attention_mask(tgt, 0)
    assert mask.shape == (1, 1, 3, 3)
    assert mask[0, 0].tolist() == [[True, False, False], [True, True, False], [True, True, False]]


def test_pytorch_mask_conversion_inverts():
    """Does the conversion to nn.MultiheadAttention's convention (True = blocked) invert?"""
    m = ref.causal_mask(4)
    assert torch.equal(ref.to_pytorch_mask(m), ~m)

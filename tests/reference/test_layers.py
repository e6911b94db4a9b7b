"""LayerNorm, the FFN and the encoder and decoder layers against PyTorch's own (chapter 7)."""

import pytest
import torch
from torch import nn

from autograder import reference as ref
from autograder.reference.oracles.interop import torch_layer_from
from tests.reference.stacks import torch_stack_from

TOL = {torch.float32: dict(atol=1e-5, rtol=1e-5), torch.float64: dict(atol=1e-10, rtol=1e-10)}
D, H, F_ = 16, 4, 32


def _inputs(dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 6, D, generator=g, dtype=dtype)
    memory = torch.randn(2, 5, D, generator=g, dtype=dtype)
    src_keep = torch.ones(2, 5, dtype=torch.bool)
    src_keep[1, -2:] = False
    tgt_keep = torch.ones(2, 6, dtype=torch.bool)
    tgt_keep[0, -1] = False
    return x, memory, src_keep, tgt_keep


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_layer_norm_equals_pytorch(dtype):
    """Does the hand-written LayerNorm (biased variance, eps inside the root) equal nn.LayerNorm?"""
    torch.manual_seed(0)
    ours, theirs = ref.LayerNorm(D).to(dtype), nn.LayerNorm(D).to(dtype)
    nn.init.normal_(ours.weight)
    nn.init.normal_(ours.bias)
    theirs.load_state_dict(ours.state_dict())
    x = torch.randn(3, 4, D, dtype=dtype) * 5 + 2
    torch.testing.assert_close(ours(x), theirs(x), **TOL[dtype])


def test_layer_norm_gradcheck():
    """Are LayerNorm's gradients right, by finite differences in float64?"""
    ln = ref.LayerNorm(5).double()
    x = torch.randn(2, 3, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(ln, (x,))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_equals_pytorch(dtype, norm_first):
    """Does our EncoderLayer equal nn.TransformerEncoderLayer (weights copied, dropout 0)?"""
    torch.manual_seed(0)
    ours = ref.EncoderLayer(D, H, F_, norm_first=norm_first).to(dtype).eval()
    theirs = torch_layer_from(ours, H, decoder=False, norm_first=norm_first).eval()
    x, _, _, keep = _inputs(dtype)
    expected = theirs(x, src_key_padding_mask=ref.to_pytorch_mask(keep))
    found = ours(x, keep[:, None, None, :])
    torch.testing.assert_close(found[keep], expected[keep], **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_equals_pytorch(dtype, norm_first):
    """Does our DecoderLayer (causal + padding self-attention, cross-attention over a padded
    memory) equal nn.TransformerDecoderLayer with the weights copied?"""
    torch.manual_seed(0)
    ours = ref.DecoderLayer(D, H, F_, norm_first=norm_first).to(dtype).eval()
    theirs = torch_layer_from(ours, H, decoder=True, norm_first=norm_first).eval()
    y, memory, src_keep, tgt_keep = _inputs(dtype)
    causal = ref.causal_mask(6)
    expected = theirs(
        y,
        memory,
        tgt_mask=ref.to_pytorch_mask(causal),
        tgt_key_padding_mask=ref.to_pytorch_mask(tgt_keep),
        memory_key_padding_mask=ref.to_pytorch_mask(src_keep),
    )
    found = ours(y, memory, tgt_keep[:, None, None, :] & causal, src_keep[:, None, None, :])
    torch.testing.assert_close(found, expected, **TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("norm_first", [False, True])
def test_stacks_equal_pytorch(dtype, norm_first):
    """Do our Encoder and Decoder stacks equal nn.TransformerEncoder/Decoder, with a final
    norm exactly when pre-norm?"""
    torch.manual_seed(0)
    enc = ref.Encoder(3, D, H, F_, norm_first=norm_first).to(dtype).eval()
    dec = ref.Decoder(3, D, H, F_, norm_first=norm_first).to(dtype).eval()
    assert (enc.norm is not None) == norm_first and (dec.norm is not None) == norm_first
    t_enc = torch_stack_from(enc, H, decoder=False, norm_first=norm_first).eval()
    t_dec = torch_stack_from(dec, H, decoder=True, norm_first=norm_first).eval()
    y, x, src_keep, _ = _inputs(dtype)
    memory = enc(x, src_keep[:, None, None, :])
    t_memory = t_enc(x, src_key_padding_mask=ref.to_pytorch_mask(src_keep))
    torch.testing.assert_close(memory[src_keep], t_memory[src_keep], **TOL[dtype])
    causal = ref.causal_mask(6)
    found = dec(y, memory, causal, src_keep[:, None, None, :])
    expected = t_dec(
        y, memory, tgt_mask=ref.to_pytorch_mask(causal), memory_key_padding_mask=ref.to_pytorch_mask(src_keep)
    )
    torch.testing.assert_close(found, expected, **TOL[dtype])


def test_ffn_acts_on_each_position_alone():
    """Is the FFN position-wise: changing one position changes only that position's output?"""
    ff = ref.PositionwiseFeedForward(D, F_).double()
    x = torch.randn(1, 4, D, dtype=torch.float64)
    x2 = x.clone()
    x2[0, 2] += 1.0
    changed = (ff(x) - ff(x2)).abs().sum(-1)[0]
    assert changed[2] > 0 and torch.equal(changed[[0, 1, 3]], torch.zeros(3, dtype=torch.float64))

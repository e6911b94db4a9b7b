"""The whole encoder-decoder: leaks, padding, masks, paths (chapter 8)."""

import math

import pytest
import torch

from autograder import reference as ref

V = 13


def _model(**overrides):
    torch.manual_seed(0)
    cfg = ref.TransformerConfig(
        src_vocab_size=V, tgt_vocab_size=V, d_model=32, num_heads=4, num_layers=2, d_ff=64, dropout=0.0, **overrides
    )
    return ref.EncoderDecoder(cfg).double().eval()


def _batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(3, V, (3, 7), generator=g)
    tgt = torch.randint(3, V, (3, 6), generator=g)
    src[1, 5:] = 0
    return src, tgt


@pytest.mark.parametrize("norm_first", [False, True])
def test_changing_future_targets_leaves_earlier_logits_unchanged(norm_first):
    """Causal leak test: does changing target tokens after position t leave logits up to t unchanged?"""
    model = _model(norm_first=norm_first)
    src, tgt = _batch()
    logits = model(src, tgt)
    for t in range(tgt.size(1) - 1):
        changed = tgt.clone()
        changed[:, t + 1 :] = (changed[:, t + 1 :] + 1 - 3) % (V - 3) + 3
        torch.testing.assert_close(model(src, changed)[:, : t + 1], logits[:, : t + 1], atol=1e-12, rtol=0)
        assert not torch.allclose(model(src, changed)[:, t + 1 :], logits[:, t + 1 :])


def test_more_padding_leaves_real_positions_unchanged():
    """Padding invariance: do extra pad tokens on source and target change nothing at real positions?"""
    model = _model()
    src, tgt = _batch()
    logits = model(src, tgt)
    longer = model(
        torch.cat([src, torch.zeros(3, 4, dtype=torch.long)], 1),
        torch.cat([tgt, torch.zeros(3, 3, dtype=torch.long)], 1),
    )
    torch.testing.assert_close(longer[:, :6], logits, atol=1e-12, rtol=0)


def test_source_padding_is_invisible():
    """Is the source mask (B, 1, 1, S) False at pads, so that whatever sits at padded memory
    positions cannot change the decoder's output?"""
    model = _model()
    src, tgt = _batch()
    memory, mask = model.encode(src)
    assert mask.shape == (3, 1, 1, 7) and mask[1, 0, 0].tolist() == [True] * 5 + [False] * 2
    logits = model.decode(tgt, memory, mask)
    memory2 = memory.clone()
    memory2[1, 5:] = 1e3
    torch.testing.assert_close(model.decode(tgt, memory2, mask), logits, atol=1e-12, rtol=0)


def test_fully_padded_source_gives_no_nan():
    """Does a source that is all padding give finite logits (fully masked rows, no NaN)?"""
    model = _model()
    src, tgt = _batch()
    src[2] = 0
    assert torch.isfinite(model(src, tgt)).all()


def test_embeddings_are_scaled_then_positions_added():
    """Is the decoder input emb * sqrt(D) + PE (positions added once)?"""
    model = _model()
    tokens = torch.tensor([[4, 5, 6]])
    emb = model.tgt_embed(tokens)
    torch.testing.assert_close(emb, model.tgt_embed.embedding.weight[tokens] * math.sqrt(32))
    torch.testing.assert_close(model._positions(emb), emb + ref.sinusoidal_encoding(3, 32, torch.float64))


def test_tied_embeddings_share_one_tensor():
    """With tie_embeddings, are the output projection and target embedding one parameter?"""
    model = _model(tie_embeddings=True)
    assert model.generator.weight is model.tgt_embed.embedding.weight


def test_too_long_sequence_is_refused():
    """Is a sequence longer than max_len refused with both lengths named?"""
    model = _model(max_len=8)
    with pytest.raises(ValueError, match="length 9 is longer than max_len=8"):
        model(torch.ones(1, 9, dtype=torch.long), torch.ones(1, 2, dtype=torch.long))


def test_best_device_prefers_cuda_then_mps(monkeypatch):
    """Does best_device pick cuda when present, else mps, else cpu?"""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert ref.best_device().type == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert ref.best_device().type == "mps"
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert ref.best_device().type == "cpu"

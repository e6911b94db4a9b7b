"""Batched greedy decoding with and without the key/value cache (chapter 8)."""

import pytest
import torch
import torch.nn.functional as F

from autograder import reference as ref

BOS, EOS, PAD = 1, 2, 0


def _model(seed: int, dtype: torch.dtype, vocab: int = 13, layers: int = 2) -> ref.EncoderDecoder:
    torch.manual_seed(seed)
    cfg = ref.TransformerConfig(
        src_vocab_size=vocab,
        tgt_vocab_size=vocab,
        d_model=16,
        num_heads=2,
        num_layers=layers,
        d_ff=32,
        dropout=0.1,
        max_len=64,
    )
    return ref.EncoderDecoder(cfg).to(dtype)


def _sources(batch: int, length: int, seed: int, vocab: int = 13) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(3, vocab, (batch, length), generator=g)
    for b in range(1, batch):  # every row but the first ends in padding of its own length
        src[b, length - (b % length) :] = PAD
    return src


class _Scripted(ref.EncoderDecoder):
    """A random model whose logits at target position t get +50 on ``script[b, t]``:
    greedy decoding must follow the script, so we know where every row meets EOS."""

    def __init__(self, config: ref.TransformerConfig, script: torch.Tensor) -> None:
        super().__init__(config)
        self.script = script  # (B, N)

    def decode(self, tgt_in, memory, src_mask, cache=None):
        start = 0 if cache is None or cache.tokens is None else cache.tokens.size(1)
        logits = super().decode(tgt_in, memory, src_mask, cache)  # (B, T, V)
        positions = torch.arange(start, start + tgt_in.size(1))
        bonus = F.one_hot(self.script[:, positions], logits.size(-1)).to(logits.dtype)  # (B, T, V)
        return logits + 50 * bonus


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("batch,length", [(1, 1), (3, 5), (4, 9)])
def test_cached_decode_gives_the_uncached_tokens(dtype, batch, length):
    """Does the key/value cache give exactly the tokens of recomputing the prefix at every step?"""
    model = _model(batch * 10 + length, dtype)
    src = _sources(batch, length, seed=length)
    plain = ref.greedy_decode(model, src, 20, BOS, EOS, PAD)
    cached = ref.greedy_decode(model, src, 20, BOS, EOS, PAD, use_cache=True)
    assert torch.equal(plain, cached)


def test_cached_decode_follows_a_script_with_rows_stopping_at_different_steps():
    """With rows reaching EOS at steps 2, 5 and never, are cached and uncached decodes equal
    and equal to the script, padded after each row's EOS?"""
    torch.manual_seed(0)
    cfg = ref.TransformerConfig(
        src_vocab_size=13, tgt_vocab_size=13, d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.0, max_len=64
    )
    script = torch.tensor([[5, EOS, 7, 8, 9, 10, 11, 12], [6, 7, 8, 9, EOS, 3, 4, 5], [9, 9, 9, 9, 9, 9, 9, 9]])
    model = _Scripted(cfg, script)
    src = _sources(3, 4, seed=1)
    expected = torch.tensor([[BOS, 5, EOS, PAD, PAD, PAD, PAD], [BOS, 6, 7, 8, 9, EOS, PAD], [BOS, 9, 9, 9, 9, 9, 9]])
    for use_cache in (False, True):
        assert torch.equal(ref.greedy_decode(model, src, 6, BOS, EOS, PAD, use_cache=use_cache), expected)


def test_decode_stops_as_soon_as_every_row_has_finished():
    """When every row meets EOS by step 3, is the output only 1 + 3 columns wide, not max_len + 1?"""
    torch.manual_seed(0)
    cfg = ref.TransformerConfig(
        src_vocab_size=13, tgt_vocab_size=13, d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.0
    )
    script = torch.tensor([[4, EOS, 4, 4, 4], [4, 5, EOS, 4, 4]])
    out = ref.greedy_decode(_Scripted(cfg, script), _sources(2, 3, seed=2), 10, BOS, EOS, PAD)
    assert out.tolist() == [[BOS, 4, EOS, PAD], [BOS, 4, 5, EOS]]


@pytest.mark.parametrize("use_cache", [False, True])
def test_output_shape_starts_with_bos_and_pads_after_eos(use_cache):
    """Is the output (B, <= max_len + 1), long, BOS first, and only padding after a row's first EOS?"""
    model = _model(3, torch.float32, vocab=5)  # few tokens: EOS comes early in some rows
    src = _sources(6, 4, seed=3, vocab=5)
    max_len = 8
    out = ref.greedy_decode(model, src, max_len, BOS, EOS, PAD, use_cache=use_cache)
    assert out.dtype == torch.long and out.size(0) == 6 and 2 <= out.size(1) <= max_len + 1
    assert torch.all(out[:, 0] == BOS)
    for row in out.tolist():
        if EOS in row:
            assert all(t == PAD for t in row[row.index(EOS) + 1 :])


def test_decode_restores_training_mode_and_is_deterministic_under_dropout():
    """Does greedy_decode switch dropout off while it runs and give the model back in training mode?"""
    model = _model(4, torch.float32)
    model.train()
    src = _sources(2, 5, seed=4)
    first = ref.greedy_decode(model, src, 7, BOS, EOS, PAD)
    second = ref.greedy_decode(model, src, 7, BOS, EOS, PAD, use_cache=True)
    assert model.training
    assert torch.equal(first, second)


def test_layers_called_without_a_cache_still_work():
    """Do the decoder layers still accept their chapter-7 signature (no cache argument)?"""
    model = _model(5, torch.float64).eval()
    src, tgt = _sources(2, 5, seed=5), torch.tensor([[BOS, 4, 5], [BOS, 6, PAD]])
    memory, src_mask = model.encode(src)
    mask = ref.decoder_self_attention_mask(tgt, PAD)
    y = model.tgt_embed(tgt) + model.pe[:3].to(torch.float64)
    out = model.decoder.layers[0](y, memory, mask, src_mask)
    assert out.shape == (2, 3, 16) and torch.isfinite(out).all()


def test_new_cache_has_one_entry_per_decoder_layer_and_starts_empty():
    """Does model.new_cache() hold, per decoder layer, an appending self-attention cache and a
    static cross-attention cache, all empty?"""
    model = _model(6, torch.float32)
    cache = model.new_cache()
    assert len(cache.layers) == len(model.decoder.layers) and cache.tokens is None
    for layer in cache.layers:
        assert isinstance(layer, ref.LayerCache)
        assert not layer.self_attn.static and layer.cross_attn.static
        assert layer.self_attn.k is None and layer.cross_attn.k is None


def test_cache_grows_by_one_position_per_step_and_cross_keys_stay():
    """After three cached steps, does self-attention hold 3 positions and cross-attention the source length,
    computed once (the same tensor object every step)?"""
    model = _model(7, torch.float32).eval()
    src = _sources(2, 5, seed=7)
    memory, src_mask = model.encode(src)
    cache = model.new_cache()
    tokens = torch.tensor([[BOS], [BOS]])
    model.decode(tokens, memory, src_mask, cache)
    cross_k = cache.layers[0].cross_attn.k
    for _ in range(2):
        model.decode(torch.tensor([[4], [5]]), memory, src_mask, cache)
    assert cache.layers[0].self_attn.k.shape[2] == 3
    assert cache.layers[0].cross_attn.k is cross_k and cross_k.shape[2] == 5

"""Decoder-only and encoder-only models, their losses and generation (chapter 9)."""

import pytest
import torch
import torch.nn.functional as F

from autograder import reference as ref
from autograder.reference.families import (
    DecoderOnly,
    EncoderOnly,
    LanguageModelConfig,
    continue_prompt,
    mask_tokens,
    masked_token_loss,
    next_token_loss,
)
from tests.reference.stacks import torch_stack_from

PAD, BOS, EOS, MASK = 0, 1, 2, 3


def _lm(kind=DecoderOnly, seed: int = 0, dtype=torch.float32, **options) -> torch.nn.Module:
    torch.manual_seed(seed)
    config = LanguageModelConfig(
        **{**dict(vocab_size=17, d_model=16, num_heads=2, num_layers=2, d_ff=32, dropout=0.0, max_len=32), **options}
    )
    return kind(config).to(dtype).eval()


def _tokens(batch: int, length: int, seed: int, vocab: int = 17, lengths=None) -> torch.Tensor:
    x = torch.randint(4, vocab, (batch, length), generator=torch.Generator().manual_seed(seed))
    for b, n in enumerate(lengths or []):
        x[b, n:] = PAD
    return x


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_only_is_causal(norm_first):
    """Does changing token j leave the logits of every position before j unchanged, and change
    those at j? Is the stack alone free of leaks under a causal mask (leaks_future)?"""
    model = _lm(norm_first=norm_first)
    x = _tokens(2, 9, seed=1)
    with torch.no_grad():
        base = model(x)
        for j in range(9):
            changed = x.clone()
            changed[:, j] = 4 + (changed[:, j] - 3) % 13
            out = model(changed)
            torch.testing.assert_close(out[:, :j], base[:, :j], atol=1e-6, rtol=0)
            assert not torch.allclose(out[:, j], base[:, j])
    length = 8
    assert not ref.leaks_future(lambda h: model.blocks(h, ref.causal_mask(length)), 16, length=length)


def test_encoder_only_sees_both_directions_but_not_padding():
    """Does a change at position j reach the logits before j in the encoder-only model, and are
    the real positions' logits the same with or without padding after them?"""
    model = _lm(EncoderOnly)
    x = _tokens(2, 6, seed=2)
    changed = x.clone()
    changed[:, 5] = 4 + (changed[:, 5] - 3) % 13
    with torch.no_grad():
        assert not torch.allclose(model(changed)[:, :5], model(x)[:, :5])
        padded = torch.cat([x, torch.zeros(2, 3, dtype=torch.long)], dim=1)  # three PADs after every row
        torch.testing.assert_close(model(padded)[:, :6], model(x), atol=1e-5, rtol=1e-5)
    assert ref.leaks_future(lambda h: model.blocks(h, None), 16)


def test_decoder_only_ignores_padding_after_the_real_tokens():
    """Are a row's logits the same with padding after it as without?"""
    model = _lm()
    x = _tokens(1, 5, seed=3)
    with torch.no_grad():
        padded = torch.cat([x, torch.zeros(1, 4, dtype=torch.long)], dim=1)
        torch.testing.assert_close(model(padded)[:, :5], model(x), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_only_equals_pytorchs_transformer_encoder_with_a_causal_mask(norm_first):
    """With the same weights, is the model nn.TransformerEncoder run with a causal mask and the
    padding mask (PyTorch's True = blocked), between our embeddings and unembedding?"""
    model = _lm(norm_first=norm_first, dtype=torch.float64)
    theirs = torch_stack_from(model.blocks, 2, decoder=False, norm_first=norm_first).double().eval()
    x = _tokens(3, 8, seed=4, lengths=[8, 5, 2])
    with torch.no_grad():
        h = model.embed(x) + model.pe[:8]  # the table the model holds (float32 values, as in EncoderDecoder)
        out = theirs(h, mask=ref.to_pytorch_mask(ref.causal_mask(8)), src_key_padding_mask=x == PAD)
        expected = F.linear(out, model.unembed.weight)
        torch.testing.assert_close(model(x), expected, atol=1e-10, rtol=1e-8)


def test_tied_embeddings_share_one_parameter():
    """With tie_embeddings, is the unembedding the token embedding itself, and separate without?"""
    tied, untied = _lm(), _lm(tie_embeddings=False)
    assert tied.unembed.weight is tied.embed.embedding.weight
    assert untied.unembed.weight is not untied.embed.embedding.weight
    assert sum(p.numel() for p in untied.parameters()) - sum(p.numel() for p in tied.parameters()) == 17 * 16


def test_next_token_loss_is_shifted_cross_entropy_without_padding():
    """Is the loss F.cross_entropy of logits[:, :-1] against tokens[:, 1:] with ignore_index=pad,
    gradient included, for pad id 0 and another pad id?"""
    for pad in (0, 5):
        logits = torch.randn(3, 7, 11, generator=torch.Generator().manual_seed(pad), requires_grad=True)
        tokens = _tokens(3, 7, seed=pad, vocab=11)
        tokens[tokens == pad] = 6
        tokens[1, 4:], tokens[2, 1:] = pad, pad
        mine = next_token_loss(logits, tokens, pad)
        theirs = F.cross_entropy(logits[:, :-1].reshape(-1, 11), tokens[:, 1:].reshape(-1), ignore_index=pad)
        torch.testing.assert_close(mine, theirs)
        (g_mine,) = torch.autograd.grad(mine, logits)
        (g_theirs,) = torch.autograd.grad(theirs, logits)
        torch.testing.assert_close(g_mine, g_theirs)
    assert next_token_loss(torch.randn(1, 3, 5), torch.tensor([[4, PAD, PAD]]), PAD).item() == 0.0


def test_mask_tokens_follows_berts_proportions():
    """With a seed, are about 15% of ordinary tokens chosen, of those about 80% masked, 10% random,
    10% unchanged, specials never chosen, targets set exactly at the chosen positions, and is the
    same seed the same corruption?"""
    vocab = 200
    tokens = torch.randint(4, vocab, (64, 256), generator=torch.Generator().manual_seed(0))
    tokens[:, 0], tokens[:, -1], tokens[:8, 200:] = BOS, EOS, PAD
    inputs, targets = mask_tokens(tokens, MASK, vocab, generator=torch.Generator().manual_seed(1))
    again = mask_tokens(tokens, MASK, vocab, generator=torch.Generator().manual_seed(1))
    assert torch.equal(inputs, again[0]) and torch.equal(targets, again[1])
    special = (tokens == PAD) | (tokens == BOS) | (tokens == EOS)
    chosen = targets != PAD
    assert not (chosen & special).any() and torch.equal(inputs[special], tokens[special])
    assert torch.equal(targets[chosen], tokens[chosen]) and torch.equal(inputs[~chosen], tokens[~chosen])
    assert abs(chosen.sum() / (~special).sum() - 0.15) < 0.01
    masked = (inputs == MASK) & chosen
    kept = (inputs == tokens) & chosen
    randomised = chosen & ~masked & ~kept
    n = chosen.sum()
    assert abs(masked.sum() / n - 0.8) < 0.02
    assert abs(kept.sum() / n - 0.1) < 0.02 and abs(randomised.sum() / n - 0.1) < 0.02
    assert ((inputs[randomised] >= 4) & (inputs[randomised] < vocab)).all()


def test_masked_token_loss_scores_only_the_chosen_positions():
    """Is the loss cross-entropy over the chosen positions only (targets elsewhere are padding)?"""
    model = _lm(EncoderOnly)
    tokens = _tokens(4, 10, seed=5, lengths=[10, 8, 6, 3])
    inputs, targets = mask_tokens(tokens, MASK, 17, p=0.3, generator=torch.Generator().manual_seed(2))
    logits = model(inputs)
    expected = F.cross_entropy(logits.reshape(-1, 17), targets.reshape(-1), ignore_index=PAD)
    torch.testing.assert_close(masked_token_loss(logits, targets), expected)


def test_continue_prompt_is_seeded_greedy_at_temperature_zero_and_crops_its_context():
    """Does continue_prompt append max_new_tokens tokens, repeat with the same seed, follow the argmax at
    temperature 0, and keep going past max_len by feeding only the last max_len tokens?"""
    model = _lm(max_len=8)
    prompt = _tokens(2, 3, seed=6)
    a = continue_prompt(model, prompt, 5, temperature=0.9, top_k=5, generator=torch.Generator().manual_seed(0))
    b = continue_prompt(model, prompt, 5, temperature=0.9, top_k=5, generator=torch.Generator().manual_seed(0))
    assert a.shape == (2, 8) and torch.equal(a, b) and torch.equal(a[:, :3], prompt)
    greedy = continue_prompt(model, prompt, 5, temperature=0.0)
    with torch.no_grad():
        for t in range(3, 8):
            assert torch.equal(greedy[:, t], model(greedy[:, :t])[:, -1].argmax(-1))
    assert continue_prompt(model, prompt, 12, temperature=0.0).shape == (2, 15)

"""Today's decoder-only model (chapter 10): its cache, perplexity, and batched left-padded generation."""

import math

import torch

from autograder.reference import families
from autograder.reference.modern_lm import ModernCache, ModernConfig, ModernLM, generate_greedy, left_pad, perplexity


def _model(seed=0, dtype=torch.float64, **options):
    torch.manual_seed(seed)
    config = ModernConfig(
        **{"vocab_size": 23, "d_model": 32, "num_heads": 4, "num_kv_heads": 2, "num_layers": 2} | options
    )
    return ModernLM(config).to(dtype).eval()


def test_cached_steps_equal_the_full_forward_pass():
    """Do a prompt and then one token at a time through the cache give the full pass's logits?"""
    model = _model()
    tokens = torch.randint(1, 23, (3, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full = model(tokens)
        cache = ModernCache.empty(2)
        parts = [model(tokens[:, :5], cache=cache)] + [model(tokens[:, t : t + 1], cache=cache) for t in range(5, 9)]
    torch.testing.assert_close(torch.cat(parts, dim=1), full, atol=1e-12, rtol=1e-12)
    assert cache.length() == 9 and cache.keys[0] is not None and cache.keys[0].shape == (3, 2, 9, 8)


def test_no_bias_and_tied_embeddings():
    """Has the block no bias anywhere, and does the unembedding share the embedding's weight?"""
    model = _model()
    assert not [n for n, _ in model.named_parameters() if n.endswith("bias")]
    assert model.unembed.weight is model.embed.weight


def test_perplexity_is_exp_of_the_next_token_loss():
    """Is perplexity exp(next-token loss), V for uniform logits, and padding ignored?"""
    tokens = torch.tensor([[5, 3, 2, 0, 0], [1, 2, 3, 4, 6]])
    assert math.isclose(perplexity(torch.zeros(2, 5, 11), tokens, 0).item(), 11.0, rel_tol=1e-6)
    logits = torch.randn(2, 5, 11, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(perplexity(logits, tokens, 0), families.next_token_loss(logits, tokens, 0).exp())


def test_left_pad():
    """Are prompts right-aligned with padding on the left and keep False there?"""
    tokens, keep = left_pad([[4, 5, 6], [7]], pad_id=0)
    assert tokens.tolist() == [[4, 5, 6], [0, 0, 7]]
    assert keep.tolist() == [[True, True, True], [False, False, True]]


def test_batched_left_padded_generation_equals_each_prompt_alone():
    """In float64, does generating a batch of prompts of lengths 1 to 6 give exactly what each prompt gives alone?"""
    for seed in (0, 1, 2):
        model = _model(seed, num_kv_heads=1 + seed % 2)
        g = torch.Generator().manual_seed(seed)
        prompts = [torch.randint(1, 23, (n,), generator=g).tolist() for n in (6, 1, 3, 5)]
        batched = generate_greedy(model, prompts, 8)
        alone = torch.cat([generate_greedy(model, [p], 8) for p in prompts])
        assert torch.equal(batched, alone)


def test_unmasked_padding_would_differ_shared_positions_would_not():
    """Would attending to the padding change some row (so the test above can fail)? And do positions
    shared by the rows give what per-row positions give, since RoPE's scores see only offsets?"""
    model = _model(3)
    prompts = [[3, 9, 4, 11, 2, 7], [5], [8, 2]]
    alone = torch.cat([generate_greedy(model, [p], 1) for p in prompts])[:, 0]
    tokens, keep = left_pad(prompts, 0)
    per_row = (keep.long().cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        unmasked = model(tokens, per_row, torch.ones_like(keep))[:, -1]
        shared = model(tokens, torch.arange(tokens.size(1)), keep)[:, -1]
        mine = model(tokens, per_row, keep)[:, -1]
    assert not torch.equal(unmasked.argmax(-1), alone)
    assert torch.equal(mine.argmax(-1), alone)
    torch.testing.assert_close(shared, mine, atol=1e-10, rtol=1e-10)

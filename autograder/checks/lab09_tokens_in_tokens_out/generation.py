"""Checks for lab 09-tokens-in-tokens-out (chapter 9): top-k and top-p filtering, the decoder-only model
and its next-token loss. Beam search is checked in ``beam_search``.

Shape letters: B batch, L any length, V vocabulary.

The decoder-only model and its loss are compared with the reference on the same weights and
inputs. Nothing here trains a model.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from autograder.checks.kit import variants
from autograder.checks.kit.core import check, expect_loss, generator, logits_and_targets, seeded
from autograder.checks.kit.expect import Tolerance, call, expect_close, expect_shape, fail
from autograder.checks.kit.sentinels import forbidden
from autograder.checks.kit.token_inputs import self_attention_mask
from autograder.checks.kit.weights import load_reference_weights
from autograder.reference import families, generate

PAD = 0
_TOL: dict[torch.dtype, Tolerance] = {
    torch.float32: dict(atol=1e-5, rtol=1e-4),
    torch.float64: dict(atol=1e-9, rtol=1e-7),
}


# ----------------------------------------------------------------------------- filter_logits


def _filter_variant(
    logits: Tensor,
    top_k,
    top_p,
    *,
    k_shift: int = 0,
    smallest: bool = False,
    exclusive: bool = False,
    ascending: bool = False,
    before_k: bool = False,
    unsorted: bool = False,
    fill: float = float("-inf"),
    probs: bool = False,
) -> Tensor:
    x = logits.double()
    original = x
    if top_k is not None:
        kept = x.topk(max(1, min(top_k + k_shift, x.size(-1))), dim=-1, largest=not smallest).indices
        x = x.masked_fill(~torch.zeros_like(x, dtype=torch.bool).scatter(-1, kept, True), fill)
    if top_p is not None:
        source = original if before_k else x
        s, order = source.sort(dim=-1, descending=not ascending)
        p = s.softmax(-1)
        keep_sorted = (p.cumsum(-1) < top_p) if exclusive else (p.cumsum(-1) - p < top_p)
        keep = keep_sorted if unsorted else torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
        x = x.masked_fill(~keep, fill)
    return x.softmax(-1) if probs else x


_FILTER_MISTAKES = {
    "the nucleus stops before the token that crosses top_p (keep a token while the mass ranked above it "
    "is below top_p, so the kept mass reaches top_p)": dict(exclusive=True),
    "the keep-mask of top-p left in sorted order: map it back to vocabulary order (scatter with the sort "
    "indices)": dict(unsorted=True),
    "top-p computed on probabilities sorted in ascending order (the least likely tokens kept)": dict(ascending=True),
    "top-p computed on the distribution before top-k (renormalise after top-k: softmax of the filtered logits)": dict(
        before_k=True
    ),
    "top_k - 1 tokens kept": dict(k_shift=-1),
    "top_k + 1 tokens kept": dict(k_shift=1),
    "the k smallest logits kept instead of the k largest": dict(smallest=True),
    "filtered logits set to 0 instead of -inf (they keep probability)": dict(fill=0.0),
    "probabilities returned instead of filtered logits": dict(probs=True),
}


@check
def check_filter_logits(filter_logits, seed: int = 0) -> None:
    """``filter_logits(logits, top_k, top_p)``: top-k alone, top-p alone, both, the edge values
    (top_k=1, top_p=1.0, a tiny top_p), several leading dimensions and float64. Compared as the
    distributions ``softmax`` gives, so any value that softmax turns into 0 (-inf, -1e9) is fine."""
    g = generator(seed)
    cases = [
        ((3, 10), 3, None, torch.float32),
        ((3, 10), None, 0.8, torch.float32),
        ((2, 4, 9), 4, 0.7, torch.float32),
        ((4, 7), 1, None, torch.float64),
        ((2, 12), None, 1.0, torch.float32),
        ((2, 12), None, 1e-3, torch.float32),
        ((5, 16), 8, 0.9, torch.float64),
        ((1, 6), None, None, torch.float32),
    ]
    for shape, top_k, top_p, dtype in cases:
        logits = (2.0 * torch.randn(shape, generator=g, dtype=torch.float64)).to(dtype)
        what = f"filter_logits(logits {shape} {str(dtype)[6:]}, top_k={top_k}, top_p={top_p}) (seed {seed})"
        expected = generate.filter_logits(logits, top_k, top_p)
        with forbidden(
            filter_logits,
            ["autograder.reference.generate.filter_logits", "autograder.reference.generate.sample_next"],
            instead="Build it from topk, sort, softmax, cumsum and masked_fill.",
        ):
            found = call(filter_logits, logits.clone(), top_k, top_p, what=what)
        found = expect_shape(what, found, shape)
        if found.dtype != dtype:
            fail(what, f"dtype {dtype}", f"dtype {found.dtype}")
        mistakes = {
            name: (lambda f=flags, x=logits, k=top_k, p=top_p: _filter_variant(x, k, p, **f).softmax(-1))
            for name, flags in _FILTER_MISTAKES.items()
        }
        expect_close(
            what + ", compared as softmax(filtered logits)",
            found.double().softmax(-1),
            expected.double().softmax(-1),
            atol=1e-6,
            rtol=1e-5,
            mistakes=mistakes,
        )


# ----------------------------------------------------------------------------- DecoderOnly


def _lm_pipeline(
    m, tokens: Tensor, *, causal: bool = True, pad: bool = True, scale: bool = True, positions: int = 1
) -> Tensor:
    """The reference model's forward pass with one piece switched off."""
    c = m.config
    x = m.embed.embedding(tokens) * (math.sqrt(c.d_model) if scale else 1.0)
    x = x + positions * m.pe[: tokens.size(1)].to(x.dtype)
    return m.unembed(m.blocks(x, self_attention_mask(tokens, c.pad_id, causal=causal, pad=pad)))  # (B, L, V)


_LM_CASES: list[tuple[dict[str, Any], torch.dtype]] = [
    (dict(vocab_size=11, d_model=16, num_heads=2, num_layers=2, d_ff=32), torch.float32),
    (
        dict(vocab_size=9, d_model=12, num_heads=3, num_layers=1, d_ff=24, norm_first=True, tie_embeddings=False),
        torch.float64,
    ),
]
_LM_OPS = [
    "autograder.reference.families.DecoderOnly",
    "autograder.reference.families.EncoderOnly",
    "autograder.reference.families._OneStack",
    "torch.nn.TransformerEncoder.__init__",
    "torch.nn.TransformerEncoder.forward",
    "torch.nn.TransformerEncoderLayer.__init__",
    "torch.nn.TransformerEncoderLayer.forward",
    "torch.nn.TransformerDecoderLayer.forward",
    "torch._transformer_encoder_layer_fwd",
]


@check
def check_decoder_only(DecoderOnly, seed: int = 0) -> None:
    """``DecoderOnly(config)`` with the reference's weights: logits for padded batches, post- and
    pre-norm, tied and untied embeddings, float32 and float64, and a sequence of length 1."""
    for i, (options, dtype) in enumerate(_LM_CASES):
        config = families.LanguageModelConfig(**options, dropout=0.0, max_len=32)
        ref = seeded(families.DecoderOnly, seed * 10 + i, config).to(dtype).eval()
        tokens = torch.randint(3, config.vocab_size, (3, 7), generator=generator(seed * 10 + i))
        tokens[1, 5:], tokens[2, 2:] = PAD, PAD
        name = f"DecoderOnly(LanguageModelConfig({', '.join(f'{k}={v}' for k, v in options.items())}))"
        with torch.no_grad():
            expected, single = ref(tokens), ref(tokens[:, :1])
            wrong = {
                "no causal mask: every position sees the tokens after it (use causal AND padding)": _lm_pipeline(
                    ref, tokens, causal=False
                ),
                "padding not masked (causal mask only)": _lm_pipeline(ref, tokens, pad=False),
                "embeddings not scaled by sqrt(d_model)": _lm_pipeline(ref, tokens, scale=False),
                "positional encodings not added": _lm_pipeline(ref, tokens, positions=0),
                "positional encodings added twice": _lm_pipeline(ref, tokens, positions=2),
            }
        with forbidden(
            DecoderOnly,
            _LM_OPS,
            instead="Assemble it from Embeddings, sinusoidal_encoding, the "
            "course's Encoder (or EncoderLayer) run with a causal mask, and nn.Linear.",
        ):
            model = call(DecoderOnly, config, what=f"{name} (a LanguageModelConfig)")
            load_reference_weights(model, ref, name)
            model.to(dtype).eval()
            if config.tie_embeddings and model.unembed.weight is not model.embed.embedding.weight:
                fail(
                    f"{name}: weight tying",
                    "unembed.weight to be the same Parameter as embed.embedding.weight",
                    "two separate parameters",
                    "config.tie_embeddings ignored",
                    hint="after creating both: self.unembed.weight = self.embed.embedding.weight",
                )
            with torch.no_grad():
                found = call(model, tokens, what=f"{name}(tokens) for tokens {tuple(tokens.shape)} with padded rows")
                found_single = call(model, tokens[:, :1], what=f"{name}(tokens) for a sequence of length 1")
        tol: Tolerance = dict(atol=1e-6, rtol=1e-6) if dtype == torch.float64 else _TOL[dtype]
        expect_close(f"{name}(tokens), the logits", found, expected, **tol, mistakes=wrong)
        expect_close(f"{name}(tokens[:, :1]), a sequence of length 1", found_single, single, **tol)


# ----------------------------------------------------------------------------- next_token_loss


def _nll(
    logits: Tensor, targets: Tensor, keep: Tensor, reduce: str = "mean", naive: bool = False, axis: int = -1
) -> Tensor:
    logp = logits.softmax(-1).log().double() if naive else F.log_softmax(logits.double(), dim=axis)  # naive: its dtype
    per = -logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    if reduce == "numel":
        return (per * keep).sum() / per.numel()
    if reduce == "all":
        return per.mean()
    if reduce == "sum":
        return (per * keep).sum()
    if reduce == "rows":  # a mean per row, then the mean of the rows that have a target
        per_row = (per * keep).sum(-1) / keep.sum(-1).clamp(min=1)
        return per_row[keep.any(-1)].mean()
    return (per * keep).sum() / keep.sum().clamp(min=1)


def _loss_mistakes(logits: Tensor, tokens: Tensor, pad: int) -> dict:
    lg, tg = logits[:, :-1], tokens[:, 1:]
    keep = tg != pad
    return {
        "targets not shifted: position t scored on token t (score logits[:, :-1] against tokens[:, 1:])": lambda: _nll(
            logits, tokens, tokens != pad
        ),
        "shifted the wrong way: logits[:, 1:] scored against tokens[:, :-1]": lambda: _nll(
            logits[:, 1:], tokens[:, :-1], tokens[:, :-1] != pad
        ),
        "padding counted in the mean (divide by the number of non-pad targets)": lambda: _nll(lg, tg, keep, "numel"),
        "padding positions' losses counted in the mean": lambda: _nll(lg, tg, keep, "all"),
        "summed over tokens instead of averaged": lambda: _nll(lg, tg, keep, "sum"),
        "averaged per row, then over the rows: every non-pad target of the batch counts once, so a row with "
        "more targets weighs more (sum over all of them, divide by their number)": lambda: _nll(lg, tg, keep, "rows"),
        "log of softmax underflows to log(0) = -inf for large logits: use log_softmax": lambda: _nll(
            lg, tg, keep, naive=True
        ),
        **{
            variants.LOG_SOFTMAX_OVER.format(dim): (lambda dim=dim: _nll(lg, tg, keep, axis=dim))
            for dim in range(logits.dim() - 1)
        },
    }


@check
def check_next_token_loss(next_token_loss, seed: int = 0) -> None:
    """``next_token_loss(logits, tokens, pad_id)``: padded rows of different lengths (the mean is
    over every non-pad target of the batch), a row that is all padding after its first token, a
    pad id other than 0, huge logits, float64, and its gradient."""
    cases = [
        ((2, 6, 7), 0, torch.float32, 1.0, [6, 3]),
        ((3, 5, 9), 0, torch.float64, 2.0, [5, 2, 1]),
        ((2, 2, 5), 0, torch.float32, 1.0, [2, 1]),
        ((2, 6, 8), 3, torch.float32, 1.0, [6, 4]),
        ((2, 4, 6), 0, torch.float32, 100.0, [4, 3]),
    ]
    # F.cross_entropy is the exercise; F.nll_loss on one's own log_softmax is allowed, as in lab 8. (Where
    # PyTorch dispatches it, cross_entropy is log_softmax then nll_loss: only the function can be refused.)
    forbid = [
        "torch.nn.functional.cross_entropy",
        "torch.nn.CrossEntropyLoss.forward",
        "autograder.reference.families.next_token_loss",
        "autograder.reference.families.masked_token_loss",
        "autograder.reference.families._mean_nll",
        "autograder.reference.loss.label_smoothed_loss",
    ]
    for i, (shape, pad, dtype, scale, lengths) in enumerate(cases):
        logits, tokens = logits_and_targets(shape, pad, lengths, seed * 10 + i, dtype, scale)
        what = (
            f"next_token_loss(logits {shape} {str(dtype)[6:]} of size ~{scale:g}, tokens with "
            f"{int((tokens == pad).sum())} padding positions, pad_id={pad}) (seed {seed})"
        )
        instead = (
            "Shift (logits[:, :-1] against tokens[:, 1:]), take "
            "log_softmax, gather the targets' log-probabilities (or F.nll_loss on them), average over "
            "the non-pad targets."
        )
        mistakes = _loss_mistakes(logits, tokens, pad)
        expect_loss(what, next_token_loss, families.next_token_loss, logits, (tokens, pad), forbid, instead, mistakes)

"""Checks for lab 08-encoder-decoder (chapter 8): the embeddings and the model. Greedy decoding
is checked in ``greedy_decode``.

Shape letters: B batch, S source length, T target length, L any length, D d_model, V vocabulary.
Every check compares the candidate with the reference on the same weights and inputs;
none of them trains a model. The loss, the schedule and the training step are checked in
``training``.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from autograder import reference
from autograder.checks.kit.core import check, seeded
from autograder.checks.kit.dropout import expect_dropout
from autograder.checks.kit.expect import (
    TOLERANCE_BY_DTYPE,
    Tolerance,
    call,
    describe,
    dtype_name,
    expect_close,
    expect_equal,
    fail,
)
from autograder.checks.kit.sentinels import forbidden
from autograder.checks.kit.token_inputs import padded_ids, random_ids, self_attention_mask
from autograder.checks.kit.weights import load_reference_weights
from autograder.data import BOS_ID

NO_EMBEDDING_DROPOUT = "no dropout on embeddings + positions: embed returns dropout(embedding(tokens) + pe[:L])"
DROPOUT_BEFORE_POSITIONS = (
    "dropout on the embeddings before the positions are added, dropout(x) + pe: it belongs on the sum, dropout(x + pe)"
)
STACKS_WITHOUT_DROPOUT = "config.dropout not passed on to the encoder and decoder stacks"


# ----------------------------------------------------------------------------- Embeddings


@check
def check_embeddings(Embeddings, seed: int = 0) -> None:
    """``Embeddings(V, D)(ids)``: the lookup of ``self.embedding`` times sqrt(D), nothing added."""
    cases = [(11, 8, (2, 5), torch.float32), (7, 6, (1, 1), torch.float32), (20, 16, (3, 4), torch.float64)]
    for i, (vocab, d, shape, dtype) in enumerate(cases):
        _check_embeddings_case(Embeddings, seed, seed * 10 + i, vocab, d, shape, dtype)


def _check_embeddings_case(Embeddings, seed: int, s: int, vocab: int, d: int, shape: tuple, dtype) -> None:
    __tracebackhide__ = True
    ref = seeded(reference.Embeddings, s, vocab, d).to(dtype)
    ids = random_ids(shape, 0, vocab, s)
    what = f"Embeddings({vocab}, {d})(ids) for ids of shape {shape}, weights {dtype_name(dtype)} (seed {seed})"
    with torch.no_grad():
        expected = ref(ids)
        lookup = ref.embedding(ids)
        pe = reference.sinusoidal_encoding(shape[1], d, dtype)
    with forbidden(
        Embeddings, ["autograder.reference.Embeddings"], instead="Build it from nn.Embedding and math.sqrt."
    ):
        candidate = call(Embeddings, vocab, d, what=f"Embeddings({vocab}, {d})")
        load_reference_weights(candidate, ref, f"Embeddings({vocab}, {d})")
        candidate.to(dtype)
        with torch.no_grad():
            found = call(candidate, ids, what=what)
    expect_close(
        what,
        found,
        expected,
        **TOLERANCE_BY_DTYPE[dtype],
        mistakes={
            "embeddings not scaled by sqrt(d_model)": lookup,
            "divided by sqrt(d_model) instead of multiplied": lookup / math.sqrt(d),
            "scaled by d_model instead of sqrt(d_model)": lookup * d,
            "positional encodings added inside Embeddings (the model adds them afterwards, once)": expected + pe,
            "positional encodings added and the lookup not scaled": lookup + pe,
        },
    )


# ----------------------------------------------------------------------------- EncoderDecoder


def _pipeline(
    m,
    src: Tensor,
    tgt_in: Tensor,
    *,
    scale: bool = True,
    positions: int = 1,
    causal: bool = True,
    tgt_pad: bool = True,
    enc_mask: bool = True,
    cross_mask: bool = True,
    drop: str = "sum",
    stack_dropout: bool = True,
) -> tuple[Tensor, Tensor]:
    """The reference model's forward pass with one piece switched off: ``(memory, logits)``.
    ``drop``: where the embeddings' dropout acts in training mode, "sum" (right), "none" or
    "embeddings" (before the positions are added)."""
    c = m.config
    stacks = [] if stack_dropout else [m.encoder, m.decoder]
    states = [s.training for s in stacks]

    def dropout(x: Tensor) -> Tensor:
        return F.dropout(x, c.dropout) if m.training and c.dropout > 0 else x

    def embed(e, ids):
        x = e.embedding(ids) * (math.sqrt(c.d_model) if scale else 1.0)
        pe = positions * m.pe[: ids.size(1)].to(x.dtype)
        return {"sum": lambda: dropout(x + pe), "none": lambda: x + pe, "embeddings": lambda: dropout(x) + pe}[drop]()

    for s in stacks:
        s.eval()
    try:
        src_mask = reference.padding_mask(src, c.pad_id)  # (B, 1, 1, S)
        memory = m.encoder(embed(m.src_embed, src), src_mask if enc_mask else None)  # (B, S, D)
        tgt_mask = self_attention_mask(tgt_in, c.pad_id, causal=causal, pad=tgt_pad)
        y = m.decoder(embed(m.tgt_embed, tgt_in), memory, tgt_mask, src_mask if cross_mask else None)
        return memory, m.generator(y)  # (B, T, V)
    finally:
        for s, state in zip(stacks, states, strict=True):
            s.train(state)


_MODEL_CASES: list[tuple[dict[str, Any], torch.dtype]] = [
    (dict(src_vocab_size=13, tgt_vocab_size=11, d_model=16, num_heads=2, num_layers=2, d_ff=32), torch.float32),
    (
        dict(
            src_vocab_size=9,
            tgt_vocab_size=12,
            d_model=12,
            num_heads=3,
            num_layers=1,
            d_ff=24,
            norm_first=True,
            tie_embeddings=True,
        ),
        torch.float64,
    ),
]
_BUILD_MODEL = "Assemble it from your Embeddings, sinusoidal_encoding, Encoder, Decoder and nn.Linear."


def _model_inputs(config, s: int) -> tuple[Tensor, Tensor]:
    src = padded_ids(3, 6, config.src_vocab_size, s, lengths=[6, 4, 1])
    tgt_in = padded_ids(3, 5, config.tgt_vocab_size, s + 5, lengths=[5, 3, 1])
    tgt_in[:, 0] = BOS_ID
    return src, tgt_in


def _build_model(EncoderDecoder, config, ref, name: str):
    __tracebackhide__ = True
    model = call(EncoderDecoder, config, what=f"{name} (a TransformerConfig)")
    load_reference_weights(model, ref, name)
    if config.tie_embeddings and model.generator.weight is not model.tgt_embed.embedding.weight:
        fail(
            f"{name}: weight tying",
            "generator.weight to be the same Parameter as tgt_embed.embedding.weight",
            "two separate parameters",
            "config.tie_embeddings ignored",
            hint="after creating both: self.generator.weight = self.tgt_embed.embedding.weight",
        )
    return model


@check
def check_encoder_decoder(EncoderDecoder, seed: int = 0) -> None:
    """``EncoderDecoder(config)`` with the reference's weights: ``encode``, ``decode`` and
    ``forward`` against the reference, with padded sources and targets, post- and pre-norm,
    untied and tied embeddings, float32 and float64; then, in training mode with dropout, that
    dropout acts on embeddings + positions and in the stacks (``dropout.fixed_dropout``)."""
    for i, (options, dtype) in enumerate(_MODEL_CASES):
        _check_model_case(EncoderDecoder, seed, seed * 10 + i, options, dtype)
    _check_model_dropout(EncoderDecoder, seed)


def _model_mistakes(ref, src: Tensor, tgt_in: Tensor) -> dict[str, tuple[Tensor, Tensor]]:
    """Mistake -> the ``(memory, logits)`` of the reference's forward pass with that piece switched off."""
    return {
        "embeddings not scaled by sqrt(d_model)": _pipeline(ref, src, tgt_in, scale=False),
        "positional encodings not added": _pipeline(ref, src, tgt_in, positions=0),
        "positional encodings added twice": _pipeline(ref, src, tgt_in, positions=2),
        "source padding mask not used in the encoder's self-attention": _pipeline(ref, src, tgt_in, enc_mask=False),
        "no causal mask in the decoder's self-attention (it sees the future)": _pipeline(
            ref, src, tgt_in, causal=False
        ),
        "target padding not masked in the decoder's self-attention (causal mask only)": _pipeline(
            ref, src, tgt_in, tgt_pad=False
        ),
        "source padding mask not used in cross-attention": _pipeline(ref, src, tgt_in, cross_mask=False),
    }


def _check_model_case(EncoderDecoder, seed: int, s: int, options: dict, dtype) -> None:
    __tracebackhide__ = True
    config = reference.TransformerConfig(**options, dropout=0.0, max_len=32)
    ref = seeded(reference.EncoderDecoder, s, config).to(dtype).eval()
    src, tgt_in = _model_inputs(config, s)
    name = f"EncoderDecoder({', '.join(f'{k}={v}' for k, v in options.items())})"
    with torch.no_grad():
        memory, src_mask = ref.encode(src)
        logits = ref.decode(tgt_in, memory, src_mask)
        bos_only = ref(src, tgt_in[:, :1])
        wrong = _model_mistakes(ref, src, tgt_in)
    with forbidden(EncoderDecoder, ["autograder.reference.EncoderDecoder"], instead=_BUILD_MODEL):
        model = _build_model(EncoderDecoder, config, ref, name)
        model.to(dtype).eval()
        with torch.no_grad():
            out = call(model.encode, src, what=f"{name}.encode(src) for src {tuple(src.shape)} with padded rows")
            if not (isinstance(out, tuple) and len(out) == 2):
                fail(f"{name}.encode(src)", "a tuple (memory, src_mask)", describe(out))
            found_memory, found_mask = out
            found_logits = call(
                model.decode,
                tgt_in,
                memory,
                src_mask,
                what=f"{name}.decode(tgt_in, memory, src_mask), tgt_in {tuple(tgt_in.shape)}",
            )
            found_forward = call(model, src, tgt_in, what=f"{name}(src, tgt_in)")
            found_bos = call(model, src, tgt_in[:, :1], what=f"{name}(src, tgt_in) with a target of length 1")
    # float64 tolerance stays loose: a float32 or float64 positional table are both right
    tol: Tolerance = dict(atol=1e-6, rtol=1e-6) if dtype == torch.float64 else TOLERANCE_BY_DTYPE[dtype]
    expect_equal(
        f"{name}.encode(src)[1], the source padding mask (True = may attend)",
        found_mask,
        src_mask,
        hint="reference.padding_mask(src, config.pad_id) has shape (B, 1, 1, S).",
    )
    expect_close(
        f"{name}.encode(src)[0], the memory", found_memory, memory, **tol, mistakes={k: v[0] for k, v in wrong.items()}
    )
    expect_close(
        f"{name}.decode(tgt_in, memory, src_mask), the logits",
        found_logits,
        logits,
        **tol,
        mistakes={k: v[1] for k, v in wrong.items() if "decoder" in k or "cross" in k},
    )
    expect_close(
        f"{name}(src, tgt_in), the logits", found_forward, logits, **tol, mistakes={k: v[1] for k, v in wrong.items()}
    )
    expect_close(f"{name}(src, tgt_in[:, :1]), a target of length 1", found_bos, bos_only, **tol)


def _check_model_dropout(EncoderDecoder, seed: int) -> None:
    """Training mode, dropout 0.3: the same entries dropped in the reference and the candidate."""
    __tracebackhide__ = True
    options, p = _MODEL_CASES[0][0], 0.3
    config = reference.TransformerConfig(**options, dropout=p, max_len=32)
    s = seed * 10 + 7
    ref = seeded(reference.EncoderDecoder, s, config).double().train()
    src, tgt_in = _model_inputs(config, s)
    name = f"EncoderDecoder({', '.join(f'{k}={v}' for k, v in options.items())}, dropout={p})"
    what = f"{name}(src, tgt_in) in training mode, float64 (dropout drawn from the check's seed {seed})"
    d, f = config.d_model, config.d_ff
    (b, s_len), t_len = src.shape, tgt_in.size(1)
    sites: dict[tuple[int, ...], tuple[str, int]] = {
        (b, s_len, d): ("embeddings + positions and sublayer outputs, (B, S, D)", 1 + 2 * config.num_layers),
        (b, t_len, d): ("embeddings + positions and sublayer outputs, (B, T, D)", 1 + 3 * config.num_layers),
    }
    h, n = config.num_heads, config.num_layers
    sites.update(
        {
            (b, s_len, f): ("the encoder's feed-forward hidden units", n),
            (b, t_len, f): ("the decoder's feed-forward hidden units", n),
            (b, h, s_len, s_len): ("the encoder's attention weights", n),
            (b, h, t_len, t_len): ("the decoder's self-attention weights", n),
            (b, h, t_len, s_len): ("the decoder's cross-attention weights", n),
        }
    )
    forbid = (EncoderDecoder, ["autograder.reference.EncoderDecoder"], _BUILD_MODEL)
    with forbidden(*forbid):
        model = _build_model(EncoderDecoder, config, ref, name)
        model.double()
    expect_dropout(
        what,
        model,
        (src, tgt_in),
        seed,
        lambda: ref(src, tgt_in),
        {
            NO_EMBEDDING_DROPOUT: lambda: _pipeline(ref, src, tgt_in, drop="none")[1],
            DROPOUT_BEFORE_POSITIONS: lambda: _pipeline(ref, src, tgt_in, drop="embeddings")[1],
            STACKS_WITHOUT_DROPOUT: lambda: _pipeline(ref, src, tgt_in, stack_dropout=False)[1],
        },
        sites,
        forbid,
        atol=1e-6,
        rtol=1e-6,
    )  # loose: a float32 or float64 positional table are both right

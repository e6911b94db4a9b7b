"""Checks for lab 08-encoder-decoder (chapter 8).

Shape letters: B batch, S source length, T target length, D d_model, V vocabulary.
Every check compares the candidate with the reference on the same weights and inputs;
none of them trains a model (``check_train_step`` takes two optimizer steps on a tiny one).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import numbers
import warnings

import torch
import torch.nn.functional as F
from torch import Tensor

from autograder import reference
from autograder.checks.core import (
    CheckFailed, beside, call, check, describe, expect_close, expect_equal, expect_tensor, fail, forbidden,
    generator, load_reference_weights,
)
from autograder.reference import train as reference_train

PAD, BOS, EOS = 0, 1, 2
_TOL = {torch.float32: dict(atol=1e-5, rtol=1e-4), torch.float64: dict(atol=1e-10, rtol=1e-8)}


def _seeded(make, seed: int):
    """Build something that draws from the global RNG without disturbing the student's."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return make()


def _ids(shape, low: int, high: int, seed: int) -> Tensor:
    return torch.randint(low, high, shape, generator=generator(seed))


def _padded(batch: int, length: int, vocab: int, seed: int, lengths: list[int] | None = None) -> Tensor:
    """Ids in 3..V-1, row b padded after ``lengths[b]`` real tokens (default: shrinking rows)."""
    x = _ids((batch, length), 3, vocab, seed)
    lengths = lengths or [max(1, length - 2 * b) for b in range(batch)]
    for b, n in enumerate(lengths):
        x[b, n:] = PAD
    return x


# ----------------------------------------------------------------------------- Embeddings

@check
def check_embeddings(Embeddings, seed: int = 0) -> None:
    """``Embeddings(V, D)(ids)``: the lookup of ``self.embedding`` times sqrt(D), nothing added."""
    cases = [(11, 8, (2, 5), torch.float32), (7, 6, (1, 1), torch.float32), (20, 16, (3, 4), torch.float64)]
    for i, (vocab, d, shape, dtype) in enumerate(cases):
        ref = _seeded(lambda: reference.Embeddings(vocab, d), seed * 10 + i).to(dtype)
        ids = _ids(shape, 0, vocab, seed * 10 + i)
        what = f"Embeddings({vocab}, {d})(ids) for ids of shape {shape}, weights {str(dtype)[6:]} (seed {seed})"
        with torch.no_grad():
            expected = ref(ids)
            lookup = ref.embedding(ids)
            pe = reference.sinusoidal_encoding(shape[1], d, dtype)
        with forbidden(Embeddings, ["autograder.reference.Embeddings"],
                       instead="Build it from nn.Embedding and math.sqrt."):
            candidate = call(Embeddings, vocab, d, what=f"Embeddings({vocab}, {d})")
            load_reference_weights(candidate, ref, f"Embeddings({vocab}, {d})")
            candidate.to(dtype)
            with torch.no_grad():
                found = call(candidate, ids, what=what)
        expect_close(what, found, expected, **_TOL[dtype], mistakes={
            "embeddings not scaled by sqrt(d_model)": lookup,
            "divided by sqrt(d_model) instead of multiplied": lookup / math.sqrt(d),
            "scaled by d_model instead of sqrt(d_model)": lookup * d,
            "positional encodings added inside Embeddings (the model adds them afterwards, once)":
                expected + pe,
            "positional encodings added and the lookup not scaled": lookup + pe,
        })


# ----------------------------------------------------------------------------- EncoderDecoder

def _pipeline(m, src: Tensor, tgt_in: Tensor, *, scale: bool = True, positions: int = 1, causal: bool = True,
              tgt_pad: bool = True, enc_mask: bool = True, cross_mask: bool = True) -> tuple[Tensor, Tensor]:
    """The reference model's forward pass with one piece switched off: ``(memory, logits)``."""
    c = m.config

    def embed(e, ids):
        x = e.embedding(ids) * (math.sqrt(c.d_model) if scale else 1.0)
        return x + positions * m.pe[: ids.size(1)].to(x.dtype)

    src_mask = reference.padding_mask(src, c.pad_id)  # (B, 1, 1, S)
    memory = m.encoder(embed(m.src_embed, src), src_mask if enc_mask else None)  # (B, S, D)
    if causal and tgt_pad:
        tgt_mask = reference.decoder_self_attention_mask(tgt_in, c.pad_id)  # (B, 1, T, T)
    elif causal:
        tgt_mask = reference.causal_mask(tgt_in.size(1))  # (T, T)
    else:
        tgt_mask = reference.padding_mask(tgt_in, c.pad_id)  # (B, 1, 1, T)
    y = m.decoder(embed(m.tgt_embed, tgt_in), memory, tgt_mask, src_mask if cross_mask else None)
    return memory, m.generator(y)  # (B, T, V)


_MODEL_CASES = [
    (dict(src_vocab_size=13, tgt_vocab_size=11, d_model=16, num_heads=2, num_layers=2, d_ff=32), torch.float32),
    (dict(src_vocab_size=9, tgt_vocab_size=12, d_model=12, num_heads=3, num_layers=1, d_ff=24,
          norm_first=True, tie_embeddings=True), torch.float64),
]


@check
def check_encoder_decoder(EncoderDecoder, seed: int = 0) -> None:
    """``EncoderDecoder(config)`` with the reference's weights: ``encode``, ``decode`` and
    ``forward`` against the reference, with padded sources and targets, post- and pre-norm,
    untied and tied embeddings, float32 and float64."""
    for i, (options, dtype) in enumerate(_MODEL_CASES):
        config = reference.TransformerConfig(**options, dropout=0.0, max_len=32)
        ref = _seeded(lambda: reference.EncoderDecoder(config), seed * 10 + i).to(dtype).eval()
        src = _padded(3, 6, config.src_vocab_size, seed * 10 + i, lengths=[6, 4, 1])
        tgt_in = _padded(3, 5, config.tgt_vocab_size, seed * 10 + i + 5, lengths=[5, 3, 1])
        tgt_in[:, 0] = BOS
        name = f"EncoderDecoder({', '.join(f'{k}={v}' for k, v in options.items())})"
        with torch.no_grad():
            memory, src_mask = ref.encode(src)
            logits = ref.decode(tgt_in, memory, src_mask)
            bos_only = ref(src, tgt_in[:, :1])
            wrong = {
                "embeddings not scaled by sqrt(d_model)": _pipeline(ref, src, tgt_in, scale=False),
                "positional encodings not added": _pipeline(ref, src, tgt_in, positions=0),
                "positional encodings added twice": _pipeline(ref, src, tgt_in, positions=2),
                "source padding mask not used in the encoder's self-attention":
                    _pipeline(ref, src, tgt_in, enc_mask=False),
                "no causal mask in the decoder's self-attention (it sees the future)":
                    _pipeline(ref, src, tgt_in, causal=False),
                "target padding not masked in the decoder's self-attention (causal mask only)":
                    _pipeline(ref, src, tgt_in, tgt_pad=False),
                "source padding mask not used in cross-attention":
                    _pipeline(ref, src, tgt_in, cross_mask=False),
            }
        with forbidden(EncoderDecoder, ["autograder.reference.EncoderDecoder"],
                       instead="Assemble it from your Embeddings, sinusoidal_encoding, Encoder, Decoder "
                               "and nn.Linear."):
            model = call(EncoderDecoder, config, what=f"{name} (a TransformerConfig)")
            load_reference_weights(model, ref, name)
            model.to(dtype).eval()
            if config.tie_embeddings and model.generator.weight is not model.tgt_embed.embedding.weight:
                fail(f"{name}: weight tying", "generator.weight to be the same Parameter as "
                     "tgt_embed.embedding.weight", "two separate parameters",
                     "config.tie_embeddings ignored",
                     hint="after creating both: self.generator.weight = self.tgt_embed.embedding.weight")
            with torch.no_grad():
                out = call(model.encode, src, what=f"{name}.encode(src) for src {tuple(src.shape)} "
                           "with padded rows")
                if not (isinstance(out, tuple) and len(out) == 2):
                    fail(f"{name}.encode(src)", "a tuple (memory, src_mask)", describe(out))
                found_memory, found_mask = out
                found_logits = call(model.decode, tgt_in, memory, src_mask,
                                    what=f"{name}.decode(tgt_in, memory, src_mask), tgt_in {tuple(tgt_in.shape)}")
                found_forward = call(model, src, tgt_in, what=f"{name}(src, tgt_in)")
                found_bos = call(model, src, tgt_in[:, :1], what=f"{name}(src, tgt_in) with a target of length 1")
        # float64 tolerance stays loose: a float32 or float64 positional table are both right
        tol = dict(atol=1e-6, rtol=1e-6) if dtype == torch.float64 else _TOL[dtype]
        expect_equal(f"{name}.encode(src)[1], the source padding mask (True = may attend)", found_mask, src_mask,
                     hint="reference.padding_mask(src, config.pad_id) has shape (B, 1, 1, S).")
        expect_close(f"{name}.encode(src)[0], the memory", found_memory, memory, **tol,
                     mistakes={k: v[0] for k, v in wrong.items()})
        expect_close(f"{name}.decode(tgt_in, memory, src_mask), the logits", found_logits, logits, **tol,
                     mistakes={k: v[1] for k, v in wrong.items() if "decoder" in k or "cross" in k})
        expect_close(f"{name}(src, tgt_in), the logits", found_forward, logits, **tol,
                     mistakes={k: v[1] for k, v in wrong.items()})
        expect_close(f"{name}(src, tgt_in[:, :1]), a target of length 1", found_bos, bos_only, **tol)


# ----------------------------------------------------------------------------- label smoothing

def _smoothed(logits: Tensor, target: Tensor, smoothing: float, pad_id: int, *, off: float | None = None,
              pad_mass: bool = False, true_extra: float = 0.0, reduce: str = "mean", kl: str = "",
              naive_log: bool = False) -> Tensor:
    """Variants of the smoothed cross-entropy, for naming mistakes."""
    vocab = logits.size(-1)
    if naive_log:
        logp = torch.log(torch.exp(logits - logits.amax(-1, keepdim=True))
                         / torch.exp(logits - logits.amax(-1, keepdim=True)).sum(-1, keepdim=True))
    else:
        logp = F.log_softmax(logits.double(), dim=-1)  # (B, T, V)
    q = torch.full_like(logp, smoothing / (vocab - 2) if off is None else off)
    if not pad_mass:
        q[..., pad_id] = 0.0
    q.scatter_(-1, target.unsqueeze(-1), 1.0 - smoothing + true_extra)  # (B, T, V)
    per_token = -(q * logp).sum(-1)  # (B, T)
    if kl == "xlogy":
        per_token = per_token + torch.special.xlogy(q, q).sum(-1)
    elif kl == "naive":
        per_token = (q * (torch.log(q) - logp)).sum(-1)
    keep = target != pad_id
    if reduce == "all":
        return per_token.mean()
    if reduce == "numel":
        return (per_token * keep).sum() / per_token.numel()
    if reduce == "sum":
        return (per_token * keep).sum()
    if reduce == "none":
        return per_token
    return (per_token * keep).sum() / keep.sum().clamp(min=1)


def _loss_mistakes(logits: Tensor, target: Tensor, s: float, pad: int) -> dict:
    v = logits.size(-1)
    a = (logits, target, s, pad)
    return {
        "padding counted in the mean (average over non-pad target tokens only)":
            lambda: _smoothed(*a, reduce="numel"),
        "padding positions' losses counted in the mean": lambda: _smoothed(*a, reduce="all"),
        "smoothing mass given to the padding token (it must get 0; the other V - 2 get smoothing / (V - 2))":
            lambda: _smoothed(*a, off=s / (v - 1), pad_mass=True),
        "smoothing / (V - 1) instead of smoothing / (V - 2) (padding and the true token both excluded)":
            lambda: _smoothed(*a, off=s / (v - 1)),
        "PyTorch's convention (smoothing / V on every token, the true one and padding included)":
            lambda: _smoothed(*a, off=s / v, pad_mass=True, true_extra=s / v),
        "no label smoothing (plain cross-entropy)": lambda: _smoothed(logits, target, 0.0, pad),
        "summed over tokens instead of averaged": lambda: _smoothed(*a, reduce="sum"),
        "per-token losses returned, not averaged": lambda: _smoothed(*a, reduce="none"),
        "the KL divergence returned instead of the cross-entropy (they differ by the target's entropy, "
        "a constant with no gradient)": lambda: _smoothed(*a, kl="xlogy"),
        "log of zero: 0 * log(0) of the padding column's zero probability gives NaN "
        "(drop the zero entries, or use torch.special.xlogy)": lambda: _smoothed(*a, kl="naive"),
        "log of zero: log(softmax(x)) underflows to log(0) = -inf for large logits; use log_softmax":
            lambda: _smoothed(*a, naive_log=True),
    }


_BUILD_LOSS = "Build the smoothed target distribution and use log_softmax."


@check
def check_label_smoothed_loss(label_smoothed_loss, seed: int = 0) -> None:
    """``label_smoothed_loss(logits, target, smoothing, pad_id)``: padded targets, a fully
    padded row, smoothing 0, a pad id other than 0, huge logits, float64, and its gradient."""
    cases = [  # (B, T, V), smoothing, pad_id, dtype, scale, lengths of the rows
        ((2, 5, 7), 0.1, 0, torch.float32, 1.0, [5, 3]),
        ((3, 4, 9), 0.2, 0, torch.float64, 2.0, [4, 2, 0]),
        ((1, 1, 5), 0.0, 0, torch.float32, 1.0, [1]),
        ((2, 6, 8), 0.1, 3, torch.float32, 1.0, [6, 2]),
        ((2, 3, 6), 0.1, 0, torch.float32, 100.0, [3, 2]),
    ]
    forbid = ["torch.nn.functional.cross_entropy", "torch.nn.CrossEntropyLoss.forward",
              "autograder.reference.label_smoothed_loss"]
    for i, (shape, s, pad, dtype, scale, lengths) in enumerate(cases):
        b, t, v = shape
        logits = (torch.randn(shape, generator=generator(seed * 10 + i), dtype=torch.float64) * scale).to(dtype)
        target = _ids((b, t), 0, v, seed * 10 + i + 5)
        target[target == pad] = (pad + 1) % v
        for row, n in enumerate(lengths):
            target[row, n:] = pad
        what = (f"label_smoothed_loss(logits {shape} {str(dtype)[6:]} of size ~{scale:g}, target with "
                f"{int((target == pad).sum())} padding positions, smoothing={s}, pad_id={pad}) (seed {seed})")
        leaf = logits.clone().requires_grad_()
        expected = reference.label_smoothed_loss(leaf, target, s, pad)
        expected.backward()
        with forbidden(label_smoothed_loss, forbid,
                       instead=_BUILD_LOSS):
            mine = logits.clone().requires_grad_()
            found = call(label_smoothed_loss, mine, target.clone(), s, pad, what=what)
        expect_close(what, found, expected.detach(), atol=1e-5, rtol=1e-5, check_dtype=False,
                     mistakes=_loss_mistakes(logits, target, s, pad))
        if not found.requires_grad:
            fail(what + ": its gradient", "a loss connected to logits (requires_grad=True)",
                 "a tensor without a gradient", "the loss detached from the graph (.item(), .detach(), "
                 "torch.tensor(...) or numpy inside)")
        found.backward()
        expect_close(what + ": d loss / d logits", mine.grad, leaf.grad, atol=1e-6, rtol=1e-4)


# ----------------------------------------------------------------------------- Noam schedule

def _noam(step: float, d: int, w: int, dpow: float = -0.5, wpow: float = -1.5, pick=min) -> float:
    return d**dpow * pick(step**-0.5, step * w**wpow)


_BUILD_NOAM = "Write the formula with min, ** and the three arguments."


@check
def check_noam_lr(noam_lr, seed: int = 0) -> None:
    """``noam_lr(step, d_model, warmup)`` at the first steps, around the peak and far after it."""
    g = generator(seed)
    settings = [(512, 4000), (16, 4), (64, 1)]
    settings.append((int(torch.randint(8, 257, (1,), generator=g)), int(torch.randint(2, 60, (1,), generator=g))))
    for d, w in settings:
        steps = sorted({1, 2, max(1, w - 1), w, w + 1, 2 * w, 10 * w + 3})
        what = f"noam_lr(step, d_model={d}, warmup={w}) for step in {steps}"
        values = []
        with forbidden(noam_lr, ["autograder.reference.noam_lr", "autograder.reference.noam_scheduler"],
                       instead=_BUILD_NOAM):
            for step in steps:
                value = call(noam_lr, step, d, w, what=f"noam_lr(step={step}, d_model={d}, warmup={w})")
                if isinstance(value, Tensor) and value.numel() == 1:
                    value = value.item()
                if isinstance(value, bool) or not isinstance(value, numbers.Real):
                    fail(f"noam_lr(step={step}, d_model={d}, warmup={w})", "a float", describe(value))
                values.append(float(value))
        found = torch.tensor(values, dtype=torch.float64)
        expected = torch.tensor([reference.noam_lr(s, d, w) for s in steps], dtype=torch.float64)

        def curve(f):
            return lambda: torch.tensor([f(s) for s in steps], dtype=torch.float64)

        expect_close(what, found, expected, atol=1e-12, rtol=1e-6, mistakes={
            "steps counted from 0 (off by one: step n computed as step n + 1)": curve(lambda s: _noam(s + 1, d, w)),
            "warmup off by one (the peak at warmup + 1)": curve(lambda s: _noam(s, d, w + 1)),
            "warmup off by one (the peak at warmup - 1)": curve(lambda s: _noam(s, d, w - 1)),
            "missing the d_model ** -0.5 factor": curve(lambda s: _noam(s, d, w, dpow=0.0)),
            "d_model ** 0.5 instead of d_model ** -0.5": curve(lambda s: _noam(s, d, w, dpow=0.5)),
            "warmup ** -0.5 instead of warmup ** -1.5": curve(lambda s: _noam(s, d, w, wpow=-0.5)),
            "max instead of min": curve(lambda s: _noam(s, d, w, pick=max)),
        })


# ----------------------------------------------------------------------------- greedy decoding

class _ScriptedModel(reference.EncoderDecoder):
    """A reference model whose logits at target position t get +50 on ``script[b, t]``, so
    that greedy decoding follows the script and we choose where each row meets EOS."""

    def __init__(self, config: reference.TransformerConfig, script: Tensor | None) -> None:
        super().__init__(config)
        self.script = script  # (B, N) or None (an ordinary random model)

    def decode(self, tgt_in, memory, src_mask, cache=None):
        start = 0 if cache is None or cache.tokens is None else cache.tokens.size(1)
        logits = super().decode(tgt_in, memory, src_mask, cache)  # (B, T, V)
        if self.script is None:
            return logits
        positions = torch.arange(start, start + tgt_in.size(1)).clamp(max=self.script.size(1) - 1)
        bonus = F.one_hot(self.script[:, positions], logits.size(-1)).to(logits.dtype)  # (B, T, V)
        return logits + 50.0 * bonus


@torch.no_grad()
def _decode_variant(model, src, max_len, *, per_row=True, stop_all=True, stop_any=False, bos=True,
                    steps=None) -> Tensor:
    model.eval()
    memory, src_mask = model.encode(src)
    ys = torch.full((src.size(0), 1), BOS, dtype=torch.long)  # (B, 1)
    done = torch.zeros(src.size(0), dtype=torch.bool)
    for _ in range(max_len if steps is None else steps):
        nxt = model.decode(ys, memory, src_mask)[:, -1].argmax(-1)  # (B,)
        if per_row:
            nxt = nxt.masked_fill(done, PAD)
        ys = torch.cat([ys, nxt[:, None]], dim=1)  # (B, t + 1)
        done |= nxt == EOS
        if (stop_any and bool(done.any())) or (stop_all and bool(done.all())):
            break
    return ys if bos else ys[:, 1:]


def _expect_tokens(what: str, found, expected: Tensor, variants: dict,
                   otherwise: str | None = None) -> None:
    __tracebackhide__ = True
    if isinstance(found, Tensor) and (found.shape != expected.shape or not torch.equal(found.cpu(), expected)):
        for name, make in variants.items():
            v = make()
            if found.shape == v.shape and torch.equal(found.cpu().long(), v):
                fail(what, f"{expected.tolist()}", f"{found.tolist()}", name)
        if otherwise:
            fail(what, f"{expected.tolist()}", f"{found.tolist()}", otherwise)
    if isinstance(found, Tensor) and found.shape != expected.shape:
        fail(what, f"shape {tuple(expected.shape)}: {expected.tolist()}", f"shape {tuple(found.shape)}: "
             f"{found.tolist()}", hint="the output is (B, 1 + number of steps taken): BOS, then one token "
             "per step, stopping once every row has produced EOS or after max_len steps.")
    expect_equal(what, found, expected, hint="rows follow the argmax of the last position's logits; "
                 "after a row's EOS only pad_id follows.")


_BUILD_DECODE = "Write the loop: encode once, decode the prefix, append the argmax of the last position."


@check
def check_greedy_decode(greedy_decode, seed: int = 0) -> None:
    """``greedy_decode(model, src, max_len, bos_id, eos_id, pad_id)`` on models whose rows stop at
    chosen steps, on a random model left in training mode with dropout, and on length 1."""
    g = generator(seed)
    config = reference.TransformerConfig(src_vocab_size=10, tgt_vocab_size=10, d_model=16, num_heads=2,
                                         num_layers=1, d_ff=32, dropout=0.0, max_len=32)
    eos_at = [int(torch.randint(0, 9, (1,), generator=g)) for _ in range(4)]  # 8: never within max_len
    random_script = _ids((4, 12), 3, 10, seed + 100)
    for row, n in enumerate(eos_at):
        if n < 8:
            random_script[row, n] = EOS
    cases = [  # (script, batch, source length, max_len, dropout)
        (torch.tensor([[5, EOS, 7, 8, 9, 3, 4, 5],     # stops at step 2
                       [6, 7, 8, 9, EOS, 3, 4, 5],     # stops at step 5
                       [9, 9, 9, 9, 9, 9, 9, 9]]), 3, 5, 6, 0.0),  # never: max_len decides
        (torch.tensor([[4, EOS, 4, 4, 4, 4], [4, 5, EOS, 4, 4, 4]]), 2, 3, 10, 0.0),
        (random_script, 4, 6, 8, 0.0),
        (None, 4, 5, 7, 0.3),
        (None, 1, 1, 1, 0.0),
    ]
    for i, (script, batch, length, max_len, dropout) in enumerate(cases):
        cfg = dataclasses.replace(config, dropout=dropout)
        model = _seeded(lambda: _ScriptedModel(cfg, script), seed * 10 + i)
        src = _padded(batch, length, 10, seed * 10 + i)
        what = (f"greedy_decode(model, src {tuple(src.shape)}, max_len={max_len}, bos_id={BOS}, eos_id={EOS}, "
                f"pad_id={PAD})" + (f" on a model in training mode with dropout={dropout}" if dropout else "")
                + f" (seed {seed})")
        expected = reference.greedy_decode(model, src, max_len, BOS, EOS, PAD)
        variants = {
            "rows not stopped per sequence: a row continues after its EOS instead of getting pad_id":
                lambda: _decode_variant(model, src, max_len, per_row=False),
            "the loop does not stop once every row has produced EOS (it always runs max_len steps)":
                lambda: _decode_variant(model, src, max_len, stop_all=False),
            "the whole batch stops at the first EOS of any row":
                lambda: _decode_variant(model, src, max_len, stop_any=True),
            "the output does not start with BOS": lambda: _decode_variant(model, src, max_len, bos=False),
            "off by one: max_len - 1 tokens generated": lambda: _decode_variant(model, src, max_len, steps=max_len - 1),
            "off by one: max_len + 1 tokens generated": lambda: _decode_variant(model, src, max_len, steps=max_len + 1),
        }
        model.train()
        with forbidden(greedy_decode, ["autograder.reference.greedy_decode"],
                       instead=_BUILD_DECODE):
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                found = call(greedy_decode, model, src, max_len, BOS, EOS, PAD, what=what)
        if isinstance(found, Tensor) and found.dtype != torch.long:
            fail(what, "token ids of dtype torch.int64 (long)", describe(found))
        _expect_tokens(what, found, expected, variants, otherwise="the model decoded in training mode "
                       "(dropout active): call model.eval() first" if dropout else None)


# ----------------------------------------------------------------------------- one training step

class _SGD:
    """Plain SGD with torch.optim's interface. The first torch.optim optimizer of a process
    imports torch._dynamo (about 2 s), which would make the lab too slow to grade."""

    def __init__(self, params, lr: float) -> None:
        self.param_groups = [{"params": list(params), "lr": lr}]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.param_groups[0]["params"]:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()

    @torch.no_grad()
    def step(self, closure=None) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-group["lr"])


class _Noam:
    """The warmup schedule with LambdaLR's interface: the n-th optimizer step uses
    factor * noam_lr(n)."""

    def __init__(self, optimizer: _SGD, d_model: int, warmup: int, factor: float) -> None:
        self.optimizer, self.d_model, self.warmup, self.factor, self.last_epoch = optimizer, d_model, warmup, factor, 0
        self._apply()

    def _apply(self) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = self.factor * reference.noam_lr(self.last_epoch + 1, self.d_model, self.warmup)

    def step(self) -> None:
        self.last_epoch += 1
        self._apply()

    def get_last_lr(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]


def _setup(model, lr_factor: float = 2.0):
    optimizer = _SGD(model.parameters(), lr=1.0)
    return optimizer, _Noam(optimizer, model.config.d_model, warmup=3, factor=lr_factor)


def _step_variant(model, src, tgt, optimizer, scheduler, *, smoothing, shift=True, reduce="mean", zero=True,
                  sched=True, sched_first=False, clip=True, opt_step=True) -> float:
    if zero:
        optimizer.zero_grad()
    tgt_in, tgt_out = (tgt[:, :-1], tgt[:, 1:]) if shift else (tgt[:, :-1], tgt[:, :-1])
    loss = _smoothed(model(src, tgt_in), tgt_out, smoothing, PAD, reduce=reduce)
    loss.backward()
    if clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if sched_first:
        scheduler.step()
    if opt_step:
        optimizer.step()
    if sched and not sched_first:
        scheduler.step()
    return loss.item()


def _expect_close_lazily(what: str, found: Tensor, expected: Tensor, atol: float, rtol: float, mistakes) -> None:
    """``expect_close``, computing the (costly) mistaken variants only when the values differ."""
    __tracebackhide__ = True
    if found.shape == expected.shape and bool(torch.allclose(found, expected, atol=atol, rtol=rtol)):
        return
    expect_close(what, found, expected, atol=atol, rtol=rtol, mistakes=mistakes())


def _flat(model) -> Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.state_dict().values()]).double()


_BUILD_STEP = ("Write the step: zero_grad, shift, forward, label_smoothed_loss, backward, clip, "
               "optimizer.step, scheduler.step.")


@check
def check_train_step(train_step, seed: int = 0) -> None:
    """Two calls of ``train_step(model, src, tgt, optimizer, scheduler, smoothing, pad_id)`` on a tiny
    reference model, SGD and the Noam schedule: the returned losses and the parameters after each
    step against the reference's ``train_step`` from the same starting point."""
    config = reference.TransformerConfig(src_vocab_size=11, tgt_vocab_size=11, d_model=16, num_heads=2,
                                         num_layers=1, d_ff=32, dropout=0.0, max_len=32)
    base = _seeded(lambda: reference.EncoderDecoder(config), seed)
    data = []
    for k in range(2):
        src = _padded(4, 6, 11, seed * 10 + k, lengths=[6, 5, 3, 1])
        tgt = _padded(4, 7, 11, seed * 10 + k + 5, lengths=[7, 6, 4, 3])
        tgt[:, 0] = BOS
        for row, n in enumerate([7, 6, 4, 3]):
            tgt[row, n - 1] = EOS
        data.append((src, tgt))
    smoothing = 0.1

    memo: dict = {}

    def run(**flags):
        key = tuple(sorted(flags.items()))
        if key in memo:
            return memo[key]
        model = copy.deepcopy(base)
        optimizer, scheduler = _setup(model)
        out = []
        # expect_close may compute mistakes under no_grad; these variants need a backward pass
        with warnings.catch_warnings(), torch.enable_grad():  # the scheduler-first variant warns, on purpose
            warnings.simplefilter("ignore")
            for src, tgt in data:
                out.append((_step_variant(model, src, tgt, optimizer, scheduler, **{"smoothing": smoothing, **flags}),
                            _flat(model)))
        memo[key] = out
        return out

    reference_model = copy.deepcopy(base)
    optimizer, scheduler = _setup(reference_model)
    expected = []
    for src, tgt in data:
        loss = reference_train.train_step(reference_model, src, tgt, optimizer, scheduler, smoothing, PAD)
        expected.append((loss, _flat(reference_model)))
    variants = {  # name: the flags of _step_variant that make the mistake
        "no teacher-forcing shift: the input must be tgt[:, :-1] and the target tgt[:, 1:]": dict(shift=False),
        "padding counted in the loss (average over non-pad target tokens only)": dict(reduce="numel"),
        "no label smoothing": dict(smoothing=0.0),
        "optimizer.zero_grad() not called: gradients accumulate across calls": dict(zero=False),
        "scheduler.step() not called after optimizer.step()": dict(sched=False),
        "scheduler.step() called before optimizer.step()": dict(sched_first=True),
        "gradients not clipped to norm 1.0": dict(clip=False),
        "optimizer.step() not called": dict(opt_step=False),
    }

    def mistakes(k: int, part: int) -> dict:
        return {name: (lambda f=flags: torch.as_tensor(run(**f)[k][part], dtype=torch.float64))
                for name, flags in variants.items()}
    forbid = ["autograder.reference.train.train_step", "autograder.reference.train.train"]
    with forbidden(train_step, forbid, instead=_BUILD_STEP):
        steps = beside(train_step, _candidate_steps, config, base.state_dict(), data, smoothing)
    for k, (src, tgt) in enumerate(data):
        what = (f"call {k + 1} of train_step(model, src {tuple(src.shape)}, tgt {tuple(tgt.shape)}, "
                f"SGD(lr=1.0), noam_scheduler(warmup=3, factor=2.0), smoothing={smoothing}, pad_id={PAD}) "
                f"(seed {seed})")
        step = steps[k] if isinstance(steps, list) and k < len(steps) and isinstance(steps[k], dict) else {}
        if "error" in step or "params" not in step:
            fail(what, "a result", str(step.get("error", "no result")),
                 hint="read the error above: it was raised inside your code.")
        loss = step["loss"]
        if isinstance(loss, Tensor) or isinstance(loss, bool) or not isinstance(loss, numbers.Real):
            fail(what + ": the returned loss", "a Python float", describe(loss),
                 hint="return loss.item(): a float, detached from the graph.")
        _expect_close_lazily(what + ": the returned loss", torch.tensor(float(loss), dtype=torch.float64),
                             torch.tensor(expected[k][0], dtype=torch.float64), 1e-5, 1e-5, lambda: mistakes(k, 0))
        params = expect_tensor(what + ": the parameters after the step", step["params"])
        _expect_close_lazily(what + ": the parameters after the step (all of them, flattened in state_dict order)",
                             params, expected[k][1], 1e-5, 1e-4, lambda: mistakes(k, 1))


def _candidate_steps(train_step, config, state: dict, data: list, smoothing: float) -> list[dict]:
    """The candidate's side of check_train_step (run where the candidate lives, see
    ``core.beside``): a tiny model from ``config`` and ``state``, SGD and the Noam schedule,
    one ``train_step`` call per batch; the returned loss and the parameters after each call,
    or the error that stopped them."""
    model = reference.EncoderDecoder(config)
    model.load_state_dict(state)
    optimizer, scheduler = _setup(model)
    out: list[dict] = []
    for src, tgt in data:
        try:
            loss = train_step(model, src.clone(), tgt.clone(), optimizer, scheduler, smoothing, PAD)
        except (NotImplementedError, CheckFailed):
            raise
        except Exception as err:  # noqa: BLE001 - reported by the check as the student's error
            out.append({"error": f"{type(err).__name__}: {err}"})
            break
        out.append({"loss": loss, "params": _flat(model)})
    return out

"""The checks of lab 09-tokens-in-tokens-out, its generation: right answers pass, known wrong ones fail by name.

``_fails_naming`` below is this file's own small helper (the shared helpers of the other
check tests are being unified elsewhere; switch to them once they exist).
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from autograder import reference
from autograder.checks import CheckFailed, ForbiddenCall
from autograder.checks.kit import variants
from autograder.checks.lab09_tokens_in_tokens_out.beam_search import check_beam_search
from autograder.checks.lab09_tokens_in_tokens_out.generation import (
    check_decoder_only,
    check_filter_logits,
    check_next_token_loss,
)
from autograder.reference import decode, families, generate
from tests.checks.mistake_ids import note
from tests.checks.student_copies import as_student


def _fails_naming(check, candidate, *words):
    """Run the check, expect CheckFailed (not a forbidden call), and return its message after
    checking that each of ``words`` is in it."""
    with pytest.raises(CheckFailed) as info:
        check(candidate)
    assert not isinstance(info.value, ForbiddenCall), str(info.value)
    note(info.value)
    message = str(info.value)
    for word in words:
        assert word in message, f"{word!r} not in:\n{message}"
    return message


# ----------------------------------------------------------------------------- beam search


def _make_beam(
    normalise="gnmt",
    freeze=True,
    tile=False,
    raw=False,
    zero_start=False,
    use_eval=True,
    after_eos="pad",
    full_width=False,
):
    """A batched beam search written as a student might; each flag makes one known mistake."""

    @torch.no_grad()
    def beam_search(model, src, beam_size, max_len, bos_id, eos_id, pad_id, alpha=0.6):
        if use_eval:
            model.eval()
        n, k = src.size(0), beam_size
        memory, mask = model.encode(src)
        if tile:
            memory, mask = memory.repeat(k, 1, 1), mask.repeat(k, 1, 1, 1)
        else:
            memory, mask = memory.repeat_interleave(k, 0), mask.repeat_interleave(k, 0)
        ys = torch.full((n * k, 1), bos_id)
        score = torch.zeros(n, k, dtype=torch.float64)
        if not zero_start:
            score[:, 1:] = -math.inf
        finished = torch.zeros(n * k, dtype=torch.bool)
        length = torch.zeros(n * k, dtype=torch.float64)
        first = torch.arange(n)[:, None] * k
        for _ in range(max_len):
            logits = model.decode(ys, memory, mask)[:, -1].double()
            logp = logits if raw else logits.log_softmax(-1)
            vocab = logp.size(-1)
            if freeze:
                cont = pad_id if after_eos == "pad" else eos_id
                stay = torch.full_like(logp, -math.inf)
                stay[:, cont] = 0.0
                logp = torch.where(finished[:, None], stay, logp)
            score, idx = (score.view(-1, 1) + logp).view(n, k * vocab).topk(k, dim=1)
            rows = (idx.div(vocab, rounding_mode="floor") + first).view(-1)
            tok = (idx % vocab).view(-1, 1)
            ys = torch.cat([ys[rows], tok], dim=1)
            length = length[rows] + (~finished[rows]).double()
            finished = finished[rows] | (tok[:, 0] == eos_id)
            if finished.all():
                break
        if normalise == "gnmt":
            final = score / ((5 + length.view(n, k)) / 6) ** alpha
        elif normalise == "length":
            final = score / length.view(n, k)
        else:
            final = score
        best = ys[(final.argmax(1) + first[:, 0])]
        if full_width:
            return best
        width = 1 + int(length.view(n, k).gather(1, final.argmax(1, keepdim=True)).max())
        return best[:, :width]

    return beam_search


def beam_rows(model, src, beam_size, max_len, bos_id, eos_id, pad_id, alpha=0.6):
    """Each source row searched alone, hypotheses kept in Python lists, the output right-padded."""
    model.eval()
    outs = []
    with torch.no_grad():
        for b in range(src.size(0)):
            memory, mask = model.encode(src[b : b + 1])
            beams = [([bos_id], 0.0, False)]
            for _ in range(max_len):
                if all(done for _, _, done in beams):
                    break
                alive = [beam for beam in beams if not beam[2]]
                ys = torch.tensor([seq for seq, _, _ in alive])
                logp = (
                    model.decode(ys, memory.expand(len(alive), -1, -1), mask.expand(len(alive), -1, -1, -1))[:, -1]
                    .double()
                    .log_softmax(-1)
                )
                candidates = [(seq + [pad_id], s, True) for seq, s, done in beams if done]
                for (seq, s, _), row in zip(alive, logp.tolist(), strict=True):
                    candidates += [(seq + [tok], s + lp, tok == eos_id) for tok, lp in enumerate(row)]
                beams = sorted(candidates, key=lambda c: -c[1])[:beam_size]

            def normalised(beam):
                seq = beam[0][1:]
                n = seq.index(eos_id) + 1 if eos_id in seq else len(seq)
                return beam[1] / ((5 + n) / 6) ** alpha

            outs.append(max(beams, key=normalised)[0])
    width = max(len(o) for o in outs)
    return torch.tensor([o + [pad_id] * (width - len(o)) for o in outs])


@pytest.mark.parametrize(
    "candidate", [_make_beam(), _make_beam(full_width=True), beam_rows, as_student(generate.beam_search)]
)
def test_beam_right_answers_pass(candidate):
    """Do a batched search, one that returns every step's column, a row-by-row search in Python
    lists, and the reference's own code pass for two seeds?"""
    for seed in (0, 1):
        check_beam_search(candidate, seed=seed)


@pytest.mark.parametrize(
    "flags,words",
    [
        (dict(normalise="none"), "not length-normalised"),
        (dict(normalise="length"), "divided by the length"),
        (dict(freeze=False), "finished beams still extended"),
        (dict(tile=True), "beams of different source rows mixed"),
        (dict(raw=True), "raw logits"),
        (dict(zero_start=True), "start with score 0"),
        (dict(after_eos="eos"), "not replaced by pad_id"),
        (dict(use_eval=False), "training mode"),
    ],
)
def test_beam_wrong_answers_fail_by_name(flags, words):
    """Does each known mistake of beam search fail with a message naming it?"""
    _fails_naming(check_beam_search, _make_beam(**flags), words)


def test_beam_of_one_must_be_greedy():
    """Is a search that is right for wider beams but wrong for beam_size=1 told so?"""
    right = _make_beam()

    def no_single_beam(model, src, beam_size, *args):
        return right(model, src, max(beam_size, 2), *args)

    _fails_naming(check_beam_search, no_single_beam, "with beam_size=1, beam search is greedy decoding")


def test_beam_reference_is_forbidden():
    """Are the reference's beam search and greedy decoding (or its loop) caught, called or handed in as they are?"""
    with pytest.raises(ForbiddenCall) as info:
        check_beam_search(lambda *args: generate.beam_search(*args))
    note(info.value)
    with pytest.raises(ForbiddenCall):
        check_beam_search(generate.beam_search)
    with pytest.raises(ForbiddenCall):
        check_beam_search(
            lambda m, s, k, *rest: reference.greedy_decode(m, s, *rest[:4]) if k == 1 else _make_beam()(m, s, k, *rest)
        )
    with pytest.raises(ForbiddenCall):
        check_beam_search(
            lambda m, s, k, n, b, e, p, a: (
                decode.decode_loop(m, s, n, b, e, p, lambda x: x.argmax(-1))
                if k == 1
                else _make_beam()(m, s, k, n, b, e, p, a)
            )
        )


# ----------------------------------------------------------------------------- filter_logits


def _make_filter(exclusive=False, unsorted=False, k_shift=0, fill=-math.inf, probs=False, before_k=False):
    def filter_logits(logits, top_k=None, top_p=None):
        out = logits.clone()
        if top_k is not None:
            kth = out.topk(top_k + k_shift, dim=-1).values[..., -1:]
            out[out < kth] = fill
        if top_p is not None:
            src = logits if before_k else out
            p, order = src.softmax(-1).sort(-1, descending=True)
            cum = p.cumsum(-1)
            drop_sorted = cum >= top_p if exclusive else cum - p >= top_p
            drop = drop_sorted if unsorted else drop_sorted.scatter(-1, order, drop_sorted)
            out = out.masked_fill(drop, fill)
        return out.softmax(-1) if probs else out

    return filter_logits


def filter_with_big_negative(logits, top_k=None, top_p=None):
    """-1e9 instead of -inf, and the nucleus found with searchsorted on the cumulative mass."""
    out = logits.clone()
    if top_k is not None:
        keep = torch.zeros_like(out, dtype=torch.bool).scatter(-1, out.topk(top_k, -1).indices, True)
        out = torch.where(keep, out, torch.full_like(out, -1e9))
    if top_p is not None:
        p, order = out.softmax(-1).sort(-1, descending=True)
        count = torch.searchsorted(p.cumsum(-1).contiguous(), torch.full((*p.shape[:-1], 1), top_p, dtype=p.dtype))
        rank = torch.empty_like(order).scatter(-1, order, torch.arange(p.size(-1)).expand_as(order))
        out = torch.where(rank <= count, out, torch.full_like(out, -1e9))
    return out


@pytest.mark.parametrize("candidate", [_make_filter(), filter_with_big_negative, as_student(generate.filter_logits)])
def test_filter_right_answers_pass(candidate):
    """Do a threshold-based filter, one with -1e9 and searchsorted, and the reference's code pass?"""
    for seed in (0, 1, 2):
        check_filter_logits(candidate, seed=seed)


@pytest.mark.parametrize(
    "flags,words",
    [
        (dict(exclusive=True), "stops before the token that crosses top_p"),
        (dict(unsorted=True), "left in sorted order"),
        (dict(k_shift=-1), "top_k - 1 tokens kept"),
        (dict(k_shift=1), "top_k + 1 tokens kept"),
        (dict(fill=0.0), "set to 0 instead of -inf"),
        (dict(probs=True), "probabilities returned"),
        (dict(before_k=True), "before top-k"),
    ],
)
def test_filter_wrong_answers_fail_by_name(flags, words):
    """Does each known mistake of top-k / top-p filtering fail with a message naming it?"""
    _fails_naming(check_filter_logits, _make_filter(**flags), words)


# ----------------------------------------------------------------------------- DecoderOnly


def _make_lm(causal=True, pad=True, scale=True, tie=True, persistent_pe=False):
    class DecoderOnly(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.embed = reference.Embeddings(config.vocab_size, config.d_model)
            self.register_buffer(
                "pe", reference.sinusoidal_encoding(config.max_len, config.d_model), persistent=persistent_pe
            )
            self.blocks = reference.Encoder(
                num_layers=config.num_layers,
                d_model=config.d_model,
                num_heads=config.num_heads,
                d_ff=config.d_ff,
                dropout=config.dropout,
                norm_first=config.norm_first,
            )
            self.unembed = nn.Linear(config.d_model, config.vocab_size, bias=False)
            if config.tie_embeddings and tie:
                self.unembed.weight = self.embed.embedding.weight

        def forward(self, tokens):
            x = self.embed(tokens) if scale else self.embed.embedding(tokens)
            x = x + self.pe[: tokens.size(1)].to(x.dtype)
            length = tokens.size(1)
            allowed = (
                torch.ones(length, length, dtype=torch.bool).tril()
                if causal
                else torch.ones(length, length, dtype=torch.bool)
            )
            if pad:
                allowed = allowed & (tokens != self.config.pad_id)[:, None, None, :]
            return self.unembed(self.blocks(x, allowed))

    return DecoderOnly


class DecoderOnlyOwnStack(nn.Module):
    """Its own container with the reference's names: blocks.layers (EncoderLayer) and blocks.norm;
    F.embedding and the mask from reference.decoder_self_attention_mask."""

    def __init__(self, config):
        super().__init__()
        c = self.config = config
        self.embed = nn.Module()
        self.embed.embedding = nn.Embedding(c.vocab_size, c.d_model)
        self.blocks = nn.Module()
        self.blocks.layers = nn.ModuleList(
            reference.EncoderLayer(
                d_model=c.d_model, num_heads=c.num_heads, d_ff=c.d_ff, dropout=c.dropout, norm_first=c.norm_first
            )
            for _ in range(c.num_layers)
        )
        if c.norm_first:
            self.blocks.norm = nn.LayerNorm(c.d_model)
        self.unembed = nn.Linear(c.d_model, c.vocab_size, bias=False)
        if c.tie_embeddings:
            self.unembed.weight = self.embed.embedding.weight

    def forward(self, tokens):
        w = self.embed.embedding.weight
        x = F.embedding(tokens, w) * math.sqrt(w.size(1))
        x = x + reference.sinusoidal_encoding(tokens.size(1), w.size(1), x.dtype)
        mask = reference.decoder_self_attention_mask(tokens, self.config.pad_id)
        for layer in self.blocks.layers:
            x = layer(x, mask)
        if self.config.norm_first:
            x = self.blocks.norm(x)
        return self.unembed(x)


class DecoderOnlySubclass(families.DecoderOnly):
    pass


class DecoderOnlyTorchStack(nn.Module):
    def __init__(self, config):
        super().__init__()
        layer = nn.TransformerEncoderLayer(config.d_model, config.num_heads, config.d_ff, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, config.num_layers)


@pytest.mark.parametrize("candidate", [_make_lm(), _make_lm(persistent_pe=True), DecoderOnlyOwnStack])
def test_decoder_only_right_answers_pass(candidate):
    """Do a model built on the course's Encoder, the same with its positional table saved in
    state_dict (a buffer the reference does not have), and one looping over EncoderLayers pass?"""
    for seed in (0, 1):
        check_decoder_only(candidate, seed=seed)


@pytest.mark.parametrize(
    "flags,words",
    [
        (dict(causal=False), "no causal mask"),
        (dict(pad=False), "padding not masked"),
        (dict(scale=False), "not scaled by sqrt(d_model)"),
        (dict(tie=False), "tie_embeddings ignored"),
    ],
)
def test_decoder_only_wrong_answers_fail_by_name(flags, words):
    """Does each known mistake of the decoder-only model fail with a message naming it?"""
    _fails_naming(check_decoder_only, _make_lm(**flags), words)


@pytest.mark.parametrize("candidate", [DecoderOnlySubclass, DecoderOnlyTorchStack])
def test_decoder_only_reference_and_pytorch_stack_are_forbidden(candidate):
    """Are a subclass of the reference's DecoderOnly and PyTorch's nn.TransformerEncoder caught?"""
    with pytest.raises(ForbiddenCall) as info:
        check_decoder_only(candidate)
    note(info.value)


# ----------------------------------------------------------------------------- next_token_loss


def _make_loss(shift=1, reduce="mean", naive=False, axis=-1):
    def next_token_loss(logits, tokens, pad_id):
        if shift == 1:
            lg, tg = logits[:, :-1], tokens[:, 1:]
        elif shift == 0:
            lg, tg = logits, tokens
        else:
            lg, tg = logits[:, 1:], tokens[:, :-1]
        logp = lg.softmax(-1).log() if naive else lg.log_softmax(axis)
        nll = -logp.gather(-1, tg[..., None])[..., 0]
        keep = (tg != pad_id).to(nll.dtype)
        if reduce == "numel":
            return (nll * keep).sum() / nll.numel()
        if reduce == "sum":
            return (nll * keep).sum()
        if reduce == "rows":
            return ((nll * keep).sum(1) / keep.sum(1).clamp(min=1))[keep.sum(1) > 0].mean()
        return (nll * keep).sum() / keep.sum()

    return next_token_loss


def loss_logsumexp(logits, tokens, pad_id):
    """One-hot picks and logsumexp instead of log_softmax and gather, masked by indexing."""
    lg, tg = logits[:, :-1], tokens[:, 1:]
    keep = tg != pad_id
    picked = (lg * F.one_hot(tg, lg.size(-1)).to(lg.dtype)).sum(-1)
    return (lg.logsumexp(-1) - picked)[keep].mean()


def loss_nll(logits, tokens, pad_id):
    """F.nll_loss on F.log_softmax, as lab 8 allows: the text blocks only F.cross_entropy."""
    logp = F.log_softmax(logits[:, :-1], dim=-1)
    return F.nll_loss(logp.flatten(0, 1), tokens[:, 1:].flatten(), ignore_index=pad_id)


def loss_nll_module(logits, tokens, pad_id):
    """nn.NLLLoss, the module, on log_softmax laid out (B, V, L - 1)."""
    return nn.NLLLoss(ignore_index=pad_id)(logits[:, :-1].log_softmax(-1).transpose(1, 2), tokens[:, 1:])


def loss_cross_entropy(logits, tokens, pad_id):
    return F.cross_entropy(logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten(), ignore_index=pad_id)


@pytest.mark.parametrize(
    "candidate", [_make_loss(), loss_logsumexp, loss_nll, loss_nll_module, as_student(families.next_token_loss)]
)
def test_next_token_loss_right_answers_pass(candidate):
    """Do log_softmax + gather, logsumexp with one-hot picks, F.nll_loss or nn.NLLLoss on log_softmax,
    and the reference's code pass?"""
    for seed in (0, 1):
        check_next_token_loss(candidate, seed=seed)


@pytest.mark.parametrize(
    "flags,words",
    [
        (dict(shift=0), "targets not shifted"),
        (dict(shift=-1), "shifted the wrong way"),
        (dict(reduce="numel"), "padding counted in the mean"),
        (dict(reduce="sum"), "summed over tokens"),
        (dict(reduce="rows"), "averaged per row, then over the rows"),
        (dict(naive=True), "use log_softmax"),
        (dict(axis=0), variants.LOG_SOFTMAX_OVER.format(0)),  # the batch axis of the logits (B, T - 1, V)
        (dict(axis=1), variants.LOG_SOFTMAX_OVER.format(1)),  # the positions
    ],
)
def test_next_token_loss_wrong_answers_fail_by_name(flags, words):
    """Does each known mistake of the language-modelling loss fail with a message naming it?"""
    _fails_naming(check_next_token_loss, _make_loss(**flags), words)


def test_next_token_loss_with_cross_entropy_is_forbidden():
    """Is PyTorch's F.cross_entropy caught (the exercise is to write it)?"""
    with pytest.raises(ForbiddenCall, match="cross_entropy") as info:
        check_next_token_loss(loss_cross_entropy)
    note(info.value)


# ----------------------------------------------------------------------------- stubs


def _stub(*args, **kwargs):
    raise NotImplementedError()


class _StubModule(nn.Module):
    def __init__(self, *args):
        super().__init__()
        raise NotImplementedError()


@pytest.mark.parametrize(
    "check,stub",
    [
        (check_beam_search, _stub),
        (check_filter_logits, _stub),
        (check_decoder_only, _StubModule),
        (check_next_token_loss, _stub),
    ],
)
def test_untouched_stubs_raise_not_implemented(check, stub):
    """Does an untouched stub reach nbgrader as NotImplementedError, not as a check failure?"""
    with pytest.raises(NotImplementedError):
        check(stub)

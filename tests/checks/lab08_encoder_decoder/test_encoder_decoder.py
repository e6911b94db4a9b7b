"""The checks of lab 08-encoder-decoder: right answers pass, known wrong ones fail by name."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from autograder import reference
from autograder.checks import ForbiddenCall
from autograder.checks.kit import variants
from autograder.checks.lab08_encoder_decoder.encoder_decoder import (
    DROPOUT_BEFORE_POSITIONS,
    NO_EMBEDDING_DROPOUT,
    STACKS_WITHOUT_DROPOUT,
    check_embeddings,
    check_encoder_decoder,
)
from autograder.checks.lab08_encoder_decoder.greedy_decode import check_greedy_decode
from autograder.checks.lab08_encoder_decoder.loss import check_label_smoothed_loss
from autograder.checks.lab08_encoder_decoder.training import check_noam_lr, check_train_step

# ----------------------------------------------------------------------------- Embeddings


class Embeddings(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model)

    def forward(self, tokens):
        return self.embedding(tokens) * math.sqrt(self.d_model)


class EmbeddingsOneHot(Embeddings):
    def forward(self, tokens):  # a one-hot matmul instead of a lookup
        one_hot = F.one_hot(tokens, self.embedding.num_embeddings).to(self.embedding.weight.dtype)
        return one_hot @ self.embedding.weight * self.d_model**0.5


class EmbeddingsFunctional(Embeddings):
    def forward(self, tokens):
        return F.embedding(tokens, self.embedding.weight).mul(torch.tensor(float(self.d_model)).sqrt())


class EmbeddingsScaleBuffer(nn.Module):
    """The scale kept in a persistent buffer: saved in state_dict beside embedding.weight."""

    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.register_buffer("scale", torch.tensor(math.sqrt(d_model)))

    def forward(self, tokens):
        return self.embedding(tokens) * self.scale


class EmbeddingsScaleParameter(EmbeddingsScaleBuffer):
    """The scale made a parameter: one the reference does not have (and training would change it)."""

    def __init__(self, vocab_size, d_model):
        super().__init__(vocab_size, d_model)
        del self.scale
        self.scale = nn.Parameter(torch.tensor(math.sqrt(d_model)))


class EmbeddingsUnscaled(Embeddings):
    def forward(self, tokens):
        return self.embedding(tokens)


class EmbeddingsDivided(Embeddings):
    def forward(self, tokens):
        return self.embedding(tokens) / math.sqrt(self.d_model)


class EmbeddingsWithPositions(Embeddings):
    def forward(self, tokens):
        x = self.embedding(tokens) * math.sqrt(self.d_model)
        return x + reference.sinusoidal_encoding(tokens.size(1), self.d_model, x.dtype)


class EmbeddingsOtherName(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.d_model, self.lut = d_model, nn.Embedding(vocab_size, d_model)

    def forward(self, tokens):
        return self.lut(tokens) * math.sqrt(self.d_model)


class EmbeddingsReusingReference(reference.Embeddings):
    pass


@pytest.mark.parametrize("candidate", [Embeddings, EmbeddingsOneHot, EmbeddingsFunctional, EmbeddingsScaleBuffer])
def test_embeddings_right_answers_pass(candidate):
    """Do a lookup, a one-hot matmul, F.embedding, each times sqrt(D), and a lookup times a scale
    kept in a persistent buffer pass for several seeds?"""
    for seed in (0, 1, 2):
        check_embeddings(candidate, seed=seed)


@pytest.mark.parametrize(
    "candidate,words",
    [
        (EmbeddingsUnscaled, "not scaled by sqrt(d_model)"),
        (EmbeddingsDivided, "divided by sqrt(d_model)"),
        (EmbeddingsWithPositions, "positional encodings added inside Embeddings"),
        (EmbeddingsOtherName, "missing ['embedding.weight']"),
        (EmbeddingsScaleParameter, "unexpected ['scale']"),
    ],
)
def test_embeddings_wrong_answers_fail_by_name(candidate, words, fails):
    """Does each known mistake of the embedding fail with a message naming it?"""
    fails(check_embeddings, candidate, said=words)


def test_embeddings_reusing_the_reference_is_forbidden(fails):
    """Is a subclass of the reference's Embeddings caught?"""
    fails(check_embeddings, EmbeddingsReusingReference, error=ForbiddenCall, match="reference")


# ----------------------------------------------------------------------------- EncoderDecoder


class EncoderDecoder(nn.Module):
    stack_dropout = True

    def __init__(self, config):
        super().__init__()
        self.config = c = config
        self.src_embed = Embeddings(c.src_vocab_size, c.d_model)
        self.tgt_embed = Embeddings(c.tgt_vocab_size, c.d_model)
        self.register_buffer("pe", reference.sinusoidal_encoding(c.max_len, c.d_model), persistent=False)
        self.dropout = nn.Dropout(c.dropout)
        stack = dict(
            num_layers=c.num_layers,
            d_model=c.d_model,
            num_heads=c.num_heads,
            d_ff=c.d_ff,
            dropout=c.dropout if self.stack_dropout else 0.0,
            norm_first=c.norm_first,
        )
        self.encoder = reference.Encoder(**stack)
        self.decoder = reference.Decoder(**stack)
        self.generator = nn.Linear(c.d_model, c.tgt_vocab_size)
        if c.tie_embeddings:
            self.generator.weight = self.tgt_embed.embedding.weight

    scale = True
    causal = True
    cross = True
    drop = "sum"  # where the embeddings' dropout acts: "sum" (right), "none", "embeddings"

    def embed(self, emb, tokens):
        x = emb(tokens) if self.scale else emb.embedding(tokens)
        pe = self.pe[: tokens.size(1)].to(x.dtype)
        if self.drop == "embeddings":
            return self.dropout(x) + pe
        return x + pe if self.drop == "none" else self.dropout(x + pe)

    def encode(self, src):
        mask = reference.padding_mask(src, self.config.pad_id)
        return self.encoder(self.embed(self.src_embed, src), mask), mask

    def decode(self, tgt_in, memory, src_mask):
        pad = reference.padding_mask(tgt_in, self.config.pad_id)
        mask = pad & reference.causal_mask(tgt_in.size(1)) if self.causal else pad
        y = self.decoder(self.embed(self.tgt_embed, tgt_in), memory, mask, src_mask if self.cross else None)
        return self.generator(y)

    def forward(self, src, tgt_in):
        return self.decode(tgt_in, *self.encode(src))


class EncoderDecoderNoBuffer(EncoderDecoder):
    """Positions computed on the fly instead of a buffer; the masks built by hand."""

    def __init__(self, config):
        super().__init__(config)
        del self.pe

    def embed(self, emb, tokens):
        x = emb(tokens)
        return self.dropout(x + reference.sinusoidal_encoding(tokens.size(1), x.size(-1), x.dtype))

    def encode(self, src):
        mask = (src != self.config.pad_id).unsqueeze(1).unsqueeze(2)  # (B, 1, 1, S)
        return self.encoder(self.embed(self.src_embed, src), mask), mask


class EncoderDecoderBuffers(EncoderDecoder):
    """Embeddings whose scale is a persistent buffer, and a positional table saved in state_dict
    (registered without persistent=False): buffers the reference does not have, both valid."""

    def __init__(self, config):
        super().__init__(config)
        c = config
        self.src_embed = EmbeddingsScaleBuffer(c.src_vocab_size, c.d_model)
        self.tgt_embed = EmbeddingsScaleBuffer(c.tgt_vocab_size, c.d_model)
        if c.tie_embeddings:
            self.generator.weight = self.tgt_embed.embedding.weight
        del self.pe
        self.register_buffer("pe", reference.sinusoidal_encoding(c.max_len, c.d_model))


class EncoderDecoderUnscaled(EncoderDecoder):
    scale = False


class EncoderDecoderNoCausal(EncoderDecoder):
    causal = False


class EncoderDecoderNoCrossMask(EncoderDecoder):
    cross = False


class EncoderDecoderUntied(EncoderDecoder):
    def __init__(self, config):
        super().__init__(config)
        self.generator = nn.Linear(config.d_model, config.tgt_vocab_size)


class EncoderDecoderSubclass(reference.EncoderDecoder):
    pass


class EncoderDecoderNoEmbeddingDropout(EncoderDecoder):
    drop = "none"


class EncoderDecoderDropoutBeforePositions(EncoderDecoder):
    drop = "embeddings"


class EncoderDecoderStacksWithoutDropout(EncoderDecoder):
    stack_dropout = False


class EncoderDecoderFunctionalDropout(EncoderDecoder):
    """F.dropout with the module's training flag instead of the nn.Dropout module."""

    def embed(self, emb, tokens):
        x = emb(tokens)
        return F.dropout(x + self.pe[: tokens.size(1)].to(x.dtype), self.config.dropout, self.training)


@pytest.mark.parametrize(
    "candidate", [EncoderDecoder, EncoderDecoderNoBuffer, EncoderDecoderFunctionalDropout, EncoderDecoderBuffers]
)
def test_encoder_decoder_right_answers_pass(candidate):
    """Do four assemblies (a positional buffer, positions on the fly, F.dropout, persistent buffers
    in the embeddings and for the positions) pass for two seeds, in eval and in training mode?"""
    for seed in (0, 1):
        check_encoder_decoder(candidate, seed=seed)


@pytest.mark.parametrize(
    "candidate,words",
    [
        (EncoderDecoderUnscaled, "embeddings not scaled by sqrt(d_model)"),
        (EncoderDecoderNoCausal, "no causal mask"),
        (EncoderDecoderNoCrossMask, "source padding mask not used in cross-attention"),
        (EncoderDecoderUntied, "config.tie_embeddings ignored"),
    ],
)
def test_encoder_decoder_wrong_answers_fail_by_name(candidate, words, fails):
    """Does each known mistake of the assembly fail with a message naming it?"""
    fails(check_encoder_decoder, candidate, said=words)


def test_encoder_decoder_subclassing_the_reference_is_forbidden(fails):
    """Is a subclass of the reference's EncoderDecoder caught?"""
    fails(check_encoder_decoder, EncoderDecoderSubclass, error=ForbiddenCall)


# ----------------------------------------------------------------------------- label smoothing


def loss_scatter(logits, target, smoothing, pad_id):
    logp = F.log_softmax(logits.float(), dim=-1)
    q = torch.full_like(logp, smoothing / (logits.size(-1) - 2))
    q[..., pad_id] = 0.0
    q.scatter_(-1, target.unsqueeze(-1), 1.0 - smoothing)
    per = -(q * logp).sum(-1)
    keep = target != pad_id
    return (per * keep).sum() / keep.sum().clamp(min=1)


def loss_gather_float64(logits, target, smoothing, pad_id):
    """The two terms apart, in float64, non-pad rows selected by boolean indexing."""
    keep = target != pad_id
    logp = torch.log_softmax(logits.double(), dim=-1)[keep]  # (N, V)
    t = target[keep]
    true = logp.gather(1, t[:, None]).squeeze(1)
    rest = logp.sum(1) - true - logp[:, pad_id]
    per = -((1 - smoothing) * true + smoothing / (logits.size(-1) - 2) * rest)
    return per.sum() / max(int(keep.sum()), 1)


def loss_counts_padding(logits, target, smoothing, pad_id):
    logp = F.log_softmax(logits.float(), dim=-1)
    q = torch.full_like(logp, smoothing / (logits.size(-1) - 2))
    q[..., pad_id] = 0.0
    q.scatter_(-1, target.unsqueeze(-1), 1.0 - smoothing)
    return (-(q * logp).sum(-1) * (target != pad_id)).mean()


def loss_mass_to_pad(logits, target, smoothing, pad_id):
    logp = F.log_softmax(logits.float(), dim=-1)
    q = torch.full_like(logp, smoothing / (logits.size(-1) - 1))
    q.scatter_(-1, target.unsqueeze(-1), 1.0 - smoothing)
    keep = target != pad_id
    return (-(q * logp).sum(-1) * keep).sum() / keep.sum()


def loss_v_minus_1(logits, target, smoothing, pad_id):
    logp = F.log_softmax(logits.float(), dim=-1)
    q = torch.full_like(logp, smoothing / (logits.size(-1) - 1))
    q[..., pad_id] = 0.0
    q.scatter_(-1, target.unsqueeze(-1), 1.0 - smoothing)
    keep = target != pad_id
    return (-(q * logp).sum(-1) * keep).sum() / keep.sum()


def loss_naive_kl(logits, target, smoothing, pad_id):
    logp = F.log_softmax(logits.float(), dim=-1)
    q = torch.full_like(logp, smoothing / (logits.size(-1) - 2))
    q[..., pad_id] = 0.0
    q.scatter_(-1, target.unsqueeze(-1), 1.0 - smoothing)
    keep = target != pad_id
    return ((q * (q.log() - logp)).sum(-1) * keep).sum() / keep.sum()


def loss_log_of_softmax(logits, target, smoothing, pad_id):
    logp = torch.log(torch.softmax(logits, dim=-1))
    q = torch.full_like(logp, smoothing / (logits.size(-1) - 2))
    q[..., pad_id] = 0.0
    q.scatter_(-1, target.unsqueeze(-1), 1.0 - smoothing)
    keep = target != pad_id
    per = -(q * logp).sum(-1)
    return per[keep].sum() / keep.sum()


def loss_detached(logits, target, smoothing, pad_id):
    return torch.tensor(loss_scatter(logits, target, smoothing, pad_id).item())


def loss_torch(logits, target, smoothing, pad_id):
    return F.cross_entropy(logits.transpose(1, 2), target, ignore_index=pad_id, label_smoothing=smoothing)


@pytest.mark.parametrize("candidate", [loss_scatter, loss_gather_float64])
def test_loss_right_answers_pass(candidate):
    """Do a scatter-built target and the two-term float64 form both pass for several seeds?"""
    for seed in (0, 1, 2):
        check_label_smoothed_loss(candidate, seed=seed)


@pytest.mark.parametrize(
    "candidate,words",
    [
        (loss_counts_padding, "padding counted in the mean"),
        (loss_mass_to_pad, "smoothing mass given to the padding token"),
        (loss_v_minus_1, "smoothing / (V - 1) instead of smoothing / (V - 2)"),
        (loss_naive_kl, "log of zero"),
        (loss_log_of_softmax, "log of zero"),
        (loss_detached, "detached from the graph"),
    ],
)
def test_loss_wrong_answers_fail_by_name(candidate, words, fails):
    """Does each known mistake of the smoothed loss fail with a message naming it?"""
    fails(check_label_smoothed_loss, candidate, said=words)


@pytest.mark.parametrize("axis", [0, 1])
def test_loss_log_softmax_over_each_wrong_axis_is_named(axis, fails):
    """Does a log_softmax over the batch or the positions of the logits (B, T, V) fail, naming the axis?"""

    def loss(logits, target, smoothing, pad_id):
        logp = F.log_softmax(logits.float(), dim=axis)
        q = torch.full_like(logp, smoothing / (logits.size(-1) - 2))
        q[..., pad_id] = 0.0
        q.scatter_(-1, target.unsqueeze(-1), 1.0 - smoothing)
        keep = target != pad_id
        return (-(q * logp).sum(-1) * keep).sum() / keep.sum().clamp(min=1)

    fails(check_label_smoothed_loss, loss, mistake=variants.LOG_SOFTMAX_OVER.format(axis))


def test_loss_with_pytorch_cross_entropy_is_forbidden(fails):
    """Is F.cross_entropy(label_smoothing=...) caught, and so is the reference's loss?"""
    fails(check_label_smoothed_loss, loss_torch, error=ForbiddenCall, match="cross_entropy")
    fails(check_label_smoothed_loss, reference.label_smoothed_loss, error=ForbiddenCall, match="label_smoothed_loss")


# ----------------------------------------------------------------------------- Noam schedule


def noam_min(step, d_model, warmup):
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def noam_branches(step, d_model, warmup):
    if step <= warmup:
        return step / (warmup * math.sqrt(warmup) * math.sqrt(d_model))
    return 1.0 / math.sqrt(step * d_model)


def noam_from_zero(step, d_model, warmup):
    return noam_min(step + 1, d_model, warmup)


def noam_late_peak(step, d_model, warmup):
    return d_model**-0.5 * min(step**-0.5, step * (warmup + 1) ** -1.5)


def noam_no_d_model(step, d_model, warmup):
    return min(step**-0.5, step * warmup**-1.5)


def noam_wrong_warmup_power(step, d_model, warmup):
    return d_model**-0.5 * min(step**-0.5, step * warmup**-0.5)


def noam_tensor_list(step, d_model, warmup):
    return [noam_min(step, d_model, warmup)]


@pytest.mark.parametrize("candidate", [noam_min, noam_branches])
def test_noam_right_answers_pass(candidate):
    """Do the min form and the two-branch form pass for several seeds?"""
    for seed in (0, 1, 2, 3):
        check_noam_lr(candidate, seed=seed)


@pytest.mark.parametrize(
    "candidate,words",
    [
        (noam_from_zero, "steps counted from 0"),
        (noam_late_peak, "warmup off by one (the peak at warmup + 1)"),
        (noam_no_d_model, "missing the d_model ** -0.5 factor"),
        (noam_wrong_warmup_power, "warmup ** -0.5 instead of warmup ** -1.5"),
        (noam_tensor_list, "a float"),
    ],
)
def test_noam_wrong_answers_fail_by_name(candidate, words, fails):
    """Does each known mistake of the schedule fail with a message naming it?"""
    fails(check_noam_lr, candidate, said=words)


def test_noam_reference_is_forbidden(fails):
    """Is calling the reference's noam_lr caught?"""
    fails(check_noam_lr, lambda s, d, w: reference.noam_lr(s, d, w), error=ForbiddenCall)


# ----------------------------------------------------------------------------- greedy decoding


def _make_decoder(per_row=True, stop_all=True, bos=True, extra_steps=0, use_eval=True):
    @torch.no_grad()
    def greedy_decode(model, src, max_len, bos_id, eos_id, pad_id):
        if use_eval:
            model.eval()
        memory, src_mask = model.encode(src)
        ys = torch.full((src.size(0), 1), bos_id, dtype=torch.long)
        done = torch.zeros(src.size(0), dtype=torch.bool)
        for _ in range(max_len + extra_steps):
            nxt = model.decode(ys, memory, src_mask)[:, -1].argmax(-1)
            if per_row:
                nxt = nxt.masked_fill(done, pad_id)
            ys = torch.cat([ys, nxt[:, None]], dim=1)
            done |= nxt == eos_id
            if stop_all and bool(done.all()):
                break
        return ys if bos else ys[:, 1:]

    return greedy_decode


def greedy_lists(model, src, max_len, bos_id, eos_id, pad_id):
    """Tokens kept in Python lists and the model called through forward()."""
    model.eval()
    with torch.no_grad():
        rows = [[bos_id] for _ in range(src.size(0))]
        finished = [False] * src.size(0)
        step = 0
        while step < max_len and not all(finished):
            logits = model(src, torch.tensor(rows))  # (B, t, V)
            for b, tok in enumerate(logits[:, -1].argmax(-1).tolist()):
                rows[b].append(pad_id if finished[b] else tok)
                finished[b] = finished[b] or tok == eos_id
            step += 1
    return torch.tensor(rows)


@pytest.mark.parametrize("candidate", [_make_decoder(), greedy_lists])
def test_greedy_right_answers_pass(candidate):
    """Do a tensor loop and a list-based loop through forward() pass for several seeds?"""
    for seed in (0, 1, 2):
        check_greedy_decode(candidate, seed=seed)


@pytest.mark.parametrize(
    "flags,words",
    [
        (dict(per_row=False), "rows not stopped per sequence"),
        (dict(stop_all=False), "does not stop once every row has produced EOS"),
        (dict(bos=False), "does not start with BOS"),
        (dict(extra_steps=1), "off by one: max_len + 1"),
        (dict(extra_steps=-1), "off by one: max_len - 1"),
        (dict(use_eval=False), "training mode"),
    ],
)
def test_greedy_wrong_answers_fail_by_name(flags, words, fails):
    """Does each known mistake of greedy decoding fail with a message naming it?"""
    fails(check_greedy_decode, _make_decoder(**flags), said=words)


def test_greedy_reference_is_forbidden(fails):
    """Is the reference's greedy_decode caught, whether called or handed in as it is?"""
    fails(check_greedy_decode, lambda *args: reference.greedy_decode(*args), error=ForbiddenCall)
    fails(check_greedy_decode, reference.greedy_decode, error=ForbiddenCall)


# ----------------------------------------------------------------------------- train_step


def _make_step(shift=True, count_pad=False, zero=True, sched=True, clip=True, as_tensor=False):
    def train_step(model, src, tgt, optimizer, scheduler, smoothing, pad_id):
        model.train()
        if zero:
            optimizer.zero_grad()
        tgt_in, tgt_out = (tgt[:, :-1], tgt[:, 1:]) if shift else (tgt[:, :-1], tgt[:, :-1])
        loss = (loss_counts_padding if count_pad else loss_scatter)(model(src, tgt_in), tgt_out, smoothing, pad_id)
        loss.backward()
        if clip:
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if sched:
            scheduler.step()
        return loss.detach() if as_tensor else loss.item()

    return train_step


def step_zero_grad_last(model, src, tgt, optimizer, scheduler, smoothing, pad_id):
    """Gradients cleared after the step (set to None), the reference's loss, clipping by hand."""
    logits = model(src, tgt[:, :-1])
    loss = reference.label_smoothed_loss(logits, tgt[:, 1:], smoothing, pad_id)
    loss.backward()
    params = [p for p in model.parameters() if p.grad is not None]
    norm = torch.sqrt(sum((p.grad.double() ** 2).sum() for p in params))
    scale = min(1.0, 1.0 / (float(norm) + 1e-6))
    for p in params:
        p.grad.mul_(scale)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()


def step_reference(model, src, tgt, optimizer, scheduler, smoothing, pad_id):
    from autograder.reference.training.train import train_step

    return train_step(model, src, tgt, optimizer, scheduler, smoothing, pad_id)


@pytest.mark.parametrize("candidate", [_make_step(), step_zero_grad_last])
def test_train_step_right_answers_pass(candidate):
    """Do the textbook step and one that clears gradients last and clips by hand both pass?"""
    for seed in (0, 1):
        check_train_step(candidate, seed=seed)


@pytest.mark.parametrize(
    "flags,words",
    [
        (dict(shift=False), "no teacher-forcing shift"),
        (dict(count_pad=True), "padding counted in the loss"),
        (dict(zero=False), "zero_grad() not called"),
        (dict(sched=False), "scheduler.step() not called"),
        (dict(clip=False), "not clipped"),
        (dict(as_tensor=True), "a Python float"),
    ],
)
def test_train_step_wrong_answers_fail_by_name(flags, words, fails):
    """Does each known mistake of the training step fail with a message naming it?"""
    fails(check_train_step, _make_step(**flags), said=words)


def test_train_step_reference_is_forbidden(fails):
    """Is calling the training module's train_step caught?"""
    fails(check_train_step, step_reference, error=ForbiddenCall, match="train_step")


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
        (check_embeddings, _StubModule),
        (check_encoder_decoder, _StubModule),
        (check_label_smoothed_loss, _stub),
        (check_noam_lr, _stub),
        (check_greedy_decode, _stub),
        (check_train_step, _stub),
    ],
)
def test_untouched_stubs_raise_not_implemented(check, stub, fails):
    """Does an untouched stub reach nbgrader as NotImplementedError, not as a check failure?"""
    fails(check, stub, error=NotImplementedError)


class _BrokenBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("my backward is broken")


def loss_broken_backward(logits, target, smoothing, pad_id):
    return _BrokenBackward.apply(loss_scatter(logits, target, smoothing, pad_id))


def test_loss_whose_backward_raises_fails_the_check(fails):
    """Does an error raised by the candidate's backward pass fail the check, showing the
    error, instead of crashing it?"""
    fails(check_label_smoothed_loss, loss_broken_backward, said="my backward is broken")


@pytest.mark.parametrize(
    "candidate, mistake",
    [
        (EncoderDecoderNoEmbeddingDropout, NO_EMBEDDING_DROPOUT),
        (EncoderDecoderDropoutBeforePositions, DROPOUT_BEFORE_POSITIONS),
        (EncoderDecoderStacksWithoutDropout, STACKS_WITHOUT_DROPOUT),
    ],
)
def test_encoder_decoder_missing_or_misplaced_dropout_is_named(candidate, mistake, fails):
    """Does a model right in eval mode but whose dropout is missing or misplaced fail in
    training mode, naming where?"""
    fails(check_encoder_decoder, candidate, mistake=mistake, said="training mode")

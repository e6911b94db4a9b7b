"""Checks for lab 08-encoder-decoder (chapter 8), greedy decoding: ``greedy_decode`` on scripted
models (``doubles.ScriptedModel``) whose rows produce EOS at chosen steps, on a random model
left in training mode with dropout, and on length 1. A wrong output is named when it is what
a usual mistake gives (a row not stopped at its EOS, the batch stopped at the first EOS, an
off-by-one in the number of steps, no BOS).
"""

from __future__ import annotations

import dataclasses

import torch
from torch import Tensor

from autograder import reference
from autograder.checks.kit.core import check, generator, seeded
from autograder.checks.kit.expect import call, describe, expect_equal, fail
from autograder.checks.kit.sentinels import forbidden
from autograder.checks.kit.token_inputs import padded_ids, random_ids
from autograder.checks.lab08_encoder_decoder.doubles import ScriptedModel
from autograder.data import BOS_ID, EOS_ID, PAD_ID


@torch.no_grad()
def _decode_variant(
    model, src, max_len, *, per_row=True, stop_all=True, stop_any=False, bos=True, steps=None
) -> Tensor:
    model.eval()
    memory, src_mask = model.encode(src)
    ys = torch.full((src.size(0), 1), BOS_ID, dtype=torch.long)  # (B, 1)
    done = torch.zeros(src.size(0), dtype=torch.bool)
    for _ in range(max_len if steps is None else steps):
        nxt = model.decode(ys, memory, src_mask)[:, -1].argmax(-1)  # (B,)
        if per_row:
            nxt = nxt.masked_fill(done, PAD_ID)
        ys = torch.cat([ys, nxt[:, None]], dim=1)  # (B, t + 1)
        done |= nxt == EOS_ID
        if (stop_any and bool(done.any())) or (stop_all and bool(done.all())):
            break
    return ys if bos else ys[:, 1:]


def _expect_tokens(what: str, found, expected: Tensor, variants: dict, otherwise: str | None = None) -> None:
    __tracebackhide__ = True
    if isinstance(found, Tensor) and (found.shape != expected.shape or not torch.equal(found.cpu(), expected)):
        for name, make in variants.items():
            v = make()
            if found.shape == v.shape and torch.equal(found.cpu().long(), v):
                fail(what, f"{expected.tolist()}", f"{found.tolist()}", name)
        if otherwise:
            fail(what, f"{expected.tolist()}", f"{found.tolist()}", otherwise)
    if isinstance(found, Tensor) and found.shape != expected.shape:
        fail(
            what,
            f"shape {tuple(expected.shape)}: {expected.tolist()}",
            f"shape {tuple(found.shape)}: {found.tolist()}",
            hint="the output is (B, 1 + number of steps taken): BOS, then one token "
            "per step, stopping once every row has produced EOS or after max_len steps.",
        )
    expect_equal(
        what,
        found,
        expected,
        hint="rows follow the argmax of the last position's logits; after a row's EOS only pad_id follows.",
    )


_DECODE_OPS = ["autograder.reference.greedy_decode", "autograder.reference.decode.decode_loop"]
_BUILD_DECODE = "Write the loop: encode once, decode the prefix, append the argmax of the last position."


@check
def check_greedy_decode(greedy_decode, seed: int = 0) -> None:
    """``greedy_decode(model, src, max_len, bos_id, eos_id, pad_id)`` on models whose rows stop at
    chosen steps, on a random model left in training mode with dropout, and on length 1."""
    g = generator(seed)
    config = reference.TransformerConfig(
        src_vocab_size=10, tgt_vocab_size=10, d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.0, max_len=32
    )
    eos_at = [int(torch.randint(0, 9, (1,), generator=g)) for _ in range(4)]  # 8: never within max_len
    random_script = random_ids((4, 12), 3, 10, seed + 100)
    for row, n in enumerate(eos_at):
        if n < 8:
            random_script[row, n] = EOS_ID
    cases = [  # (script, batch, source length, max_len, dropout)
        (
            torch.tensor(
                [
                    [5, EOS_ID, 7, 8, 9, 3, 4, 5],  # stops at step 2
                    [6, 7, 8, 9, EOS_ID, 3, 4, 5],  # stops at step 5
                    [9, 9, 9, 9, 9, 9, 9, 9],
                ]
            ),
            3,
            5,
            6,
            0.0,
        ),  # never: max_len decides
        (torch.tensor([[4, EOS_ID, 4, 4, 4, 4], [4, 5, EOS_ID, 4, 4, 4]]), 2, 3, 10, 0.0),
        (random_script, 4, 6, 8, 0.0),
        (None, 4, 5, 7, 0.3),
        (None, 1, 1, 1, 0.0),
    ]
    for i, case in enumerate(cases):
        _check_greedy_case(greedy_decode, seed, seed * 10 + i, config, *case)


def _check_greedy_case(
    greedy_decode,
    seed: int,
    s: int,
    config,
    script: Tensor | None,
    batch: int,
    length: int,
    max_len: int,
    dropout: float,
) -> None:
    __tracebackhide__ = True
    model = seeded(ScriptedModel, s, dataclasses.replace(config, dropout=dropout), script)
    src = padded_ids(batch, length, 10, s)
    what = (
        f"greedy_decode(model, src {tuple(src.shape)}, max_len={max_len}, bos_id={BOS_ID}, eos_id={EOS_ID}, "
        f"pad_id={PAD_ID})"
        + (f" on a model in training mode with dropout={dropout}" if dropout else "")
        + f" (seed {seed})"
    )
    expected = reference.greedy_decode(model, src, max_len, BOS_ID, EOS_ID, PAD_ID)
    variants = {
        "rows not stopped per sequence: a row continues after its EOS instead of getting pad_id": lambda: (
            _decode_variant(model, src, max_len, per_row=False)
        ),
        "the loop does not stop once every row has produced EOS (it always runs max_len steps)": lambda: (
            _decode_variant(model, src, max_len, stop_all=False)
        ),
        "the whole batch stops at the first EOS of any row": lambda: _decode_variant(
            model, src, max_len, stop_any=True
        ),
        "the output does not start with BOS": lambda: _decode_variant(model, src, max_len, bos=False),
        "off by one: max_len - 1 tokens generated": lambda: _decode_variant(model, src, max_len, steps=max_len - 1),
        "off by one: max_len + 1 tokens generated": lambda: _decode_variant(model, src, max_len, steps=max_len + 1),
    }
    model.train()
    with forbidden(greedy_decode, _DECODE_OPS, instead=_BUILD_DECODE):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            found = call(greedy_decode, model, src, max_len, BOS_ID, EOS_ID, PAD_ID, what=what)
    if isinstance(found, Tensor) and found.dtype != torch.long:
        fail(what, "token ids of dtype torch.int64 (long)", describe(found))
    _expect_tokens(
        what,
        found,
        expected,
        variants,
        otherwise="the model decoded in training mode (dropout active): call model.eval() first" if dropout else None,
    )

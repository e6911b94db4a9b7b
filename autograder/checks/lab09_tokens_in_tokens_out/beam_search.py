"""Checks for lab 09-tokens-in-tokens-out (chapter 9): beam search.

Shape letters: B batch, S source length, T generated length, V vocabulary, k beam size.

Beam search is checked on test doubles whose next-token distribution is a table we wrote
(so we know where greedy decoding goes wrong and where length normalisation changes the
winner) and on a tiny random encoder-decoder. The other checks of the lab are in
``generation``.
"""

from __future__ import annotations

import zlib

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from autograder import reference
from autograder.checks.kit.core import check, generator, seeded
from autograder.checks.kit.expect import call, describe, expect_tensor, fail
from autograder.checks.kit.sentinels import forbidden
from autograder.reference import generate

PAD, BOS, EOS = 0, 1, 2


# ----------------------------------------------------------------------------- test doubles


class TreeModel(nn.Module):
    """An encoder-decoder stand-in whose next-token logits depend only on the source's first
    token (which tree) and on the prefix generated so far.

    ``trees[tree][prefix] = (probabilities, offset)`` fixes the distribution after ``prefix``
    (a tuple of ids starting with BOS): the listed tokens get their probability, the other
    ordinary tokens and EOS share the rest (geometrically, so there are no ties), padding and
    BOS get almost nothing. ``offset`` is added to all the logits, so the raw logits are not
    log-probabilities. A prefix not in the table gets random logits fixed by ``seed``, with
    ``eos_bias`` added at EOS.
    """

    def __init__(self, trees: dict, vocab_size: int = 8, seed: int = 0, eos_bias: float = 0.0) -> None:
        super().__init__()
        self.trees, self.vocab_size, self.seed, self.eos_bias = trees, vocab_size, seed, eos_bias
        self.anchor = nn.Parameter(torch.zeros(1))  # next(model.parameters()) tells the device
        self._memo: dict = {}

    def _logits(self, tree: int, prefix: tuple[int, ...]) -> Tensor:
        key = (tree, prefix)
        if key not in self._memo:
            v = self.vocab_size
            g = generator(zlib.crc32(repr((self.seed, tree, prefix)).encode()))
            spec = self.trees.get(tree, {}).get(prefix)
            if spec is None:
                logits = 1.5 * torch.randn(v, generator=g, dtype=torch.float64)
                logits[EOS] += self.eos_bias
                offset = float(torch.randn(1, generator=g, dtype=torch.float64)) * 2
            else:
                given, offset = spec
                probs = torch.zeros(v, dtype=torch.float64)
                rest = [t for t in range(EOS, v) if t not in given]
                shares = torch.tensor([0.8**i for i in range(len(rest))], dtype=torch.float64)
                probs[rest] = (1.0 - sum(given.values())) * shares / shares.sum()
                for t, p in given.items():
                    probs[t] = p
                logits = probs.log()
            logits[[PAD, BOS]] = -30.0
            self._memo[key] = (logits - logits.logsumexp(0) + offset).float()
        return self._memo[key]

    def encode(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """``(B, S)`` -> memory ``(B, S, 1)`` (the ids themselves: they say which tree), mask."""
        return src[:, :, None].float(), reference.padding_mask(src, PAD)

    def decode(self, tgt_in: Tensor, memory: Tensor, src_mask: Tensor, cache=None) -> Tensor:
        """``(B, T)`` prefixes -> logits ``(B, T, V)``."""
        if cache is not None:
            raise ValueError("this test model keeps no cache: feed the whole prefix")
        trees = memory[:, 0, 0].long().tolist()
        rows = tgt_in.tolist()
        out = [
            torch.stack([self._logits(tree, tuple(row[: t + 1])) for t in range(len(row))])
            for tree, row in zip(trees, rows, strict=True)
        ]
        return torch.stack(out)  # (B, T, V)

    def forward(self, src: Tensor, tgt_in: Tensor) -> Tensor:
        return self.decode(tgt_in, *self.encode(src))


def designed_trees() -> dict:
    """Four trees, each making one known mistake change the answer at beam size 2, alpha 0.6."""
    return {
        # greedy takes 3 (0.45) then at best 0.32: 0.14; the beam finds 4 (0.40) then 0.90: 0.34.
        # Raw logits instead of log-probabilities would prefer the 3-branch (offsets +3 and +5).
        3: {
            (BOS,): ({3: 0.45, 4: 0.40}, 0.0),
            (BOS, 3): ({5: 0.32, 6: 0.28, 7: 0.22}, 3.0),
            (BOS, 4): ({5: 0.90}, 0.0),
            (BOS, 3, 5): ({EOS: 0.95}, 0.0),
            (BOS, 3, 6): ({EOS: 0.95}, 5.0),
            (BOS, 3, 7): ({EOS: 0.95}, 0.0),
            (BOS, 4, 5): ({EOS: 0.95}, 0.0),
        },
        # EOS at once: -0.87; 3 4 5 6 EOS: -0.90 in sum, but -0.66 once divided by ((5+5)/6)^0.6
        4: {
            (BOS,): ({EOS: 0.42, 3: 0.50}, 0.0),
            (BOS, 3): ({4: 0.95}, 0.0),
            (BOS, 3, 4): ({5: 0.95}, 0.0),
            (BOS, 3, 4, 5): ({6: 0.95}, 0.0),
            (BOS, 3, 4, 5, 6): ({EOS: 0.95}, 0.0),
        },
        # EOS at once: -0.51; 3 4 5 EOS: -1.37, -1.07 normalised, but -0.34 divided by its length
        5: {
            (BOS,): ({EOS: 0.60, 3: 0.35}, 0.0),
            (BOS, 3): ({4: 0.90}, 0.0),
            (BOS, 3, 4): ({5: 0.90}, 0.0),
            (BOS, 3, 4, 5): ({EOS: 0.90}, 0.0),
        },
        # EOS at once (-0.60) wins over 3 EOS (-1.44: -1.31 normalised, -0.72 divided by its length),
        # unless the finished hypothesis is extended (by 5 at best: -1.65)
        6: {
            (BOS,): ({EOS: 0.55, 3: 0.25}, 0.0),
            (BOS, 3): ({EOS: 0.95}, 0.0),
            (BOS, EOS): ({5: 0.35, 6: 0.30, 7: 0.20}, 0.0),
        },
    }


# ----------------------------------------------------------------------------- beam search


@torch.no_grad()
def _beam_variant(
    model,
    src: Tensor,
    k: int,
    max_len: int,
    alpha: float,
    *,
    normalise: str = "gnmt",
    freeze: bool = True,
    tile: bool = False,
    raw: bool = False,
    zero_start: bool = False,
    bos: bool = True,
) -> Tensor:
    """The reference's beam search with one known mistake switched on."""
    model.eval()
    b = src.size(0)
    memory, src_mask = model.encode(src)
    expand = (lambda x: x.repeat(k, *[1] * (x.dim() - 1))) if tile else (lambda x: x.repeat_interleave(k, 0))
    memory, src_mask = expand(memory), expand(src_mask)
    ys = torch.full((b * k, 1), BOS, dtype=torch.long)
    scores = torch.zeros(b, k, dtype=torch.float64)
    if not zero_start:
        scores[:, 1:] = float("-inf")
    done = torch.zeros(b * k, dtype=torch.bool)
    lengths = torch.zeros(b * k, dtype=torch.long)
    offsets = torch.arange(b)[:, None] * k
    for _ in range(max_len):
        logits = model.decode(ys, memory, src_mask)[:, -1].double()  # (B*k, V)
        logp = logits if raw else F.log_softmax(logits, dim=-1)
        vocab = logp.size(-1)
        if freeze:
            frozen = torch.full_like(logp, float("-inf"))
            frozen[:, PAD] = 0.0
            logp = torch.where(done[:, None], frozen, logp)
        scores, flat = (scores.reshape(b * k, 1) + logp).reshape(b, k * vocab).topk(k, dim=1)
        parent = (flat // vocab + offsets).reshape(-1)
        token = (flat % vocab).reshape(-1)
        ys = torch.cat([ys[parent], token[:, None]], dim=1)
        lengths = lengths[parent] + (~done[parent]).long()
        done = done[parent] | (token == EOS)
        if bool(done.all()):
            break
    lengths = lengths.reshape(b, k).double()
    penalty = {
        "gnmt": generate.length_penalty(lengths, alpha),
        "none": torch.ones_like(lengths),
        "length": lengths.clamp(min=1),
    }[normalise]
    best = (scores / penalty).argmax(dim=1) + offsets[:, 0]
    out = _clean(ys[best])
    return out if bos else out[:, 1:]


def _clean(ys: Tensor) -> Tensor:
    """Padding after each row's first EOS, and no column of padding only at the end."""
    ys = ys.cpu().long().clone()
    after = (ys == EOS).long().cumsum(dim=1) - (ys == EOS).long() > 0  # (B, T): past the first EOS
    ys[after] = PAD
    return _trimmed(ys)


def _trimmed(ys: Tensor) -> Tensor:
    """Without the trailing columns that hold padding only (outputs may stop at the longest row)."""
    width = ys.size(1)
    while width > 1 and bool((ys[:, width - 1] == PAD).all()):
        width -= 1
    return ys[:, :width]


def _expect_beams(what: str, found, expected: Tensor, variants: dict, otherwise: str | None = None) -> None:
    __tracebackhide__ = True
    found = expect_tensor(what, found)
    if found.dim() != 2 or found.size(0) != expected.size(0) or found.size(1) < 1:
        fail(
            what,
            f"shape ({expected.size(0)}, 1 + number of tokens): {expected.tolist()}",
            f"shape {tuple(found.shape)}",
            hint="return one row per source row: BOS, then the best hypothesis.",
        )
    if found.dtype != torch.long:
        fail(what, "token ids of dtype torch.int64 (long)", describe(found))
    found = found.cpu()
    if bool((found[:, 0] != BOS).any()):
        fail(what, f"{expected.tolist()}", f"{found.tolist()}", "the output does not start with BOS")
    trimmed, want = _trimmed(found), _trimmed(expected.cpu())
    if trimmed.shape == want.shape and torch.equal(trimmed, want):
        return
    cleaned = _clean(found)
    if cleaned.shape == want.shape and torch.equal(cleaned, want):
        fail(
            what,
            f"{want.tolist()}",
            f"{found.tolist()}",
            "tokens after a hypothesis's EOS not replaced by "
            "pad_id (a finished hypothesis is never extended: it is followed by padding)",
        )
    for name, make in variants.items():
        v = make()
        if cleaned.shape == v.shape and torch.equal(cleaned, v):
            fail(what, f"{want.tolist()}", f"{found.tolist()}", name)
    fail(
        what,
        f"{want.tolist()}",
        f"{found.tolist()}",
        otherwise,
        hint="each row keeps its k best hypotheses by summed log-probability; a finished one is "
        "frozen; the winner has the best score / ((5 + |y|) / 6) ** alpha, |y| counting EOS, not BOS.",
    )


_BEAM_MISTAKES = {
    "hypotheses ranked by the plain sum of log-probabilities: the final choice is not length-normalised "
    "(divide each finished score by ((5 + |y|) / 6) ** alpha)": dict(normalise="none"),
    "scores divided by the length |y| instead of GNMT's ((5 + |y|) / 6) ** alpha": dict(normalise="length"),
    "finished beams still extended: after EOS a hypothesis must keep its score (its only continuation "
    "is pad_id, at no cost)": dict(freeze=False),
    "beams of different source rows mixed: the memory was tiled with repeat() while the beams of a row sit "
    "side by side (use repeat_interleave, or index the rows consistently)": dict(tile=True),
    "raw logits summed instead of log-probabilities (apply log_softmax first)": dict(raw=True),
    "all k beams start with score 0, so the first step fills the beam with k copies of one hypothesis "
    "(start beams 1..k-1 at -inf)": dict(zero_start=True),
}
_BEAM_OPS = [
    "autograder.reference.generate.beam_search",
    "autograder.reference.generate.evaluate_decoder",
    "autograder.reference.decode.greedy_decode",
    "autograder.reference.decode.decode_loop",
    "autograder.reference.generate.sample",
]
_BUILD_BEAM = (
    "Write the loop: expand the memory to B*k rows, add log_softmax scores, keep each row's top k of "
    "its k*V candidates, freeze finished hypotheses, then length-normalise (beam_size=1 needs no "
    "special case)."
)


@check
def check_beam_search(beam_search, seed: int = 0) -> None:
    """``beam_search(model, src, beam_size, max_len, bos_id, eos_id, pad_id, alpha)`` on table-driven
    models (where greedy is wrong, where length normalisation decides), beam size 1 against greedy
    decoding, and a random encoder-decoder left in training mode with dropout."""
    g = generator(seed)
    order = torch.randperm(4, generator=g)
    designed = TreeModel(designed_trees(), seed=seed)
    src_designed = torch.randint(3, 8, (4, 3), generator=g)
    src_designed[:, 0] = torch.tensor([3, 4, 5, 6])[order]
    src_designed[1:, 2] = PAD
    random_trees = TreeModel({}, seed=seed + 1, eos_bias=1.0)
    src_random = torch.randint(3, 8, (3, 4), generator=g)
    src_random[:, 0] = torch.tensor([10, 11, 12])
    short_trees = TreeModel({}, seed=seed + 2, eos_bias=-1.0)
    config = reference.TransformerConfig(
        src_vocab_size=10, tgt_vocab_size=10, d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.3, max_len=32
    )
    network = seeded(reference.EncoderDecoder, seed, config)
    src_network = torch.randint(3, 10, (3, 5), generator=g)
    src_network[2, 3:] = PAD
    alpha = [0.6, 1.0][seed % 2]
    cases = [  # (model, src, beam_size, max_len, alpha, what the model is)
        (
            designed,
            src_designed,
            2,
            6,
            0.6,
            "a table-driven model built so that greedy decoding, unnormalised "
            "scores and extended finished beams each pick another winner",
        ),
        (random_trees, src_random, 3, 7, alpha, "a table-driven model with random distributions"),
        (random_trees, src_random, 1, 7, alpha, "a table-driven model with random distributions"),
        (designed, src_designed, 1, 6, 0.6, "the designed table-driven model"),
        (short_trees, src_random, 4, 3, alpha, "a model that rarely ends (max_len decides)"),
        (network, src_network, 3, 6, alpha, "a random EncoderDecoder in training mode with dropout=0.3"),
        (designed, src_designed[:1, :1], 2, 1, 0.6, "the designed model, one source token, max_len=1"),
    ]
    for case in cases:
        _check_beam_case(beam_search, seed, case, dropout=case[0] is network)


def _check_beam_case(beam_search, seed: int, case: tuple, *, dropout: bool) -> None:
    """One case of ``check_beam_search``: ``(model, src, beam_size, max_len, alpha, what the model is)``."""
    __tracebackhide__ = True
    model, src, k, max_len, a, about = case
    what = (
        f"beam_search(model, src {tuple(src.shape)}, beam_size={k}, max_len={max_len}, bos_id={BOS}, "
        f"eos_id={EOS}, pad_id={PAD}, alpha={a}) on {about} (seed {seed})"
    )
    if k == 1:
        expected = reference.greedy_decode(model, src, max_len, BOS, EOS, PAD)
    else:
        expected = generate.beam_search(model, src, k, max_len, BOS, EOS, PAD, a)
    variants = {
        name: (lambda f=flags: _beam_variant(model, src, k, max_len, a, **f)) for name, flags in _BEAM_MISTAKES.items()
    }
    model.train()
    with forbidden(beam_search, _BEAM_OPS, instead=_BUILD_BEAM):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            found = call(beam_search, model, src, k, max_len, BOS, EOS, PAD, a, what=what)
    if k == 1:
        what += ": with beam_size=1, beam search is greedy decoding"
    otherwise = "the model searched in training mode (dropout active): call model.eval() first" if dropout else None
    _expect_beams(what, found, expected, variants, otherwise=otherwise)

"""Tokens out: beam search, sampling, and corpus BLEU (chapter 9).

Shape letters: B batch, S source length, T generated length, V vocabulary, k beam size.

Every decoder here recomputes the whole prefix at each step instead of keeping a key/value
cache: the loop stays short enough to read beside the math, and the cache is chapter 8's
subject (``greedy_decode(..., use_cache=True)``); it would change the cost, not the tokens.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from autograder.data.vocab import Vocab
from autograder.reference.decode import decode_loop
from autograder.reference.model import EncoderDecoder


def length_penalty(lengths: Tensor, alpha: float) -> Tensor:
    """GNMT's lp(y) = ((5 + |y|) / 6) ** alpha (Wu et al., 2016, section 7).

    |y| counts the generated tokens, EOS included, BOS not. A hypothesis is ranked by
    ``log P(y) / lp(y)``: alpha = 0 ranks by the plain sum of log-probabilities (which
    favours short outputs, since every token adds a negative term); a larger alpha helps
    longer outputs more. Even alpha = 1 is no mean per token: lp = (5 + |y|) / 6 is 2.5 at
    |y| = 10, not 10.
    """
    return ((5.0 + lengths) / 6.0) ** alpha


@torch.no_grad()
def beam_search(
    model: EncoderDecoder,
    src: Tensor,
    beam_size: int,
    max_len: int,
    bos_id: int,
    eos_id: int,
    pad_id: int,
    alpha: float = 0.6,
) -> Tensor:
    """Keep the ``beam_size`` most likely hypotheses of every source row; return the best one.

    Every row of ``src`` gets k beams, laid out row by row (rows b*k .. b*k + k - 1 of the
    working batch belong to source row b), so the whole batch is searched at once. A
    hypothesis's score is the sum of its tokens' log-probabilities (``log_softmax`` of the
    logits). At each step every live beam proposes all V continuations and each row keeps
    its k best candidates by score. A hypothesis that has produced EOS is finished: it keeps
    its beam slot, is never extended (its only continuation is ``pad_id``, at no cost, so its
    score is frozen) and competes with the live ones on score. The search stops when all k
    beams of every row are finished, or after ``max_len`` steps. Of the k final hypotheses
    the one with the best length-normalised score ``score / length_penalty(|y|, alpha)`` wins.

    With ``beam_size=1`` this is exactly greedy decoding (``greedy_decode``).

    Args:
        model: an encoder-decoder with ``encode(src) -> (memory, src_mask)`` and
            ``decode(tgt_in, memory, src_mask) -> logits (B, T, V)``.
        src: source ids ``(B, S)``.
        beam_size: k (k larger than the number of possible outputs makes the search exhaustive).
        max_len: the most tokens generated after BOS.
        bos_id, eos_id, pad_id: the special ids of the target vocabulary.
        alpha: the length penalty's exponent (0: no normalisation).

    Returns:
        ``(B, 1 + n)`` ids: BOS, then the best hypothesis of each row, ``pad_id`` after its
        EOS; n is the longest winner's length, so rows end as ``greedy_decode``'s do.
    """
    if beam_size < 1:
        raise ValueError(f"beam_size must be at least 1, got {beam_size}")
    was_training = model.training
    model.eval()
    try:
        b, k = src.size(0), beam_size
        memory, src_mask = model.encode(src)
        memory = memory.repeat_interleave(k, dim=0)  # (B*k, S, D): each row's beams side by side
        src_mask = src_mask.repeat_interleave(k, dim=0)  # (B*k, 1, 1, S)
        ys = torch.full((b * k, 1), bos_id, dtype=torch.long, device=src.device)  # (B*k, 1)
        # One live beam at first (k copies of BOS would fill the beam with duplicates): beams 1..k-1
        # are empty placeholders, finished with score -inf, that any real candidate displaces.
        scores = torch.full((b, k), float("-inf"), dtype=torch.float64, device=src.device)  # (B, k), in float64
        scores[:, 0] = 0.0
        done = (scores == float("-inf")).reshape(b * k)  # (B*k,)
        lengths = torch.zeros(b * k, dtype=torch.long, device=src.device)  # (B*k,) tokens after BOS
        offsets = torch.arange(b, device=src.device)[:, None] * k  # (B, 1): first working row of each source row
        for _ in range(max_len):
            logits = model.decode(ys, memory, src_mask)[:, -1]  # (B*k, V)
            logp = F.log_softmax(logits.double(), dim=-1)  # (B*k, V)
            vocab = logp.size(-1)
            frozen = torch.full_like(logp, float("-inf"))
            frozen[:, pad_id] = 0.0  # a finished hypothesis's one continuation: pad, at no cost
            logp = torch.where(done[:, None], frozen, logp)
            candidates = (scores.reshape(b * k, 1) + logp).reshape(b, k * vocab)  # (B, k*V)
            scores, flat = candidates.topk(k, dim=1)  # (B, k) each, best first
            parent = (flat // vocab + offsets).reshape(b * k)  # (B*k,) working row each new beam extends
            token = (flat % vocab).reshape(b * k)  # (B*k,)
            ys = torch.cat([ys[parent], token[:, None]], dim=1)  # (B*k, t + 1)
            lengths = lengths[parent] + (~done[parent]).long()
            done = done[parent] | (token == eos_id)
            if bool(done.all()):
                break
        normalised = scores / length_penalty(lengths.reshape(b, k).to(scores.dtype), alpha)  # (B, k)
        best = normalised.argmax(dim=1) + offsets[:, 0]  # (B,) working row of each row's winner
        return ys[best, : 1 + int(lengths[best].max())]  # (B, 1 + n)
    finally:
        model.train(was_training)


def filter_logits(logits: Tensor, top_k: int | None = None, top_p: float | None = None) -> Tensor:
    """Set every token outside the top-k and outside the nucleus to -inf.

    top-k keeps exactly the ``top_k`` largest logits of each row (ties broken by
    ``torch.topk``). top-p (Holtzman et al., 2020) then keeps the smallest set of most likely
    tokens whose probabilities, renormalised after top-k, sum to at least ``top_p``: a token
    stays when the mass of the tokens ranked above it is below ``top_p``, so the most likely
    token always stays. ``None`` switches a filter off.

    Shape: ``(..., V)`` -> ``(..., V)``.
    """
    if top_k is not None:
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {top_k}")
        kept = logits.topk(min(top_k, logits.size(-1)), dim=-1).indices  # (..., k)
        keep = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, kept, True)
        logits = logits.masked_fill(~keep, float("-inf"))
    if top_p is not None:
        if not 0.0 < top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}")
        sorted_logits, order = logits.sort(dim=-1, descending=True)  # (..., V) each
        probs = sorted_logits.softmax(dim=-1)
        mass_above = probs.cumsum(dim=-1) - probs  # (..., V): mass of the tokens ranked higher
        keep_sorted = mass_above < top_p
        keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)  # back to vocabulary order
        logits = logits.masked_fill(~keep, float("-inf"))
    return logits


def sample_next(
    logits: Tensor,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Draw one token per row from softmax(filter_logits(logits / temperature)).

    ``temperature=0`` is the limit of ever sharper distributions: the argmax (greedy).
    Shape: ``(B, V)`` -> ``(B,)``.
    """
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if temperature == 0:
        return logits.argmax(dim=-1)
    probs = filter_logits(logits.float() / temperature, top_k, top_p).softmax(dim=-1)  # (B, V)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)  # (B,)


@torch.no_grad()
def sample(
    model: EncoderDecoder,
    src: Tensor,
    max_len: int,
    bos_id: int,
    eos_id: int,
    pad_id: int,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Like ``greedy_decode``, but each token is drawn by ``sample_next`` instead of taken as the argmax.

    The same ``generator`` state gives the same tokens. Returns ``(B, <= max_len + 1)`` ids
    starting with BOS, ``pad_id`` after each row's EOS.
    """

    def draw(logits: Tensor) -> Tensor:
        return sample_next(logits, temperature, top_k, top_p, generator)

    return decode_loop(model, src, max_len, bos_id, eos_id, pad_id, draw)


# ----------------------------------------------------------------------------- BLEU


def ids_to_text(ids: Tensor | Iterable[Sequence[int]], vocab: Vocab, sep: str = " ") -> list[str]:
    """One string per row: its tokens up to the first EOS, BOS and padding dropped, joined by ``sep``."""
    rows = ids.tolist() if isinstance(ids, Tensor) else ids
    return [sep.join(vocab.decode(row)) for row in rows]


def bleu(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """Corpus BLEU (Papineni et al., 2002) in 0..100, one reference per hypothesis, by sacrebleu.

    sacrebleu is the independent, standard implementation (13a tokenisation, brevity
    penalty over the whole corpus), so scores are comparable with published ones. Corpus
    BLEU pools n-gram counts over all sentences; it is not the mean of sentence scores.
    """
    import sacrebleu  # imported here: only this function needs it

    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    return float(sacrebleu.corpus_bleu(list(hypotheses), [list(references)]).score)


@torch.no_grad()
def evaluate_decoder(
    model: EncoderDecoder,
    pairs: Sequence[tuple[list[int], list[int]]],
    tgt_vocab: Vocab,
    *,
    beam_size: int = 1,
    alpha: float = 0.6,
    batch_size: int = 256,
) -> dict[str, float]:
    """Decode every source of ``pairs`` (greedy for ``beam_size=1``, else beam search) and score it.

    Returns ``exact_match`` (fraction of outputs equal to their target up to and including
    EOS, as in ``train.evaluate``) and corpus ``bleu``.
    The model stays on its device; the pairs are ``autograder.data`` pairs.
    """
    from autograder.data import batches  # the data package imports nothing of ours; keep it that way

    device = next(model.parameters()).device
    hyps: list[str] = []
    refs: list[str] = []
    exact = 0
    for src, tgt in batches(pairs, batch_size, tgt_vocab.pad_id, shuffle=False):
        ys = beam_search(
            model,
            src.to(device),
            beam_size,
            tgt.size(1) - 1,
            tgt_vocab.bos_id,
            tgt_vocab.eos_id,
            tgt_vocab.pad_id,
            alpha,
        ).cpu()
        for out, gold in zip(ys.tolist(), tgt.tolist(), strict=True):
            exact += _until_eos(out, tgt_vocab.eos_id) == _until_eos(gold, tgt_vocab.eos_id)
        hyps += ids_to_text(ys, tgt_vocab)
        refs += ids_to_text(tgt, tgt_vocab)
    return {"exact_match": exact / len(refs), "bleu": bleu(hyps, refs)}


def _until_eos(ids: list[int], eos_id: int) -> list[int] | None:
    """The ids up to and including the first EOS; None when there is no EOS (never exact)."""
    return ids[: ids.index(eos_id) + 1] if eos_id in ids else None

"""Beam search, sampling filters and BLEU (chapter 9)."""

import itertools
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from autograder import reference as ref
from autograder.data import Vocab, make_task
from autograder.reference.generate import (
    beam_search,
    bleu,
    evaluate_decoder,
    filter_logits,
    ids_to_text,
    length_penalty,
    sample,
    sample_next,
)
from autograder.reference.training.train import evaluate

PAD, BOS, EOS = 0, 1, 2


def _model(seed: int, vocab: int = 11, dtype: torch.dtype = torch.float32) -> ref.EncoderDecoder:
    torch.manual_seed(seed)
    cfg = ref.TransformerConfig(
        src_vocab_size=vocab,
        tgt_vocab_size=vocab,
        d_model=16,
        num_heads=2,
        num_layers=2,
        d_ff=32,
        dropout=0.1,
        max_len=64,
    )
    return ref.EncoderDecoder(cfg).to(dtype)


def _sources(batch: int, length: int, seed: int, vocab: int = 11) -> torch.Tensor:
    src = torch.randint(3, vocab, (batch, length), generator=torch.Generator().manual_seed(seed))
    for b in range(1, batch):
        src[b, length - (b % length) :] = PAD
    return src


class _Table(nn.Module):
    """A test double: after a prefix, the next-token probabilities are ``table[prefix]``
    (tokens not listed share what is left; PAD and BOS get nearly nothing). Every source row
    uses the same table, and the logits carry an offset per prefix, so they are not log-probabilities."""

    def __init__(self, table: dict, vocab: int = 8) -> None:
        super().__init__()
        self.table, self.vocab = table, vocab

    def logp(self, prefix: tuple) -> torch.Tensor:
        given = self.table.get(prefix, {EOS: 0.9})
        rest = [t for t in range(EOS, self.vocab) if t not in given]
        probs = torch.full((self.vocab,), 1e-12, dtype=torch.float64)
        for i, t in enumerate(rest):  # unequal shares: no ties
            probs[t] = (1 - sum(given.values())) * 0.5 ** (i + 1)
        for t, p in given.items():
            probs[t] = p
        return probs.log() - probs.sum().log()

    def encode(self, src):
        return src[:, :, None].float(), ref.padding_mask(src, PAD)

    def decode(self, tgt_in, memory, src_mask, cache=None):
        rows = [[self.logp(tuple(r[: t + 1])) + len(r[: t + 1]) * 0.7 for t in range(len(r))] for r in tgt_in.tolist()]
        return torch.stack([torch.stack(r) for r in rows]).float()  # (B, T, V)


def _score(model, ys: torch.Tensor) -> float:
    """Summed log-probability of one hypothesis (BOS ... EOS) under a table model."""
    ids = ys.tolist()
    end = ids.index(EOS) + 1 if EOS in ids else len(ids)
    return sum(float(model.logp(tuple(ids[:t]))[ids[t]]) for t in range(1, end))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("batch,length", [(1, 1), (3, 5), (5, 7)])
def test_beam_of_one_is_greedy_decoding(dtype, batch, length):
    """Does beam search with beam_size=1 give exactly greedy_decode's tokens, shape included?"""
    model = _model(batch + length, dtype=dtype)
    src = _sources(batch, length, seed=length)
    assert torch.equal(beam_search(model, src, 1, 12, BOS, EOS, PAD), ref.greedy_decode(model, src, 12, BOS, EOS, PAD))


def test_beam_finds_a_better_sequence_where_greedy_goes_wrong():
    """Where the likeliest first token leads nowhere likely, does a beam of 2 find the sequence
    with the higher summed log-probability that greedy decoding misses?"""
    model = _Table({(BOS,): {3: 0.45, 4: 0.40}, (BOS, 3): {5: 0.32, 6: 0.30}, (BOS, 4): {5: 0.9}})
    src = torch.tensor([[3, 4]])
    greedy = ref.greedy_decode(model, src, 5, BOS, EOS, PAD)[0]
    beam = beam_search(model, src, 2, 5, BOS, EOS, PAD)[0]
    assert greedy.tolist() == [BOS, 3, 5, EOS]
    assert beam.tolist() == [BOS, 4, 5, EOS]
    assert _score(model, beam) > _score(model, greedy)


def test_length_normalisation_changes_the_winner():
    """With an early EOS that wins on the plain sum, does alpha > 0 pick the longer, likelier-per-token
    hypothesis, and does alpha = 0 keep the short one?"""
    model = _Table(
        {
            (BOS,): {EOS: 0.42, 3: 0.50},
            (BOS, 3): {4: 0.95},
            (BOS, 3, 4): {5: 0.95},
            (BOS, 3, 4, 5): {6: 0.95},
            (BOS, 3, 4, 5, 6): {EOS: 0.95},
        }
    )
    src = torch.tensor([[3]])
    assert beam_search(model, src, 2, 6, BOS, EOS, PAD, alpha=0.0)[0].tolist() == [BOS, EOS]
    assert beam_search(model, src, 2, 6, BOS, EOS, PAD, alpha=0.6)[0].tolist() == [BOS, 3, 4, 5, 6, EOS]
    long, short = math.log(0.5) + 3 * math.log(0.95) + math.log(0.95), math.log(0.42)
    assert long / float(length_penalty(torch.tensor(5.0), 0.6)) > short > long


def test_finished_hypotheses_keep_their_score():
    """Is a hypothesis that produced EOS never extended: its score frozen (it still wins though
    everything after its EOS is unlikely) and its row padded after EOS?"""
    model = _Table(
        {(BOS,): {EOS: 0.55, 3: 0.25}, (BOS, 3): {EOS: 0.95}, (BOS, EOS): {5: 0.35}, (BOS, EOS, 5): {EOS: 0.3}}
    )
    out = beam_search(model, torch.tensor([[3], [4]]), 2, 6, BOS, EOS, PAD)
    assert out.tolist() == [[BOS, EOS], [BOS, EOS]]
    wide = beam_search(model, torch.tensor([[3], [4]]), 3, 6, BOS, EOS, PAD)
    assert (wide[:, 2:] == PAD).all() and (wide[:, 1] == EOS).all()


@pytest.mark.parametrize("beam_size", [2, 4])
def test_batched_search_equals_searching_each_row_alone(beam_size):
    """Do the rows of a padded batch get the same hypotheses as when each is searched alone?"""
    model = _model(7)
    src = _sources(5, 6, seed=3)
    batched = beam_search(model, src, beam_size, 10, BOS, EOS, PAD)
    for b in range(src.size(0)):
        alone = beam_search(model, src[b : b + 1, : int((src[b] != PAD).sum())], beam_size, 10, BOS, EOS, PAD)[0]
        row = batched[b]
        assert torch.equal(row[: alone.numel()], alone) and (row[alone.numel() :] == PAD).all()


def test_a_beam_as_wide_as_every_hypothesis_is_exhaustive_search():
    """With k at least the number of possible outputs, is the winner the best of all of them by
    brute force (score / length penalty over every sequence up to max_len)?"""
    vocab, max_len, alpha = 5, 3, 0.6
    model = _model(3, vocab=vocab).eval()
    src = _sources(2, 4, seed=1, vocab=vocab)
    out = beam_search(model, src, 200, max_len, BOS, EOS, PAD, alpha)
    memory, src_mask = model.encode(src)
    for b in range(src.size(0)):
        best, best_ys = -math.inf, None
        for n in range(1, max_len + 1):
            for tail in itertools.product(range(vocab), repeat=n):
                if EOS in tail[:-1] or (n < max_len and tail[-1] != EOS):
                    continue
                ys = torch.tensor([[BOS, *tail]])
                with torch.no_grad():
                    logp = F.log_softmax(model.decode(ys, memory[b : b + 1], src_mask[b : b + 1]).double(), -1)
                score = float(logp[0, torch.arange(n), ys[0, 1:]].sum()) / ((5 + n) / 6) ** alpha
                if score > best:
                    best, best_ys = score, ys[0].tolist()
        assert out[b, : len(best_ys)].tolist() == best_ys


def test_beam_search_restores_training_mode_and_stops_at_max_len():
    """Is the model back in training mode afterwards, and does a search that never ends stop after max_len?"""
    model = _Table({}, vocab=6)
    model.table = {p: {3: 0.9} for p in [(BOS,) + (3,) * n for n in range(10)]}
    model.train()
    out = beam_search(model, torch.tensor([[3]]), 3, 4, BOS, EOS, PAD)
    assert model.training and out.tolist() == [[BOS, 3, 3, 3, 3]]


# ----------------------------------------------------------------------------- filters and sampling


def test_top_k_keeps_exactly_k_even_with_ties():
    """Does top-k keep exactly k tokens per row, the k largest, even when the k-th value is tied?"""
    logits = torch.tensor([[1.0, 3.0, 2.0, 2.0, 2.0, 0.0], [5.0, 4.0, 3.0, 2.0, 1.0, 0.0]])
    out = filter_logits(logits, top_k=3)
    assert (out.isfinite().sum(-1) == 3).all()
    assert out[0, 1] == 3.0 and out[1, :3].tolist() == [5.0, 4.0, 3.0]
    assert torch.equal(out[out.isfinite()], logits[out.isfinite()])


@pytest.mark.parametrize("p", [0.05, 0.3, 0.5, 0.75, 0.9, 0.99, 1.0])
def test_top_p_keeps_the_smallest_set_with_enough_mass(p):
    """Does top-p keep, per row, the fewest most likely tokens whose probability reaches p?"""
    logits = 2 * torch.randn(6, 12, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    out = filter_logits(logits, top_p=p)
    probs = logits.softmax(-1)
    for row in range(logits.size(0)):
        ranked = probs[row].sort(descending=True)
        need = int((ranked.values.cumsum(0) < p).sum()) + 1  # fewest tokens whose mass reaches p
        kept = out[row].isfinite()
        assert int(kept.sum()) == min(need, 12)
        assert kept[ranked.indices[:need]].all()


def test_top_k_then_top_p_renormalises_in_between():
    """With both filters, is the nucleus taken from the distribution that top-k leaves?"""
    logits = torch.log(torch.tensor([[0.4, 0.3, 0.2, 0.1]]))
    # after top-2: 0.4/0.7 = 0.57 and 0.43; p = 0.5 needs only the first
    assert filter_logits(logits, top_k=2, top_p=0.5).isfinite().tolist() == [[True, False, False, False]]
    assert filter_logits(logits, top_p=0.5).isfinite().tolist() == [[True, True, False, False]]


def test_temperature_towards_zero_is_argmax():
    """Do temperature 0 and a tiny temperature both give the argmax of every row?"""
    logits = torch.randn(50, 9, generator=torch.Generator().manual_seed(1))
    g = torch.Generator().manual_seed(0)
    assert torch.equal(sample_next(logits, temperature=0.0), logits.argmax(-1))
    assert torch.equal(sample_next(logits, temperature=1e-3, generator=g), logits.argmax(-1))


def test_sampling_follows_the_filtered_distribution():
    """Are the frequencies of 40,000 seeded draws within 1% of softmax(filtered logits / temperature)?"""
    logits = torch.tensor([[2.0, 1.0, 0.5, 0.0, -1.0]]).expand(40_000, 5)
    g = torch.Generator().manual_seed(0)
    draws = sample_next(logits, temperature=0.7, top_k=4, top_p=0.95, generator=g)
    freq = torch.bincount(draws, minlength=5).double() / draws.numel()
    want = filter_logits(logits[:1] / 0.7, 4, 0.95).softmax(-1)[0].double()
    assert torch.allclose(freq, want, atol=0.01)


def test_sample_is_reproducible_and_top_k_one_is_greedy():
    """Does the same generator seed give the same samples, and top_k=1 give greedy decoding?"""
    model = _model(2)
    src = _sources(4, 5, seed=2)
    a = sample(model, src, 10, BOS, EOS, PAD, top_p=0.9, generator=torch.Generator().manual_seed(5))
    b = sample(model, src, 10, BOS, EOS, PAD, top_p=0.9, generator=torch.Generator().manual_seed(5))
    assert torch.equal(a, b)
    assert torch.equal(sample(model, src, 10, BOS, EOS, PAD, top_k=1), ref.greedy_decode(model, src, 10, BOS, EOS, PAD))
    after_eos = (a == EOS).long().cumsum(1) - (a == EOS).long() > 0
    assert (a[after_eos] == PAD).all()


# ----------------------------------------------------------------------------- BLEU


def test_bleu_is_sacrebleus_corpus_bleu():
    """Is bleu() sacrebleu's corpus BLEU, 100 for identical outputs, and not a mean of sentence scores?"""
    # imported here, as bleu() does: `make test-gpu` collects this module on machines without sacrebleu
    import sacrebleu

    hyps = ["the cat sat on the mat", "a dog ran in the park today", "2 0 1 9 - 0 3 - 1 2"]
    refs = ["the cat sat on a mat", "the dog ran in the park", "2 0 1 9 - 0 3 - 2 2"]
    assert bleu(hyps, refs) == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score)
    assert bleu(refs, refs) == pytest.approx(100.0)
    mean = sum(sacrebleu.sentence_bleu(h, [r]).score for h, r in zip(hyps, refs, strict=True)) / 3
    assert bleu(hyps, refs) != pytest.approx(mean)
    with pytest.raises(ValueError):
        bleu(hyps, refs[:2])


def test_ids_to_text_stops_at_eos_and_drops_specials():
    """Does a row become its tokens up to EOS, without BOS and padding?"""
    vocab = Vocab(list("abc"))
    ids = torch.tensor([[BOS, 3, 4, EOS, 5], [BOS, 5, PAD, PAD, PAD]])
    assert ids_to_text(ids, vocab) == ["a b", "c"]
    assert ids_to_text([[3, 5]], vocab, sep="") == ["ac"]


def test_evaluate_decoder_with_beam_one_agrees_with_train_evaluate():
    """On the dates task, does beam size 1 count exact matches as train.evaluate does, with BLEU in 0..100?"""
    task = make_task("dates", num_train=10, num_valid=10, num_test=30, seed=0)
    torch.manual_seed(0)
    cfg = ref.TransformerConfig(
        src_vocab_size=len(task.src_vocab),
        tgt_vocab_size=len(task.tgt_vocab),
        d_model=16,
        num_heads=2,
        num_layers=1,
        d_ff=32,
        dropout=0.0,
    )
    model = ref.EncoderDecoder(cfg)
    mine = evaluate_decoder(model, task.test, task.tgt_vocab, beam_size=1)
    assert mine["exact_match"] == evaluate(model, task.test, task.tgt_vocab)["exact_match"]
    assert 0.0 <= evaluate_decoder(model, task.test, task.tgt_vocab, beam_size=3)["bleu"] <= 100.0

"""Tests of autograder.data.batching."""

import torch

from autograder.data import PAD_ID, batches, collate, make_task

PAIRS = [([5, 6, 2], [1, 7, 2]), ([5, 2], [1, 7, 8, 9, 2]), ([4, 4, 4, 4, 2], [1, 2])]


def test_collate_shapes_and_padding():
    """Does collate right-pad to the longest source and target with pad_id, as LongTensors?"""
    src, tgt = collate(PAIRS, PAD_ID)
    assert src.shape == (3, 5) and tgt.shape == (3, 5)
    assert src.dtype == torch.long and tgt.dtype == torch.long
    assert src[1].tolist() == [5, 2, 0, 0, 0]
    assert tgt[2].tolist() == [1, 2, 0, 0, 0]
    src9, _ = collate(PAIRS, pad_id=9)
    assert src9[1].tolist() == [5, 2, 9, 9, 9]


def _rows(pairs_batches):
    out = []
    for src, tgt in pairs_batches:
        for s, t in zip(src.tolist(), tgt.tolist(), strict=True):
            out.append((tuple(x for x in s if x != PAD_ID), tuple(x for x in t if x != PAD_ID)))
    return out


def test_batches_cover_every_pair_once():
    """Does one pass of shuffled batches yield every pair exactly once?"""
    task = make_task("reverse", num_train=1000, num_valid=0, num_test=0)
    got = _rows(batches(task.train, 64, PAD_ID, generator=torch.Generator().manual_seed(0)))
    assert sorted(got) == sorted((tuple(s), tuple(t)) for s, t in task.train)


def test_batches_seeded_and_bucketed():
    """Is the batch order set by the generator, and does bucketing cut padding?"""
    task = make_task("reverse", num_train=2000, num_valid=0, num_test=0, min_len=1, max_len=12)

    def run(seed):
        return [s.tolist() for s, _ in batches(task.train, 32, PAD_ID, generator=torch.Generator().manual_seed(seed))]

    def pads(bs):
        return sum(int((s == PAD_ID).sum()) for s, _ in bs)

    assert run(0) == run(0) and run(0) != run(1)
    bucketed = pads(batches(task.train, 32, PAD_ID, generator=torch.Generator().manual_seed(0)))
    unbucketed = pads(batches(task.train, 32, PAD_ID, generator=torch.Generator().manual_seed(0), bucket=1))
    assert bucketed < unbucketed / 3


def test_batches_without_shuffle_keep_order():
    """Without shuffle, are the pairs batched in their order, the last batch smaller?"""
    got = list(batches(PAIRS, 2, PAD_ID, shuffle=False))
    assert [s.size(0) for s, _ in got] == [2, 1]
    assert _rows(got) == [(tuple(s), tuple(t)) for s, t in PAIRS]

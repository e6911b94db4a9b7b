"""Tests of autograder.data.vocab."""

import pytest
import torch

from autograder.data import BOS_ID, EOS_ID, PAD_ID, Vocab


def test_special_ids():
    """Are the special ids fixed at 0, 1, 2 and the same on every vocabulary?"""
    v = Vocab(["x", "y"])
    assert (PAD_ID, BOS_ID, EOS_ID) == (0, 1, 2)
    assert (v.pad_id, v.bos_id, v.eos_id) == (PAD_ID, BOS_ID, EOS_ID)
    assert v.itos[:3] == ["<pad>", "<bos>", "<eos>"]


def test_round_trip():
    """Does decode(encode(tokens)) give the tokens back, with and without BOS/EOS?"""
    v = Vocab("the third of march".split())
    tokens = "march the third".split()
    assert v.decode(v.encode(tokens)) == tokens
    ids = v.encode(tokens, bos=True, eos=True)
    assert ids[0] == BOS_ID and ids[-1] == EOS_ID
    assert v.decode(ids) == tokens
    assert v.decode(torch.tensor(ids)) == tokens


def test_decode_stops_at_eos_and_skips_specials():
    """Does decode stop at the first EOS and drop PAD and BOS?"""
    v = Vocab(["a", "b"])
    assert v.decode([BOS_ID, 3, PAD_ID, 4, EOS_ID, 3, 4]) == ["a", "b"]


def test_duplicates_and_length():
    """Are duplicate tokens kept once, and does len count the specials?"""
    v = Vocab(["a", "b", "a"])
    assert len(v) == 5 and v.itos == ["<pad>", "<bos>", "<eos>", "a", "b"]


def test_unknown_token():
    """Does an unknown token raise a KeyError that names it?"""
    with pytest.raises(KeyError, match="'z'"):
        Vocab(["a"]).encode(["a", "z"])

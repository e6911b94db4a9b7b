"""Tests of autograder.reference.oracles.baseline: the encoder-decoder on PyTorch's stacks, with our
weights, computes what ours computes."""

import pytest
import torch

from autograder.data import BOS_ID, EOS_ID, PAD_ID
from autograder.reference.decode import greedy_decode
from autograder.reference.oracles.baseline import TorchTransformer
from tests.reference.training.test_train import SRC, TGT, tiny


@pytest.mark.parametrize("norm_first", [False, True])
def test_baseline_matches_ours_with_the_same_weights(norm_first):
    """With our weights loaded, does TorchTransformer give our logits and greedy outputs (masks converted right)?"""
    ours = tiny(num_layers=2, norm_first=norm_first).eval()
    theirs = tiny(TorchTransformer, seed=1, num_layers=2, norm_first=norm_first).eval()
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in theirs.parameters())
    theirs.load_reference_weights(ours)
    with torch.no_grad():
        torch.testing.assert_close(theirs(SRC, TGT[:, :-1]), ours(SRC, TGT[:, :-1]), atol=1e-5, rtol=1e-5)
    assert torch.equal(
        greedy_decode(theirs, SRC, 6, BOS_ID, EOS_ID, PAD_ID), greedy_decode(ours, SRC, 6, BOS_ID, EOS_ID, PAD_ID)
    )


def test_baseline_has_no_extra_final_norm():
    """Is there a final LayerNorm after the stacks only for pre-norm, as in our model?"""
    assert tiny(TorchTransformer).encoder.norm is None
    assert tiny(TorchTransformer).decoder.norm is None
    assert tiny(TorchTransformer, norm_first=True).decoder.norm is not None
    assert len(tiny(TorchTransformer, num_layers=3).decoder.layers) == 3


def test_baseline_rejects_a_cache():
    """Does TorchTransformer refuse cached decoding instead of silently ignoring the cache?"""
    with pytest.raises(NotImplementedError, match="use_cache=False"):
        greedy_decode(tiny(TorchTransformer), SRC, 4, BOS_ID, EOS_ID, PAD_ID, use_cache=True)

"""Tests of the long-addition task (autograder.data.arithmetic, ``make_task("add")``)."""

import pytest

from autograder.data import make_task


def _numbers(task, pair):
    """(a, b, sum, width of a, width of b, width of the sum) read back from a pair."""
    src, tgt = task.src_vocab.decode(pair[0]), task.tgt_vocab.decode(pair[1])
    a, b = "".join(p[0] for p in src)[::-1], "".join(p[1] for p in src)[::-1]  # one place a token, low first
    return int(a), int(b), int("".join(tgt)[::-1]), len(a), len(b), len(tgt)


def test_targets_are_the_sums_written_from_the_low_digit():
    """Is every target the sum of the two source numbers (a token per place, its two digits), least
    significant digit first, both numbers of one width W in the stated range and the sum of W + 1 digits?"""
    task = make_task("add", num_train=300, num_valid=20, num_test=20, seed=1, min_digits=2, max_digits=6)
    src, tgt = task.train[0]
    assert len(task.src_vocab) == 103 and len(tgt) == len(src) + 2, "W places, EOS; BOS, W + 1 digits, EOS"
    for pair in task.train + task.valid + task.test:
        a, b, total, la, lb, ls = _numbers(task, pair)
        assert a + b == total and 2 <= la == lb <= 6 and ls == la + 1


def test_full_task_is_33_to_128_tokens_long_and_deterministic():
    """Do the default options give sources of 33 to 128 ids, the same pairs for the same seed on every call,
    and other pairs for another seed?"""
    task = make_task("add", num_train=200, num_valid=10, num_test=10, seed=0)
    lengths = [len(s) for s, _ in task.train]
    assert 33 <= min(lengths) and max(lengths) <= 128 and max(lengths) > 100 and min(lengths) < 50
    assert make_task("add", num_train=200, num_valid=10, num_test=10, seed=0).train == task.train
    assert make_task("add", num_train=200, num_valid=10, num_test=10, seed=1).train != task.train


def test_carries_ripple_in_some_examples():
    """Does the task hold sums whose length exceeds both numbers' (a carry out of the top digit)?"""
    task = make_task("add", num_train=200, num_valid=0, num_test=0, seed=0, min_digits=3, max_digits=5)
    assert any(len(str(t)) > la for _, _, t, la, _, _ in (_numbers(task, p) for p in task.train))


def test_the_digits_layout_holds_the_same_pairs_a_digit_a_token():
    """Does ``layout="digits"`` give, for the same seed, the same sums with the two numbers' digits
    interleaved, one token each (a source twice as long, less its EOS)?"""
    places = make_task("add", num_train=50, num_valid=0, num_test=0, seed=2, min_digits=2, max_digits=5)
    digits = make_task(
        "add", num_train=50, num_valid=0, num_test=0, seed=2, min_digits=2, max_digits=5, layout="digits"
    )
    assert len(digits.src_vocab) == 13 and digits.options["layout"] == "digits"
    for (ps, pt), (ds, dt) in zip(places.train, digits.train, strict=True):
        assert pt == dt and len(ds) - 1 == 2 * (len(ps) - 1)
        assert "".join(places.src_vocab.decode(ps)) == "".join(digits.src_vocab.decode(ds))


def test_bad_options_are_refused():
    """Are impossible digit ranges and unknown layouts refused with a message?"""
    with pytest.raises(ValueError, match="min_digits"):
        make_task("add", num_train=10, num_valid=0, num_test=0, min_digits=5, max_digits=2)
    with pytest.raises(ValueError, match="layout"):
        make_task("add", num_train=10, num_valid=0, num_test=0, layout="columns")

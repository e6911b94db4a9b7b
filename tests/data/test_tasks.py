"""Tests of autograder.data.tasks."""

import datetime

import pytest

from autograder.data import BOS_ID, EOS_ID, TASK_NAMES, make_task
from autograder.data.tasks import _MONTHS, _ordinal, _year

SIZES = dict(num_train=300, num_valid=50, num_test=50)


@pytest.mark.parametrize("name", TASK_NAMES)
def test_same_seed_same_data(name):
    """Does the same seed give exactly the same splits?"""
    a, b = make_task(name, seed=3, **SIZES), make_task(name, seed=3, **SIZES)
    assert (a.train, a.valid, a.test) == (b.train, b.valid, b.test)
    assert a.src_vocab.itos == b.src_vocab.itos and a.tgt_vocab.itos == b.tgt_vocab.itos


@pytest.mark.parametrize("name", TASK_NAMES)
def test_different_seeds_differ(name):
    """Do different seeds give different data (but the same vocabularies)?"""
    a, b = make_task(name, seed=0, **SIZES), make_task(name, seed=1, **SIZES)
    assert a.train != b.train and a.test != b.test
    assert a.src_vocab.itos == b.src_vocab.itos


@pytest.mark.parametrize("name", TASK_NAMES)
def test_splits_do_not_overlap(name):
    """Do the train, valid and test splits share no source sequence, and have the asked sizes?"""
    task = make_task(name, num_train=2000, num_valid=300, num_test=300)
    train, valid, test = ({tuple(s) for s, _ in split} for split in (task.train, task.valid, task.test))
    assert (len(train), len(valid), len(test)) == (2000, 300, 300)  # no duplicates inside a split
    assert not train & valid and not train & test and not valid & test


@pytest.mark.parametrize("name", TASK_NAMES)
def test_pair_format(name):
    """Do sources end with EOS without BOS, and targets run BOS ... EOS?"""
    task = make_task(name, **SIZES)
    for src, tgt in task.train + task.valid + task.test:
        assert src[-1] == EOS_ID and BOS_ID not in src and src.count(EOS_ID) == 1
        assert tgt[0] == BOS_ID and tgt[-1] == EOS_ID and tgt.count(EOS_ID) == 1
        assert 0 not in src and 0 not in tgt
    assert task.describe().startswith(f"task {name!r}")


def test_copy_and_reverse_answers():
    """Is the copy target the source and the reverse target the source reversed?"""
    copy, rev = make_task("copy", **SIZES), make_task("reverse", min_len=2, max_len=5, **SIZES)
    for src, tgt in copy.train:
        assert copy.tgt_vocab.decode(tgt) == copy.src_vocab.decode(src)
    for src, tgt in rev.train:
        words = rev.src_vocab.decode(src)
        assert rev.tgt_vocab.decode(tgt) == words[::-1] and 2 <= len(words) <= 5


@pytest.mark.parametrize(
    "year, words",
    [
        (1990, "nineteen ninety"),
        (1909, "nineteen oh nine"),
        (1900, "nineteen hundred"),
        (1913, "nineteen thirteen"),
        (2000, "two thousand"),
        (2005, "two thousand five"),
        (2017, "twenty seventeen"),
        (2042, "twenty forty two"),
    ],
)
def test_years_spelled_as_spoken(year, words):
    """Are years spelled out as people say them?"""
    assert " ".join(_year(year)) == words


@pytest.mark.parametrize(
    "day, words",
    [
        (1, "first"),
        (3, "third"),
        (12, "twelfth"),
        (20, "twentieth"),
        (21, "twenty first"),
        (30, "thirtieth"),
        (31, "thirty first"),
    ],
)
def test_ordinals(day, words):
    """Are days spelled out as ordinals?"""
    assert " ".join(_ordinal(day)) == words


def test_dates_answers():
    """Is every target the ISO date (year first) of the spelled-out source?"""
    task = make_task("dates", num_train=2000, num_valid=0, num_test=0)
    for src, tgt in task.train:
        words, date = " ".join(task.src_vocab.decode(src)), "".join(task.tgt_vocab.decode(tgt))
        year, month, day = int(date[:4]), int(date[5:7]), int(date[8:])
        assert date == datetime.date(year, month, day).isoformat()
        assert words.endswith(" ".join(_year(year)))
        assert _MONTHS[month - 1] in words.split()
        assert f" {' '.join(_ordinal(day))} " in f" {words} "


def test_dates_vary_in_length_and_order():
    """Does the dates task have variable source lengths and more than one word order?"""
    task = make_task("dates", **SIZES)
    words = [task.src_vocab.decode(s) for s, _ in task.train]
    assert len({len(w) for w in words}) >= 4
    assert any(w[0] == "the" for w in words) and any(w[0] != "the" for w in words)
    assert {len(t) for _, t in task.train} == {12}  # BOS + 10 characters + EOS


def test_unknown_task():
    """Does an unknown task name raise a ValueError that lists the known ones?"""
    with pytest.raises(ValueError, match="unknown task 'sort'.*copy, reverse, dates"):
        make_task("sort")


def test_bad_options_and_too_small_space():
    """Are wrong options and impossible split sizes reported as ValueError?"""
    with pytest.raises(ValueError, match="bad options"):
        make_task("copy", min_year=1900)
    with pytest.raises(ValueError, match="too few distinct examples"):
        make_task("copy", num_symbols=2, min_len=1, max_len=2, num_train=10, num_valid=0, num_test=0)

"""Checks for lab 09-tokens-in-tokens-out (chapter 9): byte-pair encoding equal to Hugging Face ``tokenizers``.
Here ``count_pairs`` and ``train_bpe``; ``encode`` and ``decode`` are checked in
``encode_decode``.

The exercises take and return plain values (strings, ints, lists, dicts, tuples), which is
what crosses the grading boundary; a tuple may come back as a list, and a dict whose keys
are pairs comes back through ``core.beside`` as a list of items. Words are strings in the
byte-level alphabet (``reference.bpe.pre_tokenize``), and merges are pairs of such strings.
While the candidate runs, the reference's BPE and ``tokenizers`` itself are blocked.
"""

from __future__ import annotations

import numbers
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise
from typing import Any, NoReturn

from autograder.checks.kit.core import beside, check
from autograder.checks.kit.expect import call, describe, fail
from autograder.checks.kit.sentinels import forbidden
from autograder.checks.lab09_tokens_in_tokens_out.bpe_variants import (
    count_without_overlaps,
    library_merges,
    naive_train,
)
from autograder.checks.lab09_tokens_in_tokens_out.texts import LIBRARY, MODULE, SPECIALS, sample_text
from autograder.reference import bpe


def _show(pairs: Sequence[Any], limit: int = 5) -> str:
    """The last ``limit`` pairs: "[..., ('l', 'o'), ('lo', 'w')]"."""
    return "[" + ("..., " if len(pairs) > limit else "") + ", ".join(repr(tuple(p)) for p in pairs[-limit:]) + "]"


# ----------------------------------------------------------------------------- count_pairs


def _pair_items(count_pairs: Callable[..., Any], word_items: list[Any]) -> Any:
    """Scenario run where the candidate lives: ``word_counts`` rebuilt from its items, the
    answer sent back as [key, value] items (a dict whose keys are tuples cannot cross the
    boundary as it is)."""
    found = count_pairs({tuple(w) if isinstance(w, list) else w: c for w, c in word_items})
    if not isinstance(found, Mapping):
        return describe(found)
    return [
        [
            k if isinstance(k, str) or (isinstance(k, tuple) and all(isinstance(s, str) for s in k)) else repr(k),
            int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else repr(v),
        ]
        for k, v in found.items()
    ]


def _as_pair_dict(items: Any) -> dict[Any, Any] | None:
    """The items back as a dict, or None where the reply is not a list of [key, value] items."""
    if isinstance(items, list) and all(isinstance(it, list) and len(it) == 2 for it in items):
        keys = [k for k, _ in items]
        if all(isinstance(k, str) or (isinstance(k, tuple) and all(isinstance(s, str) for s in k)) for k in keys):
            return dict(items)
    return None


def _word_count_cases(seed: int) -> list[dict[Any, int]]:
    seeded = dict(Counter(bpe.pre_tokenize(sample_text(seed, 40))))
    return [
        {"low": 5, "Ġlower": 2, "Ġnewest": 6, "Ġwidest": 3},
        {"bbb": 2, "aaaa": 1, "Ġab": 3, "a": 4},  # overlapping windows; a word with no pair
        {"ëĨłíģ°": 2, "Ġit": 1, "'s": 3},  # Korean and a contraction, in byte-level characters
        {("lo", "w"): 5, ("Ġ", "lo", "w", "e", "r"): 2, ("b", "b", "b"): 2, ("Ġlow",): 7},  # after merges
        seeded,
    ]


@check
def check_count_pairs(count_pairs, seed: int = 0) -> None:
    """Compare ``count_pairs(word_counts)`` -> ``{(left, right): count}`` with the reference:
    pairs inside words only, weighted by the word's count, overlapping windows counted."""
    for word_counts in _word_count_cases(seed):
        what = f"count_pairs({word_counts if len(word_counts) < 6 else f'<{len(word_counts)} words>'})"
        expected = bpe.count_pairs(word_counts)
        with forbidden(count_pairs, [f"{MODULE}.count_pairs"], "Loop over the words and their adjacent symbols."):
            items = call(beside, count_pairs, _pair_items, list(word_counts.items()), what=what)
        found = _as_pair_dict(items)
        if found is None:
            fail(what, "a dict {(left, right): count}", str(items)[:200])
        if any(not isinstance(k, tuple) for k in found):
            bad = next(k for k in found if not isinstance(k, tuple))
            fail(
                what,
                "keys that are (left, right) tuples, such as ('l', 'o')",
                f"a key {bad!r}",
                "pairs written as one string: a merge must know where its left part ends",
            )
        if found == expected:
            continue
        wrong = sorted(set(found.items()) ^ set(expected.items()), key=str)[0]
        pair = wrong[0]
        across = {(a[-1], b[0]) for a, b in pairwise(word_counts) if a and b} - set(expected)
        mistakes = {
            "pairs counted across word boundaries: count inside each word only": bool(set(found) & across),
            "counts not weighted by how often the word occurs (add the word's count, not 1)": found
            == bpe.count_pairs(dict.fromkeys(word_counts, 1)),
            "overlapping windows skipped ('bbb' holds ('b', 'b') twice; str.count skips overlaps)": found
            == {p: c * count_without_overlaps(w, p) for w, c in word_counts.items() for p in pairwise(w)},
        }
        fail(
            what,
            f"{len(expected)} pairs; {pair!r}: {expected.get(pair, 'absent')}",
            f"{len(found)} pairs; {pair!r}: {found.get(pair, 'absent')}",
            next((name for name, matches in mistakes.items() if matches), None),
        )


# ----------------------------------------------------------------------------- train_bpe


def _train_cases(seed: int) -> list[tuple[str, int, tuple[str, ...]]]:
    return [
        (sample_text(seed), 256 + 4 + 40, SPECIALS),
        ("yy zz xx yy zz xx ab ab abc abc c c cd cd", 256 + 4 + 6, SPECIALS),  # ties, also with a merged token
        (sample_text(seed + 1, 50), 256 + 25, ("<|endoftext|>",)),  # another number of special tokens
        ("aaa b", 256 + 4 + 20, SPECIALS),  # the pairs run out after 3 merges
    ]


def _as_merges(found: Any) -> list[bpe.Pair] | None:
    if not isinstance(found, (list, tuple)):
        return None
    if not all(isinstance(m, (list, tuple)) and len(m) == 2 and all(isinstance(s, str) for s in m) for m in found):
        return None
    return [(a, b) for a, b in found]


_STOPPING = (
    "merges = vocab_size - len(special_tokens) - 256 (the vocabulary holds the special tokens, the 256 "
    "byte characters and one token per merge); stop earlier only when no pair is left"
)


@check
def check_train_bpe(train_bpe, seed: int = 0) -> None:
    """Compare ``train_bpe(text, vocab_size, special_tokens)`` -> merges with the reference and with
    ``tokenizers``' BpeTrainer on the same text: ties to the smallest ids, pairs inside words,
    the right number of merges."""
    for text, vocab_size, specials in _train_cases(seed):
        shown = text if len(text) < 50 else text[:40] + f"... ({len(text)} characters)"
        what = f"train_bpe({shown!r}, vocab_size={vocab_size}, special_tokens={specials!r})"
        expected = bpe.train_bpe(text, vocab_size, specials)
        library = library_merges(text, vocab_size, specials)
        with forbidden(
            train_bpe,
            [f"{MODULE}.train_bpe", f"{MODULE}.BPETokenizer.train", *LIBRARY],
            "Count pairs, merge the best one, and repeat, yourself.",
        ):
            found = call(train_bpe, text, vocab_size, specials, what=what)
        merges = _as_merges(found)
        if merges is None:
            fail(what, "a list of merges, each a pair of strings such as ('Ġ', 't')", describe(found))
        for source, reference in (("the reference", expected), ("tokenizers' BpeTrainer", library)):
            if reference is not None and merges != reference:
                _explain_merges(what, merges, reference, source, text, vocab_size, specials)


def _explain_merges(
    what: str,
    found: list[bpe.Pair],
    expected: list[bpe.Pair],
    source: str,
    text: str,
    vocab_size: int,
    specials: Sequence[str],
) -> None:
    __tracebackhide__ = True
    n = len(expected)
    if found[:n] == expected or expected[: len(found)] == found:
        _explain_count(what, found, n, source, text, specials)
    r = next(i for i, (x, y) in enumerate(zip(found, expected, strict=False)) if x != y)
    mistake = next(
        (name for name, variant in _merge_mistakes(text, vocab_size, specials).items() if variant() == found), None
    )
    fail(
        what,
        f"merge {r} (counting from 0) {expected[r]!r}, as {source} learns; merges 0..{r}: {_show(expected[: r + 1])}",
        f"{found[r]!r}; your merges 0..{r}: {_show(found[: r + 1])}",
        mistake,
        hint=None if mistake else "the most frequent pair wins; among equal counts, the smallest (left id, right id)",
    )


def _explain_count(
    what: str, found: list[bpe.Pair], n: int, source: str, text: str, specials: Sequence[str]
) -> NoReturn:
    """Fail for merges that are right but too many or too few, naming the miscount where it is a usual one."""
    __tracebackhide__ = True
    k, extra = len(set(specials)), len(found) - n
    names = {
        k: "the special tokens not counted in vocab_size",
        256: "the 256 byte tokens not counted in vocab_size",
        256 + k: "vocab_size taken as the number of merges",
        1: "one merge too many",
        -1: "one merge too few",
    }
    if extra > 1 and extra not in names and len(found) == len(bpe.train_bpe(text, 1 << 30, specials)):
        names[extra] = (
            "merged until no pair was left, past vocab_size (were the 256 byte tokens not counted "
            "in vocab_size, or vocab_size taken as the number of merges?)"
        )
    fail(
        what,
        f"{n} merges, as {source} learns",
        f"{len(found)} merges (the first {min(n, len(found))} right)",
        names.get(extra) if extra else None,
        hint=_STOPPING,
    )


def _merge_mistakes(text: str, vocab_size: int, specials: Sequence[str]) -> dict[str, Callable[[], list[bpe.Pair]]]:
    """Mistake -> the merges that a training with that mistake learns from ``text``."""
    words = Counter(bpe.pre_tokenize(text))
    n_merges = vocab_size - len(bpe._first_tokens(specials))
    return {
        "ties broken by the first pair seen (max() over a dict keeps the first of equal counts); tokenizers takes "
        "the smallest (left id, right id)": lambda: naive_train(words, n_merges, specials, "first"),
        "ties broken by comparing the token strings; tokenizers compares ids (a merged token's id is its rank "
        "+ 260, not its place in the alphabet)": lambda: naive_train(words, n_merges, specials, "strings"),
        "ties broken by the larger byte string (CS336's rule); tokenizers takes the smallest (left id, right id)": lambda: (  # noqa: E501
            naive_train(words, n_merges, specials, "larger bytes")
        ),
        "pairs counted across word boundaries (the text not pre-tokenized): use pre_tokenize and count inside "
        "each word": lambda: naive_train({bpe.to_byte_level(text): 1}, n_merges, specials),
        "text split with str.split(): the spaces are lost; pre_tokenize keeps a word's leading space as 'Ġ'": lambda: (
            naive_train(Counter(bpe.to_byte_level(w) for w in text.split()), n_merges, specials)
        ),
        "words not written in the byte-level alphabet: use pre_tokenize (a space is 'Ġ', 'é' is 'Ã©')": lambda: (
            naive_train(Counter(bpe.split_words(text)), n_merges, specials)
        ),
        "pair counts not weighted by how often each word occurs": lambda: naive_train(
            words, n_merges, specials, weighted=False
        ),
    }

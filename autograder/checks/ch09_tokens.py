"""Checks for lab 09-tokens (chapter 9): byte-pair encoding equal to Hugging Face ``tokenizers``.

The exercises take and return plain values (strings, ints, lists, dicts, tuples), which is
what crosses the grading boundary; a tuple may come back as a list, and a dict whose keys
are pairs comes back through ``core.beside`` as a list of items. Words are strings in the
byte-level alphabet (``reference.bpe.pre_tokenize``), and merges are pairs of such strings.
While the candidate runs, the reference's BPE and ``tokenizers`` itself are blocked.
"""

from __future__ import annotations

import functools
import numbers
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise
from typing import Any

from autograder.checks.bpe_variants import (
    HAS_TOKENIZERS,
    as_bytes,
    count_without_overlaps,
    encode_variant,
    library_merges,
    naive_train,
)
from autograder.checks.core import CheckFailed, beside, call, check, describe, fail, forbidden
from autograder.reference import bpe

SPECIALS = bpe.SPECIAL_TOKENS
_LIBRARY = ["tokenizers.Tokenizer", "tokenizers.models.BPE", "tokenizers.trainers.BpeTrainer",
            "tokenizers.pre_tokenizers.ByteLevel", "tokenizers.decoders.ByteLevel"] if HAS_TOKENIZERS else []
_MODULE = "autograder.reference.bpe"

# Words with shared pieces (low/lower/lowest), contractions, numbers, Korean, emoji, accents.
_WORDS = ("the", "then", "there", "these", "token", "tokens", "tokenizer", "low", "lower", "lowest", "new",
          "newer", "newest", "wide", "wider", "widest", "merge", "merges", "merged", "pair", "pairs", "byte",
          "bytes", "it's", "we'll", "don't", "2024", "3.14", "토큰", "토큰화", "한국어", "😀", "👍🏽", "naïve", "café")
_GAPS = (" ", " ", " ", " ", "  ", "\n", ", ", ". ", "\t", " \n ")


def _text(seed: int, n_words: int = 80) -> str:
    """Made-up text, Zipf-like word frequencies (so that many pairs tie), reproducible from ``seed``."""
    rng = random.Random(seed)
    words = list(_WORDS)
    rng.shuffle(words)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    return "".join(w + rng.choice(_GAPS) for w in rng.choices(words, weights, k=n_words))


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
    return [[k if isinstance(k, str) or (isinstance(k, tuple) and all(isinstance(s, str) for s in k)) else repr(k),
             int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else repr(v)]
            for k, v in found.items()]


def _as_pair_dict(items: Any) -> dict[Any, Any] | None:
    """The items back as a dict, or None where the reply is not a list of [key, value] items."""
    if isinstance(items, list) and all(isinstance(it, list) and len(it) == 2 for it in items):
        keys = [k for k, _ in items]
        if all(isinstance(k, str) or (isinstance(k, tuple) and all(isinstance(s, str) for s in k)) for k in keys):
            return dict(items)
    return None


def _word_count_cases(seed: int) -> list[dict[Any, int]]:
    seeded = dict(Counter(bpe.pre_tokenize(_text(seed, 40))))
    return [{"low": 5, "Ġlower": 2, "Ġnewest": 6, "Ġwidest": 3},
            {"bbb": 2, "aaaa": 1, "Ġab": 3, "a": 4},  # overlapping windows; a word with no pair
            {"ëĨłíģ°": 2, "Ġit": 1, "'s": 3},  # Korean and a contraction, in byte-level characters
            {("lo", "w"): 5, ("Ġ", "lo", "w", "e", "r"): 2, ("b", "b", "b"): 2, ("Ġlow",): 7},  # after merges
            seeded]


@check
def check_count_pairs(count_pairs, seed: int = 0) -> None:
    """Compare ``count_pairs(word_counts)`` -> ``{(left, right): count}`` with the reference:
    pairs inside words only, weighted by the word's count, overlapping windows counted."""
    for word_counts in _word_count_cases(seed):
        what = f"count_pairs({word_counts if len(word_counts) < 6 else f'<{len(word_counts)} words>'})"
        expected = bpe.count_pairs(word_counts)
        with forbidden(count_pairs, [f"{_MODULE}.count_pairs"], "Loop over the words and their adjacent symbols."):
            items = call(beside, count_pairs, _pair_items, list(word_counts.items()), what=what)
        found = _as_pair_dict(items)
        if found is None:
            fail(what, "a dict {(left, right): count}", str(items)[:200])
        if any(not isinstance(k, tuple) for k in found):
            bad = next(k for k in found if not isinstance(k, tuple))
            fail(what, "keys that are (left, right) tuples, such as ('l', 'o')", f"a key {bad!r}",
                 "pairs written as one string: a merge must know where its left part ends")
        if found == expected:
            continue
        wrong = sorted(set(found.items()) ^ set(expected.items()), key=str)[0]
        pair = wrong[0]
        across = {(a[-1], b[0]) for a, b in pairwise(word_counts) if a and b} - set(expected)
        mistakes = {
            "pairs counted across word boundaries: count inside each word only": bool(set(found) & across),
            "counts not weighted by how often the word occurs (add the word's count, not 1)":
                found == bpe.count_pairs(dict.fromkeys(word_counts, 1)),
            "overlapping windows skipped ('bbb' holds ('b', 'b') twice; str.count skips overlaps)":
                found == {p: c * count_without_overlaps(w, p) for w, c in word_counts.items() for p in pairwise(w)},
        }
        fail(what, f"{len(expected)} pairs; {pair!r}: {expected.get(pair, 'absent')}",
             f"{len(found)} pairs; {pair!r}: {found.get(pair, 'absent')}",
             next((name for name, matches in mistakes.items() if matches), None))


# ----------------------------------------------------------------------------- train_bpe

def _train_cases(seed: int) -> list[tuple[str, int, tuple[str, ...]]]:
    return [
        (_text(seed), 256 + 4 + 40, SPECIALS),
        ("yy zz xx yy zz xx ab ab abc abc c c cd cd", 256 + 4 + 6, SPECIALS),  # ties, also with a merged token
        (_text(seed + 1, 50), 256 + 25, ("<|endoftext|>",)),  # another number of special tokens
        ("aaa b", 256 + 4 + 20, SPECIALS),  # the pairs run out after 3 merges
    ]


def _as_merges(found: Any) -> list[bpe.Pair] | None:
    if not isinstance(found, (list, tuple)):
        return None
    if not all(isinstance(m, (list, tuple)) and len(m) == 2 and all(isinstance(s, str) for s in m) for m in found):
        return None
    return [(a, b) for a, b in found]


_STOPPING = ("merges = vocab_size - len(special_tokens) - 256 (the vocabulary holds the special tokens, the 256 "
             "byte characters and one token per merge); stop earlier only when no pair is left")


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
        with forbidden(train_bpe, [f"{_MODULE}.train_bpe", f"{_MODULE}.BPETokenizer.train", *_LIBRARY],
                       "Count pairs, merge the best one, and repeat, yourself."):
            found = call(train_bpe, text, vocab_size, specials, what=what)
        merges = _as_merges(found)
        if merges is None:
            fail(what, "a list of merges, each a pair of strings such as ('Ġ', 't')", describe(found))
        for source, reference in (("the reference", expected), ("tokenizers' BpeTrainer", library)):
            if reference is not None and merges != reference:
                _explain_merges(what, merges, reference, source, text, vocab_size, specials)


def _explain_merges(what: str, found: list[bpe.Pair], expected: list[bpe.Pair], source: str, text: str,
                    vocab_size: int, specials: Sequence[str]) -> None:
    __tracebackhide__ = True
    n = len(expected)
    if found[:n] == expected or expected[:len(found)] == found:
        k, extra = len(set(specials)), len(found) - n
        names = {k: "the special tokens not counted in vocab_size", 256: "the 256 byte tokens not counted in "
                 "vocab_size", 256 + k: "vocab_size taken as the number of merges", 1: "one merge too many",
                 -1: "one merge too few"}
        if extra > 1 and extra not in names and len(found) == len(bpe.train_bpe(text, 1 << 30, specials)):
            names[extra] = ("merged until no pair was left, past vocab_size (were the 256 byte tokens not counted "
                            "in vocab_size, or vocab_size taken as the number of merges?)")
        fail(what, f"{n} merges, as {source} learns", f"{len(found)} merges (the first {min(n, len(found))} right)",
             names.get(extra) if extra else None, hint=_STOPPING)
    r = next(i for i, (x, y) in enumerate(zip(found, expected, strict=False)) if x != y)
    words = Counter(bpe.pre_tokenize(text))
    n_merges = vocab_size - len(bpe._first_tokens(specials))
    mistakes: dict[str, Callable[[], list[bpe.Pair]]] = {
        "ties broken by the first pair seen (max() over a dict keeps the first of equal counts); tokenizers takes "
        "the smallest (left id, right id)": lambda: naive_train(words, n_merges, specials, "first"),
        "ties broken by comparing the token strings; tokenizers compares ids (a merged token's id is its rank "
        "+ 260, not its place in the alphabet)": lambda: naive_train(words, n_merges, specials, "strings"),
        "ties broken by the larger byte string (CS336's rule); tokenizers takes the smallest (left id, right id)":
            lambda: naive_train(words, n_merges, specials, "larger bytes"),
        "pairs counted across word boundaries (the text not pre-tokenized): use pre_tokenize and count inside "
        "each word": lambda: naive_train({bpe.to_byte_level(text): 1}, n_merges, specials),
        "text split with str.split(): the spaces are lost; pre_tokenize keeps a word's leading space as 'Ġ'":
            lambda: naive_train(Counter(bpe.to_byte_level(w) for w in text.split()), n_merges, specials),
        "words not written in the byte-level alphabet: use pre_tokenize (a space is 'Ġ', 'é' is 'Ã©')":
            lambda: naive_train(Counter(bpe.split_words(text)), n_merges, specials),
        "pair counts not weighted by how often each word occurs":
            lambda: naive_train(words, n_merges, specials, weighted=False),
    }
    mistake = next((name for name, variant in mistakes.items() if variant() == found), None)
    fail(what, f"merge {r} (counting from 0) {expected[r]!r}, as {source} learns; merges 0..{r}: "
               f"{_show(expected[:r + 1])}", f"{found[r]!r}; your merges 0..{r}: {_show(found[:r + 1])}", mistake,
         hint=None if mistake else "the most frequent pair wins; among equal counts, the smallest (left id, right id)")


# ----------------------------------------------------------------------------- encode and decode

@functools.cache
def _tokenizer() -> tuple[tuple[bpe.Pair, ...], dict[str, int]]:
    merges = bpe.train_bpe(_text(100, 400), 256 + 4 + 120)
    return tuple(merges), bpe.build_vocab(merges)


def _encode_cases(seed: int) -> list[str]:
    return [_text(seed, 12), "don't  stop\n\n  me now!", "한국어 토큰화 😀👍🏽", "<bos>the lowest<eos><pad><pad>",
            "a<mask>b <mask>", "", "   ", "lowest \nnewer", _text(seed + 1, 6) + "<eos>"]  # " \n" + "n": 3 words


@check
def check_encode(encode, seed: int = 0) -> None:
    """Compare ``encode(text, vocab, merges, special_tokens)`` -> ids with the reference: special
    tokens split out first, then in each word the lowest-rank merge first; and ``decode(encode(s)) == s``."""
    merges, vocab = _tokenizer()
    for text in _encode_cases(seed):
        what = f"encode({text!r}, vocab, merges, special_tokens={SPECIALS!r}) with {len(merges)} merges"
        expected = bpe.bpe_encode(text, vocab, merges, SPECIALS)
        with forbidden(encode, [f"{_MODULE}.bpe_encode", f"{_MODULE}.BPETokenizer.encode", *_LIBRARY],
                       "Split out the special tokens, pre_tokenize, then merge each word yourself."):
            found = call(encode, text, dict(vocab), list(merges), SPECIALS, what=what)
        if hasattr(found, "tolist") and not isinstance(found, (list, tuple)):
            found = found.tolist()  # a 1-D tensor of ids is fine too
        if not isinstance(found, (list, tuple)) or any(isinstance(i, bool) or not isinstance(i, int) for i in found):
            fail(what, "a list of ints", describe(found))
        found = list(found)
        if found == expected:
            continue
        try:
            back = repr(bpe.bpe_decode(found, vocab))
        except ValueError as err:
            back = str(err)
        fail(what, f"{expected}", f"{found}, which decodes to {back}", _encode_mistake(text, vocab, merges, found))


def _encode_mistake(text: str, vocab: Mapping[str, int], merges: Sequence[bpe.Pair], found: list[int]) -> str | None:
    mistakes = {
        "merges applied in the order of the text (leftmost pair first) instead of by rank (the lowest-rank "
        "pair first)": lambda: encode_variant(text, vocab, merges, SPECIALS, order="text"),
        "special tokens not split out first: '<pad>' must become its own id, never bytes":
            lambda: bpe.bpe_encode(text, vocab, merges, ()),
        "the text not cut into words (pre_tokenize) before merging":
            lambda: encode_variant(text, vocab, merges, SPECIALS, words=False),
    }
    return next((name for name, variant in mistakes.items() if variant() == found), None)


def _decode_cases(seed: int) -> list[list[int]]:
    merges, vocab = _tokenizer()
    texts = [_text(seed, 12), "<bos>한국어 😀<eos><pad>", "a  b\n\tc", ""]
    cut = [vocab[bpe.to_byte_level("é")[0]], *bpe.bpe_encode(" ok", vocab, merges)]  # a lone byte: U+FFFD
    bytewise = [vocab[c] for c in bpe.to_byte_level("토큰")]  # characters split across tokens
    return [bpe.bpe_encode(t, vocab, merges) for t in texts] + [cut, bytewise]


def _decode_mistake(ids: list[int], vocab: Mapping[str, int], found: str) -> str | None:
    tokens = [{i: t for t, i in vocab.items()}[i] for i in ids]
    mistakes = {
        "characters not mapped back to bytes (the text still shows 'Ġ' for spaces)": "".join(tokens),
        "each token decoded on its own: a character split across tokens turns into U+FFFD; join the bytes "
        "first, then decode": "".join(as_bytes(t).decode("utf-8", errors="replace") for t in tokens),
        "errors='ignore' drops bytes that are not valid UTF-8; tokenizers writes U+FFFD (errors='replace')":
            b"".join(as_bytes(t) for t in tokens).decode("utf-8", errors="ignore"),
        "special tokens dropped: decode keeps them (decode(encode(s)) == s)":
            bpe.bpe_decode([i for i, t in zip(ids, tokens, strict=True) if t not in SPECIALS], vocab),
    }
    return next((name for name, text in mistakes.items() if text == found), None)


@check
def check_decode(decode, seed: int = 0) -> None:
    """Compare ``decode(ids, vocab)`` -> text with the reference: tokens joined, characters mapped
    back to bytes, UTF-8 decoded with errors="replace"; special tokens kept."""
    _, vocab = _tokenizer()
    for ids in _decode_cases(seed):
        what = f"decode({ids if len(ids) < 16 else f'<{len(ids)} ids>'}, vocab)"
        expected = bpe.bpe_decode(ids, vocab)
        with forbidden(decode, [f"{_MODULE}.bpe_decode", f"{_MODULE}.BPETokenizer.decode", *_LIBRARY],
                       "Join the tokens, map each character back to its byte, and decode the bytes yourself."):
            try:
                found = call(decode, list(ids), dict(vocab), what=what)
            except CheckFailed as err:
                if "UnicodeDecodeError" not in str(err):
                    raise
                fail(what, repr(expected), "UnicodeDecodeError", "bytes.decode('utf-8') without errors='replace': "
                     "a sequence cut inside a character must become U+FFFD, not an error")
        if not isinstance(found, str):
            fail(what, "a str", describe(found))
        if found != expected:
            fail(what, repr(expected), repr(found), _decode_mistake(ids, vocab, found))

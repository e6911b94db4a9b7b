"""Checks for lab 09-tokens-in-tokens-out (chapter 9), encode and decode with a trained BPE: ``encode`` (special
tokens split out first, then the lowest-rank merge first in each word) and ``decode`` (tokens
joined, characters mapped back to bytes, UTF-8 decoded with errors="replace"), each compared
with the reference, a wrong answer named when a usual mistake gives it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from autograder.checks.kit.core import check
from autograder.checks.kit.expect import call, describe, fail
from autograder.checks.kit.failures import CheckFailed
from autograder.checks.kit.sentinels import forbidden
from autograder.checks.lab09_tokens_in_tokens_out.bpe_variants import as_bytes, encode_variant
from autograder.checks.lab09_tokens_in_tokens_out.texts import LIBRARY, MODULE, SPECIALS, sample_text
from autograder.reference import bpe


@functools.cache
def _tokenizer() -> tuple[tuple[bpe.Pair, ...], dict[str, int]]:
    """The merges and the vocabulary that encode and decode are checked with, trained once."""
    merges = bpe.train_bpe(sample_text(100, 400), 256 + 4 + 120)
    return tuple(merges), bpe.build_vocab(merges)


def _encode_cases(seed: int) -> list[str]:
    return [
        sample_text(seed, 12),
        "don't  stop\n\n  me now!",
        "한국어 토큰화 😀👍🏽",
        "<bos>the lowest<eos><pad><pad>",
        "a<mask>b <mask>",
        "",
        "   ",
        "lowest \nnewer",
        sample_text(seed + 1, 6) + "<eos>",
    ]  # " \n" + "n": 3 words


@check
def check_encode(encode, seed: int = 0) -> None:
    """Compare ``encode(text, vocab, merges, special_tokens)`` -> ids with the reference: special
    tokens split out first, then in each word the lowest-rank merge first; and ``decode(encode(s)) == s``."""
    merges, vocab = _tokenizer()
    for text in _encode_cases(seed):
        what = f"encode({text!r}, vocab, merges, special_tokens={SPECIALS!r}) with {len(merges)} merges"
        expected = bpe.bpe_encode(text, vocab, merges, SPECIALS)
        with forbidden(
            encode,
            [f"{MODULE}.bpe_encode", f"{MODULE}.BPETokenizer.encode", *LIBRARY],
            "Split out the special tokens, pre_tokenize, then merge each word yourself.",
        ):
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
        "special tokens not split out first: '<pad>' must become its own id, never bytes": lambda: bpe.bpe_encode(
            text, vocab, merges, ()
        ),
        "the text not cut into words (pre_tokenize) before merging": lambda: encode_variant(
            text, vocab, merges, SPECIALS, words=False
        ),
    }
    return next((name for name, variant in mistakes.items() if variant() == found), None)


def _decode_cases(seed: int) -> list[list[int]]:
    merges, vocab = _tokenizer()
    texts = [sample_text(seed, 12), "<bos>한국어 😀<eos><pad>", "a  b\n\tc", ""]
    cut = [vocab[bpe.to_byte_level("é")[0]], *bpe.bpe_encode(" ok", vocab, merges)]  # a lone byte: U+FFFD
    bytewise = [vocab[c] for c in bpe.to_byte_level("토큰")]  # characters split across tokens
    return [bpe.bpe_encode(t, vocab, merges) for t in texts] + [cut, bytewise]


def _decode_mistake(ids: list[int], vocab: Mapping[str, int], found: str) -> str | None:
    tokens = [{i: t for t, i in vocab.items()}[i] for i in ids]
    mistakes = {
        "characters not mapped back to bytes (the text still shows 'Ġ' for spaces)": "".join(tokens),
        "each token decoded on its own: a character split across tokens turns into U+FFFD; join the bytes "
        "first, then decode": "".join(as_bytes(t).decode("utf-8", errors="replace") for t in tokens),
        "errors='ignore' drops bytes that are not valid UTF-8; tokenizers writes U+FFFD (errors='replace')": b"".join(
            as_bytes(t) for t in tokens
        ).decode("utf-8", errors="ignore"),
        "special tokens dropped: decode keeps them (decode(encode(s)) == s)": bpe.bpe_decode(
            [i for i, t in zip(ids, tokens, strict=True) if t not in SPECIALS], vocab
        ),
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
        with forbidden(
            decode,
            [f"{MODULE}.bpe_decode", f"{MODULE}.BPETokenizer.decode", *LIBRARY],
            "Join the tokens, map each character back to its byte, and decode the bytes yourself.",
        ):
            try:
                found = call(decode, list(ids), dict(vocab), what=what)
            except CheckFailed as err:
                if "UnicodeDecodeError" not in str(err):
                    raise
                fail(
                    what,
                    repr(expected),
                    "UnicodeDecodeError",
                    "bytes.decode('utf-8') without errors='replace': "
                    "a sequence cut inside a character must become U+FFFD, not an error",
                )
        if not isinstance(found, str):
            fail(what, "a str", describe(found))
        if found != expected:
            fail(what, repr(expected), repr(found), _decode_mistake(ids, vocab, found))

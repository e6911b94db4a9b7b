"""Byte-level pre-tokenization, as GPT-2 and Hugging Face ``tokenizers`` do it (chapter 9).

Text is split into words (``split_words``: GPT-2's pattern, with the Unicode classes of the
library's regex engine), and each word's UTF-8 bytes are written with 256 printable
characters (``bytes_to_unicode``), so that byte-pair encoding (``autograder.reference.bpe``)
merges printable strings and never splits a character's bytes into an invalid string.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from itertools import groupby

# ----------------------------------------------------------------------------- bytes as characters


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map from the 256 byte values to 256 printable characters.

    Printable Latin-1 bytes stand for themselves; the others (control bytes, space, ...)
    take the characters from U+0100 upwards, in byte order. So a space is "Ġ" (U+0120) and
    a newline "Ċ" (U+010A): every token can be shown, and stored as text.

    Returns:
        ``{byte: character}`` for the bytes 0..255.
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    shifted = [b for b in range(256) if b not in printable]
    mapping = {b: chr(b) for b in printable} | {b: chr(256 + n) for n, b in enumerate(shifted)}
    return dict(sorted(mapping.items()))


def unicode_to_bytes() -> dict[str, int]:
    """The inverse of ``bytes_to_unicode``: ``{character: byte}``."""
    return {c: b for b, c in bytes_to_unicode().items()}


_BYTE_TO_CHAR, _CHAR_TO_BYTE = bytes_to_unicode(), unicode_to_bytes()  # ours: callers may change theirs


_SURROGATE = re.compile("[\ud800-\udfff]")


def _valid_unicode(text: object) -> str:
    """``text`` itself, if it is a valid Unicode string: one that has UTF-8 bytes.

    A Python ``str`` may hold a lone surrogate (U+D800..U+DFFF: "\\ud800", or the two halves of
    a UTF-16 pair written as two code points), which is not a character and has no UTF-8
    bytes; byte-level BPE cannot encode it, so it is refused here, by its position.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    lone = _SURROGATE.search(text)
    if lone is not None:
        i = lone.start()
        raise ValueError(
            f"text holds a lone surrogate, U+{ord(text[i]):04X}, at position {i}: it is not a Unicode "
            "character and has no UTF-8 bytes, so byte-level BPE cannot encode it (a character beyond "
            "U+FFFF is one code point in Python, '\\U0001f600', not a pair '\\ud83d\\ude00')"
        )
    return text


def to_byte_level(text: str) -> str:
    """``text``'s UTF-8 bytes, one character each: "é" -> "Ã©", " a" -> "Ġa"."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        _valid_unicode(text)  # says which position holds the lone surrogate
        raise
    return "".join(_BYTE_TO_CHAR[b] for b in data)


# ----------------------------------------------------------------------------- pre-tokenization

# Unicode's White_Space, which `tokenizers` takes as \s (str.isspace() adds U+001C..U+001F).
_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# Letters and numbers of Unicode 15 and 16, which `tokenizers` 0.23 knows and Python 3.11's
# unicodedata (Unicode 14) does not.
_NEWER_LETTERS = (
    "1C89-1C8A A7CB-A7CD A7DA-A7DC 105C0-105F3 10D4A-10D65 10D6F-10D85 10EC2-10EC4 1123F-11240 "
    "11380-11389 1138B 1138E 11390-113B5 113B7 113D1 113D3 11BC0-11BE0 11F02 11F04-11F10 11F12-11F33 "
    "1342F 13441-13446 13460-143FA 16100-1611D 16D40-16D6C 18CFF 1B132 1B155 1DF25-1DF2A 1E030-1E06D "
    "1E4D0-1E4EB 1E5D0-1E5ED 1E5F0 2B739 2EBF0-2EE5D 31350-323AF"
)
_NEWER_NUMBERS = (
    "10D40-10D49 116D0-116E3 11BF0-11BF9 11F50-11F59 16130-16139 16D70-16D79 1CCF0-1CCF9 1D2C0-1D2D3 "
    "1E4F0-1E4F9 1E5F1-1E5FA"
)


def _unicode_class(major: str, newer: str) -> str:
    """The inside of a regex character class for a Unicode category: "L" gives \\p{L}."""
    ranges = [(int(r.split("-")[0], 16), int(r.split("-")[-1], 16)) for r in newer.split()]
    for inside, run in groupby(range(0x110000), key=lambda cp: unicodedata.category(chr(cp))[0] == major):
        if inside:
            code_points = list(run)
            ranges.append((code_points[0], code_points[-1]))
    return "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in sorted(ranges))


@functools.cache
def _split_pattern() -> re.Pattern[str]:
    """GPT-2's split regex, its \\p{L}, \\p{N} and \\s written out (built once, in ~0.2 s)."""
    letter, number, space = _unicode_class("L", _NEWER_LETTERS), _unicode_class("N", _NEWER_NUMBERS), _SPACE
    return re.compile(
        "'s|'t|'re|'ve|'m|'ll|'d"  # English contractions stand alone
        f"| ?[{letter}]+| ?[{number}]+"  # a word or a number, with the one space before it
        f"| ?[^{space}{letter}{number}]+"  # a run of punctuation and symbols
        f"|[{space}]+(?![^{space}])|[{space}]+"  # spaces, leaving the last one to the word after them
    )


def split_words(text: str) -> list[str]:
    """Split ``text`` into GPT-2's words; joined back, they give ``text``.

    Example:
        >>> split_words("Hello  world's")
        ['Hello', ' ', ' world', "'s"]
    """
    return _split_pattern().findall(text)


def pre_tokenize(text: str) -> list[str]:
    """The words of ``text`` in the byte-level alphabet, as ``ByteLevel(add_prefix_space=False)``.

    Example:
        >>> pre_tokenize("Hello  world's")
        ['Hello', 'Ġ', 'Ġworld', "'s"]
    """
    return [to_byte_level(word) for word in split_words(_valid_unicode(text))]  # a lone surrogate: its place in text

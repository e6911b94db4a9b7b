"""Byte-pair encoding (BPE): train merges, encode text to ids, decode ids to text (chapter 9).

Byte-level, as GPT-2: text is split into words, each word's UTF-8 bytes are written with
256 printable characters, and merges join adjacent symbols inside a word. The rules are
those of Hugging Face ``tokenizers`` (``BpeTrainer``, ``ByteLevel`` pre-tokenizer and
decoder), so merges and ids are equal to the library's:

- pairs are counted inside words only, weighted by how often the word occurs, and
  overlapping windows count ("bbb" holds (b, b) twice);
- ids: the special tokens first, then the 256 byte characters by code point, then one id
  per merge (a merge whose string already exists, a special token say, reuses that id);
- the most frequent pair wins; among equal counts, the smallest (left id, right id).
"""

from __future__ import annotations

import functools
import heapq
import operator
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import groupby, pairwise

from autograder.data.vocab import BOS, BOS_ID, EOS, EOS_ID, PAD, PAD_ID

MASK = "<mask>"
MASK_ID = 3
SPECIAL_TOKENS = (PAD, BOS, EOS, MASK)  # ids 0..3: the same specials as autograder.data
assert (SPECIAL_TOKENS.index(PAD), SPECIAL_TOKENS.index(BOS), SPECIAL_TOKENS.index(EOS)) == (PAD_ID, BOS_ID, EOS_ID)

Pair = tuple[str, str]


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
        raise ValueError(f"text holds a lone surrogate, U+{ord(text[i]):04X}, at position {i}: it is not a Unicode "
                         "character and has no UTF-8 bytes, so byte-level BPE cannot encode it (a character beyond "
                         "U+FFFF is one code point in Python, '\\U0001f600', not a pair '\\ud83d\\ude00')")
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
_NEWER_LETTERS = ("1C89-1C8A A7CB-A7CD A7DA-A7DC 105C0-105F3 10D4A-10D65 10D6F-10D85 10EC2-10EC4 1123F-11240 "
                  "11380-11389 1138B 1138E 11390-113B5 113B7 113D1 113D3 11BC0-11BE0 11F02 11F04-11F10 11F12-11F33 "
                  "1342F 13441-13446 13460-143FA 16100-1611D 16D40-16D6C 18CFF 1B132 1B155 1DF25-1DF2A 1E030-1E06D "
                  "1E4D0-1E4EB 1E5D0-1E5ED 1E5F0 2B739 2EBF0-2EE5D 31350-323AF")
_NEWER_NUMBERS = ("10D40-10D49 116D0-116E3 11BF0-11BF9 11F50-11F59 16130-16139 16D70-16D79 1CCF0-1CCF9 1D2C0-1D2D3 "
                  "1E4F0-1E4F9 1E5F1-1E5FA")


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


# ----------------------------------------------------------------------------- training

def count_pairs(word_counts: Mapping[str, int] | Mapping[tuple[str, ...], int]) -> dict[Pair, int]:
    """Count adjacent symbol pairs inside each word, weighted by the word's count.

    Args:
        word_counts: ``{word: how often it occurs}``; a word is a string (each character one
            symbol) or, after some merges, a tuple of symbols such as ``("lo", "w")``.

    Returns:
        ``{(left, right): count}``; ``{"bbb": 2}`` gives ``{("b", "b"): 4}`` (windows overlap).
    """
    pairs: dict[Pair, int] = defaultdict(int)
    for word, count in word_counts.items():
        for pair in pairwise(word):  # each word on its own: never a pair across two words
            pairs[pair] += count
    return dict(pairs)


def _first_tokens(special_tokens: Sequence[str]) -> list[str]:
    """The special tokens in the order given, then the 256 byte characters by code point."""
    tokens = list(dict.fromkeys(special_tokens))
    return tokens + [c for c in sorted(_CHAR_TO_BYTE) if c not in tokens]


def _check_inputs(text: object, vocab_size: object, special_tokens: Sequence[str], min_frequency: object) -> None:
    _valid_unicode(text)
    if isinstance(special_tokens, str) or any(not isinstance(s, str) or not s for s in special_tokens):
        raise ValueError(f"special_tokens must be a sequence of non-empty strings, got {special_tokens!r}")
    least = len(_first_tokens(special_tokens))
    if not isinstance(vocab_size, int) or vocab_size < least:
        raise ValueError(f"vocab_size must be an int of at least {least}, the special tokens and the 256 "
                         f"byte characters, got {vocab_size!r}")
    if not isinstance(min_frequency, int) or min_frequency < 0:
        raise ValueError(f"min_frequency must be an int >= 0, got {min_frequency!r}")


def _merge_in_word(word: list[int], a: int, b: int, new: int) -> list[tuple[tuple[int, int], int]]:
    """Replace each (a, b) in ``word`` by ``new``, left to right; the pairs lost (-1) and formed (+1)."""
    changes = []
    j = 0
    while j < len(word) - 1:
        if word[j] == a and word[j + 1] == b:
            if j > 0:
                changes += [((word[j - 1], a), -1), ((word[j - 1], new), 1)]
            if j + 2 < len(word):
                changes += [((b, word[j + 2]), -1), ((new, word[j + 2]), 1)]
            word[j:j + 2] = [new]
        j += 1
    return changes


def train_bpe(text: str, vocab_size: int, special_tokens: Sequence[str] = SPECIAL_TOKENS,
              min_frequency: int = 0) -> list[Pair]:
    """Learn byte-level BPE merges from ``text``, as ``tokenizers``' ``BpeTrainer`` does.

    Args:
        text: the training corpus.
        vocab_size: stop when the vocabulary (specials + 256 bytes + merged tokens) is this large.
        special_tokens: ids 0, 1, ... in this order; they take no part in merges.
        min_frequency: stop when the best pair occurs fewer times than this.

    Returns:
        The merges in order of rank, each a pair of token strings in the byte-level alphabet.
    """
    _check_inputs(text, vocab_size, special_tokens, min_frequency)
    id_to_token = _first_tokens(special_tokens)
    token_to_id = {tok: i for i, tok in enumerate(id_to_token)}
    word_counts = Counter(split_words(text))  # each distinct word is turned into bytes once
    words = [[token_to_id[c] for c in to_byte_level(w)] for w in word_counts]
    counts = list(word_counts.values())

    # For every pair, its count and the words that hold it: a merge revisits only those words
    # (recounting every pair after every merge is ~100 times slower on a megabyte).
    pair_counts: dict[tuple[int, int], int] = defaultdict(int)
    where: dict[tuple[int, int], set[int]] = defaultdict(set)
    for i, word in enumerate(words):
        for pair in pairwise(word):
            pair_counts[pair] += counts[i]
            where[pair].add(i)
    # A heap of (-count, left id, right id, k): the best pair on top, ties to the smallest ids.
    # An entry is never updated in place: when popped with a stale count it goes back with the
    # current one. Entry k remembers the words places[k] that held its pair when it was pushed.
    heap: list[tuple[int, int, int, int]] = []
    places: list[set[int]] = []

    def push(found: dict[tuple[int, int], set[int]]) -> None:
        for (a, b), in_words in found.items():
            if pair_counts[a, b] > 0:
                places.append(in_words)
                heapq.heappush(heap, (-pair_counts[a, b], a, b, len(places) - 1))

    push(where)
    merges = []
    while len(id_to_token) < vocab_size and heap:
        stored, a, b, k = heapq.heappop(heap)
        count = pair_counts[a, b]
        if -stored != count:
            heapq.heappush(heap, (-count, a, b, k))
            continue
        if count < 1 or count < min_frequency:
            break
        token = id_to_token[a] + id_to_token[b]
        if token not in token_to_id:  # a string made before (a special token, say) keeps its id
            token_to_id[token] = len(id_to_token)
            id_to_token.append(token)
        merges.append((id_to_token[a], id_to_token[b]))
        formed: dict[tuple[int, int], set[int]] = defaultdict(set)
        for i in places[k]:  # as in `tokenizers`: the words recorded with this entry
            for pair, change in _merge_in_word(words[i], a, b, token_to_id[token]):
                pair_counts[pair] += change * counts[i]
                if change > 0:
                    formed[pair].add(i)
        push(formed)
    return merges


def build_vocab(merges: Iterable[Sequence[str]], special_tokens: Sequence[str] = SPECIAL_TOKENS) -> dict[str, int]:
    """``{token: id}``: the specials, the 256 byte characters by code point, then each new merged string."""
    vocab = {tok: i for i, tok in enumerate(_first_tokens(special_tokens))}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    return vocab


# ----------------------------------------------------------------------------- encoding and decoding

def _split_specials(text: str, special_tokens: Sequence[str]) -> list[tuple[str, bool]]:
    """``text`` cut into (piece, is special) pairs; where two specials start, the longer wins."""
    if not special_tokens:
        return [(text, False)] if text else []
    alternatives = "|".join(re.escape(s) for s in sorted(set(special_tokens), key=len, reverse=True))
    return [(piece, i % 2 == 1) for i, piece in enumerate(re.split(f"({alternatives})", text)) if piece]


def bpe_encode(text: str, vocab: Mapping[str, int], merges: Sequence[Sequence[str]],
               special_tokens: Sequence[str] = SPECIAL_TOKENS) -> list[int]:
    """Text -> ids: special tokens first, then in each word the lowest-rank merge, leftmost first.

    Args:
        vocab: ``{token: id}``, as ``build_vocab`` makes it; merges: in order of rank.
        special_tokens: strings that become their own id wherever they occur in ``text``.
    """
    _valid_unicode(text)  # a lone surrogate is refused by its position in the whole text
    rank = {(a, b): r for r, (a, b) in enumerate(merges)}
    done: dict[str, list[int]] = {}  # words repeat: merge each distinct word once
    ids = []
    for piece, special in _split_specials(text, special_tokens):
        if special:
            ids.append(vocab[piece])
            continue
        for word in pre_tokenize(piece):
            if word not in done:
                symbols = list(word)
                while len(symbols) > 1:
                    best, j = min((rank.get(pair, len(rank)), j) for j, pair in enumerate(pairwise(symbols)))
                    if best == len(rank):
                        break  # no merge applies any more
                    symbols[j:j + 2] = [symbols[j] + symbols[j + 1]]  # the lowest rank, the leftmost
                done[word] = [vocab[s] for s in symbols]
            ids += done[word]
    return ids


def bpe_decode(ids: Sequence[int], vocab: Mapping[str, int]) -> str:
    """Ids -> text: join the tokens, map their characters back to bytes, decode UTF-8.

    As in ``tokenizers``: a token with a character outside the byte map (a special token
    such as "<é>") stands for its own UTF-8 bytes, and bytes that are not valid UTF-8 (a
    sequence cut inside a character) become U+FFFD.
    """
    id_to_token = {i: tok for tok, i in vocab.items()}
    data = bytearray()
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, int) or i not in id_to_token:
            raise ValueError(f"unknown token id {i!r}: the ids of this vocabulary run from 0 to {len(vocab) - 1}")
        token = id_to_token[i]
        byte_level = all(c in _CHAR_TO_BYTE for c in token)
        data += bytes(_CHAR_TO_BYTE[c] for c in token) if byte_level else token.encode("utf-8")
    return data.decode("utf-8", errors="replace")


class BPETokenizer:
    """A byte-level BPE tokenizer: merges, vocabulary, encode and decode.

    Args:
        merges: the merges in order of rank (``train_bpe``'s result).
        special_tokens: the specials, ids 0, 1, ... in this order.

    Example:
        >>> tok = BPETokenizer.train("low lower lowest newest widest", vocab_size=270)
        >>> tok.tokens("lowest newer")
        ['low', 'est', ' ', 'new', 'er']
        >>> tok.decode(tok.encode("<bos>slow<eos>"))
        '<bos>slow<eos>'
    """

    def __init__(self, merges: Iterable[Sequence[str]], special_tokens: Sequence[str] = SPECIAL_TOKENS) -> None:
        self.merges: list[Pair] = [(a, b) for a, b in merges]  # pairs may arrive as lists (from JSON)
        self.special_tokens = tuple(special_tokens)
        self.vocab: dict[str, int] = build_vocab(self.merges, self.special_tokens)

    @classmethod
    def train(cls, text: str, vocab_size: int, special_tokens: Sequence[str] = SPECIAL_TOKENS,
              min_frequency: int = 0) -> BPETokenizer:
        """Train on ``text``: see ``train_bpe``."""
        return cls(train_bpe(text, vocab_size, special_tokens, min_frequency), special_tokens)

    def __len__(self) -> int:
        return len(self.vocab)

    def __repr__(self) -> str:
        return f"BPETokenizer({len(self)} tokens, {len(self.merges)} merges)"

    def encode(self, text: str) -> list[int]:
        """Text -> ids (see ``bpe_encode``)."""
        return bpe_encode(text, self.vocab, self.merges, self.special_tokens)

    def decode(self, ids: Iterable[int]) -> str:
        """Ids (ints, or a 1-D tensor) -> text (see ``bpe_decode``); ``decode(encode(s)) == s``."""
        return bpe_decode([operator.index(i) for i in ids], self.vocab)

    def tokens(self, text: str) -> list[str]:
        """The tokens of ``text``, each decoded on its own: "Ġworld" -> " world" (a piece of a character -> U+FFFD)."""
        return [bpe_decode([i], self.vocab) for i in self.encode(text)]

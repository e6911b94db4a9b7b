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

import heapq
import operator
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise

from autograder.data.vocab import BOS, BOS_ID, EOS, EOS_ID, PAD, PAD_ID
from autograder.reference.bytelevel import (  # the byte-level alphabet and words that BPE merges
    _CHAR_TO_BYTE,
    _valid_unicode,
    bytes_to_unicode,
    pre_tokenize,
    split_words,
    to_byte_level,
    unicode_to_bytes,
)

MASK = "<mask>"
MASK_ID = 3
SPECIAL_TOKENS = (PAD, BOS, EOS, MASK)  # ids 0..3: the same specials as autograder.data
assert (SPECIAL_TOKENS.index(PAD), SPECIAL_TOKENS.index(BOS), SPECIAL_TOKENS.index(EOS)) == (PAD_ID, BOS_ID, EOS_ID)

Pair = tuple[str, str]

__all__ = [
    "MASK",
    "MASK_ID",
    "SPECIAL_TOKENS",
    "BPETokenizer",
    "Pair",
    "bpe_decode",
    "bpe_encode",
    "build_vocab",
    "bytes_to_unicode",
    "count_pairs",
    "pre_tokenize",
    "split_words",
    "to_byte_level",
    "train_bpe",
    "unicode_to_bytes",
]


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
        raise ValueError(
            f"vocab_size must be an int of at least {least}, the special tokens and the 256 "
            f"byte characters, got {vocab_size!r}"
        )
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
            word[j : j + 2] = [new]
        j += 1
    return changes


def train_bpe(
    text: str, vocab_size: int, special_tokens: Sequence[str] = SPECIAL_TOKENS, min_frequency: int = 0
) -> list[Pair]:
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


def bpe_encode(
    text: str, vocab: Mapping[str, int], merges: Sequence[Sequence[str]], special_tokens: Sequence[str] = SPECIAL_TOKENS
) -> list[int]:
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
                    symbols[j : j + 2] = [symbols[j] + symbols[j + 1]]  # the lowest rank, the leftmost
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
    def train(
        cls, text: str, vocab_size: int, special_tokens: Sequence[str] = SPECIAL_TOKENS, min_frequency: int = 0
    ) -> BPETokenizer:
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

"""Byte-pair encoding (chapter 9): the reference against Hugging Face ``tokenizers``, its oracle."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest

from autograder.data.vocab import BOS, BOS_ID, EOS, EOS_ID, PAD, PAD_ID
from autograder.reference.bpe import (
    SPECIAL_TOKENS,
    BPETokenizer,
    bpe_decode,
    bpe_encode,
    build_vocab,
    bytes_to_unicode,
    count_pairs,
    pre_tokenize,
    split_words,
    to_byte_level,
    train_bpe,
    unicode_to_bytes,
)

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402

BOOK = "".join(p.read_text(encoding="utf-8") for p in sorted((Path(__file__).parents[2] / "book").glob("*.md")))
ENGLISH = (
    "The  quick brown fox\tjumps over the lazy dog.\n\nIt's 3.14 o'clock; we'll see.   \r\n"
    "Don't   stop: tokens, tokenizers and TOKENS!\u00a0Café naïve  \n "
) * 8
KOREAN = "안녕하세요 세계. 한국어 토큰화는 재미있습니다! 안녕 하세요, 세계의 토큰화 " * 12
EMOJI = "👍🏽 hi 👨‍👩‍👧 family ❤️ ok 🎉🎉🎉 🇫🇷🇰🇷 ✨x✨ " * 10
TIES = "yy zz xx ab ab abc abc c c cd cd ba ba " * 3  # many pairs with equal counts


def library(text: str, vocab_size: int, special_tokens=SPECIAL_TOKENS, min_frequency: int = 0) -> Tokenizer:
    """`tokenizers` trained with the settings the reference follows."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(special_tokens),
        min_frequency=min_frequency,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator([text], trainer)
    return tok


def model_of(tok: Tokenizer) -> tuple[list[tuple[str, str]], dict[str, int]]:
    model = json.loads(tok.to_str())["model"]
    return [tuple(m) if isinstance(m, list) else tuple(m.split(" ", 1)) for m in model["merges"]], model["vocab"]


def random_text(seed: int, length: int) -> str:
    """Any code point but surrogates, weighted towards spaces, ASCII and contractions."""
    rng = random.Random(seed)
    out = []
    for _ in range(length):
        r = rng.random()
        if r < 0.25:
            out.append(rng.choice(" \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u2000\u3000\ufe0f'sdlmtv²"))
        elif r < 0.6:
            out.append(chr(rng.randint(0, 0x7F)))
        elif r < 0.8:
            out.append(chr(rng.randint(0x80, 0x3000)))
        else:
            cp = rng.randint(0x3000, 0x10FFFF)
            out.append(chr(cp) if not 0xD800 <= cp < 0xE000 else "x")
    return "".join(out)


def assert_equals_library(
    text: str,
    vocab_size: int,
    special_tokens=SPECIAL_TOKENS,
    min_frequency: int = 0,
    samples: tuple[str, ...] = (),
    round_trip: bool = True,
) -> None:
    tok = library(text, vocab_size, special_tokens, min_frequency)
    lib_merges, lib_vocab = model_of(tok)
    merges = train_bpe(text, vocab_size, special_tokens, min_frequency)
    assert merges == lib_merges
    ours = BPETokenizer(merges, special_tokens)
    assert ours.vocab == lib_vocab
    for sample in (text[:5000], *samples):
        ids = ours.encode(sample)
        assert ids == tok.encode(sample).ids
        assert ours.decode(ids) == tok.decode(ids, skip_special_tokens=False)
        assert ours.decode(ids) == sample or not round_trip


# ----------------------------------------------------------------------------- equal to tokenizers


@pytest.mark.parametrize("vocab_size", [300, 1000])
def test_lecture_text_equals_tokenizers(vocab_size):
    """Are the merges, vocabulary and ids those of `tokenizers` on the course's own lectures?"""
    assert_equals_library(BOOK, vocab_size, samples=("<bos>Self-attention, masks and  positions.<eos><pad>",))


@pytest.mark.parametrize("vocab_size", [3000, 6000])
def test_lecture_text_equals_tokenizers_large_vocabularies(vocab_size):
    """Are they equal still at vocabularies of thousands of tokens?"""
    assert_equals_library(BOOK, vocab_size)


@pytest.mark.parametrize(
    "name, text, vocab_size",
    [
        ("english with odd whitespace", ENGLISH, 300),
        ("english with odd whitespace", ENGLISH, 400),
        ("korean", KOREAN, 300),
        ("korean", KOREAN, 500),
        ("emoji", EMOJI, 290),
        ("emoji", EMOJI, 330),
        ("ties", TIES, 266),
        ("random unicode", random_text(0, 20000), 600),
    ],
)
def test_languages_equal_tokenizers(name, text, vocab_size):
    """Are the merges, vocabulary and ids those of `tokenizers` on English with odd whitespace,
    Korean, emoji, constructed ties and random Unicode?"""
    assert_equals_library(text, vocab_size, samples=(ENGLISH[:200], KOREAN[:50], EMOJI[:60], "a<mask>b<eos>"))


@pytest.mark.parametrize("special_tokens", [(), ("<|endoftext|>",), ("ab", "<pad>"), ("Ġa", "c", "<s>")])
def test_other_special_tokens_equal_tokenizers(special_tokens):
    """With no specials, one, a special that a merge spells ("ab": the merge reuses its id) and one
    that is a byte character ("c"), are merges and ids still those of `tokenizers`? (A special
    written in byte-level characters, "Ġa", decodes as bytes, " a", in both: no round trip.)"""
    assert_equals_library(
        TIES + ENGLISH[:300],
        256 + len(special_tokens) + 40,
        special_tokens,
        samples=("ab<s>c Ġa" + "".join(special_tokens),),
        round_trip="Ġa" not in special_tokens,
    )


@pytest.mark.parametrize("min_frequency", [2, 5])
def test_min_frequency_equals_tokenizers(min_frequency):
    """Does training stop, as in `tokenizers`, when the best pair is rarer than min_frequency?"""
    assert_equals_library(ENGLISH, 400, min_frequency=min_frequency)


def test_training_stops_when_no_pair_is_left():
    """Does training stop early when every word is one token, as `tokenizers` does?"""
    assert train_bpe("aaa b", 400) == [("a", "a"), ("Ġ", "b"), ("aa", "a")] == model_of(library("aaa b", 400))[0]


def test_special_tokens_in_the_text_are_split_out_like_tokenizers():
    """Are special tokens found first, the longest where two start at one place, as in `tokenizers`?"""
    specials = ("<s>", "<s>x", "</s>")
    text = ENGLISH[:400]
    tok = library(text, 300, specials)
    ours = BPETokenizer(model_of(tok)[0], specials)
    for sample in ["<s>xy<s>x</s><s>", "a<s>b", "<s></s>", "x<s", "<s>x<s>x"]:
        assert ours.encode(sample) == tok.encode(sample).ids
        assert ours.decode(ours.encode(sample)) == sample


# ----------------------------------------------------------------------------- pre-tokenization and bytes


def test_pre_tokenize_equals_bytelevel_on_random_strings():
    """Are the words those of `ByteLevel(add_prefix_space=False)`, Unicode classes and odd spaces included?"""
    lib = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    for seed in range(300):
        text = random_text(seed, 40)
        assert pre_tokenize(text) == [w for w, _ in lib.pre_tokenize_str(text)], repr(text)
        assert "".join(split_words(text)) == text


def assert_classes_agree(code_points: list[int]) -> None:
    lib = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    for start in range(0, len(code_points), 4096):
        chunk = [chr(cp) for cp in code_points[start : start + 4096]]
        text = "".join(f"a{c}a1{c}1!{c}! {c} " for c in chunk)  # each probe splits apart where classes differ
        assert pre_tokenize(text) == [w for w, _ in lib.pre_tokenize_str(text)], f"near U+{ord(chunk[0]):04X}"


def test_pre_tokenize_classes_agree_on_tricky_code_points():
    """Are the code points where Python's \\w, \\s or unicodedata disagree with `tokenizers` (U+FE0F,
    superscripts, U+001C..U+001F, U+0085, letters new in Unicode 15 and 16), and a sample of all
    others, classed as `tokenizers` classes them?"""
    tricky = [
        0xFE0F,
        0xB2,
        0xB3,
        0xB9,
        0x2070,
        0xBD,
        *range(0x1C, 0x20),
        0x85,
        0xA0,
        0x200B,
        0x2028,
        0x3000,
        0x5F,
        0x1C89,
        0x105C0,
        0x10D40,
        0x16100,
        0x2EBF0,
        0x31350,
        0x323AF,
        0x323B0,
        0x1E5F1,
    ]
    assert_classes_agree(tricky + [cp for cp in range(0, 0x110000, 61) if not 0xD800 <= cp < 0xE000])


def test_pre_tokenize_classes_agree_on_every_code_point():
    """Is every code point a letter, a number, a space or other exactly as `tokenizers` sees it?"""
    assert_classes_agree([cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000])


def test_bytes_to_unicode_is_gpt2s_map():
    """Are the 256 bytes 256 distinct printable characters, a space "Ġ" and a newline "Ċ", as in `tokenizers`?"""
    table = bytes_to_unicode()
    assert len(set(table.values())) == 256 and all(c.isprintable() for c in table.values())
    assert table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[ord("a")] == "a"
    assert sorted(table.values()) == sorted(pre_tokenizers.ByteLevel.alphabet())
    assert unicode_to_bytes() == {c: b for b, c in table.items()}
    assert to_byte_level("é ") == "Ã©Ġ"


def test_decode_replaces_bad_utf8_like_tokenizers():
    """Do byte sequences cut inside a character decode to U+FFFD exactly as the ByteLevel decoder does?"""
    rng = random.Random(0)
    table, lib = bytes_to_unicode(), decoders.ByteLevel()
    vocab = build_vocab([])
    for _ in range(500):
        data = bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 12)))
        tokens = [table[b] for b in data]
        assert bpe_decode([vocab[t] for t in tokens], vocab) == lib.decode(tokens)


# ----------------------------------------------------------------------------- the course's own promises


def test_round_trip_on_random_strings():
    """Does decode(encode(s)) give s back for any string, special tokens included?"""
    tok = BPETokenizer.train(random_text(1, 5000) + ENGLISH, 400)
    rng = random.Random(2)
    for seed in range(200):
        s = random_text(seed + 10, rng.randint(0, 60))
        if seed % 3 == 0:
            s = s[:7] + rng.choice(SPECIAL_TOKENS) + s[7:] + "<mask><pad>"
        assert tok.decode(tok.encode(s)) == s


def test_round_trip_of_every_valid_string_and_lone_surrogates_refused_by_position():
    """Does decode(encode(s)) give back every valid Unicode string (the edges of the code space
    included), while a lone surrogate, which has no UTF-8 bytes, is refused naming its position
    in the whole text, by encode, training and pre-tokenization alike?"""
    tok = BPETokenizer.train(ENGLISH + KOREAN, 400)
    for s in [
        "\x00",
        "\x7f\x80",
        "\ud7ff\ue000",
        "\ufeffBOM",
        "\uffff\ufffe",
        "\U00010000\U0010ffff",
        "e\u0301",
        "😀 👍🏽",
        "\ufffd",
    ]:
        assert tok.decode(tok.encode(s)) == s, repr(s)
    for text, position in [("ok \ud800", 3), ("abc \udfff tail", 4), ("x\ud83d\ude00", 1), ("<bos>\udc80<eos>", 5)]:
        for call, args in [(tok.encode, (text,)), (train_bpe, (text, 300)), (pre_tokenize, (text,))]:
            with pytest.raises(
                ValueError, match=f"lone surrogate, U\\+{ord(text[position]):04X}, at position {position}:"
            ):
                call(*args)


def test_special_ids_match_the_data_package():
    """Are <pad>, <bos>, <eos> the ids 0, 1, 2 of autograder.data, and <mask> 3?"""
    vocab = BPETokenizer([]).vocab
    assert [vocab[t] for t in (PAD, BOS, EOS, "<mask>")] == [PAD_ID, BOS_ID, EOS_ID, 3]
    assert SPECIAL_TOKENS == (PAD, BOS, EOS, "<mask>")


def test_count_pairs_counts_inside_words_with_overlaps():
    """Are pairs counted inside words only, weighted by count, with overlapping windows?"""
    assert count_pairs({"bbb": 2, "ab": 3, "a": 5}) == {("b", "b"): 4, ("a", "b"): 3}


def test_tokenizer_object():
    """Do len, vocab, tokens, the ids of the merges and decode of a tensor work together?"""
    import torch

    tok = BPETokenizer.train("low lower lowest newest widest", vocab_size=270)
    assert len(tok) == 270 == len(tok.vocab) and len(tok.merges) == 10
    assert tok.tokens("lowest newer") == ["low", "est", " ", "new", "er"]
    assert bpe_encode("lowest", tok.vocab, tok.merges) == tok.encode("lowest")
    assert tok.decode(torch.tensor(tok.encode("<bos>slow<eos>"))) == "<bos>slow<eos>"
    assert BPETokenizer([list(m) for m in tok.merges]).vocab == tok.vocab  # merges read back from JSON


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: train_bpe("abc", 259), ValueError, "at least 260"),
        (lambda: train_bpe("abc", 255, special_tokens=()), ValueError, "at least 256"),
        (lambda: train_bpe(b"abc", 300), TypeError, "text must be a str, got bytes"),
        (lambda: train_bpe(["abc"], 300), TypeError, "text must be a str, got list"),
        (lambda: train_bpe("abc", 300.0), ValueError, "vocab_size must be an int"),
        (lambda: train_bpe("abc", 300, special_tokens="<pad>"), ValueError, "sequence of non-empty strings"),
        (lambda: train_bpe("abc", 300, min_frequency=-1), ValueError, "min_frequency"),
        (lambda: BPETokenizer([]).encode(None), TypeError, "text must be a str, got NoneType"),
        (lambda: BPETokenizer([]).decode([5, 260]), ValueError, "unknown token id 260"),
        (lambda: BPETokenizer([]).decode([-1]), ValueError, "unknown token id -1"),
    ],
)
def test_bad_input_is_refused_clearly(call, error, words):
    """Do a vocabulary smaller than specials + alphabet, a text that is not a str and an unknown id
    fail with a message that says what was wrong?"""
    with pytest.raises(error, match=words):
        call()


# ----------------------------------------------------------------------------- speed


def test_one_megabyte_trains_about_as_fast_as_tokenizers():
    """Does 1 MB train to 5,000 tokens within a few times `tokenizers`' own time (about a second)?"""
    rng = random.Random(0)
    syllables = ["ka", "to", "ri", "men", "sa", "lo", "pe", "tra", "in", "ou", "ver", "ch", "st", "ble", "ing"]
    words = ["".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(30000)]
    weights = [1 / (r + 1) for r in range(len(words))]
    text = " ".join(rng.choices(words, weights, k=200000))[:1_000_000]
    split_words("warm up")  # the Unicode classes are built once, on first use
    start = time.perf_counter()
    merges = train_bpe(text, 5000)
    ours = time.perf_counter() - start
    start = time.perf_counter()
    tok = library(text, 5000)
    theirs = time.perf_counter() - start
    assert merges == model_of(tok)[0]
    assert ours < max(5 * theirs, 3.0), f"{ours:.2f} s, tokenizers {theirs:.2f} s"

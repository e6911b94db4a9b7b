"""The checks of lab 09-tokens-in-tokens-out, its tokens: right answers pass, known wrong ones fail by name, and the
reference's BPE and ``tokenizers`` are caught when a candidate calls them."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

import pytest

from autograder.checks import ForbiddenCall
from autograder.checks.lab09_tokens_in_tokens_out.encode_decode import check_decode, check_encode
from autograder.checks.lab09_tokens_in_tokens_out.tokens import check_count_pairs, check_train_bpe
from autograder.reference import bpe
from autograder.reference.bpe import SPECIAL_TOKENS, pre_tokenize, split_words, to_byte_level, unicode_to_bytes
from tests.checks.student_copies import as_student


def _stub(*args, **kwargs):
    raise NotImplementedError()


@pytest.mark.parametrize("check", [check_count_pairs, check_train_bpe, check_encode, check_decode])
def test_stubs_raise_not_implemented(check):
    """Does an untouched stub raise NotImplementedError, not a check failure?"""
    with pytest.raises(NotImplementedError):
        check(_stub)


# ----------------------------------------------------------------------------- count_pairs


def pairs_with_counter(word_counts):
    """A Counter: each word's own pair counts, times the word's count."""
    pairs = Counter()
    for word, n in word_counts.items():
        for p, k in Counter(pairwise(word)).items():
            pairs[p] += k * n
    return pairs


def pairs_by_index(word_counts):
    """Plain indices and dict.get."""
    out = {}
    for word, n in word_counts.items():
        for i in range(len(word) - 1):
            out[word[i], word[i + 1]] = out.get((word[i], word[i + 1]), 0) + n
    return out


def test_reference_count_pairs_passes():
    """Does the reference pass, for several seeds?"""
    for seed in (0, 1, 2):
        check_count_pairs(as_student(bpe.count_pairs), seed=seed)


@pytest.mark.parametrize("candidate", [pairs_with_counter, pairs_by_index])
def test_valid_count_pairs_pass(candidate):
    """Do a Counter version and an index loop pass?"""
    check_count_pairs(candidate, seed=1)


def pairs_across_words(word_counts):
    joined = "".join(w * 1 for w in word_counts)
    weights = [n for w, n in word_counts.items() for _ in w]
    out = {}
    for i in range(len(joined) - 1):
        out[joined[i], joined[i + 1]] = out.get((joined[i], joined[i + 1]), 0) + weights[i]
    return out


def pairs_unweighted(word_counts):
    return pairs_by_index(dict.fromkeys(word_counts, 1))


def pairs_without_overlaps(word_counts):
    return {(a, b): n * w.count(a + b) for w, n in word_counts.items() for a, b in pairwise(w)}


def pairs_as_strings(word_counts):
    return {a + b: n for (a, b), n in pairs_by_index(word_counts).items()}


@pytest.mark.parametrize(
    "candidate, mistake",
    [
        (pairs_across_words, "across word boundaries"),
        (pairs_unweighted, "not weighted"),
        (pairs_without_overlaps, "overlapping windows skipped"),
        (pairs_as_strings, "pairs written as one string"),
    ],
)
def test_wrong_count_pairs_are_named(candidate, mistake, fails):
    """Do pairs across words, unweighted counts, skipped overlaps and joined keys fail by name?"""
    fails(check_count_pairs, candidate, mistake=mistake)


def test_count_pairs_of_strings_only_fails_on_merged_words(fails):
    """Does a count_pairs that joins a word of merged symbols back into characters fail on ("lo", "w")?"""
    fails(check_count_pairs, lambda wc: pairs_by_index({"".join(w): n for w, n in wc.items()}), said="('lo', 'w')")


def test_count_pairs_that_returns_a_list_fails(fails):
    """Does a list of pairs, instead of a dict, fail saying what was expected?"""
    fails(check_count_pairs, lambda wc: sorted(pairs_by_index(wc).items()), said="a dict {(left, right): count}")


def test_count_pairs_from_the_reference_is_forbidden(fails):
    """Is the reference's count_pairs caught?"""
    fails(check_count_pairs, lambda wc: bpe.count_pairs(wc), error=ForbiddenCall, said="count_pairs")


# ----------------------------------------------------------------------------- train_bpe


def student_trainer(tie="ids", words="pre", weighted=True, extra=0, n_merges=None, as_lists=False):
    """A trainer as a student writes it (recount every pair after every merge), with knobs
    that make the usual mistakes."""
    to_bytes = unicode_to_bytes()

    def train_bpe(text, vocab_size, special_tokens):
        vocab = list(dict.fromkeys(special_tokens)) + sorted(c for c in to_bytes if c not in special_tokens)
        ids = {tok: i for i, tok in enumerate(vocab)}
        if words == "pre":
            counts = Counter(pre_tokenize(text))
        elif words == "joined":
            counts = Counter([to_byte_level(text)])
        elif words == "split":
            counts = Counter(to_byte_level(w) for w in text.split())
        else:  # "raw": no byte-level map
            counts = Counter(split_words(text))
        seqs = [[list(w), n if weighted else 1] for w, n in counts.items()]
        merges = []
        goal = (vocab_size - len(ids) if n_merges is None else n_merges(vocab_size, special_tokens)) + extra
        while len(merges) < goal:
            pairs = {}
            for symbols, n in seqs:
                for p in pairwise(symbols):
                    pairs[p] = pairs.get(p, 0) + n
            if not pairs:
                break
            if tie == "ids":
                best = min(pairs, key=lambda p: (-pairs[p], ids.get(p[0], 10**9), ids.get(p[1], 10**9)))
            elif tie == "first":
                best = max(pairs, key=pairs.get)
            elif tie == "strings":
                best = min(pairs, key=lambda p: (-pairs[p], p))
            else:  # CS336: the lexicographically greater pair of byte strings
                best = max(pairs, key=lambda p: (pairs[p], tuple(bytes(to_bytes.get(c, 0) for c in s) for s in p)))
            merges.append([best[0], best[1]] if as_lists else best)
            ids.setdefault(best[0] + best[1], len(ids))
            for seq in seqs:
                symbols, i = seq[0], 0
                while i < len(symbols) - 1:
                    if (symbols[i], symbols[i + 1]) == best:
                        symbols[i : i + 2] = [best[0] + best[1]]
                    i += 1
        return merges

    return train_bpe


def test_reference_train_bpe_passes():
    """Does the reference pass, for several seeds?"""
    for seed in (0, 1, 2):
        check_train_bpe(as_student(bpe.train_bpe), seed=seed)


@pytest.mark.parametrize("candidate", [student_trainer(), student_trainer(as_lists=True)])
def test_valid_trainers_pass(candidate):
    """Do a naive recount-every-merge trainer, and one that returns lists, pass?"""
    for seed in (0, 3):
        check_train_bpe(candidate, seed=seed)


@pytest.mark.parametrize(
    "candidate, mistake",
    [
        (student_trainer(tie="first"), "ties broken by the first pair seen"),
        (student_trainer(tie="strings"), "ties broken by comparing the token strings"),
        (student_trainer(tie="cs336"), "larger byte string (CS336"),
        (student_trainer(words="joined"), "across word boundaries"),
        (student_trainer(words="split"), "str.split()"),
        (student_trainer(words="raw"), "byte-level alphabet"),
        (student_trainer(weighted=False), "not weighted"),
        (student_trainer(n_merges=lambda v, s: v - 256), "special tokens not counted"),
        (student_trainer(n_merges=lambda v, s: v - len(s)), "256 byte tokens not counted"),
        (student_trainer(n_merges=lambda v, s: v), "vocab_size taken as the number of merges"),
        (student_trainer(extra=1), "one merge too many"),
        (student_trainer(extra=-1), "one merge too few"),
    ],
)
def test_wrong_trainers_are_named(candidate, mistake, fails):
    """Do the usual tie rules, counting across words, the wrong words, unweighted counts and the
    wrong number of merges fail by name?"""
    fails(check_train_bpe, candidate, mistake=mistake)


def test_wrong_trainer_names_the_first_wrong_merge(fails):
    """Does the message say which merge differs first, and what was expected there?"""
    fails(check_train_bpe, student_trainer(tie="first"), said=["merge 2 (counting from 0)", "your merges 0..2:"])


def test_trainer_that_returns_strings_fails(fails):
    """Does a list of joined strings, instead of pairs, fail saying what was expected?"""
    fails(check_train_bpe, lambda text, vs, sp: ["ab", "cd"], said="each a pair of strings")


@pytest.mark.parametrize(
    "candidate, words",
    [
        (lambda text, vs, sp: bpe.train_bpe(text, vs, sp), "train_bpe"),
        (lambda text, vs, sp: bpe.BPETokenizer.train(text, vs, sp).merges, "BPETokenizer.train"),
    ],
)
def test_trainers_from_the_reference_are_forbidden(candidate, words, fails):
    """Are the reference's train_bpe and BPETokenizer.train caught?"""
    fails(check_train_bpe, candidate, error=ForbiddenCall, said=words)


def library_trainer(text, vocab_size, special_tokens):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(
        [text],
        trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=list(special_tokens),
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    return [tuple(m) for m in __import__("json").loads(tok.to_str())["model"]["merges"]]


def test_trainer_from_tokenizers_is_forbidden(fails):
    """Is a candidate that trains with `tokenizers` itself caught?"""
    pytest.importorskip("tokenizers")
    fails(check_train_bpe, library_trainer, error=ForbiddenCall, said="tokenizers.")


# ----------------------------------------------------------------------------- encode


def encode_merges_in_order(text, vocab, merges, special_tokens):
    """Each merge in rank order over the whole word: slower than lowest-rank-first, same ids."""
    import re

    out = []
    pattern = "(" + "|".join(re.escape(s) for s in sorted(special_tokens, key=len, reverse=True)) + ")"
    for i, piece in enumerate(re.split(pattern, text)):
        if i % 2:
            out.append(vocab[piece])
            continue
        for word in pre_tokenize(piece):
            symbols = list(word)
            for a, b in merges:
                j = 0
                while j < len(symbols) - 1:
                    if symbols[j] == a and symbols[j + 1] == b:
                        symbols[j : j + 2] = [a + b]
                    j += 1
            out += [vocab[s] for s in symbols]
    return tuple(out)


def encode_wrong(order="rank", specials=True, words=True):
    def encode(text, vocab, merges, special_tokens):
        import re

        rank = {tuple(m): r for r, m in enumerate(merges)}
        pieces = re.split("(" + "|".join(map(re.escape, special_tokens)) + ")", text) if specials else [text]
        out = []
        for i, piece in enumerate(pieces):
            if i % 2:
                out.append(vocab[piece])
                continue
            for word in pre_tokenize(piece) if words else [to_byte_level(piece)]:
                symbols = list(word)
                while True:
                    where = [j for j in range(len(symbols) - 1) if (symbols[j], symbols[j + 1]) in rank]
                    if not where:
                        break
                    j = where[0] if order == "text" else min(where, key=lambda j: rank[symbols[j], symbols[j + 1]])
                    symbols[j : j + 2] = [symbols[j] + symbols[j + 1]]
                out += [vocab[s] for s in symbols]
        return out

    return encode


def test_reference_encode_passes():
    """Does the reference pass, for several seeds?"""
    for seed in (0, 1, 2):
        check_encode(as_student(bpe.bpe_encode), seed=seed)


@pytest.mark.parametrize("candidate", [encode_merges_in_order, encode_wrong()])
def test_valid_encoders_pass(candidate):
    """Do merges applied one by one in rank order (returning a tuple) and a lowest-rank loop pass?"""
    check_encode(candidate, seed=1)


@pytest.mark.parametrize(
    "candidate, mistake",
    [
        (encode_wrong(order="text"), "in the order of the text"),
        (encode_wrong(specials=False), "special tokens not split out first"),
        (encode_wrong(words=False), "not cut into words"),
    ],
)
def test_wrong_encoders_are_named(candidate, mistake, fails):
    """Do merges by text order, special tokens left in the text and no pre-tokenization fail by name?"""
    fails(check_encode, candidate, mistake=mistake)


def test_wrong_encoder_shows_the_round_trip(fails):
    """Does the message show what the candidate's ids decode to?"""
    fails(check_encode, encode_wrong(specials=False), said="which decodes to")


@pytest.mark.parametrize(
    "candidate, words",
    [
        (lambda text, vocab, merges, sp: bpe.bpe_encode(text, vocab, merges, sp), "bpe_encode"),
        (lambda text, vocab, merges, sp: bpe.BPETokenizer(merges, sp).encode(text), "BPETokenizer.encode"),
    ],
)
def test_encoders_from_the_reference_are_forbidden(candidate, words, fails):
    """Are the reference's bpe_encode and BPETokenizer.encode caught?"""
    fails(check_encode, candidate, error=ForbiddenCall, said=words)


# ----------------------------------------------------------------------------- decode


def decode_with_bytearray(ids, vocab):
    to_bytes = unicode_to_bytes()
    tokens = {i: t for t, i in vocab.items()}
    data = bytearray()
    for i in ids:
        data.extend(to_bytes[c] for c in tokens[i])
    return data.decode("utf-8", errors="replace")


def decode_wrong(kind):
    to_bytes = unicode_to_bytes()

    def decode(ids, vocab):
        tokens = {i: t for t, i in vocab.items()}
        if kind == "no map":
            return "".join(tokens[i] for i in ids)
        if kind == "per token":
            return "".join(bytes(to_bytes[c] for c in tokens[i]).decode("utf-8", "replace") for i in ids)
        if kind == "skip specials":
            ids = [i for i in ids if tokens[i] not in SPECIAL_TOKENS]
        data = bytes(to_bytes[c] for i in ids for c in tokens[i])
        return data.decode("utf-8", {"ignore": "ignore", "strict": "strict"}.get(kind, "replace"))

    return decode


def test_reference_decode_passes():
    """Does the reference pass, for several seeds?"""
    for seed in (0, 1, 2):
        check_decode(as_student(bpe.bpe_decode), seed=seed)


def test_valid_decoder_passes():
    """Does a bytearray version pass?"""
    check_decode(decode_with_bytearray, seed=1)


@pytest.mark.parametrize(
    "kind, mistake",
    [
        ("no map", "not mapped back to bytes"),
        ("per token", "each token decoded on its own"),
        ("ignore", "errors='ignore'"),
        ("strict", "without errors='replace'"),
        ("skip specials", "special tokens dropped"),
    ],
)
def test_wrong_decoders_are_named(kind, mistake, fails):
    """Do no byte map, per-token decoding, errors='ignore', strict decoding and dropped specials fail by name?"""
    fails(check_decode, decode_wrong(kind), mistake=mistake)


def test_decoder_from_the_reference_is_forbidden(fails):
    """Is the reference's bpe_decode caught?"""
    fails(check_decode, lambda ids, vocab: bpe.bpe_decode(ids, vocab), error=ForbiddenCall, said="bpe_decode")

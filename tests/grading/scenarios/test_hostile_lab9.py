"""Attacks on lab 9's grade (tokens in, tokens out), graded for real (nbgrader, the sandbox, the
independent check) on a temporary course that holds lab 9: answers that hand back the
reference's result (``autograder.reference.bpe``, ``.generate``, ``.families``) or the
library's (``tokenizers``, ``F.cross_entropy``), and a forged pass in the kernel. Each scores
nothing for the exercises it attacks; an honest partial answer scores exactly its part.
The generic attacks (sandbox, files, processes, network) are test_hostile.py's, on lab 00."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from autograder.grading import answers
from autograder.grading.grader import grading, pipeline
from autograder.grading.grader.run import bwrap as sandbox
from autograder.grading.protocol.confinement import Limits
from tests.grading.helpers import REPO, released, with_answers, with_cell

LAB = "09-tokens-in-tokens-out"

REFERENCE_BPE = {
    "count_pairs": "from autograder.reference import bpe as _bpe\n\n"
    "def count_pairs(word_counts):\n    return _bpe.count_pairs(word_counts)\n",
    "train_bpe": "from autograder.reference.bpe import BPETokenizer\n\n"
    "def train_bpe(text, vocab_size, special_tokens=SPECIAL_TOKENS):\n"
    "    return BPETokenizer.train(text, vocab_size, special_tokens).merges\n",
    "encode": "import autograder.reference.bpe\n\n"
    "def encode(text, vocab, merges, special_tokens=SPECIAL_TOKENS):\n"
    "    return autograder.reference.bpe.bpe_encode(text, vocab, merges, special_tokens)\n",
    "decode": "from autograder.reference.bpe import bpe_decode\n\n"
    "def decode(ids, vocab):\n    return bpe_decode(ids, vocab)\n",
}

REFERENCE_REST = {
    "beam_search": "from autograder.reference import generate as _generate\n\n"
    "def beam_search(model, src, beam_size, max_len, bos_id, eos_id, pad_id, alpha=0.6):\n"
    "    return _generate.beam_search(model, src, beam_size, max_len, bos_id, eos_id, pad_id, alpha)\n",
    "filter_logits": "from autograder.reference.generate import filter_logits\n",
    "decoder_only": "from autograder.reference import families\n\nclass DecoderOnly(families.DecoderOnly):\n    pass\n",
    "next_token_loss": "def next_token_loss(logits, tokens, pad_id):\n"
    "    V = logits.size(-1)\n"
    "    return F.cross_entropy(logits[:, :-1].reshape(-1, V), tokens[:, 1:].reshape(-1),\n"
    "                           ignore_index=pad_id)\n",
}

LIBRARY = {
    "train_bpe": """
import json
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

def train_bpe(text, vocab_size, special_tokens=SPECIAL_TOKENS):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(special_tokens), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([text], trainer)
    return [tuple(m) for m in json.loads(tok.to_str())["model"]["merges"]]
""",
    "encode": """
import tokenizers

def encode(text, vocab, merges, special_tokens=SPECIAL_TOKENS):
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(vocab=dict(vocab), merges=[tuple(m) for m in merges]))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.add_special_tokens(list(special_tokens))
    return tok.encode(text).ids
""",
}

# Every check call of the lab becomes `pass` before the kernel runs it: the kernel "passes".
KERNEL_FORGE = """
def _skip_checks(lines):
    return [line[:len(line) - len(line.lstrip())] + "pass\\n" if "check_" in line else line for line in lines]
get_ipython().input_transformers_cleanup.append(_skip_checks)
"""

# The reference captured before the check runs: a default argument, a closure, the function under a
# decorator. forbidden() swaps the code of the function objects themselves, so every capture is refused.
ALIASED = {
    "train_bpe": "from autograder.reference import bpe as _b\n\n"
    "def train_bpe(text, vocab_size, special_tokens=SPECIAL_TOKENS, _train=_b.train_bpe):\n"
    "    return _train(text, vocab_size, special_tokens)\n",
    "next_token_loss": "from autograder.reference import families as _f\n\n"
    "def _wrap(loss):\n    return lambda logits, tokens, pad_id: loss(logits, tokens, pad_id)\n\n"
    "next_token_loss = _wrap(_f.next_token_loss)\n",
    "beam_search": "from autograder.reference import generate as _g\n\n"
    "def beam_search(model, src, beam_size, max_len, bos_id, eos_id, pad_id, alpha=0.6,\n"
    "                _search=_g.beam_search.__wrapped__):\n"
    "    return _search(model, src, beam_size, max_len, bos_id, eos_id, pad_id, alpha)\n",
}

# The reference's code under a function object of the student's: types.FunctionType(ref.__code__, ...) in a
# default argument, a list and a closure (a renamed copy of the code). The checks refuse the code itself.
CLONED = {
    "train_bpe": "import types\nfrom autograder.reference import bpe as _b\n\n"
    "_clone = types.FunctionType(_b.train_bpe.__code__, _b.train_bpe.__globals__, 'mine',\n"
    "                            _b.train_bpe.__defaults__)\n\n"
    "def train_bpe(text, vocab_size, special_tokens=SPECIAL_TOKENS, _train=_clone):\n"
    "    return _train(text, vocab_size, special_tokens)\n",
    "decode": "import types\nfrom autograder.reference import bpe as _b\n\n"
    "_kept = [types.FunctionType(_b.bpe_decode.__code__, _b.bpe_decode.__globals__, 'mine')]\n\n"
    "def decode(ids, vocab):\n    return _kept[0](ids, vocab)\n",
    "next_token_loss": "import types\nfrom autograder.reference import families as _f\n\n"
    "def _make(code=_f.next_token_loss.__code__.replace(co_name='mine'), g=_f.__dict__):\n"
    "    clone = types.FunctionType(code, g, 'mine')\n"
    "    return lambda logits, tokens, pad_id: clone(logits, tokens, pad_id)\n\n"
    "next_token_loss = _make()\n",
}

# The reference's bpe_decode retyped with other names (9 statements): flagged for the instructor, scored in full.
COPIED = {
    "decode": """
_TO_BYTE = bpe.unicode_to_bytes()


def decode(ids, vocab):
    token_of = {n: t for t, n in vocab.items()}
    out = bytearray()
    for n in ids:
        if isinstance(n, bool) or not isinstance(n, int) or n not in token_of:
            raise ValueError(f"unknown token id {n!r}: the ids of this vocabulary run from 0 to {len(vocab) - 1}")
        piece = token_of[n]
        plain = all(c in _TO_BYTE for c in piece)
        out += bytes(_TO_BYTE[c] for c in piece) if plain else piece.encode("utf-8")
    return out.decode("utf-8", errors="replace")
""",
}

POINTS = {
    "count_pairs": 2,
    "train_bpe": 4,
    "encode": 3,
    "decode": 2,
    "beam_search": 4,
    "filter_logits": 2,
    "decoder_only": 3,
    "next_token_loss": 2,
}
TOTAL = sum(POINTS.values())


CASES = {  # student: (notebook maker, expected score, a phrase its summary line must hold or None)
    "reference-bpe": (lambda: with_answers(LAB, REFERENCE_BPE), 0, None),
    "reference-rest": (lambda: with_answers(LAB, REFERENCE_REST), 0, None),
    "library": (lambda: with_answers(LAB, LIBRARY), 0, None),
    "kernel-forge": (lambda: with_cell(released(LAB), "setup", KERNEL_FORGE), 0, "failed the independent check"),
    "honest-bpe": (
        lambda: answers.answered(REPO, LAB, ["count_pairs", "train_bpe", "encode", "decode"]),
        POINTS["count_pairs"] + POINTS["train_bpe"] + POINTS["encode"] + POINTS["decode"],
        None,
    ),
    "aliased": (lambda: with_answers(LAB, ALIASED), 0, None),
    "reference-clone": (
        lambda: with_answers(LAB, CLONED, answers.answered(REPO, LAB)),
        TOTAL - POINTS["train_bpe"] - POINTS["decode"] - POINTS["next_token_loss"],
        None,
    ),
    "copied-source": (
        lambda: with_answers(LAB, COPIED, answers.answered(REPO, LAB)),
        TOTAL,
        "syntax tree of the reference's `autograder.reference.bpe.bpe_decode`",
    ),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> tuple[dict, str, Path]:
    """Every student of CASES graded once through the pipeline: outcomes by student, summary, course."""
    if sandbox.probe() is not None:
        pytest.skip(f"bubblewrap cannot run here: {sandbox.probe()}")
    root = tmp_path_factory.mktemp("lab9")
    course = root / "course"
    course.mkdir()
    shutil.copy2(REPO / "nbgrader_config.py", course)
    for folder in ("solutions", "notebooks"):
        shutil.copytree(REPO / folder / LAB, course / folder / LAB)
    inbox = root / "inbox"
    for student, (make, _, _) in CASES.items():
        (inbox / student / LAB).mkdir(parents=True)
        nbformat.write(make(), str(inbox / student / LAB / f"{LAB}.ipynb"))
    outcomes = pipeline.grade(
        course, inbox, grading.Options(jobs=2, limits=Limits(memory_mb=2048), job_timeout=600, progress=False)
    )
    return {o.student: o for o in outcomes}, grading.summary(outcomes), course


@pytest.mark.parametrize("student", list(CASES))
def test_lab9_attack_scores_only_its_honest_part(graded, student: str) -> None:
    """Does an answer that returns the reference's or the library's result (called by name or captured
    before the check), or forges a pass in the kernel, score nothing for it, and an honest partial
    answer exactly its points?"""
    by_student, text, _ = graded
    _, score, phrase = CASES[student]
    outcome = by_student[student]
    assert (outcome.score, outcome.max_score) == (score, TOTAL), f"{student}: {text}"
    if phrase:
        assert any(line.startswith(f"  {student} / {LAB}:") and phrase in line for line in text.splitlines()), (
            f"{student}: no line saying {phrase!r} in\n{text}"
        )


def test_lab9_each_refused_clone_is_named_in_the_feedback(graded) -> None:
    """Does the feedback of the student whose answers run the reference's code under function objects
    of their own name each of the three refusals: the reference function, and the road it took?"""
    _, text, course = graded
    page = (course / "feedback" / "reference-clone" / LAB / f"{LAB}.html").read_text()
    for name in (
        "autograder.reference.bpe.train_bpe",
        "autograder.reference.bpe.bpe_decode",
        "autograder.reference.families.next_token_loss",
    ):
        assert name in page, f"{name} not named in the feedback:\n{text}"
    assert page.count("under another function object") >= 3, text

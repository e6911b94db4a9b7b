"""What the checks of lab 09-tokens-in-tokens-out (chapter 9) share: the made-up text they train and encode
(``sample_text``), the special tokens, and the names they block while the candidate runs
(the reference's BPE module and, where it is installed, Hugging Face ``tokenizers``).
"""

from __future__ import annotations

import random

from autograder.checks.lab09_tokens_in_tokens_out.bpe_variants import HAS_TOKENIZERS
from autograder.reference import bpe

SPECIALS = bpe.SPECIAL_TOKENS
LIBRARY = (
    [
        "tokenizers.Tokenizer",
        "tokenizers.models.BPE",
        "tokenizers.trainers.BpeTrainer",
        "tokenizers.pre_tokenizers.ByteLevel",
        "tokenizers.decoders.ByteLevel",
    ]
    if HAS_TOKENIZERS
    else []
)
MODULE = "autograder.reference.bpe"

# Words with shared pieces (low/lower/lowest), contractions, numbers, Korean, emoji, accents.
_WORDS = (
    "the",
    "then",
    "there",
    "these",
    "token",
    "tokens",
    "tokenizer",
    "low",
    "lower",
    "lowest",
    "new",
    "newer",
    "newest",
    "wide",
    "wider",
    "widest",
    "merge",
    "merges",
    "merged",
    "pair",
    "pairs",
    "byte",
    "bytes",
    "it's",
    "we'll",
    "don't",
    "2024",
    "3.14",
    "토큰",
    "토큰화",
    "한국어",
    "😀",
    "👍🏽",
    "naïve",
    "café",
)
_GAPS = (" ", " ", " ", " ", "  ", "\n", ", ", ". ", "\t", " \n ")


def sample_text(seed: int, n_words: int = 80) -> str:
    """Made-up text, Zipf-like word frequencies (so that many pairs tie), reproducible from ``seed``."""
    rng = random.Random(seed)
    words = list(_WORDS)
    rng.shuffle(words)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    return "".join(w + rng.choice(_GAPS) for w in rng.choices(words, weights, k=n_words))

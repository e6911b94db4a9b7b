"""The reference Transformer: the single source of truth for the course's math.

Batch first, boolean masks with True = may attend, raw weights multiply on the right.
Each name below is defined in the module of the chapter that teaches it.
"""

from autograder.reference.attention import (
    scaled_dot_product_attention,
    self_attention,
    single_query_attention,
    softmax,
)
from autograder.reference.bpe import (
    SPECIAL_TOKENS,
    BPETokenizer,
    bpe_decode,
    bpe_encode,
    build_vocab,
    count_pairs,
    train_bpe,
)
from autograder.reference.bytelevel import bytes_to_unicode, pre_tokenize, split_words, to_byte_level, unicode_to_bytes
from autograder.reference.decode import greedy_decode
from autograder.reference.device import best_device
from autograder.reference.families import (
    DecoderOnly,
    EncoderOnly,
    LanguageModelConfig,
    continue_prompt,
    mask_tokens,
    masked_token_loss,
    next_token_loss,
)
from autograder.reference.fused import fuse
from autograder.reference.generate import (
    beam_search,
    bleu,
    evaluate_decoder,
    filter_logits,
    ids_to_text,
    length_penalty,
    sample,
    sample_next,
)
from autograder.reference.kvcache import DecoderCache, KVCache, LayerCache
from autograder.reference.layers import (
    Decoder,
    DecoderLayer,
    Encoder,
    EncoderLayer,
    LayerNorm,
    PositionwiseFeedForward,
)
from autograder.reference.leaks import leaks_future
from autograder.reference.loss import label_smoothed_loss, noam_lr, noam_scheduler
from autograder.reference.lowrank import bilinear_scores, low_rank_error, low_rank_factorize, merged_qk
from autograder.reference.masks import causal_mask, decoder_self_attention_mask, padding_mask, to_pytorch_mask
from autograder.reference.model import Embeddings, EncoderDecoder, TransformerConfig
from autograder.reference.modern import (
    RMSNorm,
    SwiGLU,
    attend_with_cache,
    grouped_query_attention,
    kv_cache_bytes,
    rms_norm,
    swiglu,
    swiglu_hidden,
)
from autograder.reference.modern_lm import ModernCache, ModernConfig, ModernLM, generate_greedy, left_pad, perplexity
from autograder.reference.multihead import MultiHeadAttention, merge_heads, split_heads
from autograder.reference.norms import layer_norm
from autograder.reference.positional import add_positions, pe_similarity, rotation_matrix, sinusoidal_encoding
from autograder.reference.rnn import hidden_gradient_norms, receptive_field, rnn_forward
from autograder.reference.rope import apply_rope, halves_permutation, rope_frequencies
from autograder.reference.tiled import online_softmax, tiled_attention

__all__ = [
    # chapter 1
    "hidden_gradient_norms",
    "receptive_field",
    "rnn_forward",
    # chapter 2
    "scaled_dot_product_attention",
    "self_attention",
    "single_query_attention",
    "softmax",
    # chapter 3
    "bilinear_scores",
    "low_rank_error",
    "low_rank_factorize",
    "merged_qk",
    # chapter 4
    "MultiHeadAttention",
    "merge_heads",
    "split_heads",
    # chapter 5
    "add_positions",
    "pe_similarity",
    "rotation_matrix",
    "sinusoidal_encoding",
    # chapter 6
    "causal_mask",
    "decoder_self_attention_mask",
    "leaks_future",
    "padding_mask",
    "to_pytorch_mask",
    # chapter 7
    "Decoder",
    "DecoderLayer",
    "Encoder",
    "EncoderLayer",
    "LayerNorm",
    "PositionwiseFeedForward",
    "layer_norm",
    # chapter 8
    "DecoderCache",
    "EncoderDecoder",
    "Embeddings",
    "KVCache",
    "LayerCache",
    "TransformerConfig",
    "best_device",
    "fuse",
    "greedy_decode",
    "label_smoothed_loss",
    "noam_lr",
    "noam_scheduler",
    # chapter 9: byte-pair encoding, then the byte-level alphabet and words it merges
    "SPECIAL_TOKENS",
    "BPETokenizer",
    "bpe_decode",
    "bpe_encode",
    "build_vocab",
    "count_pairs",
    "train_bpe",
    "bytes_to_unicode",
    "pre_tokenize",
    "split_words",
    "to_byte_level",
    "unicode_to_bytes",
    "beam_search",
    "bleu",
    "evaluate_decoder",
    "filter_logits",
    "ids_to_text",
    "length_penalty",
    "sample",
    "sample_next",
    "DecoderOnly",
    "EncoderOnly",
    "LanguageModelConfig",
    "continue_prompt",
    "mask_tokens",
    "masked_token_loss",
    "next_token_loss",
    # chapter 10
    "ModernCache",
    "ModernConfig",
    "ModernLM",
    "RMSNorm",
    "SwiGLU",
    "apply_rope",
    "attend_with_cache",
    "generate_greedy",
    "grouped_query_attention",
    "halves_permutation",
    "kv_cache_bytes",
    "left_pad",
    "online_softmax",
    "perplexity",
    "rms_norm",
    "rope_frequencies",
    "swiglu",
    "swiglu_hidden",
    "tiled_attention",
]

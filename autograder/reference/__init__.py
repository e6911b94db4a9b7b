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
from autograder.reference.decode import greedy_decode
from autograder.reference.device import best_device
from autograder.reference.leaks import leaks_future
from autograder.reference.layers import (
    Decoder,
    DecoderLayer,
    Encoder,
    EncoderLayer,
    LayerNorm,
    PositionwiseFeedForward,
)
from autograder.reference.loss import label_smoothed_loss, noam_lr, noam_scheduler
from autograder.reference.lowrank import bilinear_scores, low_rank_error, low_rank_factorize, merged_qk
from autograder.reference.masks import causal_mask, decoder_self_attention_mask, padding_mask, to_pytorch_mask
from autograder.reference.model import DecoderCache, EncoderDecoder, Embeddings, TransformerConfig
from autograder.reference.norms import layer_norm
from autograder.reference.multihead import KVCache, MultiHeadAttention, merge_heads, split_heads
from autograder.reference.positional import add_positions, pe_similarity, rotation_matrix, sinusoidal_encoding
from autograder.reference.rnn import hidden_gradient_norms, receptive_field, rnn_forward

__all__ = [name for name in dir() if not name.startswith("_")]

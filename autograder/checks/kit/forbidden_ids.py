"""The id of a sentinel's refusal: ``forbidden/<exercise>``, one per exercise whose check refuses,
while the candidate runs, what the exercise asks the student to build (``mistakes.py`` lists it
among every id a check raises)."""

from __future__ import annotations

# Every check refuses, while the candidate runs, what its exercise asks the student to build.
EXERCISES = (
    "relu",
    "mean_squared_error",
    "rnn_forward",
    "hidden_gradient_norms",
    "receptive_field",
    "softmax",
    "single_query_attention",
    "scaled_dot_product_attention",
    "self_attention",
    "merged_qk",
    "bilinear_scores",
    "low_rank_factorize",
    "low_rank_error",
    "split_heads",
    "merge_heads",
    "multi_head_attention",
    "sinusoidal_encoding",
    "rotation_matrix",
    "pe_similarity",
    "add_positions",
    "padding_mask",
    "causal_mask",
    "decoder_self_attention_mask",
    "masked_attention",
    "leaks_future",
    "layer_norm",
    "positionwise_feed_forward",
    "encoder_layer",
    "decoder_layer",
    "embeddings",
    "encoder_decoder",
    "greedy_decode",
    "label_smoothed_loss",
    "noam_lr",
    "train_step",
    "beam_search",
    "filter_logits",
    "decoder_only",
    "next_token_loss",
    "count_pairs",
    "train_bpe",
    "encode",
    "decode",
    "apply_rope",
    "rms_norm",
    "swiglu",
    "attend_with_cache",
    "tiled_attention",
    "perplexity",
)


def forbidden_id(check_name: str) -> str:
    """``forbidden/softmax`` for ``check_softmax``: the answer calls what it should build."""
    return "forbidden/" + check_name.removeprefix("check_").replace("_", "-")


FORBIDDEN: dict[str, str] = {forbidden_id(name): f"{name} calls what it asks to build" for name in EXERCISES}

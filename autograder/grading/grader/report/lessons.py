"""Where the book teaches each lab exercise: exercise (test cell grade id) -> lecture section.

The report links an exercise's row to this section, on the published site. The instructor
guide renders the same mapping as a table of MyST links (``markdown_table``), so the strict
build (``-W -n``, with ``myst_heading_anchors``) fails on a page or a heading that is gone; a
test holds that every exercise of every lab has an entry and that the guide's table is this one.
"""

from __future__ import annotations

from typing import NamedTuple

SITE = "https://transformer-course.github.io/transformer-course/"  # _config.yml html.baseurl


class Lesson(NamedTuple):
    """A lecture section: its page (``book/02-self-attention``), heading anchor and title."""

    page: str
    anchor: str  # myst_heading_anchors' slug of the heading ("" for the page's top)
    title: str

    def url(self, site: str = SITE) -> str:
        return f"{site}{self.page}.html" + (f"#{self.anchor}" if self.anchor else "")


def _l(page: str, anchor: str, title: str) -> Lesson:
    return Lesson(f"book/{page}", anchor, title)


_SA, _MH, _PE, _MK, _TB, _ED, _TK = (
    "02-self-attention",
    "04-multi-head-attention",
    "05-positional-encoding",
    "06-masking",
    "07-transformer-block",
    "08-encoder-decoder",
    "09-tokens-in-tokens-out",
)
_MB = "10-modern-block"
LESSONS: dict[str, dict[str, Lesson]] = {
    "00-warmup": {
        "test_relu": _l("guides/student", "work-through-a-lab", "Work through a lab"),
        "test_mean_squared_error": _l("guides/student", "read-a-failed-check", "Read a failed check"),
    },
    "01-rnn-limits": {
        "test_rnn_forward": _l("01-rnn-limits", "the-recurrence", "The recurrence"),
        "test_hidden_gradient_norms": _l(
            "01-rnn-limits", "vanishing-and-exploding-gradients", "Vanishing and exploding gradients"
        ),
        "test_receptive_field": _l(
            "01-rnn-limits", "path-length-between-two-positions", "Path length between two positions"
        ),
    },
    "02-self-attention": {
        "test_softmax": _l(_SA, "softmax-and-numerical-stability", "Softmax and numerical stability"),
        "test_single_query_attention": _l(_SA, "one-query-algorithm-3", "One query: Algorithm 3"),
        "test_scaled_dot_product_attention": _l(
            _SA, "all-queries-at-once-with-masks-algorithm-4", "All queries at once, with masks: Algorithm 4"
        ),
        "test_self_attention": _l(
            _SA, "queries-keys-and-values-from-one-sequence", "Queries, keys and values from one sequence"
        ),
    },
    "03-qk-low-rank": {
        "test_merged_qk": _l("03-qk-low-rank", "two-projections-one-matrix", "Two projections, one matrix"),
        "test_bilinear_scores": _l(
            "03-qk-low-rank", "the-form-need-not-be-symmetric", "The form need not be symmetric"
        ),
        "test_low_rank_factorize": _l(
            "03-qk-low-rank", "two-factorizations-and-many-more", "Two factorizations, and many more"
        ),
        "test_low_rank_error": _l("03-qk-low-rank", "error-against-rank", "Error against rank"),
    },
    "04-multi-head-attention": {
        "test_split_heads": _l(
            _MH, "heads-as-a-batch-axis-reshape-then-transpose", "Heads as a batch axis: reshape, then transpose"
        ),
        "test_merge_heads": _l(
            _MH, "heads-as-a-batch-axis-reshape-then-transpose", "Heads as a batch axis: reshape, then transpose"
        ),
        "test_mha": _l(_MH, "pytorchs-nnmultiheadattention", "PyTorch's nn.MultiheadAttention"),
    },
    "05-positional-encoding": {
        "test_sinusoidal_encoding": _l(_PE, "the-sinusoidal-encoding", "The sinusoidal encoding"),
        "test_rotation_matrix": _l(_PE, "a-shift-is-a-rotation", "A shift is a rotation"),
        "test_pe_similarity": _l(
            _PE, "dot-products-depend-only-on-the-offset", "Dot products depend only on the offset"
        ),
        "test_add_positions": _l(_PE, "adding-or-concatenating", "Adding or concatenating?"),
    },
    "06-masking": {
        "test_padding_mask": _l(_MK, "padding-masks", "Padding masks"),
        "test_causal_mask": _l(_MK, "causal-masks", "Causal masks"),
        "test_decoder_self_attention_mask": _l(
            _MK, "the-decoders-self-attention-mask", "The decoder's self-attention mask"
        ),
        "test_masked_attention": _l(_MK, "the-fully-masked-row", "The fully masked row"),
        "test_leaks_future": _l(_MK, "the-leak-test", "The leak test"),
    },
    "07-transformer-block": {
        "test_layer_norm": _l(_TB, "layernorm-by-hand", "LayerNorm by hand"),
        "test_positionwise_feed_forward": _l(
            _TB, "the-position-wise-feed-forward-network", "The position-wise feed-forward network"
        ),
        "test_encoder_layer": _l(_TB, "the-encoder-layer", "The encoder layer"),
        "test_decoder_layer": _l(_TB, "the-decoder-layer-and-cross-attention", "The decoder layer and cross-attention"),
    },
    "08-encoder-decoder": {
        "test_embeddings": _l(_ED, "embedding-and-unembedding", "Embedding and unembedding"),
        "test_encoder_decoder": _l(_ED, "the-encoder-decoder-algorithm", "The encoder-decoder algorithm"),
        "test_label_smoothed_loss": _l(
            _ED,
            "label-smoothing-a-kl-divergence-and-the-log0-trap",
            "Label smoothing, a KL divergence, and the log(0) trap",
        ),
        "test_noam_lr": _l(_ED, "the-warmup-schedule", "The warmup schedule"),
        "test_greedy_decode": _l(_ED, "greedy-decoding-one-token-at-a-time", "Greedy decoding, one token at a time"),
        "test_train_step": _l(_ED, "teacher-forcing-and-the-shift", "Teacher forcing and the shift"),
    },
    "09-tokens-in-tokens-out": {
        "test_count_pairs": _l(_TK, "byte-pair-encoding", "Byte-pair encoding"),
        "test_train_bpe": _l(
            _TK, "ids-ties-and-why-the-course-follows-the-library", "Ids, ties, and why the course follows the library"
        ),
        "test_encode": _l(
            _TK, "encoding-and-why-a-word-becomes-several-tokens", "Encoding, and why a word becomes several tokens"
        ),
        "test_decode": _l(_TK, "byte-level-every-string-comes-back", "Byte-level: every string comes back"),
        "test_beam_search": _l(_TK, "beam-search", "Beam search"),
        "test_filter_logits": _l(_TK, "sampling-temperature-top-k-top-p", "Sampling: temperature, top-k, top-p"),
        "test_decoder_only": _l(_TK, "decoder-only-next-token-training", "Decoder-only: next-token training"),
        "test_next_token_loss": _l(_TK, "decoder-only-next-token-training", "Decoder-only: next-token training"),
    },
    "10-modern-block": {
        "test_apply_rope": _l(_MB, "rotary-position-embeddings", "Rotary position embeddings"),
        "test_rms_norm": _l(_MB, "rmsnorm-and-swiglu", "RMSNorm and SwiGLU"),
        "test_swiglu": _l(_MB, "rmsnorm-and-swiglu", "RMSNorm and SwiGLU"),
        "test_attend_with_cache": _l(
            _MB,
            "grouped-query-attention-and-the-memory-of-the-kv-cache",
            "Grouped-query attention and the memory of the KV cache",
        ),
        "test_tiled_attention": _l(_MB, "attention-tile-by-tile", "Attention tile by tile"),
        "test_perplexity": _l(_MB, "perplexity-and-batched-generation", "Perplexity and batched generation"),
    },
}


def lesson(lab: str, exercise: str) -> Lesson | None:
    """The section that teaches ``exercise`` of ``lab`` (None for an exercise not mapped)."""
    return LESSONS.get(lab, {}).get(exercise)


def markdown_table(base: str = "../") -> str:
    """The mapping as a MyST table whose links the strict build checks (``base``: from the guide to book/)."""
    rows = ["| lab | exercise | taught in |", "| --- | --- | --- |"]
    for lab, exercises in LESSONS.items():
        for exercise, where in exercises.items():
            target = f"{base}{where.page.removeprefix('book/')}.md" + (f"#{where.anchor}" if where.anchor else "")
            rows.append(f"| {lab} | `{exercise}` | [{where.title}]({target}) |")
    return "\n".join(rows)

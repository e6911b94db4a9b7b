"""The named mistakes that the checks of several chapters share, by stable id: the words of
``variants``' constants for attention, multi-head attention, the encoder and decoder layers
and their dropout. Part of ``mistakes.NAMED`` (after its own entries, before chapter 10's),
kept here so that each module stays short."""

SHARED: dict[str, str] = {
    "attention/no-scale": "scores not scaled by 1/sqrt(Dh)",
    "attention/scale-by-dh": "scores divided by Dh instead of sqrt(Dh)",
    "attention/scale-by-d-model": "scores scaled by 1/sqrt(d_model) instead of 1/sqrt(Dh) (the head size)",
    "attention/softmax-over-queries": "softmax over the queries (dim -2) instead of over the keys (dim -1)",
    "attention/softmax-wrong-axis": "softmax over dim {} of the scores instead of over the keys (dim -1)",
    "attention/mask-after-softmax": "mask applied after the softmax: masked weights were zeroed but the rest no...",
    "attention/mask-inverted": "mask polarity inverted: in this course True means 'may attend'...",
    "attention/mask-filled-with-zero": "masked scores set to 0 instead of -inf, so masked keys still get weight",
    "attention/mask-filled-finite": "masked scores filled with a finite value such as -1e4 instead of -inf: masked...",
    "attention/nan-rows": "a fully masked row gives NaN (softmax of a row of -inf is 0/0): give it zero weights and...",
    "mha/no-out-proj": "output projection out_proj not applied",
    "mha/heads-without-transpose": "heads reshaped without the transpose (heads mixed with positions)",
    "layer/no-residual": "the residual connection is missing (x + sublayer(...) is needed around every sublayer)",
    "layer/post-norm-instead": "post-norm computed although norm_first=True",
    "layer/pre-norm-instead": "pre-norm computed although norm_first=False",
    "layer/batch-statistics": "statistics over the batch and positions (BatchNorm) instead of LayerNorm over each...",
    "layer/residual-after-norm": "in pre-norm the residual is added after the norm (h = norm(x); h + sublayer(h))...",
    "layer/src-mask-ignored": "the padding mask (src_mask) is ignored",
    "layer/tgt-mask-ignored": "the causal mask (tgt_mask) is ignored in self-attention",
    "layer/memory-mask-ignored": "the memory mask (memory_mask) is ignored in cross-attention",
    "layer/memory-in-last-residual": "the last residual adds the encoder output (memory) instead of the decoder's...",
    "layer/cross-kv-from-decoder": (
        "cross-attention takes its keys and values from the decoder (y) instead of the encoder output (memory)"
    ),
    "layer/cross-kv-from-decoder-tgt-mask": (
        "cross-attention takes its keys and values from the decoder (y) instead of the encoder output "
        "(memory), with the target mask"
    ),
    "layer/cross-memory-as-query": (
        "the encoder output is the query of cross-attention (and the decoder state its value); queries come"
        " from the decoder, keys and values from memory"
    ),
    "layer/cross-roles-swapped": (
        "the encoder output is the query of cross-attention and the decoder gives the keys and values: the"
        " roles are swapped"
    ),
    "layer/cross-without-mask": "with no mask: cross-attention needs memory_mask too, so that no query attends to...",
    "dropout/no-dropout": "no dropout at all in training mode (nn.Dropout acts only while the module is training...",
    "dropout/no-attention-dropout": "dropout missing on the attention weights: build the attention as...",
    "dropout/no-cross-attention-dropout": "dropout missing on the cross-attention weights: build cross_attn as...",
    "dropout/no-ffn-dropout": "no dropout on the feed-forward hidden units: build the FFN as...",
    "dropout/no-sublayer-dropout": "no dropout on the sublayer output: each sublayer's output is dropped before the...",
    "dropout/after-residual": "dropout after the residual add, dropout(x + sublayer(x)), which drops the residual...",
    "dropout/after-norm": "dropout after the norm, dropout(norm(x + sublayer(x))): it goes inside, on sublayer(x)",
    "dropout/on-sublayer-input": "dropout on the sublayer's input instead of its output",
    "positionwise-feed-forward/no-dropout": "dropout is not applied to the hidden units: store nn.Dropout(dropout)...",
    "positionwise-feed-forward/dropout-at-output": "dropout after the second linear layer instead of on the hidden...",
    "positionwise-feed-forward/dropout-on-input": "dropout on the FFN's input instead of its hidden units (between...",
}

"""The stable id of every mistake a check names: ``<exercise-or-topic>/<mistake>``.

A check names a mistake in words (``expect.fail(..., mistake=...)``, the keys of
``expect_close(..., mistakes={...})``, the constants of ``variants``); the words may be
reworded, the id stays. ``mistake_id`` finds the id of the words a failure names, and
``expect.fail`` gives it to the ``CheckFailed`` it raises (``mistake_id``, beside a message that
does not show it). A refusal by a sentinel is ``forbidden/<exercise>``; a failure that names no
mistake is ``unnamed``. The grader records the ids (``verdicts.json``) for the class report.

Each entry is ``id: the mistake's words``: the words as the check writes them, or their start
followed by ``...`` where they are longer than a line; ``{}`` stands for a part that varies.
The registry is plain data (the words of ``variants``' constants are written here again):
``tests/checks/kit/test_mistakes.py`` holds that every mistake the checks name has its id, that
every id is well formed, and (with the tests of the checks) that each is raised by a wrong answer.
"""

from __future__ import annotations

import functools
import re

from autograder.checks.kit.failures import UNNAMED
from autograder.checks.kit.forbidden_ids import FORBIDDEN
from autograder.checks.kit.mistakes_modern import MODERN
from autograder.checks.kit.mistakes_shared import SHARED

ID = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*/[a-z0-9]+(-[a-z0-9]+)*")

NAMED: dict[str, str] = {
    "relu/in-place": "an in-place operation on the input (x[x < 0] = 0 or x.clamp_(...))",
    "relu/kept-negatives": "kept the negative values and zeroed the positive ones",
    "relu/absolute-value": "returned the absolute value",
    "relu/returned-mask": "returned the 0/1 mask (x > 0) instead of the values",
    "mean-squared-error/summed": "summed the squared errors instead of averaging them",
    "mean-squared-error/not-squared": "did not square the differences",
    "mean-squared-error/absolute-error": "averaged the absolute differences (that is the mean absolute error)",
    "mean-squared-error/square-root": "took the square root (that is the root mean squared error)",
    "mean-squared-error/last-axis-only": "averaged over the last axis only, not over every element",
    "mean-squared-error/one-axis-only": "averaged over dim {} only, not over every element (the result is one number)",
    "receptive-field/k-times-n": "k * n: the layers overlap, each adds only k - 1 new positions",
    "receptive-field/one-too-few": "off by one: n (k - 1) forgets the output position itself",
    "receptive-field/one-too-many": "off by one: one position too many",
    "receptive-field/k-to-the-n": "k ** n: that is the growth with dilations multiplied by k at each layer, not of...",
    "rnn-forward/no-tanh": "no tanh: the hidden state must go through h_t = tanh(...)",
    "rnn-forward/weights-swapped": "x_t and h_{t-1} multiplied by each other's weights (W_xh and W_hh swapped)",
    "rnn-forward/w-hh-transposed": "h_{t-1} @ W_hh.T instead of h_{t-1} @ W_hh (nn.RNN stores its weights transposed)",
    "rnn-forward/no-bias": "the bias b is left out",
    "rnn-forward/outputs-include-h0": "outputs include h0 as well (L + 1 states): return h_1 .. h_L only",
    "rnn-forward/outputs-shifted": "outputs shifted by one step: they start with h0 and miss h_L",
    "rnn-forward/outputs-not-batch-first": "the outputs are not stacked along dim 1 (batch first: (B, L, H))",
    "rnn-forward/last-is-first-state": "returns the first hidden state h_1 instead of the last, h_L",
    "rnn-forward/last-is-h0": "returns the initial state h0 instead of the last, h_L",
    "hidden-gradient-norms/reversed-in-time": "the norms are reversed in time: result[t-1] must be the norm for h_t...",
    "hidden-gradient-norms/from-the-start": "norms of d h_t / d h_1 (how h_t depends on the start) instead of d h_L...",
    "hidden-gradient-norms/wrong-order": "the one-step Jacobians are multiplied in the wrong order: d h_L / d h_t =...",
    "hidden-gradient-norms/no-tanh-derivative": "the tanh derivative diag(1 - h^2) is left out of the one-step...",
    "hidden-gradient-norms/w-hh-not-transposed": "the one-step Jacobian uses W_hh where it needs W_hh.T (h_{t+1} =...",
    "hidden-gradient-norms/gradient-not-jacobian": "norms of the gradient of sum(h_L), a vector, instead of the...",
    "softmax/nan-rows": "a row of -inf gives NaN (its maximum is -inf and -inf - (-inf) is NaN): it must give zeros...",
    "softmax/wrong-axis": "normalised over dim {} instead of dim {}",
    "softmax/not-normalised": "exp(x) not divided by its sum",
    "softmax/no-max-shift": "the maximum is not subtracted first, so exp overflows to inf and inf/inf gives NaN",
    "self-attention/queries-keys-swapped": "queries and keys swapped (x @ W_k as queries): the weights come out...",
    "self-attention/scale-by-d-model": "scores divided by sqrt(D), the model width, instead of sqrt(Dh), the width...",
    "self-attention/values-not-projected": "the values are not projected: weights @ x instead of weights @ (x @ W_v)",
    "attention/output-from-keys": "output computed from the keys instead of the values",
    "attention/weights-output-swapped": "weights and output swapped: return (output, weights)",
    "single-query-attention/returns-weights": "returns the attention weights (Lk,) instead of the weighted sum of...",
    "single-query-attention/no-softmax": "no softmax: the raw scores weight the values",
    "single-query-attention/keys-summed": "the keys are summed instead of the values",
    "low-rank-factorize/b-transposed": "B transposed (B is V_k, of shape (D, k); torch.linalg.svd returns V^T)",
    "low-rank-factorize/smallest-kept": "kept the smallest singular values instead of the largest",
    "low-rank-factorize/no-singular-values": "singular values left out (A = U_k, B = V_k)",
    "low-rank-factorize/singular-values-twice": "singular values in both factors (A = U_k S_k and B = V_k S_k)",
    "low-rank-factorize/columns-of-vh": "B taken from the columns of V^T instead of its rows (torch.linalg.svd...",
    "low-rank-factorize/rank-plus-one": "off by one in the rank (kept k + 1 singular values)",
    "low-rank-factorize/rank-minus-one": "off by one in the rank (kept k - 1 singular values)",
    "merged-qk/wq-t-wk": "W_q.T @ W_k: a (Dh, Dh) matrix (summed over the D features), not the (D, D) form",
    "merged-qk/swapped": "W_k @ W_q.T: queries and keys swapped, which transposes W (scores[i, j] would become...",
    "merged-qk/no-key-projection": "W_q @ W_q.T: the key projection is not used",
    "bilinear-scores/no-scale": "scale not applied",
    "bilinear-scores/divided-by-scale": "divided by scale instead of multiplying by it (scale is a multiplier, e.g....",
    "bilinear-scores/w-transposed": "x @ W.T @ x.T: W transposed, so scores[i, j] became scores[j, i]",
    "bilinear-scores/x-transposed": "x.T @ W @ x instead of x @ W @ x.T (the rows of x are the positions)",
    "low-rank-error/no-square-root": "no square root (that is the squared error)",
    "low-rank-error/sum-not-root-of-squares": "sum of the dropped singular values, not the root of the sum of their...",
    "low-rank-error/kept-values": "sum of the kept singular values instead of the dropped ones",
    "low-rank-error/norm-of-approximation": "norm of the kept part (the approximation) instead of the residual",
    "low-rank-error/spectral-norm": "the largest dropped singular value alone (that is the spectral-norm error, not...",
    "low-rank-error/rank-plus-one": "off by one in the rank (dropped from index k + 1)",
    "low-rank-error/rank-minus-one": "off by one in the rank (dropped from index k - 1)",
    "split-heads/no-transpose-shape": "transpose(1, 2) missing: the shape is still (B, L, H, Dh)",
    "split-heads/not-split": "heads not split off: (B, L, D) returned",
    "split-heads/no-transpose": "reshaped straight to (B, H, L, Dh) without the transpose, which mixes heads with...",
    "split-heads/features-dealt-out": "features dealt out to the heads in turn (view(B, L, Dh, H)) instead of...",
    "merge-heads/not-concatenated": "the heads were not concatenated: (B, L, H, Dh) returned",
    "merge-heads/merged-with-positions": "heads merged with positions: (B, H * L, Dh)",
    "merge-heads/no-transpose": "merged without the transpose: reshape(B, L, D) straight from (B, H, L, Dh) mixes...",
    "merge-heads/features-interleaved": "features interleaved across heads (permute(0, 2, 3, 1)) instead of...",
    "sinusoidal-encoding/sin-cos-swapped": "sin and cos swapped (sin belongs in the even columns 2i, cos in the odd...",
    "sinusoidal-encoding/exponent-halved": "frequency exponent 2i/D written as i/D (a factor of two)",
    "sinusoidal-encoding/exponent-doubled": "frequency exponent uses the column index 2i where the formula has i...",
    "sinusoidal-encoding/concatenated": "sin in the first half of the columns and cos in the second half...",
    "sinusoidal-encoding/positions-from-one": "positions counted from 1 instead of 0",
    "rotation-matrix/sin-cos-swapped": "sin and cos swapped in the 2x2 block",
    "rotation-matrix/transposed": "block transposed (rotates backwards: R(-k))",
    "pe-similarity/columns": "pe.T @ pe: dot products of columns (dimensions) instead of rows (positions)",
    "pe-similarity/cosine": "cosine similarities (divided by the norms) instead of plain dot products",
    "pe-similarity/distances": "distances instead of dot products",
    "add-positions/not-scaled": "embeddings not multiplied by sqrt(D)",
    "add-positions/divided": "embeddings divided by sqrt(D) instead of multiplied",
    "add-positions/scaled-by-d": "embeddings multiplied by D instead of sqrt(D)",
    "add-positions/sum-scaled": "the sum scaled by sqrt(D): the encoding must not be scaled",
    "add-positions/whole-table": "the whole table added instead of its first L rows",
    "sinusoidal-encoding/transposed": "(D, L) instead of (L, D): rows are positions",
    "padding-mask/no-broadcast-axes": "(B, L): add the two broadcast axes, (B, 1, 1, L), so the mask broadcasts...",
    "padding-mask/one-axis-short": "(B, 1, L): one axis short of (B, 1, 1, L)",
    "padding-mask/along-queries": "(B, 1, L, 1): a padding mask runs along the keys (the last axis), not the queries",
    "padding-mask/polarity-inverted": "polarity inverted: True marks padding, but True must mean 'may attend'",
    "padding-mask/compares-with-zero": "the mask compares with 0 instead of pad_id",
    "causal-mask/polarity-inverted": "polarity inverted: True marks the future, but True must mean 'may attend'",
    "causal-mask/diagonal-blocked": "diagonal blocked: a position must be able to attend to itself (j <= i, not j < i)",
    "causal-mask/transposed": "transposed (upper triangle): rows are queries, so row i may attend to columns j <= i",
    "decoder-self-attention-mask/causal-only-shape": "(T, T): the causal mask alone, without the target padding",
    "decoder-self-attention-mask/no-head-axis": "(B, T, T): keep the head axis, (B, 1, T, T)",
    "decoder-self-attention-mask/padding-ignored": "target padding ignored (the causal mask alone)",
    "decoder-self-attention-mask/causal-missing": "causal mask missing (the padding mask alone)",
    "decoder-self-attention-mask/or-not-and": "padding OR causal: a position must pass both masks (AND)",
    "decoder-self-attention-mask/padding-on-queries": "padding applied to the queries (rows) instead of the keys...",
    "decoder-self-attention-mask/diagonal-blocked": "diagonal blocked in the causal part",
    "decoder-self-attention-mask/polarity-inverted": "polarity inverted: True must mean 'may attend'",
    "layer/cross-kv-from-decoder-no-mask": (
        "cross-attention takes its keys and values from the decoder (y) instead of the encoder output "
        "(memory), with no mask: cross-attention needs memory_mask too, so that no query attends to the"
        " source's padding"
    ),
    "layer/cross-memory-as-query-no-mask": (
        "the encoder output is the query of cross-attention (and the decoder state its value); queries come"
        " from the decoder, keys and values from memory, with no mask: cross-attention needs memory_mask too,"
        " so that no query attends to the source's padding"
    ),
    "layer/cross-roles-swapped-no-mask": (
        "the encoder output is the query of cross-attention and the decoder gives the keys and values: the"
        " roles are swapped, with no mask: cross-attention needs memory_mask too, so that no query attends to"
        " the source's padding"
    ),
    "layer-norm/unbiased-variance": "unbiased variance (divided by D - 1, as torch.var and torch.std do by default)...",
    "layer-norm/eps-outside-root": "eps outside the square root, (x - mean) / (sqrt(var) + eps); it belongs inside...",
    "layer-norm/batch-statistics": "statistics over the batch axis (BatchNorm): LayerNorm normalises each position...",
    "layer-norm/wrong-axis": "mean and variance over dim {} instead of over the last, each position's D features...",
    "layer-norm/no-eps": "eps left out, so a constant row gives 0 / 0 = NaN",
    "layer-norm/mean-not-subtracted": "the mean is not subtracted",
    "layer-norm/divided-by-variance": "divided by the variance instead of the standard deviation",
    "layer-norm/no-weight-bias": "weight and bias not applied",
    "layer-norm/weight-bias-swapped": "weight and bias swapped",
    "positionwise-feed-forward/no-relu": "no ReLU between the two linear layers",
    "positionwise-feed-forward/relu-twice": "ReLU after the second linear layer as well",
    "positionwise-feed-forward/relu-after-second": "ReLU after the second linear layer instead of after the first",
    "greedy-decode/rows-not-stopped": "rows not stopped per sequence: a row continues after its EOS instead of...",
    "greedy-decode/never-stops-early": "the loop does not stop once every row has produced EOS (it always runs...",
    "greedy-decode/stops-at-first-eos": "the whole batch stops at the first EOS of any row",
    "greedy-decode/no-bos": "the output does not start with BOS",
    "greedy-decode/one-token-short": "off by one: max_len - 1 tokens generated",
    "greedy-decode/one-token-too-many": "off by one: max_len + 1 tokens generated",
    "greedy-decode/training-mode": "the model decoded in training mode (dropout active): call model.eval() first",
    "encoder-decoder/tie-embeddings-ignored": "config.tie_embeddings ignored",
    "encoder-decoder/embeddings-not-scaled": "embeddings not scaled by sqrt(d_model)",
    "encoder-decoder/no-positions": "positional encodings not added",
    "encoder-decoder/positions-twice": "positional encodings added twice",
    "encoder-decoder/no-encoder-padding-mask": "source padding mask not used in the encoder's self-attention",
    "encoder-decoder/no-causal-mask": "no causal mask in the decoder's self-attention (it sees the future)",
    "encoder-decoder/no-target-padding-mask": "target padding not masked in the decoder's self-attention (causal...",
    "encoder-decoder/no-cross-padding-mask": "source padding mask not used in cross-attention",
    "encoder-decoder/no-embedding-dropout": "no dropout on embeddings + positions: embed returns dropout(...",
    "encoder-decoder/dropout-before-positions": "dropout on the embeddings before the positions are added...",
    "encoder-decoder/stacks-without-dropout": "config.dropout not passed on to the encoder and decoder stacks",
    "embeddings/divided": "divided by sqrt(d_model) instead of multiplied",
    "embeddings/scaled-by-d-model": "scaled by d_model instead of sqrt(d_model)",
    "embeddings/positions-inside": "positional encodings added inside Embeddings (the model adds them afterwards...",
    "embeddings/positions-not-scaled": "positional encodings added and the lookup not scaled",
    "train-step/no-shift": "no teacher-forcing shift: the input must be tgt[:, :-1] and the target tgt[:, 1:]",
    "train-step/padding-counted": "padding counted in the loss (average over non-pad target tokens only)",
    "train-step/no-smoothing": "no label smoothing",
    "train-step/no-zero-grad": "optimizer.zero_grad() not called: gradients accumulate across calls",
    "train-step/no-scheduler-step": "scheduler.step() not called after optimizer.step()",
    "train-step/scheduler-before-optimizer": "scheduler.step() called before optimizer.step()",
    "train-step/no-clipping": "gradients not clipped to norm 1.0",
    "train-step/no-optimizer-step": "optimizer.step() not called",
    "label-smoothed-loss/padding-counted": "padding counted in the mean (average over non-pad target tokens only)",
    "label-smoothed-loss/padding-losses-counted": "padding positions' losses counted in the mean",
    "label-smoothed-loss/mass-on-padding": "smoothing mass given to the padding token (it must get 0; the other V -...",
    "label-smoothed-loss/over-v-minus-1": "smoothing / (V - 1) instead of smoothing / (V - 2) (padding and the true...",
    "label-smoothed-loss/pytorch-convention": "PyTorch's convention (smoothing / V on every token, the true one and...",
    "label-smoothed-loss/no-smoothing": "no label smoothing (plain cross-entropy)",
    "label-smoothed-loss/summed": "summed over tokens instead of averaged",
    "label-smoothed-loss/per-token": "per-token losses returned, not averaged",
    "label-smoothed-loss/kl-divergence": "the KL divergence returned instead of the cross-entropy (they differ by...",
    "label-smoothed-loss/log-of-zero": "log of zero: 0 * log(0) of the padding column's zero probability gives NaN...",
    "label-smoothed-loss/log-softmax-underflow": "log of zero: log(softmax(x)) underflows to log(0) = -inf for...",
    "loss/log-softmax-wrong-axis": "log_softmax over dim {} instead of over the vocabulary (dim -1)",
    "noam-lr/steps-from-zero": "steps counted from 0 (off by one: step n computed as step n + 1)",
    "noam-lr/warmup-plus-one": "warmup off by one (the peak at warmup + 1)",
    "noam-lr/warmup-minus-one": "warmup off by one (the peak at warmup - 1)",
    "noam-lr/no-d-model-factor": "missing the d_model ** -0.5 factor",
    "noam-lr/d-model-sign": "d_model ** 0.5 instead of d_model ** -0.5",
    "noam-lr/warmup-exponent": "warmup ** -0.5 instead of warmup ** -1.5",
    "noam-lr/max-not-min": "max instead of min",
    "beam-search/not-length-normalised": "hypotheses ranked by the plain sum of log-probabilities: the final choice...",
    "beam-search/divided-by-length": "scores divided by the length |y| instead of GNMT's ((5 + |y|) / 6) ** alpha",
    "beam-search/finished-extended": "finished beams still extended: after EOS a hypothesis must keep its score...",
    "beam-search/rows-mixed": "beams of different source rows mixed: the memory was tiled with repeat() while the...",
    "beam-search/raw-logits": "raw logits summed instead of log-probabilities (apply log_softmax first)",
    "beam-search/zero-start": "all k beams start with score 0, so the first step fills the beam with k copies of...",
    "beam-search/no-padding-after-eos": "tokens after a hypothesis's EOS not replaced by pad_id (a finished...",
    "beam-search/training-mode": "the model searched in training mode (dropout active): call model.eval() first",
    "filter-logits/nucleus-too-small": "the nucleus stops before the token that crosses top_p (keep a token while...",
    "filter-logits/sorted-order-mask": "the keep-mask of top-p left in sorted order: map it back to vocabulary...",
    "filter-logits/ascending-sort": "top-p computed on probabilities sorted in ascending order (the least likely...",
    "filter-logits/top-p-before-top-k": "top-p computed on the distribution before top-k (renormalise after top-k...",
    "filter-logits/top-k-minus-one": "top_k - 1 tokens kept",
    "filter-logits/top-k-plus-one": "top_k + 1 tokens kept",
    "filter-logits/smallest-kept": "the k smallest logits kept instead of the k largest",
    "filter-logits/filled-with-zero": "filtered logits set to 0 instead of -inf (they keep probability)",
    "filter-logits/returns-probabilities": "probabilities returned instead of filtered logits",
    "next-token-loss/not-shifted": "targets not shifted: position t scored on token t (score logits[:, :-1] against...",
    "next-token-loss/shifted-wrong-way": "shifted the wrong way: logits[:, 1:] scored against tokens[:, :-1]",
    "next-token-loss/padding-counted": "padding counted in the mean (divide by the number of non-pad targets)",
    "next-token-loss/averaged-per-row": "averaged per row, then over the rows: every non-pad target of the batch...",
    "next-token-loss/log-softmax-underflow": "log of softmax underflows to log(0) = -inf for large logits: use...",
    "decoder-only/no-causal-mask": "no causal mask: every position sees the tokens after it (use causal AND padding)",
    "decoder-only/no-padding-mask": "padding not masked (causal mask only)",
    "train-bpe/ties-first-seen": "ties broken by the first pair seen (max() over a dict keeps the first of equal...",
    "train-bpe/ties-by-string": "ties broken by comparing the token strings; tokenizers compares ids (a merged...",
    "train-bpe/ties-largest-bytes": "ties broken by the larger byte string (CS336's rule); tokenizers takes the...",
    "train-bpe/across-words": "pairs counted across word boundaries (the text not pre-tokenized): use pre_tokenize...",
    "train-bpe/str-split": "text split with str.split(): the spaces are lost; pre_tokenize keeps a word's leading...",
    "train-bpe/not-byte-level": "words not written in the byte-level alphabet: use pre_tokenize (a space is 'Ġ'...",
    "train-bpe/counts-not-weighted": "pair counts not weighted by how often each word occurs",
    "train-bpe/specials-not-counted": "the special tokens not counted in vocab_size",
    "train-bpe/bytes-not-counted": "the 256 byte tokens not counted in vocab_size",
    "train-bpe/vocab-size-as-merges": "vocab_size taken as the number of merges",
    "train-bpe/one-merge-too-many": "one merge too many",
    "train-bpe/one-merge-too-few": "one merge too few",
    "train-bpe/merged-past-vocab-size": "merged until no pair was left, past vocab_size...",
    "encode/merges-in-text-order": "merges applied in the order of the text (leftmost pair first) instead of by...",
    "encode/special-tokens-not-split": "special tokens not split out first: '<pad>' must become its own id, never...",
    "encode/not-pre-tokenized": "the text not cut into words (pre_tokenize) before merging",
    "decode/not-mapped-to-bytes": "characters not mapped back to bytes (the text still shows 'Ġ' for spaces)",
    "decode/token-by-token": "each token decoded on its own: a character split across tokens turns into U+FFFD...",
    "decode/errors-ignore": "errors='ignore' drops bytes that are not valid UTF-8; tokenizers writes U+FFFD...",
    "decode/special-tokens-dropped": "special tokens dropped: decode keeps them (decode(encode(s)) == s)",
    "count-pairs/across-words": "pairs counted across word boundaries: count inside each word only",
    "count-pairs/not-weighted": "counts not weighted by how often the word occurs (add the word's count, not 1)",
    "count-pairs/overlaps-skipped": "overlapping windows skipped ('bbb' holds ('b', 'b') twice; str.count skips...",
    "count-pairs/string-keys": "pairs written as one string: a merge must know where its left part ends",
    "decode/strict-utf8": "bytes.decode('utf-8') without errors='replace': a sequence cut inside a character must...",
    "loss/detached": "the loss detached from the graph (.item(), .detach(), torch.tensor(...) or numpy inside)",
}

NAMED.update(SHARED)  # the words of variants' shared constants, in a module of their own
NAMED.update(MODERN)  # chapter 10's, in a module of their own
MISTAKES: dict[str, str] = {**NAMED, **FORBIDDEN}  # every id a check raises, but "unnamed"


# What a report shows beside an id: the registered words where they read on their own; here, in
# this one place, a short description of each id whose words vary ({}), and of "unnamed".
DESCRIBED: dict[str, str] = {
    "mean-squared-error/one-axis-only": "averaged over one axis only, not over every element",
    "softmax/wrong-axis": "normalised over another axis than the one asked for (dim)",
    "layer-norm/wrong-axis": "mean and variance over another axis than each position's D features (the last)",
    "loss/log-softmax-wrong-axis": "log_softmax over another axis than the vocabulary (the last)",
    "attention/softmax-wrong-axis": "softmax over a batch or head axis of the scores instead of over the keys",
    UNNAMED: "a failure no check names: an error raised in the answer, or a result no known mistake explains",
}


def describe(mistake: str) -> str:
    """``mistake`` (an id, or "unnamed") in words for a report: ``DESCRIBED``'s, or the registered
    words (a cut entry ends with an ellipsis); an id this version does not know says so."""
    words = DESCRIBED.get(mistake) or MISTAKES.get(mistake, "a mistake this version of the checks does not know")
    return words.removesuffix("...") + ("…" if words.endswith("...") else "")


@functools.cache
def _patterns() -> list[tuple[int, re.Pattern[str], str]]:
    """(length of the words, pattern, id), the longest words first: the most precise wins."""
    out = []
    for mistake, words in NAMED.items():
        prefix = words.endswith("...")
        parts = [re.escape(p) for p in words.removesuffix("...").split("{}")]
        out.append((len(words), re.compile(".+?".join(parts) + ("" if prefix else r"\Z"), re.DOTALL), mistake))
    return sorted(out, key=lambda row: -row[0])


def mistake_id(words: str | None) -> str:
    """The id of the mistake these words name; ``"unnamed"`` for none, or for words not listed."""
    if not words:
        return UNNAMED
    return next((mistake for _, pattern, mistake in _patterns() if pattern.match(words)), UNNAMED)


def id_in_message(message: str) -> str:
    """The id of the mistake a check's message names on its ``likely mistake:`` line."""
    for line in message.splitlines():
        if line.strip().startswith("likely mistake:"):
            return mistake_id(line.strip().removeprefix("likely mistake:").strip())
    return UNNAMED

"""The memory case of lab 10's tiled attention (chapter 10): the largest tensor the answer creates,
measured where the answer runs (``core.beside``), against the size of the whole score matrix; the
rest of the check is ``tiles_and_perplexity``.

Shape letters: Lq queries, Lk keys, Dh head width.
"""

from __future__ import annotations

from torch import Tensor
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

from autograder.checks.kit.core import beside, random_tensor
from autograder.checks.kit.expect import describe, expect_close, fail
from autograder.checks.kit.failures import CheckFailed
from autograder.checks.kit.sentinels import forbidden
from autograder.reference import tiled

_WHOLE_MATRIX = (
    "the whole Lq x Lk score matrix built at once (the tiles ignored): hold only one tile of scores, "
    "(..., Lq, tile), at a time, and fold it into the running maximum, sum and weighted sum"
)


class _LargestTensor(TorchFunctionMode):
    """Records the largest storage (in elements) of any tensor a torch function, method or operator
    returns while it is active. (A ``TorchDispatchMode`` would see every kernel, but its first use
    imports ``torch._dynamo``, four seconds on a CPU; this mode sees what the answer's code calls.)"""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0
        self.shape: tuple[int, ...] = ()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, Tensor):
                try:  # a view shares its base's storage, so expanding a tensor costs nothing
                    size = t.untyped_storage().nbytes() // max(t.element_size(), 1)
                except (RuntimeError, NotImplementedError):  # a tensor without storage holds no memory
                    continue
                if size > self.largest:
                    self.largest, self.shape = size, tuple(t.shape)
        return out


def _tiled_largest(tiled_attention, q: Tensor, k: Tensor, v: Tensor, tile: int) -> dict:
    """The candidate's side of the memory case (run where the candidate lives, see ``core.beside``):
    its output and the largest tensor, in elements, that any operation created during the call,
    or the error that stopped it."""
    mode = _LargestTensor()
    try:
        with mode:
            out = tiled_attention(q, k, v, None, tile)
    except (NotImplementedError, CheckFailed):
        raise
    except Exception as err:  # reported by the check as the student's error
        return {"error": f"{type(err).__name__}: {err}"}
    return {"output": out if isinstance(out, Tensor) else None, "largest": mode.largest, "shape": list(mode.shape)}


def tiles_held_in_memory(tiled_attention, seed: int, refused: list[str], instead: str) -> None:
    """At Lq = Lk = 256 and tile = 16 a tile of scores holds 256 x 16 = 4,096 numbers, the whole
    matrix 65,536: an answer that creates a tensor of more than half the matrix did not tile. With
    Dh = 4, a tile's scores built by broadcasting q against the tile's keys (256 x 16 x 4 = 16,384)
    stay far below it."""
    __tracebackhide__ = True
    shape, tile = (1, 1, 256, 4), 16
    q, k, v = (random_tensor(shape, seed * 10 + 50 + j) for j in range(3))
    what = (
        f"tiled_attention(q, k, v {shape} float32, no mask, tile={tile}) (seed {seed}): the largest tensor it creates"
    )
    whole = shape[0] * shape[1] * shape[2] * shape[2]
    with forbidden(tiled_attention, refused, instead):
        result = beside(tiled_attention, _tiled_largest, q.clone(), k.clone(), v.clone(), tile)
    if not isinstance(result, dict) or "error" in result:
        error = result.get("error") if isinstance(result, dict) else describe(result)
        fail(what, "a result", str(error), hint="read the error above: it was raised inside your code.")
    found = result.get("output")
    if isinstance(found, Tensor):
        expect_close(what, found, tiled.tiled_attention(q, k, v, None, tile), atol=1e-5, rtol=1e-4)
    largest = int(result.get("largest", 0))
    if largest * 2 > whole:
        fail(
            what,
            f"no tensor near the {shape[2]} x {shape[2]} = {whole:,} scores: one tile of them is "
            f"{shape[2]} x {tile} = {shape[2] * tile:,} numbers",
            f"a tensor of {largest:,} numbers (shape {tuple(result.get('shape') or ())})",
            _WHOLE_MATRIX,
            hint="loop over the keys in steps of tile: s = q @ k[..., j:j + tile, :].transpose(-2, -1) / sqrt(Dh).",
        )

"""PyTorch's ops refused where PyTorch dispatches them: the same op by any Python road.

``forbidden`` refuses a PyTorch function by its Python names and, for a built-in, where
PyTorch dispatches Python calls (a ``TorchFunctionMode``). Below that, ``torch.ops.aten.relu``
and ``torch._C._nn.mse_loss`` reach the same kernel with no Python name in between. While the
candidate runs, a ``TorchDispatchMode`` therefore refuses the ATen operations that only a
forbidden function produces: each target of a check's ``forbidden(...)`` list that is PyTorch's
is written down below, either with the operations refused for it (``REFUSED_OPS``) or with the
reason its refusal stays at the Python level (``PYTHON_LEVEL``): its operations are ones a valid
answer produces too (the ops PyTorch dispatches after decomposing it, seen on CPU in float32
and float64). A test keeps every ``torch.`` target of the checks in one of the two tables.

An operation refused here is one no valid answer of the exercise produces, in its forward
pass or its backward pass (a backward op is only ever run after its forward op), so the mode
costs a valid answer nothing but time while it runs. The reference's own functions are
refused at the Python level (``sentinels``, ``clones``), as they are Python.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_RELU = ("relu", "relu_")
_CLAMP = ("clamp", "clamp_", "clamp_min", "clamp_min_")  # torch.clip decomposes into clamp
_SOFTMAX = ("_softmax",)  # softmax.int and special_softmax decompose into _softmax
_LOG_SOFTMAX = ("_log_softmax",)
# F.scaled_dot_product_attention picks a fused kernel, or its math path whose softmax is _safe_softmax.
_SDPA = (
    "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention",
    "_scaled_dot_product_fused_attention_overrideable",
    "_safe_softmax",
)
_MHA_FAST = ("_native_multi_head_attention",)  # nn.MultiheadAttention's fast path (eval, no grad)
_ENCODER_FAST = ("_transformer_encoder_layer_fwd", "_nested_tensor_from_mask")  # nn.TransformerEncoder's
_LAYER_NORM = ("native_layer_norm",)  # layer_norm decomposes into native_layer_norm
_BATCH_NORM = (
    "native_batch_norm",
    "_native_batch_norm_legit",
    "_native_batch_norm_legit_no_training",
    "_native_batch_norm_legit_functional",
    "_batch_norm_with_update",
    "_batch_norm_no_update",
    "cudnn_batch_norm",
    "miopen_batch_norm",
)  # instance_norm decomposes into batch norm

REFUSED_OPS: dict[str, tuple[str, ...]] = {
    # chapter 0: relu built with torch.where, a comparison and a product; the MSE from a square and a mean
    "torch.relu": _RELU,
    "torch.relu_": _RELU,
    "torch.nn.functional.relu": _RELU,
    "torch.nn.functional.relu_": _RELU,
    "torch.Tensor.relu": _RELU,
    "torch.Tensor.relu_": _RELU,
    "torch.nn.ReLU.forward": _RELU,
    "torch.clamp": _CLAMP,
    "torch.clip": _CLAMP,
    "torch.Tensor.clamp": _CLAMP,
    "torch.Tensor.clip": _CLAMP,
    "torch.clamp_min": _CLAMP,
    "torch.Tensor.clamp_min": _CLAMP,
    "torch.nn.functional.mse_loss": ("mse_loss",),
    "torch.nn.MSELoss.forward": ("mse_loss",),
    # chapter 2: softmax from exp, a maximum and a sum; attention from matrix products
    "torch.softmax": _SOFTMAX,
    "torch.nn.functional.softmax": _SOFTMAX,
    "torch.Tensor.softmax": _SOFTMAX,
    "torch.special.softmax": _SOFTMAX,
    "torch.log_softmax": _LOG_SOFTMAX,
    "torch.nn.functional.log_softmax": _LOG_SOFTMAX,
    "torch.Tensor.log_softmax": _LOG_SOFTMAX,
    "torch.nn.functional.scaled_dot_product_attention": _SDPA,
    # chapters 2, 4, 6: only the fast path is nn.MultiheadAttention's own (its slow path is linear,
    # bmm, softmax, and scaled_dot_product_attention, refused where that is forbidden too)
    "torch.nn.MultiheadAttention.forward": _MHA_FAST,
    "torch.nn.functional.multi_head_attention_forward": _MHA_FAST,
    # chapter 7: layer_norm from a mean and a biased variance; the other norms reduce to it
    "torch.nn.functional.layer_norm": _LAYER_NORM,
    "torch.layer_norm": _LAYER_NORM,
    "torch.native_layer_norm": _LAYER_NORM,
    "torch.nn.LayerNorm.forward": _LAYER_NORM,
    "torch.nn.functional.group_norm": ("native_group_norm",),
    "torch.group_norm": ("native_group_norm",),
    "torch.nn.functional.instance_norm": _BATCH_NORM,
    "torch.instance_norm": _BATCH_NORM,
    "torch.nn.functional.batch_norm": _BATCH_NORM,
    "torch.batch_norm": _BATCH_NORM,
    "torch.native_batch_norm": _BATCH_NORM,
    # chapters 7 and 9: the encoder layer's fused kernel (its slow path is the layer's own parts)
    "torch._transformer_encoder_layer_fwd": _ENCODER_FAST,
    "torch.nn.TransformerEncoderLayer.forward": _ENCODER_FAST,
    "torch.nn.TransformerEncoder.forward": _ENCODER_FAST,
}

_DECOMPOSES = "it decomposes into operations a valid answer uses"
PYTHON_LEVEL: dict[str, str] = {
    "torch.nn.RNN.forward": f"{_DECOMPOSES} (addmm, tanh: the loop the exercise asks for)",
    "torch.nn.RNNCell.forward": f"{_DECOMPOSES} (addmm, tanh)",
    "torch.rnn_tanh": f"{_DECOMPOSES} (addmm, tanh)",
    "torch.rnn_tanh_cell": f"{_DECOMPOSES} (mm, add, tanh)",
    "torch.svd_lowrank": f"{_DECOMPOSES} (_linalg_svd, linalg_qr, mm: torch.linalg.svd is allowed)",
    "torch.pca_lowrank": f"{_DECOMPOSES} (_linalg_svd, linalg_qr, mm)",
    "torch.nn.functional.cross_entropy": f"{_DECOMPOSES}: _log_softmax + nll_loss_forward, exactly the ops of "
    "F.nll_loss(F.log_softmax(...)), which labs 8 and 9 accept",
    "torch.nn.CrossEntropyLoss.forward": "it is F.cross_entropy",
    "torch.nn.functional.nll_loss": f"{_DECOMPOSES} (nll_loss_forward is what F.nll_loss is)",
    "torch.nn.NLLLoss.forward": "it is F.nll_loss",
    "torch.nn.TransformerEncoderLayer._ff_block": f"{_DECOMPOSES} (linear, relu, dropout)",
    "torch.nn.TransformerEncoderLayer.__init__": "a constructor: it creates parameters, no operation of its own",
    "torch.nn.TransformerDecoderLayer.__init__": "a constructor: it creates parameters, no operation of its own",
    "torch.nn.TransformerEncoder.__init__": "a constructor: it creates parameters, no operation of its own",
    "torch.nn.TransformerDecoderLayer.forward": f"{_DECOMPOSES} (attention, layer norm, linear: the layer's parts)",
    "torch.nn.Transformer.forward": f"{_DECOMPOSES} (the layers' parts)",
    "torch.nn.Transformer.generate_square_subsequent_mask": f"{_DECOMPOSES} (full, triu: a mask built by hand)",
    "torch.nn.modules.transformer._generate_square_subsequent_mask": f"{_DECOMPOSES} (full, triu)",
    # chapter 10: rms_norm has no kernel of its own on CPU
    "torch.nn.functional.rms_norm": f"{_DECOMPOSES} (pow, mean, add, rsqrt, mul: the exercise)",
    "torch.rms_norm": "it is F.rms_norm",
    "torch.nn.RMSNorm.forward": "it is F.rms_norm",
}


def refused_ops(targets: Sequence[str]) -> dict[str, str]:
    """ATen operation name (``"relu"``) -> the target among ``targets`` that it stands for."""
    found: dict[str, str] = {}
    for path in targets:
        for op in REFUSED_OPS.get(path, ()):
            found.setdefault(op, path)  # the first target that stands for it names it
    return found


class RefuseOps(TorchDispatchMode):
    """Refuses the ATen operations of ``refusals`` (name -> a call that records the hit and
    returns the exception to raise) wherever PyTorch dispatches them."""

    def __init__(self, refusals: Mapping[str, Callable[[str], BaseException]]) -> None:
        super().__init__()
        self.refusals = dict(refusals)

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """PyTorch would wrap ``__torch_dispatch__`` so that TorchDynamo never compiles it, and
        that wrapper imports TorchDynamo at its first call: 1.5 s, in every kernel and check
        child that grades a ``forbidden`` block. The wrapping is done below, only once Dynamo is loaded."""
        return False

    def __torch_dispatch__(
        self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None
    ) -> Any:
        # the refusal first, from this object's own dict: nothing a submission planted in
        # sys.modules (a fake torch._dynamo) is consulted before it
        refusal = self.refusals.get(func.overloadpacket.__name__) if func.namespace == "aten" else None
        if refusal is not None:
            raise refusal(func.overloadpacket.__name__)
        if "torch._dynamo" in sys.modules:  # a compilation may be running: keep it out of this frame
            return _run_uncompiled(func, args, kwargs)
        return func(*args, **(kwargs or {}))


def _run(func: Any, args: Sequence[Any], kwargs: Mapping[str, Any] | None) -> Any:
    return func(*args, **(kwargs or {}))


_run_uncompiled = torch._disable_dynamo(_run, recursive=True)


class RefuseBuiltins(torch.overrides.TorchFunctionMode):
    """Refuses PyTorch's built-in ops among the targets however the candidate reaches them by a
    Python name: a built-in (``torch.softmax``, ``torch.Tensor.softmax``) has no Python code to
    swap, so one captured before the check (``_f=torch.softmax``) is caught where PyTorch
    dispatches Python calls."""

    def __init__(self, blocked: Mapping[int, tuple[Any, Callable[[], Any]]]) -> None:
        super().__init__()
        self.blocked = dict(blocked)  # id of the built-in -> (the built-in, kept alive; its sentinel)

    def __torch_function__(
        self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None
    ) -> Any:
        entry = self.blocked.get(id(func))
        if entry is not None and entry[0] is func:
            entry[1]()  # records the hit and raises
        return func(*args, **(kwargs or {}))

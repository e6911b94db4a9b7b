"""Build PyTorch's own modules with the weights of ours, to use them as oracles.

PyTorch packs the query, key and value projections of ``nn.MultiheadAttention`` into
one ``in_proj_weight`` of shape ``(3 D, D)`` and names the sublayers of its
Transformer layers differently; these functions do the mapping once. Any module with
the reference's parameter names (a student's included) can be converted.

Remember that PyTorch's boolean masks mean True = blocked (``to_pytorch_mask``; for the
``attn_mask`` of PyTorch's layers, ``torch_attn_mask``).

Shape letters: B batch, H heads, Lq query length, Lk key length, D d_model.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from autograder.reference.layers import DecoderLayer, EncoderLayer


def _mha_state(state: dict[str, torch.Tensor], prefix: str, torch_prefix: str) -> dict[str, torch.Tensor]:
    out = {
        f"{torch_prefix}in_proj_weight": torch.cat([state[f"{prefix}{p}_proj.weight"] for p in "qkv"]),
        f"{torch_prefix}out_proj.weight": state[f"{prefix}out_proj.weight"],
    }
    if f"{prefix}q_proj.bias" in state:
        out[f"{torch_prefix}in_proj_bias"] = torch.cat([state[f"{prefix}{p}_proj.bias"] for p in "qkv"])
        out[f"{torch_prefix}out_proj.bias"] = state[f"{prefix}out_proj.bias"]
    return out


def _renamed(state: dict[str, torch.Tensor], names: dict[str, str]) -> dict[str, torch.Tensor]:
    return {new: state[old] for old, new in names.items() if old in state}


def layer_state_to_torch(state: dict[str, torch.Tensor], prefix: str, decoder: bool) -> dict[str, torch.Tensor]:
    """The entries of ``nn.TransformerEncoderLayer``'s (or ``DecoderLayer``'s) state dict, from
    those of our layer whose keys start with ``prefix`` in ``state``."""
    out = _mha_state(state, f"{prefix}self_attn.", "self_attn.")
    if decoder:
        out.update(_mha_state(state, f"{prefix}cross_attn.", "multihead_attn."))
    names = {
        f"{prefix}ff.linear1.weight": "linear1.weight",
        f"{prefix}ff.linear1.bias": "linear1.bias",
        f"{prefix}ff.linear2.weight": "linear2.weight",
        f"{prefix}ff.linear2.bias": "linear2.bias",
    }
    for i in (1, 2, 3) if decoder else (1, 2):
        names.update({f"{prefix}norm{i}.weight": f"norm{i}.weight", f"{prefix}norm{i}.bias": f"norm{i}.bias"})
    out.update(_renamed(state, names))
    return out


def torch_mha_from(ours: nn.Module, num_heads: int) -> nn.MultiheadAttention:
    """``nn.MultiheadAttention`` (batch_first, no dropout) with the weights of ``ours``."""
    state = ours.state_dict()
    d_model = state["q_proj.weight"].size(0)
    theirs = nn.MultiheadAttention(d_model, num_heads, dropout=0.0, bias="q_proj.bias" in state, batch_first=True)
    theirs.load_state_dict(_mha_state(state, "", ""))
    return theirs.to(state["q_proj.weight"])


def torch_layer_from(ours: nn.Module, num_heads: int, decoder: bool, norm_first: bool, eps: float = 1e-5) -> nn.Module:
    """``nn.TransformerEncoderLayer`` or ``nn.TransformerDecoderLayer`` (batch_first, ReLU,
    no dropout) with the weights of an encoder or decoder layer of ours."""
    state = ours.state_dict()
    d_model, d_ff = state["ff.linear1.weight"].size(1), state["ff.linear1.weight"].size(0)
    kind = nn.TransformerDecoderLayer if decoder else nn.TransformerEncoderLayer
    theirs = kind(
        d_model,
        num_heads,
        d_ff,
        dropout=0.0,
        activation="relu",
        layer_norm_eps=eps,
        batch_first=True,
        norm_first=norm_first,
    )
    theirs.load_state_dict(layer_state_to_torch(state, "", decoder))
    return theirs.to(state["ff.linear1.weight"])


def torch_layer_like(layer: EncoderLayer | DecoderLayer) -> nn.Module:
    """PyTorch's own layer (batch first, ReLU, no dropout) holding the weights of a
    reference ``EncoderLayer`` or ``DecoderLayer``: q/k/v are packed into ``in_proj_weight``."""
    return torch_layer_from(
        layer,
        layer.self_attn.num_heads,
        decoder=hasattr(layer, "cross_attn"),
        norm_first=layer.norm_first,
        eps=layer.norm1.eps,
    ).eval()


def torch_attn_mask(mask: Tensor | None, batch: int, num_heads: int, lq: int, lk: int) -> Tensor | None:
    """Our mask (True = may attend, broadcastable to ``(B, H, Lq, Lk)``) as the ``attn_mask``
    of PyTorch's layers: ``(B * H, Lq, Lk)`` with True = blocked."""
    if mask is None:
        return None
    return ~mask.expand(batch, num_heads, lq, lk).reshape(batch * num_heads, lq, lk)  # (B*H, Lq, Lk)

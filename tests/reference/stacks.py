"""PyTorch's own encoder and decoder stacks with the weights of ours, for the tests that compare
the two (the reference has the layer's converter, ``interop.torch_layer_from``)."""

from __future__ import annotations

from torch import nn

from autograder.reference.oracles.interop import layer_state_to_torch, torch_layer_from


def torch_stack_from(ours: nn.Module, num_heads: int, decoder: bool, norm_first: bool, eps: float = 1e-5) -> nn.Module:
    """``nn.TransformerEncoder``/``nn.TransformerDecoder`` with the weights of a stack of ours
    (a final LayerNorm only where ours has one)."""
    state = ours.state_dict()
    layers = list(ours.get_submodule("layers").children())
    first = torch_layer_from(layers[0], num_heads, decoder, norm_first, eps)
    d_model = state["layers.0.ff.linear1.weight"].size(1)
    norm = nn.LayerNorm(d_model, eps=eps) if "norm.weight" in state else None
    theirs: nn.Module
    if decoder:
        theirs = nn.TransformerDecoder(first, len(layers), norm=norm)  # type: ignore[arg-type]
    else:
        theirs = nn.TransformerEncoder(
            first,
            len(layers),
            norm=norm,  # type: ignore[arg-type]
            enable_nested_tensor=False,
        )
    new_state = {}
    for i in range(len(layers)):
        layer_state = layer_state_to_torch(state, f"layers.{i}.", decoder)
        new_state.update({f"layers.{i}.{k}": v for k, v in layer_state.items()})
    if norm is not None:
        new_state.update({"norm.weight": state["norm.weight"], "norm.bias": state["norm.bias"]})
    theirs.load_state_dict(new_state)
    return theirs.to(state["layers.0.ff.linear1.weight"])

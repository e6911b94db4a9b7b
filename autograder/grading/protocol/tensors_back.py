"""What comes back to this side of the tensors it sent across the boundary: the in-place changes
the other side made to them, where a check names them (``copy_back``), and the gradients the
other side computed for them, which make a scalar it returns differentiable here
(``differentiable``)."""

from __future__ import annotations

from typing import Any

import torch


class _Bridge(torch.autograd.Function):
    """A scalar computed on the other side, made differentiable here with the gradients that
    side computed: ``value.backward()`` fills the ``.grad`` of the tensors that were sent."""

    @staticmethod
    def forward(ctx: Any, value: torch.Tensor, grads: list, *leaves: torch.Tensor) -> torch.Tensor:
        ctx.grads = grads
        return value.clone()

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple:
        return (None, None, *[None if g is None else grad_output * g for g in ctx.grads])


def copy_back(changed: Any, blobs: dict, sources: dict[str, torch.Tensor]) -> None:
    """Tensors the other side changed in place are changed here too, of those in ``sources``."""
    for key in changed if isinstance(changed, list) else []:
        new, old = blobs.get(f"changed-{key}"), sources.get(str(key))
        if isinstance(new, torch.Tensor) and old is not None and new.shape == old.shape:
            with torch.no_grad():
                old.copy_(new.to(old.dtype))


def differentiable(value: Any, grads: Any, blobs: dict, leaves: list[torch.Tensor]) -> Any:
    """A floating scalar sent back with one gradient per tensor sent that needed one becomes
    differentiable here (``_Bridge``); any other value is returned as it is."""
    if not (
        isinstance(value, torch.Tensor)
        and isinstance(grads, list)
        and len(grads) == len(leaves)
        and value.dim() == 0
        and value.is_floating_point()
    ):
        return value
    decoded = [blobs.get(g) if isinstance(g, str) else None for g in grads]
    if all(
        g is None or (isinstance(g, torch.Tensor) and g.shape == leaf.shape)
        for g, leaf in zip(decoded, leaves, strict=True)
    ):
        return _Bridge.apply(value, decoded, *leaves)
    return value

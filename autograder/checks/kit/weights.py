"""Loading the reference's weights into a candidate module by name, for the checks that compare
a student's module with the reference on the same weights (chapters 4, 7, 8 and 9).

The names of the parameters are the contract: every parameter of the reference must be there,
with its shape, and the candidate may have no parameter of its own. Buffers are not part of it.
A valid answer may keep a computed value in a persistent buffer (the scale sqrt(D) of
``Embeddings``, a positional table registered without ``persistent=False``): such a buffer
stays the candidate's own, and the comparison of outputs judges it.
"""

from __future__ import annotations

import torch

from autograder.checks.kit.expect import describe, fail


def load_reference_weights(candidate: torch.nn.Module, reference: torch.nn.Module, what: str) -> None:
    """Copy the reference's state into the candidate by name; the candidate's extra buffers stay its own.

    Fails naming the parameters that are missing, unexpected (a parameter the reference does
    not have) or of the wrong shape.
    """
    __tracebackhide__ = True
    if not isinstance(candidate, torch.nn.Module):
        fail(what, "an nn.Module", describe(candidate), hint="subclass torch.nn.Module and call super().__init__().")
    ref_state, cand_state = reference.state_dict(), candidate.state_dict()
    buffers = {name for name, _ in candidate.named_buffers()}
    missing = sorted(set(ref_state) - set(cand_state))
    unexpected = sorted(set(cand_state) - set(ref_state) - buffers)  # extra buffers are allowed, parameters not
    if missing or unexpected:
        expected = (
            f"parameters named {sorted(ref_state)}"
            if len(ref_state) <= 12
            else f"the reference's {len(ref_state)} parameter names"
        )
        fail(
            what,
            expected,
            f"missing {missing}, unexpected {unexpected}",
            hint="use the attribute names of the docstring (they are PyTorch's names).",
        )
    for name, value in ref_state.items():
        if cand_state[name].shape != value.shape:
            fail(
                f"{what}: parameter {name}",
                f"shape {tuple(value.shape)}",
                f"shape {tuple(cand_state[name].shape)}",
                hint="nn.Linear(in, out) stores its weight as (out, in).",
            )
    own = {name: value for name, value in cand_state.items() if name not in ref_state}  # its extra buffers
    candidate.load_state_dict({**own, **ref_state})

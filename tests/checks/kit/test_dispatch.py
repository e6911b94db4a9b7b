"""Tests of the dispatch-level refusals: PyTorch's ops reached below their Python names
(``torch.ops.aten.relu``, ``torch._C._nn.mse_loss``) are refused, on both sides of the grading
boundary; every PyTorch target of the checks has a written decision; valid answers (float64 and
their backward pass included) are not refused."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

import autograder.checks
from autograder.checks.kit.dispatch import PYTHON_LEVEL, REFUSED_OPS
from autograder.checks.kit.failures import ForbiddenCall
from autograder.checks.kit.sentinels import forbidden
from autograder.checks.lab00_warmup.warmup import check_mean_squared_error, check_relu
from autograder.checks.lab02_self_attention.self_attention import check_scaled_dot_product_attention, check_softmax
from autograder.checks.lab07_transformer_block.sublayers import check_layer_norm

CHECKS = Path(autograder.checks.__file__).parent


def _torch_targets() -> set[str]:
    """Every ``"torch. ..."`` path written in a check module (dropout.py replaces, never forbids;
    dispatch.py holds the decisions, and names ``torch._dynamo`` as a module)."""
    found = set()
    for path in CHECKS.rglob("*.py"):
        if path.name in ("dropout.py", "dispatch.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and re.fullmatch(r"torch(\.\w+)+", node.value)
            ):
                found.add(node.value)
    return found


def test_every_pytorch_target_has_a_decision() -> None:
    """Is every PyTorch function a check forbids either refused at the dispatch level (with the ops
    that only it produces) or written down as refused at the Python level only, with the reason?"""
    undecided = sorted(_torch_targets() - set(REFUSED_OPS) - set(PYTHON_LEVEL))
    assert undecided == [], f"decide, in autograder/checks/kit/dispatch.py, how these are refused: {undecided}"
    assert not set(REFUSED_OPS) & set(PYTHON_LEVEL)
    assert "torch.nn.functional.cross_entropy" in PYTHON_LEVEL  # F.nll_loss(F.log_softmax(...)): the same ops


class _Ops(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.add(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


X = torch.randn(2, 3, 4, dtype=torch.float64)
Q = torch.randn(2, 2, 5, 4)
CALLS = {  # a target -> a call of it
    "torch.relu": lambda: torch.relu(X),
    "torch.Tensor.relu_": lambda: X.clone().relu_(),
    "torch.nn.ReLU.forward": lambda: torch.nn.ReLU()(X),
    "torch.clip": lambda: torch.clip(X, 0),
    "torch.clamp_min": lambda: torch.clamp_min(X, 0),
    "torch.nn.functional.mse_loss": lambda: F.mse_loss(X, X + 1),
    "torch.special.softmax": lambda: torch.special.softmax(X, -1),
    "torch.log_softmax": lambda: X.log_softmax(-1),
    "torch.nn.functional.scaled_dot_product_attention": lambda: F.scaled_dot_product_attention(Q, Q, Q),
    "torch.nn.functional.layer_norm": lambda: F.layer_norm(X, (4,)),
    "torch.nn.functional.group_norm": lambda: F.group_norm(X, 1),
    "torch.nn.functional.instance_norm": lambda: F.instance_norm(X),
    "torch.nn.functional.batch_norm": lambda: F.batch_norm(X, None, None, training=True),
}


@pytest.mark.parametrize("target", list(CALLS))
def test_the_refused_ops_are_the_ones_pytorch_dispatches(target: str) -> None:
    """Does calling a target dispatch one of the operations written down for it (float32 and
    float64), so that the table refuses what the function really runs?"""
    for dtype in (torch.float32, torch.float64):
        global X, Q
        saved = X, Q
        X, Q = X.to(dtype), Q.to(dtype)
        try:
            with _Ops() as ops:
                CALLS[target]()
        finally:
            X, Q = saved
        assert ops.seen & set(REFUSED_OPS[target]), f"{target} in {dtype} dispatched {sorted(ops.seen)}"


def test_ops_reached_below_their_python_names_are_refused(fails) -> None:
    """Are `torch.ops.aten.relu`, `torch.ops.aten.clamp`, `torch._C._nn.mse_loss`,
    `torch.ops.aten._softmax`, `torch.ops.aten.native_layer_norm` and sdpa's CPU kernel refused,
    with a message naming the operation (here and across the boundary)?"""
    fails(check_relu, lambda x: torch.ops.aten.relu(x), error=ForbiddenCall, said=["aten.relu", "torch.relu"])
    fails(check_relu, lambda x: torch.ops.aten.clamp.default(x, 0), error=ForbiddenCall, said="aten.clamp")
    fails(
        check_mean_squared_error, lambda p, t: torch._C._nn.mse_loss(p, t, 1), error=ForbiddenCall, said="aten.mse_loss"
    )
    fails(
        check_softmax, lambda x, dim: torch.ops.aten._softmax(x, dim, False), error=ForbiddenCall, said="aten._softmax"
    )
    fails(
        check_layer_norm,
        lambda x, w, b, eps: torch.ops.aten.native_layer_norm(x, x.shape[-1:], w, b, eps)[0],
        error=ForbiddenCall,
        said="aten.native_layer_norm",
    )

    def sdpa(q, k, v, attn_mask=None):
        out = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v)[0]
        return out, torch.softmax(q @ k.transpose(-2, -1) / q.size(-1) ** 0.5, dim=-1)

    fails(check_scaled_dot_product_attention, sdpa, error=ForbiddenCall, said="aten._scaled_dot_product_flash")


def test_a_swallowed_op_refusal_still_fails() -> None:
    """Does an op refused below its Python name fail the block even when the candidate catches
    the refusal and answers otherwise?"""

    def candidate(x):
        try:
            return torch.ops.aten.relu(x)
        except Exception:
            return torch.where(x > 0, x, 0.0)

    with pytest.raises(ForbiddenCall, match="aten.relu"):
        with forbidden(candidate, ["torch.relu"], instead="Build it."):
            candidate(torch.ones(2))


def test_a_valid_answer_and_its_backward_pass_run_under_the_refusals() -> None:
    """Does a softmax built from exp, a maximum and a sum, in float64, run its forward and backward
    passes inside a block that refuses every softmax, log_softmax and attention op?"""
    targets = [
        "torch.softmax",
        "torch.log_softmax",
        "torch.nn.functional.scaled_dot_product_attention",
        "torch.nn.functional.layer_norm",
        "torch.relu",
        "torch.nn.functional.mse_loss",
    ]
    x = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)

    def candidate(x):
        e = (x - x.amax(-1, keepdim=True)).exp()
        return e / e.sum(-1, keepdim=True)

    with forbidden(candidate, targets, instead="Build it."):
        loss = ((candidate(x) - 0.2) ** 2).mean()
        loss.backward()
    assert x.grad is not None and x.grad.dtype == torch.float64


_REFUSAL_IN_A_FRESH_PROCESS = """
import sys
import torch
if sys.argv[1] == "dynamo":
    import torch._dynamo  # as after a student's torch.compile
from autograder.checks.kit.failures import ForbiddenCall
from autograder.checks.kit.sentinels import forbidden
def candidate(x):
    return torch.ops.aten.relu(torch.where(x > 0, x, 0.0))
try:
    with forbidden(candidate, ["torch.relu"], instead="Build it."):
        candidate(torch.ones(2))
except ForbiddenCall as err:
    print("refused:", err)
print("dynamo loaded:", "torch._dynamo" in sys.modules)
"""


@pytest.mark.parametrize("dynamo", ["dynamo", "plain"])
def test_the_op_refusal_holds_and_loads_no_compiler(dynamo: str) -> None:
    """Is an op refused below its Python name, in a fresh process, without loading TorchDynamo
    (PyTorch's own wrapper of a dispatch mode imports it at the first op: 1.5 s in every kernel
    and check child), and still refused once a compilation has loaded it?"""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _REFUSAL_IN_A_FRESH_PROCESS, dynamo], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused: your code reaches `torch.relu` as PyTorch's operation aten.relu" in done.stdout, done.stdout
    assert f"dynamo loaded: {dynamo == 'dynamo'}" in done.stdout, done.stdout

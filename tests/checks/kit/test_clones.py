"""Tests of the refusal of the reference's code under another function object: a clone made with
``types.FunctionType(ref.__code__, ...)``, however it is kept (a default argument, a class, a
code object kept and made into a function during the call) or renamed (``code.replace``), is
refused with a message naming it, on both sides of the grading boundary; the same source
retyped as a student's own is not; the trace hook is put back as it was."""

from __future__ import annotations

import sys
import types

import pytest
import torch

from autograder import reference
from autograder.checks.kit.failures import ForbiddenCall
from autograder.checks.kit.sentinels import forbidden
from autograder.checks.lab02_self_attention.self_attention import check_softmax
from autograder.checks.lab09_tokens_in_tokens_out.tokens import check_train_bpe
from autograder.reference import bpe

_TRAIN = bpe.train_bpe
_CODE, _GLOBALS, _DEFAULTS = _TRAIN.__code__, _TRAIN.__globals__, _TRAIN.__defaults__


def _clone(code: types.CodeType = _CODE) -> types.FunctionType:
    return types.FunctionType(code, _GLOBALS, "mine", _DEFAULTS, _TRAIN.__closure__)


_KEPT = _clone()
_RENAMED = _clone(
    _CODE.replace(co_name="mine", co_qualname="mine", co_varnames=tuple(f"v{i}" for i in range(len(_CODE.co_varnames))))
)


def in_default(text, vocab_size, special_tokens=bpe.SPECIAL_TOKENS, _train=_KEPT):
    return _train(text, vocab_size, special_tokens)


def renamed(text, vocab_size, special_tokens=bpe.SPECIAL_TOKENS, _train=_RENAMED):
    return _train(text, vocab_size, special_tokens)


def made_during_the_call(text, vocab_size, special_tokens=bpe.SPECIAL_TOKENS):
    return types.FunctionType(_CODE, _GLOBALS, "late", _DEFAULTS)(text, vocab_size, special_tokens)


class _Holder:
    train = staticmethod(_clone())


def in_a_class(text, vocab_size, special_tokens=bpe.SPECIAL_TOKENS):
    return _Holder.train(text, vocab_size, special_tokens)


@pytest.mark.parametrize("candidate", [in_default, renamed, made_during_the_call, in_a_class])
def test_a_clone_of_the_reference_is_refused_and_named(fails, candidate) -> None:
    """Is a function running the reference's code object (or a renamed copy of it), kept in a default
    argument or a class or made during the call, refused with a message naming the reference and
    the road, here and across the boundary?"""
    fails(
        check_train_bpe,
        candidate,
        error=ForbiddenCall,
        said=["autograder.reference.bpe.train_bpe", "under another function object"],
    )


def test_a_clone_of_a_pytorch_python_function_is_refused(fails) -> None:
    """Is a clone of `F.softmax`'s own code (a Python function of PyTorch's) refused too?"""
    import torch.nn.functional as F

    clone = types.FunctionType(F.softmax.__code__, F.softmax.__globals__, "mine", F.softmax.__defaults__)
    fails(check_softmax, lambda x, dim, _s=clone: _s(x, dim), error=ForbiddenCall, said="torch.nn.functional.softmax")


def test_the_trace_hook_is_restored_after_refusals() -> None:
    """Is the trace function in force before a block (here none, then one of the test's own) in
    force after it, when a clone was refused and the refusal swallowed, and in nested blocks?"""
    clone = types.FunctionType(reference.softmax.__code__, reference.softmax.__globals__, "mine")

    def candidate(x):
        try:
            return clone(x, -1)
        except ForbiddenCall:
            return x

    def mine(frame, event, arg):
        return None

    for before in (None, mine):
        sys.settrace(before)
        try:
            with pytest.raises(ForbiddenCall, match="under another function object"):
                with forbidden(candidate, ["autograder.reference.softmax"], instead="outer"):
                    with forbidden(candidate, ["autograder.reference.softmax"], instead="inner"):
                        candidate(torch.ones(2))
            assert sys.gettrace() is before
        finally:
            sys.settrace(None)
    assert clone(torch.zeros(2), -1).tolist() == [0.5, 0.5]  # outside the blocks the clone runs

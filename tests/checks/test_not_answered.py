"""A blank exercise (the released stub's bare ``raise NotImplementedError()``) is told so in
words by its check, here and across the independent check's boundary; an error of the student's
own that happens to be a NotImplementedError with a message keeps that message."""

from __future__ import annotations

import re

import pytest

from autograder.checks import check_mean_squared_error, check_relu, check_self_attention, check_softmax
from autograder.checks.kit.core import not_answered

NOT_ANSWERED = "is not answered yet: replace `raise NotImplementedError()` with your code"


def relu(x):
    raise NotImplementedError()


def mean_squared_error(pred, target):
    raise NotImplementedError()


def softmax(x, dim=-1):
    raise NotImplementedError()


@pytest.mark.parametrize(
    ("check", "stub"), [(check_relu, relu), (check_mean_squared_error, mean_squared_error), (check_softmax, softmax)]
)
def test_a_blank_exercise_is_said_to_be_not_answered(fails, check, stub) -> None:
    """Does the check of an untouched stub raise NotImplementedError saying, in words, which
    exercise is not answered yet and what to do?"""
    check = globals()[check.__name__]  # the module's name: patched to run across the boundary too
    message = fails(check, stub, error=NotImplementedError, said=[f"{stub.__name__} {NOT_ANSWERED}"])
    assert "\n" not in message, message


def test_the_blank_exercise_named_is_the_one_whose_stub_raised(candidate_side) -> None:
    """An answered self_attention that calls a blank softmax: is softmax named, not self_attention?
    (Here; across the boundary the stub's name crosses in the frames of the submission's cells,
    which a test file has not: there the message still says, in words, that an exercise is blank.)"""
    named = "softmax " if candidate_side != "across" else r"(softmax|self_attention) "

    def self_attention(x, W_q, W_k, W_v):
        q, k, v = x @ W_q, x @ W_k, x @ W_v
        return softmax(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5) @ v

    with pytest.raises(NotImplementedError, match="^" + named + re.escape(NOT_ANSWERED)):
        check_self_attention(self_attention)


def test_a_method_or_the_checks_own_code_is_not_named() -> None:
    """Does a stub's `forward` (a class's exercise) fall back to the check's name?"""

    class Block:
        def forward(self, x):
            raise NotImplementedError()

    try:
        Block().forward(1)
    except NotImplementedError as err:
        assert not_answered("check_transformer_block", err).startswith(f"transformer_block {NOT_ANSWERED}")


def test_a_message_of_the_students_own_is_kept(fails) -> None:
    """Is a NotImplementedError raised with a message of its own (not the stub's) left as it is?"""

    def relu(x):
        raise NotImplementedError("complex tensors are not supported")

    message = fails(check_relu, relu, error=NotImplementedError, said="complex tensors are not supported")
    assert "not answered" not in message

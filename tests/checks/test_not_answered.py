"""A blank exercise (the released stub's bare ``raise NotImplementedError()``) is told so in
words by its check, here and across the independent check's boundary; an error of the student's
own that happens to be a NotImplementedError with a message keeps that message."""

from __future__ import annotations

import pytest

from autograder.checks import check_mean_squared_error, check_relu, check_softmax

NOT_ANSWERED = "is not answered yet: replace `raise NotImplementedError()` with your code"


def stub(*args, **kwargs):
    raise NotImplementedError()


@pytest.mark.parametrize(("check", "exercise"), [(check_relu, "relu"), (check_mean_squared_error, "mean_squared_error"),
                                                 (check_softmax, "softmax")])
def test_a_blank_exercise_is_said_to_be_not_answered(fails, check, exercise) -> None:
    """Does the check of an untouched stub raise NotImplementedError saying, in words, which
    exercise is not answered yet and what to do?"""
    check = globals()[check.__name__]  # the module's name: patched to run across the boundary too
    message = fails(check, stub, error=NotImplementedError, said=[f"{exercise} {NOT_ANSWERED}"])
    assert "\n" not in message, message


def test_a_message_of_the_students_own_is_kept(fails) -> None:
    """Is a NotImplementedError raised with a message of its own (not the stub's) left as it is?"""
    def relu(x):
        raise NotImplementedError("complex tensors are not supported")
    message = fails(check_relu, relu, error=NotImplementedError, said="complex tensors are not supported")
    assert "not answered" not in message

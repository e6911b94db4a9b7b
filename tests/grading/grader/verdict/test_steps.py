"""Tests of the verdict station's helpers for one submission (autograder/grading/grader/verdict/steps.py);
its steps run on real submissions in tests/grading/grader/test_pipeline.py and the scenarios."""

from autograder.grading.grader.verdict.steps import headline, hidden_tests_failed


def test_the_headline_is_the_likely_mistake_else_what_was_found_else_the_first_line() -> None:
    """Does a check's message give its likely mistake first, else what was found, else its first line,
    each cut at 200 characters, and an empty message "failed"?"""
    message = "relu(x): values differ\n  expected: [0, 1]\n  found: [0, -1]\n  likely mistake: the absolute value\n"
    assert headline(message) == "likely mistake: the absolute value"
    assert headline(message.replace("  likely mistake: the absolute value\n", "")) == "found: [0, -1]"
    assert headline("relu(x): wrong shape\n  expected: (2, 3)") == "relu(x): wrong shape"
    assert headline("x" * 300) == "x" * 200
    assert headline("  \n") == "failed"


def test_the_hidden_tests_note_names_the_test_cell() -> None:
    """Does the note of a visible check passed and hidden tests failed name its test cell?"""
    assert hidden_tests_failed("test_relu").startswith("test cell test_relu: the visible check passed")

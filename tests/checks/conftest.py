"""Every test of a check runs twice: with the candidate here, as in a student's notebook, and
with the candidate across the independent check's boundary (autograder.grading.protocol.remote), as
when an instructor grades. So the catalogues of right and wrong answers also prove that the
boundary rejects no valid answer and that each mistake is named the same way there.

The mistake ids the wrong answers raise are gathered over the session (from every xdist
worker too): a session that ran all the tests of the checks fails if an id of
``autograder/checks/kit/mistakes.py`` was raised by none of them (``test_mistakes.py`` says more)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from autograder.checks.kit import mistakes
from autograder.checks.kit.failures import CheckFailed
from tests.checks.across_boundary import across
from tests.checks.mistake_ids import NOT_YET_RAISED, RAISED, note


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """The tests of the checks run on both sides; the core's own tests (its helpers, not
    checks) and the package's (what it loads when) run once."""
    if not metafunc.module.__name__.endswith(("test_core", "test_mistakes", "test_write_back", "test_init")):
        metafunc.parametrize("candidate_side", ["here", "across"], indirect=True)


@pytest.fixture(autouse=True)
def candidate_side(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Where the candidate runs: "here" (in the check's process) or "across" the boundary."""
    side = getattr(request, "param", "here")
    if side == "across":
        for name, value in vars(request.module).items():
            if name.startswith("check_") and callable(value):
                monkeypatch.setattr(request.module, name, across(value))
    yield side


def expect_failure(
    action: Callable[..., Any],
    *args: Any,
    error: type[BaseException] = CheckFailed,
    said: str | Sequence[str] = (),
    mistake: str | None = None,
    match: str | None = None,
    **kwargs: Any,
) -> str:
    """``action(*args, **kwargs)`` must raise ``error`` (or a subclass); return its message.

    ``said``: phrases (plain text, not patterns) the message must contain; ``mistake``: a
    phrase that its ``likely mistake:`` line must contain; ``match``: a regular expression
    searched in the message, as ``pytest.raises(match=...)`` does."""
    __tracebackhide__ = True
    with pytest.raises(error) as info:
        action(*args, **kwargs)
    message = str(info.value)
    note(info.value)
    for phrase in [said] if isinstance(said, str) else said:
        assert phrase in message, f"{phrase!r} not in:\n{message}"
    if mistake is not None:
        named = [line for line in message.splitlines() if line.strip().startswith("likely mistake:")]
        assert any(mistake in line for line in named), f"no likely mistake naming {mistake!r} in:\n{message}"
    if match is not None:
        assert re.search(match, message), f"{match!r} does not match:\n{message}"
    return message


@pytest.fixture
def fails() -> Callable[..., str]:
    """The one way the tests of the checks expect a failure: ``fails(action, *args, **kwargs)``
    calls ``action`` and asserts that it raises; the options say what the message must hold::

        def test_softmax_names_mistakes(fails):
            fails(check_softmax, softmax_no_shift, mistake="maximum is not subtracted")
            fails(check_softmax, torch_softmax, error=ForbiddenCall, said="torch.softmax")
            fails(check_softmax, stub, error=NotImplementedError)
            message = fails(check_softmax, candidate, seed=1, said=["expected:", "found:"])

    Options (keywords): ``error`` (default ``CheckFailed``; ``ForbiddenCall``,
    ``NotImplementedError``...), ``said`` (a phrase or a list of phrases, plain text),
    ``mistake`` (a phrase of the ``likely mistake:`` line), ``match`` (a regular
    expression). Other keywords go to ``action`` (``seed=1``). Returns the message. Use it
    inside the test, where ``check_*`` names are already patched to run "across" too."""
    return expect_failure


# ----------------------------------------------------------------------------- the ids the wrong answers raised

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """An xdist worker ended: its ids join the controller's."""
    RAISED.update(getattr(node, "workeroutput", {}).get("mistake_ids", []))


def _ran_every_check_test(session: pytest.Session) -> bool:
    """Did this session ask for every test of tests/checks, with none left out, and pass them all?"""
    options = session.config.option
    if (
        session.testsfailed
        or session.shouldstop
        or session.shouldfail
        or getattr(options, "keyword", "")
        or getattr(options, "markexpr", "")
        or getattr(options, "lf", False)
        or getattr(options, "deselect", None)
    ):
        return False
    paths = [os.path.abspath(str(arg)) for arg in session.config.args if "::" not in str(arg)]
    return any(HERE == p or HERE.startswith(p + os.sep) for p in paths)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A worker hands its ids over; the controller (or a session without workers) checks that
    every registered mistake was raised by some wrong answer."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["mistake_ids"] = sorted(RAISED)
        return
    if exitstatus != 0 or not _ran_every_check_test(session):
        return
    missing = sorted(set(mistakes.MISTAKES) - RAISED - NOT_YET_RAISED)
    stale = sorted(NOT_YET_RAISED & RAISED)
    problems = (
        [
            f"{len(missing)} mistake ids of autograder/checks/kit/mistakes.py were raised by no wrong answer in "
            f"tests/checks: {', '.join(missing)}"
        ]
        if missing
        else []
    ) + ([f"raised now, so take them off mistake_ids.NOT_YET_RAISED: {', '.join(stale)}"] if stale else [])
    if problems:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        for text in problems:
            if reporter is not None:
                reporter.write_line(text, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

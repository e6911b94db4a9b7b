"""What a failing check raises and says: ``CheckFailed``, ``ForbiddenCall``, ``fail`` and ``@check``.

A check's failure is an ``AssertionError`` (so nbgrader scores the cell 0) whose message
teaches in four parts: what was checked, what was expected, what was found and, where a known
mistake explains the difference, its name. Both the comparisons (``core``) and the sentinels
(``sentinels``) raise these; neither imports the other for them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


class CheckFailed(AssertionError):
    """A check found the candidate wrong; the message says how."""


class ForbiddenCall(CheckFailed):
    """The candidate called something the exercise asks the student to build."""


def check(fn: Callable[..., None]) -> Callable[..., None]:
    """Decorate a check: name it in the message, and hide our frames from the student."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        __tracebackhide__ = True
        try:
            fn(*args, **kwargs)
        except NotImplementedError:
            raise  # an untouched stub: let nbgrader show NotImplementedError as it is
        except CheckFailed as err:
            raise type(err)(f"{fn.__name__} failed.\n{err}") from None
        print(f"{fn.__name__} passed.")

    return wrapper


def fail(what: str, expected: str, found: str, mistake: str | None = None, hint: str | None = None) -> None:
    """Raise ``CheckFailed`` with the four parts of a teaching message."""
    __tracebackhide__ = True
    lines = [f"  checked:  {what}", f"  expected: {expected}", f"  found:    {found}"]
    if mistake:
        lines.append(f"  likely mistake: {mistake}")
    if hint:
        lines.append(f"  hint: {hint}")
    raise CheckFailed("\n".join(lines))

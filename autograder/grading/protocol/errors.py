"""An exception raised on the other side of the boundary, as this side sees it: its class
(builtins and the checks' own failures keep theirs), its message, and the frames of the
submission's own cells it passed through (for the feedback)."""

from __future__ import annotations

import builtins
import contextlib
import re
import traceback
from typing import Any


class RemoteError(Exception):
    """An exception raised on the other side; its class is named after the original."""


CELL_FILE = re.compile(r"^<cell (\d{1,4})>$")
MAX_FRAMES = 20


def cell_frames(err: BaseException) -> list[list]:
    """The frames of a submission's own code cells (``<cell N>``, as the child compiles them)
    in ``err``'s traceback: ``[N, line, function]`` each, innermost last, for its feedback."""
    frames = [
        [int(match.group(1)), frame.lineno or 0, str(frame.name)[:100]]
        for frame in traceback.extract_tb(err.__traceback__)
        if (match := CELL_FILE.match(frame.filename))
    ]
    return frames[-MAX_FRAMES:]


def frames_in(value: Any) -> list[tuple[int, int, str]]:
    """Frames as the child sent them, kept only where they have that shape (it may send anything)."""
    if not isinstance(value, list):
        return []
    return [
        (f[0], f[1], f[2][:100])
        for f in value[-MAX_FRAMES:]
        if isinstance(f, list)
        and len(f) == 3
        and all(isinstance(x, int) and not isinstance(x, bool) for x in f[:2])
        and isinstance(f[2], str)
    ]


def exception_for(name: str, message: str) -> BaseException:
    """The exception to raise here for one raised there: builtins keep their class (so that
    ``except ValueError`` works), the checks' own failures theirs, the rest a RemoteError."""
    if name in ("CheckFailed", "ForbiddenCall"):
        from autograder.checks.kit import failures

        return getattr(failures, name)(message)
    klass = getattr(builtins, name, None)
    if isinstance(klass, type) and issubclass(klass, Exception) and klass.__module__ == "builtins":
        with contextlib.suppress(Exception):
            return klass(message)
    return type(name if name.isidentifier() else "RemoteError", (RemoteError,), {})(message)

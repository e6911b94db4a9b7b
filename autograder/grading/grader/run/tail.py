"""The end of what a child process writes to a pipe, kept for the grader's messages: the
sandbox's start-up error, the worker's and the check's child's last words before a crash."""

from __future__ import annotations

import contextlib
import os
import threading

from autograder.grading.protocol.confinement import OUTPUT_CAP


class Tail:
    """The last ``keep`` bytes a pipe carried, read by a thread of its own so that the writer
    never blocks; ``text()`` once the writer is gone (or at any time)."""

    def __init__(self, fd: int, keep: int = OUTPUT_CAP) -> None:
        self.fd, self.keep, self.data, self.total = fd, keep, b"", 0
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with contextlib.suppress(OSError):
            while chunk := os.read(self.fd, 1 << 16):
                self.total += len(chunk)
                self.data = (self.data + chunk)[-self.keep :]
        with contextlib.suppress(OSError):
            os.close(self.fd)

    def text(self, wait: float = 0.0) -> str:
        """What was kept, decoded; ``wait``: seconds to wait for the writer's end first."""
        self.thread.join(wait)
        return self.data.decode(errors="replace").strip()

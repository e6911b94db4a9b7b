"""The grading kernel itself: ipykernel, started in the sandbox by the kernelspec that
``run.kernelspec.install`` writes (``python -m autograder.grading.sandboxed.kernel -f FILE``).
The sandbox launcher has set its limits already; this module only cuts the descriptors
student code could otherwise reach, and imports torch and pyplot before the kernel answers."""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> None:
    """Start ipykernel (run inside the sandbox, which has set the limits already)."""
    # the sandbox launcher gave it /dev/null and a pipe of its own (capped); without the
    # sandbox (--no-sandbox) these are the worker's: cut them before any student code runs
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    sys.argv = [sys.argv[0], *argv]
    # every lab imports torch in its first cells, and pyplot for its plots: imported here, before
    # the kernel answers, they are ready when a kernel started ahead of its job gets the notebook
    # (``grader.run.ahead``). So they are loaded before any student code: a variable a notebook
    # sets for their import comes late. pyplot comes once the shell exists, as from a cell (the
    # launcher's MPLBACKEND, Agg, is its backend either way)
    import torch  # noqa: F401
    from ipykernel import kernelapp

    app = kernelapp.IPKernelApp.instance()
    app.initialize()
    import matplotlib.pyplot  # noqa: F401

    app.start()


if __name__ == "__main__":
    main(sys.argv[1:])

"""The grading kernel itself: ipykernel, started in the sandbox by the kernelspec that
``run.kernelspec.install`` writes (``python -m autograder.grading.sandboxed.kernel -f FILE``).
The sandbox launcher has set its limits already; this module only cuts the descriptors
student code could otherwise reach, and imports torch, what pyplot is made of and the
course's checks before the kernel answers."""

from __future__ import annotations

import os
import sys

from autograder.grading.sandboxed import PYPLOT_PARTS, load_ahead


def main(argv: list[str]) -> None:
    """Start ipykernel (run inside the sandbox, which has set the limits already)."""
    # the sandbox launcher gave it /dev/null and a pipe of its own (capped); without the
    # sandbox (--no-sandbox) these are the worker's: cut them before any student code runs
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    sys.argv = [sys.argv[0], *argv]
    # every lab imports torch in its first cells, and pyplot for its plots: torch, and what pyplot
    # is made of (``PYPLOT_PARTS``), imported here before the kernel answers, are ready when a
    # kernel started ahead of its job gets the notebook (``grader.run.ahead``). So they are loaded
    # before any student code: a variable or file a notebook sets for their import comes late. The
    # parts are imported after ``initialize()``, as a cell would import them (the launcher's
    # MPLBACKEND, Agg, stands either way); a failure there is left to the cell that imports them
    import torch  # noqa: F401
    from ipykernel import kernelapp

    app = kernelapp.IPKernelApp.instance()
    app.initialize()
    # ``load_ahead`` imports the parts, then the course's checks, which the install cell's
    # ``from autograder import checks`` no longer loads: so each lab's module binds the kit's
    # functions (``forbidden``, which puts the sentinels in place, among them) before a student's
    # cell could replace them in the kit, as when that cell loaded them. A kit function looked up
    # at call time can still be replaced here; the points come from the independent check, which
    # no student code reaches
    load_ahead(PYPLOT_PARTS)
    app.start()


if __name__ == "__main__":
    main(sys.argv[1:])

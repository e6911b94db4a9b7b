"""The sandboxed side: code that runs student code, or lives in the same process or sandbox as
it (ARCHITECTURE.md, "Trust model of grading"). Nothing here decides a point.

    launcher    ``python -m autograder.grading.sandboxed.launcher``: sets the limits, starts
                bubblewrap and caps what comes out (trusted, but the parent of what it runs)
    kernel      the grading kernel (ipykernel), started by the kernelspec in the sandbox
    child       the independent check's child: runs none of the submission's code itself; the
                cells run in a fork of it, which answers calls; as a zygote, it forks a fresh copy
                for each carried-forward check
    carry       error carried forward in such a fork: earlier wrong answers' calls answered by the
                solution or by the student's own functions, the two forks alike

The grader starts these by module name (``protocol.boot.command``); it never imports them.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterable

# what pyplot, which every lab's cells import, is made of: the kernel and the check child import
# these before their notebook comes. Not pyplot itself: once it is loaded, a cell's
# ``matplotlib.use("TkAgg")`` switches the backend at once, and fails without a display (with
# pyplot not loaded it only sets ``rcParams["backend"]``)
PYPLOT_PARTS = ("matplotlib.figure", "matplotlib.font_manager", "matplotlib.backends.backend_agg")


def load_ahead(modules: Iterable[str]) -> None:
    """Import ``modules``, then every lab's checks (``checks.load``, which importing the package
    no longer does), before any student code: the kernel and the check child do. So the labs'
    modules bind the kit's functions before a cell could replace them in the kit. A failure is
    left to the cell that imports the same."""
    for module in modules:
        with contextlib.suppress(Exception):
            importlib.import_module(module)
    with contextlib.suppress(Exception):
        importlib.import_module("autograder.checks").load()

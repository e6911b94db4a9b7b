"""The Transformer course package: reference implementation, offline data, checks, grading.

Subpackages:
    reference  the reference PyTorch Transformer (the single source of truth for the math)
    data       offline, deterministic seq2seq tasks
    checks     the check functions called by the labs' test cells

The distribution is ``transformer-course``; this ``__version__`` is the one place its
version is set (pyproject.toml reads it).
"""

__version__ = "0.1.0"

import sys

from autograder.version import mismatch


def require(version: str, site: str | None = None) -> bool:
    """Say in one line when the installed course package is not the lab's ``version``.

    Called by every lab's install cell. Returns True when the versions agree. (It lives here,
    beside ``__version__``, so that ``autograder.version`` never imports the package back.)
    """
    message = mismatch(version, __version__, site)
    if message is not None:
        print(message, file=sys.stdout)
    return message is None


__all__ = ["__version__", "require"]

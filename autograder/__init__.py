"""The Transformer course package: reference implementation, offline data, checks, grading.

Subpackages:
    reference  the reference PyTorch Transformer (the single source of truth for the math)
    data       offline, deterministic seq2seq tasks
    checks     the check functions called by the labs' test cells

The distribution is ``transformer-course``; this ``__version__`` is the one place its
version is set (pyproject.toml reads it).
"""

__version__ = "0.1.0"

from autograder.version import require  # noqa: E402  (a lab's install cell calls it)

__all__ = ["__version__", "require"]

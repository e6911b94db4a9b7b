"""The Transformer course package: reference implementation, offline data, checks, grading.

Subpackages:
    reference  the reference PyTorch Transformer (the single source of truth for the math)
    data       offline, deterministic seq2seq tasks
    checks     the check functions called by the labs' test cells
"""

__version__ = "0.1.0"

"""The checks called by the labs' test cells: ``check_<exercise>(candidate, seed=0)``.

Every ``check_*`` function defined in a lab's package (``lab02_self_attention/``, ...) is
importable from here; ``kit/`` holds what the checks are made of. A check raises
``CheckFailed`` (an ``AssertionError``) with a message that teaches, and lets
``NotImplementedError`` from an untouched stub through unchanged.

The labs' modules (and torch with them) are imported on the first use of a ``check_*`` name,
of a lab's package, of ``__all__`` or of ``dir()``, not with this package: the grading
pipeline reads ``kit/`` (a mistake's words) and the checks' names (``names``) without
importing torch. The grading kernel and the independent check's child call ``load`` before
any student code, so that the labs' modules bind the kit's functions before a cell could
replace them (``grading.sandboxed.load_ahead``): keep both.
"""

from __future__ import annotations

import ast
import functools
import importlib
import pkgutil
from pathlib import Path
from typing import Any

from autograder.checks.kit.failures import CheckFailed as CheckFailed
from autograder.checks.kit.failures import ForbiddenCall as ForbiddenCall

_BASE = ["CheckFailed", "ForbiddenCall"]


@functools.cache
def _modules() -> tuple[str, ...]:
    """Every module of every lab's package, in order."""
    out = []
    for lab in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if lab.ispkg and lab.name.startswith("lab"):
            inner = pkgutil.iter_modules([str(Path(__file__).parent / lab.name)])
            out += [f"{__name__}.{lab.name}.{info.name}" for info in sorted(inner, key=lambda m: m.name)]
    return tuple(out)


@functools.cache
def load() -> tuple[str, ...]:
    """Import every lab's checks and bind each ``check_*`` here; their names, in order."""
    names = []
    for name in _modules():
        module = importlib.import_module(name)
        for attribute in dir(module):
            value = getattr(module, attribute)
            if attribute.startswith("check_") and getattr(value, "__module__", None) == module.__name__:
                globals()[attribute] = value
                names.append(attribute)
    return tuple(names)


@functools.cache
def names() -> frozenset[str]:
    """The names of the checks, read from the labs' sources without importing them: each
    ``def check_*`` at the top of a lab's module (the tests hold that they are ``load``'s)."""
    found = set()
    for name in _modules():
        path = Path(__file__).parent.joinpath(*name.split(".")[2:]).with_suffix(".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found |= {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("check_")}
    return frozenset(found)


def __getattr__(name: str) -> Any:
    if name == "__all__":
        return [*_BASE, *load()]
    if (name.startswith("check_") and name in load()) or any(m.startswith(f"{__name__}.{name}.") for m in _modules()):
        load()  # a lab's package too: then every lab's is imported, as importing this package once did
        try:
            return globals()[name]
        except KeyError:  # not bound here (deleted, or this package imported again after its labs)
            pass
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *load()})

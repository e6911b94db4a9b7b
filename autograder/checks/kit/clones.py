"""Copies of a forbidden function: its code run under another function object, refused.

``forbidden`` swaps the code of a blocked function, so the function object refuses wherever it
was captured. A *new* function made from the old code object before the check
(``types.FunctionType(ref.__code__, globals())``, kept in a default argument, a closure, a
list, a class, or made during the call from a code object kept earlier) runs the original
code. So, while the candidate runs, a trace hook (``sys.settrace``, this thread only; it asks
for no line events and, unlike a profile hook, is not called for built-ins) looks at the code
of every Python frame that starts and refuses the blocked functions' codes.

A running code counts as a blocked one when it *is* that code object, or a copy of it: equal
in bytecode, constants (nested codes compared alike) and the names it reads, and compiled at
the same place (file and first line): ``code.replace(co_name=..., co_varnames=...)`` and copies
from an earlier import of the package are refused. Two functions of one file with the same body
(``{i: t for t, i in vocab.items()}`` in two functions) are told apart by their lines, so an
allowed one never counts as a blocked one; the same source retyped by a student (another file)
is not refused, only flagged (``autograder.grading.grader.verdict.retyped``), and so is a copy whose origin
was forged with ``code.replace(co_filename=...)``: an answer that touches ``__code__`` is flagged.

The hook raises in the new frame, before its first line; CPython then removes the hook, and
the block fails anyway when it ends, as for every refusal (the hit is recorded), however the
candidate caught the exception. The trace function in force before (a debugger's) is put back
after the block; inside it, it does not run.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

# A blocked code and what to do when it runs (record the hit and return the exception to raise).
Refusal = Callable[[], BaseException]


def codes_of(function: types.FunctionType, code: types.CodeType) -> list[types.CodeType]:
    """``code`` (``function``'s own, before any swap) and the codes nested in it (its inner
    functions, lambdas and comprehensions). Empty for a decorator's wrapper, whose code is the
    decorator's, shared by every function it decorates (``torch.no_grad()``'s)."""
    if code.co_qualname != function.__qualname__:
        return []
    found, stack = [], [code]
    while stack:
        c = stack.pop()
        found.append(c)
        stack += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    return found


_CONTENTS: dict[int, tuple[types.CodeType, tuple]] = {}  # id -> (the code, kept alive; its content)


def _content(code: types.CodeType) -> tuple:
    """What a copy keeps whatever it was renamed: bytecode, constants, names, argument counts
    (computed once per code object: the blocked ones are the same at every block)."""
    cached = _CONTENTS.get(id(code))
    if cached is not None and cached[0] is code:
        return cached[1]
    if len(_CONTENTS) > 10_000:
        _CONTENTS.clear()
    consts = tuple(
        _content(k) if isinstance(k, types.CodeType) else (type(k).__name__, repr(k)) for k in code.co_consts
    )
    content = (code.co_code, consts, code.co_names, code.co_argcount, code.co_kwonlyargcount, code.co_flags)
    _CONTENTS[id(code)] = (code, content)
    return content


class _Watch:
    """The blocked codes of the blocks in force on one thread, and the hook that refuses them."""

    def __init__(self) -> None:
        self.blocks: list[dict[int, tuple[types.CodeType, Refusal]]] = []  # per block: id(code) -> (code, refusal)
        self.previous: Any = None  # the trace function in force before the outermost block
        self.seen: dict[int, tuple[types.CodeType, Refusal | None]] = {}  # id(code) -> (code, verdict), a cache
        self.files: set[str] = set()  # where blocked codes were compiled, which a copy keeps
        self.lines: set[int] = set()
        self.contents: dict[tuple, list[tuple[types.CodeType, Refusal]]] = {}  # content -> blocked codes

    def rebuild(self) -> None:
        self.seen.clear()
        codes = [entry for block in self.blocks for entry in block.values()]
        self.files = {code.co_filename for code, _ in codes}
        self.lines = {code.co_firstlineno for code, _ in codes}
        self.contents = {}
        for code, refusal in codes:
            self.contents.setdefault(_content(code), []).append((code, refusal))

    def verdict(self, code: types.CodeType) -> Refusal | None:
        for block in reversed(self.blocks):
            entry = block.get(id(code))
            if entry is not None and entry[0] is code:
                return entry[1]
        if code.co_firstlineno not in self.lines or code.co_filename not in self.files:
            return None
        return next(
            (
                refusal
                for blocked, refusal in self.contents.get(_content(code), [])
                if (blocked.co_filename, blocked.co_firstlineno) == (code.co_filename, code.co_firstlineno)
            ),
            None,
        )

    def hook(self, frame: types.FrameType, event: str, arg: Any) -> None:
        code = frame.f_code  # a global trace function hears only "call": a new Python frame
        cached = self.seen.get(id(code))
        if cached is None or cached[0] is not code:
            cached = (code, self.verdict(code))
            self.seen[id(code)] = cached
        if cached[1] is not None:
            raise cached[1]()


_local = threading.local()


@contextlib.contextmanager
def refusing(blocked: dict[int, tuple[types.CodeType, Refusal]]) -> Iterator[None]:
    """While the block runs on this thread, a Python frame running one of ``blocked``'s codes (or
    a copy of one) calls its refusal and raises what it returns."""
    if not blocked:
        yield
        return
    watch: _Watch = getattr(_local, "watch", None) or _Watch()
    _local.watch = watch
    if not watch.blocks:
        watch.previous = sys.gettrace()
    watch.blocks.append(blocked)
    watch.rebuild()
    sys.settrace(watch.hook)  # again on every entry: a refusal inside an outer block removed it
    try:
        yield
    finally:
        watch.blocks.remove(blocked)
        watch.rebuild()
        sys.settrace(watch.hook if watch.blocks else watch.previous)

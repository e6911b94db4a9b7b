"""Answers that retype the reference, or reach for the grader's machinery: flagged, never scored.

Runs on the grader's side (it parses a submission's source, never runs it). Two flags for the
instructor, shown as notes of the summary; neither changes a score:

- **copied**: a function or method of an answer cell whose syntax tree equals one of the
  course's reference implementation (``autograder/reference``) after renaming: every name
  (arguments, locals, globals such as ``torch`` imported under another alias, the function's
  own name) is replaced by its order of first appearance; docstrings, annotations and
  decorators are dropped; attribute names (``.softmax``, ``.reshape``), keywords and constants are kept.
  Only functions of at least ``MIN_STATEMENTS`` statements are compared: below that, short
  answers written independently coincide with the reference too often (``return x @ W.T``).
- **machinery**: an answer cell that touches what the checks rely on (a function's code
  object, ``types.FunctionType``, PyTorch's dispatch modes or ``torch.ops``, profile
  hooks, the ``autograder.checks`` or ``autograder.grading`` packages), or reaches
  anything dynamically (``dynamic``: ``sys.modules``, ``importlib``, names built at run time...). The checks refuse
  the reference's code under another function object and PyTorch's ops below the Python
  level; an answer that forges a code object's origin, or switches those refusals off in
  its own process, is what this flag is for.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from autograder import notebook_cells
from autograder.grading.grader.verdict.dynamic_reach import dynamic_constructs

MIN_STATEMENTS = 8  # N: a function of fewer statements is never flagged as copied
_MAX_SOURCE = 200_000  # characters of one cell parsed at most (a bigger cell is not compared)

# What an answer has no reason to touch (see the module's docstring): attribute or name -> what it is.
_MACHINERY = {
    "__code__": "a function's code object",
    "FunctionType": "types.FunctionType",
    "CodeType": "types.CodeType",
    "setprofile": "a profile hook",
    "settrace": "a trace hook",
    "_python_dispatch": "PyTorch's dispatch modes",
    "TorchDispatchMode": "PyTorch's dispatch modes",
    "TorchFunctionMode": "PyTorch's function modes",
    "DisableTorchFunction": "PyTorch's function modes",
    "_disable_current_modes": "PyTorch's dispatch modes",
    "ops": "torch.ops (PyTorch's operators below the Python level)",
}
_PACKAGES = ("autograder.checks", "autograder.grading")
_FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


class _Renamer(ast.NodeTransformer):
    """Names replaced by their order of first appearance; docstrings and annotations dropped."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def _name(self, name: str) -> str:
        return self.names.setdefault(name, f"n{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Name(id=self._name(node.id), ctx=node.ctx), node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        return ast.arg(arg=self._name(node.arg), annotation=None)

    def visit_FunctionDef(self, node: Any) -> ast.AST:
        node.name = self._name(node.name)
        node.returns = None
        node.body = _without_docstring(node.body)
        node.decorator_list = []  # a copy under @staticmethod or @torch.no_grad() is still a copy
        node.args = self.visit(node.args)
        node.body = [self.visit(s) for s in node.body]
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if node.value is None:  # a bare declaration `x: int` does nothing
            return ast.Pass()
        return ast.Assign(targets=[self.visit(node.target)], value=self.visit(node.value), lineno=0)


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return body[1:] or [ast.Pass()]
    return body


def statements(node: _FunctionNode) -> int:
    """The statements of a function's body, nested ones included, its docstring not."""
    return sum(isinstance(n, ast.stmt) for s in _without_docstring(node.body) for n in ast.walk(s))


def fingerprint(node: _FunctionNode) -> str:
    """The function's syntax tree after renaming, as text: equal for two functions that differ only
    in their names, docstrings, annotations, comments and layout."""
    return ast.dump(_Renamer().visit(ast.parse(ast.unparse(node)).body[0]), annotate_fields=False)


def _functions(tree: ast.AST) -> Iterator[_FunctionNode]:
    yield from (n for n in ast.walk(tree) if isinstance(n, _FunctionNode) and statements(n) >= MIN_STATEMENTS)


def _parse(source: str) -> ast.Module | None:
    if len(source) > _MAX_SOURCE:
        return None
    try:
        return ast.parse(textwrap.dedent(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # not Python (a magic, a syntax error): nothing to compare


def flag(source: str, reference: Any) -> str | None:
    """Why the answer cell ``source`` counts as ``reference`` (a function or class) retyped, or None.

    A function of the cell, of at least ``MIN_STATEMENTS`` statements, whose tree equals the
    reference's (a class: one of its methods) after renaming."""
    tree = _parse(source)
    theirs = _parse(inspect.getsource(reference))
    if tree is None or theirs is None:
        return None
    index = {fingerprint(f): f.name for f in _functions(theirs)}
    name = getattr(reference, "__qualname__", getattr(reference, "__name__", "?"))
    for mine in _functions(tree):
        found = index.get(fingerprint(mine))
        if found is not None:
            where = name if found == getattr(reference, "__name__", None) else f"{name}.{found}"
            return (
                f"`{mine.name}` has the syntax tree of the reference's `{reference.__module__}.{where}` after "
                f"renaming ({statements(mine)} statements): flagged, not scored 0; compare the two by hand"
            )
    return None


def machinery(source: str) -> str | None:
    """What of the grader's machinery the answer cell ``source`` touches, or None."""
    tree = _parse(source)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in _MACHINERY:
            if node.attr != "ops" or (isinstance(node.value, ast.Name) and node.value.id == "torch"):
                return f"the answer touches {_MACHINERY[node.attr]} (`.{node.attr}`)"
        if isinstance(node, ast.Name) and node.id in _MACHINERY and node.id != "ops":
            return f"the answer touches {_MACHINERY[node.id]} (`{node.id}`)"
        modules = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else []
        )
        for module in modules:
            if module.startswith(_PACKAGES) or module in ("torch.ops", "torch._C") or "_python_dispatch" in module:
                return f"the answer imports `{module}`"
    found = dynamic_constructs(source)
    return f"the answer reaches PyTorch or the grader dynamically ({', '.join(found)})" if found else None


@functools.lru_cache(maxsize=1)
def _reference_index() -> dict[str, str]:
    """Fingerprint -> ``module.qualname`` of every function and method of ``autograder.reference``
    of at least ``MIN_STATEMENTS`` statements, read from its source files."""
    import autograder.reference as package

    index: dict[str, str] = {}
    root = Path(next(iter(package.__path__)))
    for path in sorted(root.rglob("*.py")):  # the teaching path, training/ and oracles/
        tree = _parse(path.read_text(encoding="utf-8"))
        module = ".".join(["autograder.reference", *path.relative_to(root).with_suffix("").parts]).removesuffix(
            ".__init__"
        )
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, _FunctionNode) and statements(item) >= MIN_STATEMENTS:
                        index.setdefault(fingerprint(item), f"{module}.{node.name}.{item.name}")
            elif isinstance(node, _FunctionNode) and statements(node) >= MIN_STATEMENTS:
                index.setdefault(fingerprint(node), f"{module}.{node.name}")
    return index


def cell_notes(source: str) -> list[str]:
    """The flags of one answer cell: a function copied from anywhere in the reference, machinery."""
    tree = _parse(source)
    if tree is None:
        return []
    index = _reference_index()
    notes = [
        f"`{f.name}` has the syntax tree of the reference's `{index[fingerprint(f)]}` after renaming "
        f"({statements(f)} statements): flagged, not scored 0; compare the two by hand"
        for f in _functions(tree)
        if fingerprint(f) in index
    ]
    touched = machinery(source)
    if touched:
        notes.append(f"{touched}: flagged for a look, not scored 0")
    return notes


def _student_cells(notebook: Path) -> list[tuple[int, Any]]:
    """The answer cells and the cells the student added (the course's own are restored by nbgrader)."""
    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    return [
        (i, c)
        for i, c in enumerate(nb.cells, 1)
        if c.cell_type == "code" and (notebook_cells.is_answer(c) or notebook_cells.grade_id(c) is None)
    ]


_HARMLESS_GC = frozenset({"collect", "enable", "disable", "isenabled", "get_count", "get_threshold", "set_threshold"})
_REVEALING = frozenset({"__code__", "__globals__", "__closure__", "__dict__", "__builtins__", "__wrapped__"})


def _gc_harmless(tree: ast.AST) -> bool:
    """Is ``gc`` only imported as itself and used only to collect or tune collection?"""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "gc" and a.asname for a in node.names):
            return False
        if isinstance(node, ast.ImportFrom) and node.module == "gc":
            return False
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "gc":
            if node.attr not in _HARMLESS_GC:
                return False
    uses = sum(1 for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "gc")
    read = sum(
        1
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "gc"
    )
    return uses == read  # ``gc`` itself never passed on or kept under another name


def _reads_by_name(tree: ast.AST) -> bool:
    """Does a call read, by a literal name, an attribute that shows how a function is bound
    (``getattr(softmax, "__code__")``)?"""
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "hasattr", "setattr", "delattr")
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and node.args[1].value in _REVEALING
        for node in ast.walk(tree)
    )


def observes_binding(source: str) -> bool:
    """Could the answer cell ``source`` see how error carried forward binds an earlier answer
    (a code object, frames, the objects the collector holds, a namespace's listing)? Collecting
    garbage cannot: ``gc.collect()`` alone is not such a construct."""
    tree = _parse(source)
    if tree is None:
        return False
    found = machinery(source)
    if found is not None and not (
        found.endswith("dynamically (gc)") and dynamic_constructs(source) == ["gc"] and _gc_harmless(tree)
    ):
        return True
    return _reads_by_name(tree) or any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "dir" and not n.args
        for n in ast.walk(tree)
    )


def could_observe_binding(notebook: Path) -> bool:
    """Could any cell the student wrote see how error carried forward binds an earlier answer
    (``observes_binding``)? Such a submission is graded as written: error carried forward is not
    applied to it."""
    try:
        return any(observes_binding(c.source) for _, c in _student_cells(notebook))
    except Exception:  # unreadable: grading reports it, and nothing is carried forward
        return True


def notes(notebook: Path) -> list[str]:
    """The flags of a submission's answer cells and of the cells the student added (every cell a
    student may have written: the course's own are restored by nbgrader), for the summary.
    Never raises: a notebook that cannot be read has no flags here (grading reports it)."""
    try:
        cells = _student_cells(notebook)
        return [
            f"{notebook_cells.grade_id(c) or f'cell {i}'}: {note}" for i, c in cells for note in cell_notes(c.source)
        ]
    except Exception:  # a flag is advice: its failure must not cost grading
        return []

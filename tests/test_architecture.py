"""Does the package keep its shape: no import circle, the grader's side apart from the sandboxed
side (autograder/grading/__init__.py), short modules, no standard-library names, no twin classes?

Read with ``ast`` alone: no module of ``autograder`` is imported here, so a module that
would misbehave on import cannot hide its own imports."""

from __future__ import annotations

import ast
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "autograder"
GRADER = "autograder.grading.grader"
SANDBOXED = "autograder.grading.sandboxed"
MAX_LINES = 350


def modules(root: Path = PACKAGE) -> dict[str, Path]:
    """Dotted name -> file, for every module of the package under ``root``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imported(node: ast.AST, name: str, is_package: bool) -> Iterator[str]:
    """The dotted names an import statement asks for, relative ones resolved against ``name``."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            here = name.split(".") if is_package else name.split(".")[:-1]
            anchor = here[:len(here) - node.level + 1]
            base = ".".join([*anchor, *([base] if base else [])])
        yield base
        yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports, at module level or inside a function
    (``from X import Y`` counts as an import of ``X.Y`` when that is a module, else of ``X``)."""
    known = modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            wanted = list(_imported(node, name, path.name == "__init__.py"))
            if isinstance(node, ast.ImportFrom):
                base, names = wanted[0], wanted[1:]
                found = [n for n in names if n in known]
                edges.update(found if len(found) == len(names) else [*found, base])
            else:
                edges.update(wanted)
        graph[name] = {target for target in edges if target in known and target != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def reachable(graph: dict[str, set[str]], start: str) -> dict[str, str]:
    """Every module ``start`` imports, directly or not -> the module that imports it."""
    seen: dict[str, str] = {}
    todo = [start]
    while todo:
        node = todo.pop()
        for target in graph[node]:
            if target not in seen and target != start:
                seen[target] = node
                todo.append(target)
    return seen


def _on_side(name: str, side: str) -> bool:
    return name == side or name.startswith(side + ".")


def test_the_import_graph_has_no_cycle() -> None:
    """Does any group of modules of autograder import each other in a circle, counting the
    imports inside functions too (a lazy import hides a circle, it does not remove it)?"""
    assert cycles(import_graph()) == []


def test_the_grader_side_never_imports_the_sandboxed_side() -> None:
    """Does any module of the grader's side import, directly or through others, a module that
    runs student code or lives beside it? (The grader starts those by name, in a sandbox.)"""
    graph = import_graph()
    grader = [name for name in graph if _on_side(name, GRADER)]
    assert len(grader) > 10 and any(_on_side(name, SANDBOXED) for name in graph), "the two sides are packages"
    crossings = {}
    for name in grader:
        for target, via in reachable(graph, name).items():
            if _on_side(target, SANDBOXED):
                crossings[name] = f"{target} (imported by {via})"
    assert crossings == {}


def test_no_module_is_over_the_line_count() -> None:
    """Is any module of autograder longer than MAX_LINES lines (split it by responsibility)?"""
    long = {name: n for name, path in modules().items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_no_module_is_named_like_the_standard_library() -> None:
    """Is any module of autograder named like a module of the standard library (which a
    script run from its folder, or a reader, would confuse with it)?"""
    clashes = [name for name, path in modules().items() if path.stem in sys.stdlib_module_names]
    assert clashes == []


def test_no_two_grading_classes_share_a_name() -> None:
    """Do two classes of autograder/grading have the same name (a reader could not tell them
    apart in a traceback or a review)?"""
    names = Counter(node.name for path in (PACKAGE / "grading").rglob("*.py")
                    for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ClassDef))
    assert [name for name, count in names.items() if count > 1] == []

"""The code that answers an exercise: what a run of the student's notebook leaves bound to the
exercise's names, wherever the student wrote it.

An exercise's names are those its release's stub binds at top level (``def softmax``, ``class
Attention``). A student may answer in the answer cell, or leave the stub as released and write
the answer in a cell of their own under it: the checks call whatever the *last* top-level
binding of each name, in the cells the student wrote (answer cells and cells they added, in the
notebook's order), left bound. That statement is the answer compared, with the top-level
statements the student wrote that it uses (its helpers, followed through their own uses, never
another exercise's names, which are compared on their own exercise). Code the answer never
reaches (an unused helper, a definition bound again further down) is not compared.

Where a name of the exercise has no such binding (its cell is not Python, the stub binds
nothing), the exercise's answer cells are compared whole, as written. Bindings made at run
time (``globals()[...]``, a ``global`` inside a function) are not followed.

Student code is parsed here (``ast``), never run; IPython's ``%`` and ``!`` lines are read as blank.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass

_MAX_SOURCE = 1_000_000  # characters of one cell parsed at most (a bigger cell binds nothing here)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)

Cell = tuple[str | None, str]  # (an answer cell's grade id, None for a cell the student added; its source)


def _parse(source: str) -> ast.Module | None:
    if len(source) > _MAX_SOURCE:
        return None
    python = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n"))
    try:
        return ast.parse(python)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # not Python: it binds nothing in a run either


def _bound_by(statement: ast.stmt) -> set[str]:
    """The module-level names a top-level statement binds: a definition's name, assigned names,
    imports, and those bound inside its ``if``, ``for``, ``with`` or ``try`` blocks; never a
    name local to a function, class or comprehension inside it."""
    out: set[str] = set()
    todo: list[ast.AST] = [statement]
    while todo:
        node = todo.pop()
        if isinstance(node, _SCOPES):
            if not isinstance(node, ast.Lambda):
                out.add(node.name)
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            out.update((a.asname or a.name).split(".")[0] for a in node.names if a.name != "*")
        if not isinstance(node, _COMPREHENSIONS):
            todo.extend(ast.iter_child_nodes(node))
    return out


def _used_by(statement: ast.stmt) -> set[str]:
    """Every name the statement reads, in its nested functions too (what its helpers may be)."""
    return {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def defined(source: str) -> set[str]:
    """The names a stub (the course's own cell) binds at top level, its imports aside (what it
    imports is no answer of the student's)."""
    tree = _parse(source)
    statements = [s for s in tree.body if not isinstance(s, ast.Import | ast.ImportFrom)] if tree else []
    return {name for s in statements for name in _bound_by(s)}


@dataclass(frozen=True)
class Binding:
    """A top-level statement that binds a name: where it is and the names it reads (kept instead
    of its syntax tree, which takes many times the source's memory)."""

    position: int  # the cell's position among the student's cells
    first: int  # its first line in the cell (a decorator's, if any), 1-based
    last: int
    uses: frozenset[str]


def _binding(position: int, statement: ast.stmt) -> Binding:
    decorators = [d.lineno for d in getattr(statement, "decorator_list", [])]
    end = statement.end_lineno or statement.lineno
    return Binding(position, min([statement.lineno, *decorators]), end, frozenset(_used_by(statement)))


class Written:
    """The cells a student wrote, in the notebook's order, each parsed once."""

    def __init__(self, cells: Iterable[Cell]) -> None:
        self.cells = list(cells)
        self.last: dict[str, Binding] = {}  # name -> its last top-level binding
        for position, (_, source) in enumerate(self.cells):
            tree = _parse(source)
            for statement in tree.body if tree else ():
                binding = _binding(position, statement)
                self.last.update(dict.fromkeys(_bound_by(statement), binding))

    def _reached(self, names: set[str], others: Set[str]) -> set[Binding]:
        """The last bindings of ``names`` and of the names they use, followed, ``others`` left out."""
        reached: set[Binding] = set()
        todo = sorted(names)
        while todo:
            binding = self.last.get(todo.pop())
            if binding is not None and binding not in reached:
                reached.add(binding)
                todo += sorted(binding.uses - others - names)
        return reached

    def answer(self, answer_cells: Sequence[str], names: set[str], others: Set[str] = frozenset()) -> str:
        """The code compared for an exercise of the names ``names`` whose answer cells (grade ids)
        are ``answer_cells``; ``others``: the other exercises' names, never followed."""
        unbound = not names or not names <= self.last.keys()  # then the answer cells count as written
        whole = [i for i, (grade_id, _) in enumerate(self.cells) if unbound and grade_id in answer_cells]
        parts = [self.cells[i][1] for i in whole]
        for b in sorted(self._reached(names, others), key=lambda b: (b.position, b.first)):
            if b.position not in whole:
                parts.append("\n".join(self.cells[b.position][1].split("\n")[b.first - 1 : b.last]))
        return "\n".join(parts)

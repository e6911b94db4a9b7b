"""Build lab notebooks with nbgrader metadata (for authors; students never need this).

A lab is written as a list of cells and saved to ``solutions/NN-slug/NN-slug.ipynb``;
``make release`` then derives ``notebooks/``. Example::

    from autograder.authoring import lab, md, code, solution, tests, save
    nb = lab("02-self-attention", [
        md("intro", "# Lab 2 ..."),
        solution("softmax", '''def softmax(x, dim=-1):
        \"\"\"...\"\"\"
        ### BEGIN SOLUTION
        ...
        ### END SOLUTION'''),
        tests("test_softmax", 2, visible="check_softmax(softmax)",
              hidden="for seed in (1, 2, 3):\\n    check_softmax(softmax, seed=seed)",
              imports="from autograder.checks import check_softmax"),
    ])
    save(nb, "solutions/02-self-attention/02-self-attention.ipynb")
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

REPOSITORY = "https://github.com/transformer-course/transformer-course"

INSTALL = f'''# In Colab or any fresh environment: install the course package (keeps the installed torch).
try:
    import autograder
except ImportError:
    %pip install -q "autograder @ git+{REPOSITORY}"
    import autograder'''

# Re-import the checks from disk so that nothing a student cell patched is trusted.
FRESH_IMPORT = 'import sys; [sys.modules.pop(m) for m in list(sys.modules) if m.split(".")[0] == "autograder"]'


def _meta(grade_id: str, *, solution: bool = False, grade: bool = False, locked: bool = True,
          points: float | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def md(grade_id: str, text: str) -> nbformat.NotebookNode:
    """A read-only markdown cell."""
    return new_markdown_cell(text.strip("\n"), metadata=_meta(grade_id))


def code(grade_id: str, source: str) -> nbformat.NotebookNode:
    """A read-only code cell (setup, demonstrations, plots from the student's functions)."""
    return new_code_cell(source.strip("\n"), metadata=_meta(grade_id))


def free(grade_id: str, source: str) -> nbformat.NotebookNode:
    """An ungraded code cell the student may edit freely (a plot of their own, say)."""
    return new_code_cell(source.strip("\n"), metadata=_meta(grade_id, locked=False))


def solution(grade_id: str, source: str) -> nbformat.NotebookNode:
    """An exercise: the signature and docstring, the solution between
    ``### BEGIN SOLUTION`` and ``### END SOLUTION`` (replaced by ``raise NotImplementedError()``)."""
    if "### BEGIN SOLUTION" not in source:
        raise ValueError(f"solution cell {grade_id!r} has no ### BEGIN SOLUTION marker")
    return new_code_cell(source.strip("\n"), metadata=_meta(grade_id, solution=True, locked=False))


def tests(grade_id: str, points: float, *, imports: str, visible: str, hidden: str) -> nbformat.NotebookNode:
    """A graded test cell: visible checks, then a hidden block that re-imports the checks
    afresh and runs more seeds and cases."""
    source = "\n".join([
        imports, visible.strip("\n"), "### BEGIN HIDDEN TESTS", FRESH_IMPORT, imports,
        hidden.strip("\n"), "### END HIDDEN TESTS",
    ])
    return new_code_cell(source, metadata=_meta(grade_id, grade=True, points=points))


def lab(name: str, cells: list[nbformat.NotebookNode]) -> nbformat.NotebookNode:
    """A lab notebook: the install cell first, then ``cells``."""
    nb = new_notebook(cells=[code("install", INSTALL), *cells])
    nb.metadata.update({
        "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    })
    total = sum(c.metadata["nbgrader"].get("points", 0) for c in nb.cells)
    first_md = next((c for c in nb.cells if c.cell_type == "markdown"), None)
    if first_md is None or f"{total:g} points" not in first_md.source:
        raise ValueError(f"lab {name}: the first markdown cell must state the total, '{total:g} points'")
    return nb


def save(nb: nbformat.NotebookNode, path: str | Path) -> None:
    """Validate and write the notebook (cell ids normalised, no outputs)."""
    for i, cell in enumerate(nb.cells):
        cell["id"] = cell.metadata["nbgrader"]["grade_id"].replace("_", "-")
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.validate(nb)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))

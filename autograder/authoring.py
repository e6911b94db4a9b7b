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

import copy
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograder import __version__
from autograder import notebook_cells as nbcells
from autograder.version import DISTRIBUTION, REPOSITORY, wheel_name

ROOT = Path(__file__).resolve().parents[1]
METADATA_KEY = "transformer_course"  # notebook metadata: {"version": ..., "site": ...}

# Every lab's first cell. It checks for the course package itself (an `autograder` from PyPI is
# another project's), installs the version the lab was released with (the wheel published with
# the site, then the repository's tag) and says in one line when another version is installed.
# Its code is hidden where the lab is read (HIDDEN): a student sees one line, and runs it.
INSTALL = """#@title Run this cell first: it installs the course package (Colab, Binder, a fresh environment)
# The course package this lab was released with (distribution `transformer-course`, import name
# `autograder`). The installed torch stays.
COURSE_VERSION, COURSE_SITE = "{version}", "{site}"
import importlib, importlib.metadata, importlib.util, subprocess, sys
try:
    from autograder import __version__, checks, require  # `autograder` on PyPI is another project
except Exception:
    for source in (f"{{COURSE_SITE.rstrip('/')}}/wheels/{wheel}",
                   f"git+{repository}@v{{COURSE_VERSION}}"):
        if subprocess.run([sys.executable, "-m", "pip", "install", "-q", f"{distribution} @ {{source}}"]).returncode == 0:
            break
    else:
        raise RuntimeError("could not install the course package: see pip's message above")
    for name in [m for m in sys.modules if m.split(".")[0] == "autograder"]:
        del sys.modules[name]
    importlib.invalidate_caches()
    location = str(importlib.metadata.distribution("{distribution}").locate_file(""))
    if not importlib.util.find_spec("autograder").origin.startswith(location):  # another `autograder` comes first
        sys.path.insert(0, location)
import autograder
autograder.require(COURSE_VERSION, COURSE_SITE)"""  # noqa: E501 - the cell's code, as students see it


# The install cell's source is hidden, its title shown: JupyterLab (jupyter.source_hidden), Jupyter Book
# (the hide-input tag: a "show code" toggle) and Colab (a form cell shows its #@title line only).
HIDDEN = {"jupyter": {"source_hidden": True}, "tags": ["hide-input"], "cellView": "form"}


def course_site(root: str | Path = ROOT) -> str:
    """The site's own address, ``html.baseurl`` in ``_config.yml`` (the one place it is set)."""
    import yaml

    config = Path(root) / "_config.yml"
    if not config.is_file():
        raise FileNotFoundError(f"{config} not found: labs are built inside the course repository")
    site = (yaml.safe_load(config.read_text()).get("html") or {}).get("baseurl")
    if not site:
        raise ValueError(f"{config}: set html.baseurl to the site's address (the labs install from it)")
    return site


def install_source(version: str = __version__, site: str | None = None) -> str:
    """The code of a lab's install cell for course ``version``, installing from ``site``."""
    return INSTALL.format(
        version=version,
        site=site or course_site(),
        wheel=wheel_name("{COURSE_VERSION}"),
        repository=REPOSITORY,
        distribution=DISTRIBUTION,
    )


def stamp(nb: nbformat.NotebookNode, version: str = __version__, site: str | None = None) -> nbformat.NotebookNode:
    """Write the course version and site into ``nb``: its metadata and its install cell (the first)."""
    site = site or course_site()
    nb.metadata[METADATA_KEY] = {"version": version, "site": site}
    first = nb.cells[0]
    if nbcells.grade_id(first) != "install":
        raise ValueError("the first cell of a lab must be its install cell (grade_id 'install')")
    first.source = install_source(version, site)
    first.metadata.update(copy.deepcopy(HIDDEN))
    return nb


# Re-import the checks from disk so that nothing a student cell patched is trusted.
FRESH_IMPORT = 'import sys; [sys.modules.pop(m) for m in list(sys.modules) if m.split(".")[0] == "autograder"]'


def md(grade_id: str, text: str) -> nbformat.NotebookNode:
    """A read-only markdown cell."""
    return new_markdown_cell(text.strip("\n"), metadata=nbcells.metadata(grade_id))


def code(grade_id: str, source: str) -> nbformat.NotebookNode:
    """A read-only code cell (setup, demonstrations, plots from the student's functions)."""
    return new_code_cell(source.strip("\n"), metadata=nbcells.metadata(grade_id))


def free(grade_id: str, source: str) -> nbformat.NotebookNode:
    """An ungraded code cell the student may edit freely (a plot of their own, say)."""
    return new_code_cell(source.strip("\n"), metadata=nbcells.metadata(grade_id, locked=False))


def solution(grade_id: str, source: str) -> nbformat.NotebookNode:
    """An exercise: the signature and docstring, the solution between
    ``### BEGIN SOLUTION`` and ``### END SOLUTION`` (replaced by ``raise NotImplementedError()``)."""
    if "### BEGIN SOLUTION" not in source:
        raise ValueError(f"solution cell {grade_id!r} has no ### BEGIN SOLUTION marker")
    return new_code_cell(source.strip("\n"), metadata=nbcells.metadata(grade_id, solution=True, locked=False))


def tests(grade_id: str, points: float, *, imports: str, visible: str, hidden: str) -> nbformat.NotebookNode:
    """A graded test cell: visible checks, then a hidden block that re-imports the checks
    afresh and runs more seeds and cases."""
    source = "\n".join(
        [
            imports,
            visible.strip("\n"),
            "### BEGIN HIDDEN TESTS",
            FRESH_IMPORT,
            imports,
            hidden.strip("\n"),
            "### END HIDDEN TESTS",
        ]
    )
    return new_code_cell(source, metadata=nbcells.metadata(grade_id, grade=True, points=points))


def lab(name: str, cells: list[nbformat.NotebookNode]) -> nbformat.NotebookNode:
    """A lab notebook: the install cell first, then ``cells``."""
    nb = stamp(new_notebook(cells=[code("install", "install"), *cells]))
    nb.metadata.update(
        {
            "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        }
    )
    total = sum(nbcells.points(c) for c in nb.cells)
    first_md = next((c for c in nb.cells if c.cell_type == "markdown"), None)
    if first_md is None or f"{total:g} points" not in first_md.source:
        raise ValueError(f"lab {name}: the first markdown cell must state the total, '{total:g} points'")
    return nb


def save(nb: nbformat.NotebookNode, path: str | Path) -> None:
    """Validate and write the notebook (cell ids normalised, no outputs)."""
    for cell in nb.cells:
        cell["id"] = nbcells.own_grade_id(cell).replace("_", "-")
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.validate(nb)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


def stamp_all(root: str | Path = ROOT) -> list[Path]:
    """Rewrite the install cell and version metadata of every lab in ``root/solutions``."""
    paths = sorted(Path(root).glob("solutions/*/*.ipynb"))
    for path in paths:
        save(stamp(nbformat.read(str(path), as_version=4), site=course_site(root)), path)
    return paths


if __name__ == "__main__":  # python -m autograder.authoring: after a new version or site address
    for path in stamp_all():
        print(f"stamped {path.relative_to(ROOT)} with {__version__}")
    print("now run `python -m autograder release` to regenerate notebooks/")

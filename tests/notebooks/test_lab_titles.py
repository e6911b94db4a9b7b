"""Does every lab's title, in its source and as released (and so in the book's navigation), read
"Lab N: Title (P points)", P the sum of the points of its graded cells, in one capitalisation?"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
import yaml

from autograder import notebook_cells as nbcells
from autograder.grading import course

REPO = Path(__file__).resolve().parents[2]
LABS = course.labs(REPO)
TITLE = re.compile(r"^# Lab (\d+): ([A-Z][^\n]*) \((\d+(?:\.\d+)?) points\)$")


@pytest.mark.parametrize("folder", ["solutions", "notebooks"])
@pytest.mark.parametrize("lab", LABS)
def test_the_title_states_the_labs_number_and_total(folder: str, lab: str):
    nb = nbformat.read(str(REPO / folder / lab / f"{lab}.ipynb"), as_version=4)
    first_md = next(c for c in nb.cells if c.cell_type == "markdown")
    title = first_md.source.splitlines()[0]
    found = TITLE.match(title)
    assert found, f"{folder}/{lab}: {title!r} is not '# Lab N: Title (P points)'"
    assert int(found.group(1)) == int(lab[:2]), title
    total = sum(nbcells.points(c) for c in nb.cells)
    assert float(found.group(3)) == total, f"{folder}/{lab}: the title says {found.group(3)}, the cells {total:g}"


def test_every_lab_is_in_the_books_navigation():
    """Is every lab of solutions/ (the warm-up included) a page of _toc.yml?"""
    toc = (REPO / "_toc.yml").read_text()
    files = {c["file"] for part in yaml.safe_load(toc)["parts"] for c in part["chapters"]}
    assert not [lab for lab in LABS if f"notebooks/{lab}/{lab}" not in files]

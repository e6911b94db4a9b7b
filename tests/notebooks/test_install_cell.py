"""Do pyproject.toml, _config.yml and every lab's install cell agree on one course version and
one site address (run `python -m autograder.authoring` and `make release` if not)?"""

from __future__ import annotations

import tomllib
from pathlib import Path

import nbformat
import pytest

import autograder
from autograder import authoring
from autograder.grading import course

REPO = Path(__file__).resolve().parents[2]
LABS = course.labs(REPO)


def test_one_version_in_one_place():
    """Does pyproject.toml take its version from autograder.__version__, under a distribution name of its own?"""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["project"]["name"] == "transformer-course"
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "autograder.__version__"}
    assert project["project"]["requires-python"] == ">=3.11"


@pytest.mark.parametrize("folder", ["solutions", "notebooks"])
@pytest.mark.parametrize("lab", LABS)
def test_install_cell_installs_this_version_from_the_site(folder: str, lab: str):
    """Does the lab record the course version and the site's address (html.baseurl), and does its
    first cell install exactly that version from there?"""
    nb = nbformat.read(str(REPO / folder / lab / f"{lab}.ipynb"), as_version=4)
    site = authoring.course_site(REPO)
    assert nb.metadata[authoring.METADATA_KEY] == {"version": autograder.__version__, "site": site}, (
        f"{folder}/{lab}: run `python -m autograder.authoring` and `python -m autograder release`"
    )
    assert nb.cells[0].source == authoring.install_source(autograder.__version__, site), (
        f"{folder}/{lab}: run `python -m autograder.authoring` and `python -m autograder release`"
    )
    assert "import autograder\n" not in nb.cells[0].source.split("except")[0]  # never a bare import as the guard


@pytest.mark.parametrize("folder", ["solutions", "notebooks"])
@pytest.mark.parametrize("lab", LABS)
def test_install_cell_shows_one_line(folder: str, lab: str):
    """Is the install cell's code hidden where the lab is read, its first line (a title that says to
    run it) shown: JupyterLab's source_hidden, Jupyter Book's hide-input tag, Colab's form view?"""
    cell = nbformat.read(str(REPO / folder / lab / f"{lab}.ipynb"), as_version=4).cells[0]
    assert cell.metadata["jupyter"]["source_hidden"] is True
    assert "hide-input" in cell.metadata["tags"]
    assert cell.metadata["cellView"] == "form"
    assert cell.source.splitlines()[0].startswith("#@title Run this cell first")

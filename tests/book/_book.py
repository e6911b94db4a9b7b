"""Shared helpers of the book tests: where the site is, how it is built, which pages it has."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
BUILD_ARGS = ["build", ".", "-W", "-n", "--keep-going"]  # the flags of `make book`
BUILD_LOG = ROOT / "_build" / "book-build.log"  # the output of the session's build (conftest.built_site)


def toc_pages() -> list[str]:
    """Every page of ``_toc.yml`` in reading order, as docnames (``book/intro``)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]]
    for part in toc.get("parts", []):
        for chapter in part.get("chapters", []):
            pages.append(chapter["file"])
            pages.extend(section["file"] for section in chapter.get("sections", []))
    return [str(Path(page).with_suffix("")) for page in pages]


def jupyter_book() -> str:
    """The ``jupyter-book`` of the running interpreter's environment (``make test`` runs .venv's)."""
    beside = Path(sys.executable).with_name("jupyter-book")
    if beside.exists():
        return str(beside)
    found = shutil.which("jupyter-book")
    if found is None:
        pytest.fail("jupyter-book is not installed: pip install -r requirements.txt")
    return found

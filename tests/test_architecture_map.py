"""Is ARCHITECTURE.md a true map: does it name every package and module of ``autograder/`` and
nothing that does not exist, and does any file of the repository cite a file it does not have?"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAP = REPO / "ARCHITECTURE.md"
SECTION = "## Every package and module"
# a path from the repository's root to a file (a suffix of these), or a document by its capital name
CITED_PATH = re.compile(
    r"(?<![\w./-])((?:autograder|tests|benchmarks|book|hub|notebooks|solutions|deploy|binder"
    r"|_static|_templates|\.ci)/[\w./-]*\.(?:py|md|ipynb|toml|yml|yaml|json|txt|cfg|sh))\b"
)
CITED_DOC = re.compile(r"(?<![\w./-])([A-Z][A-Z_]+\.md)\b")
PLACEHOLDER = re.compile(r"NN|LAB|STUDENT|NAME|\*|\{|<")  # a pattern of paths, not a path
SELF = Path(__file__).resolve().relative_to(REPO).as_posix()  # its examples of dead citations are on purpose
TEXT = (".py", ".md", ".toml", ".yml", ".yaml", ".cfg", ".txt", ".sh")


def on_disk(root: Path = REPO) -> set[str]:
    """Every package (``autograder/.../``) and module (``autograder/.../x.py``, not ``__init__``)."""
    files = [p for p in (root / "autograder").rglob("*.py") if "__pycache__" not in p.parts]
    return {p.relative_to(root).as_posix() for p in files if p.name != "__init__.py"} | {
        p.parent.relative_to(root).as_posix() + "/" for p in files if p.name == "__init__.py"
    }


def named(text: str) -> set[str]:
    """The packages and modules the map's last section names (in backticks)."""
    section = text.split(SECTION, 1)[1]
    return set(re.findall(r"`(autograder/(?:[\w/.]*(?:\.py|/))?)`", section))


def dead_citations(files: dict[str, str], root: Path = REPO) -> dict[str, list[str]]:
    """File -> the files it cites that do not exist (paths from the root, and capital documents
    such as ``PLANS.md``)."""
    dead: dict[str, list[str]] = {}
    for name, text in files.items():
        cited = {m for m in CITED_PATH.findall(text) if not PLACEHOLDER.search(m)} | set(CITED_DOC.findall(text))
        if missing := sorted(c for c in cited if not (root / c).exists()):
            dead[name] = missing
    return dead


def tracked_text() -> dict[str, str]:
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return {
        name: (REPO / name).read_text(errors="replace")
        for name in out.split()
        if (name.endswith(TEXT) or Path(name).name in ("Makefile", "run"))
        and (REPO / name).is_file()
        and not name.startswith("benchmarks/results/")
        and name != SELF
    }


def test_the_map_names_every_package_and_module_and_nothing_else() -> None:
    """Does ARCHITECTURE.md's last section name each package and module of autograder/, and
    only those (a module added, moved or removed shows here until the map follows)?"""
    assert len(on_disk()) > 100
    listed = named(MAP.read_text())
    assert {"missing from the map": sorted(on_disk() - listed), "not in the tree": sorted(listed - on_disk())} == {
        "missing from the map": [],
        "not in the tree": [],
    }


def test_a_module_left_off_the_map_is_found(tmp_path: Path) -> None:
    """Would the comparison see a module the map does not name, and a name with no module?"""
    (tmp_path / "autograder" / "grading").mkdir(parents=True)
    for name in ("autograder/__init__.py", "autograder/grading/__init__.py", "autograder/grading/a.py"):
        (tmp_path / name).write_text("")
    text = f"{SECTION}\n`autograder/` `autograder/grading/` `autograder/grading/b.py`"
    assert on_disk(tmp_path) - named(text) == {"autograder/grading/a.py"}
    assert named(text) - on_disk(tmp_path) == {"autograder/grading/b.py"}


def test_no_file_cites_a_file_that_does_not_exist() -> None:
    """Does any tracked text (code, docstrings, guides, the map) cite a file the repository does
    not have, such as a design document kept outside it or a module by its old path?"""
    assert dead_citations(tracked_text()) == {}


def test_a_dead_citation_is_found() -> None:
    """Would the check see a document outside the repository and a moved module's old path?"""
    files = {
        "a.py": '"""See PLANS.md, "Trust model of grading"; and autograder/grading/grader/sandbox.py."""',
        "b.md": "`autograder/grading/grader/run/bwrap.py`, `solutions/NN-slug/NN-slug.ipynb`, README.md",
    }
    assert dead_citations(files) == {"a.py": ["PLANS.md", "autograder/grading/grader/sandbox.py"]}

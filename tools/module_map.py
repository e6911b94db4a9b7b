"""ARCHITECTURE.md's list of every package and module, written from their docstrings.

The list is the part of ARCHITECTURE.md between two HTML comments (``BEGIN`` and ``END``
below): under a heading per package (its ``__init__.py``'s summary), a row per module with its
own. A summary is the first sentence of a docstring's first paragraph, joined into one line; a
module without a docstring shows "(no docstring)", which a reader sees and a writer fixes. The
code is read with ``ast``, never imported.

    python tools/module_map.py           # rewrite the list in ARCHITECTURE.md (make map)
    python tools/module_map.py --check   # exit 1, with a diff, when the list is stale

Where the file has no markers yet, writing puts the list, with its markers, in place of the body
of the section "## Every package and module" (the rest of the file is left as it is).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "autograder"
MAP = REPO / "ARCHITECTURE.md"
SECTION = "## Every package and module"
BEGIN = "<!-- module list: written by tools/module_map.py (make map) from the docstrings; do not edit by hand -->"
END = "<!-- end of the module list -->"
INTRO = "Each package, then its modules, with the first sentence of its docstring."
NO_DOCSTRING = "(no docstring)"
# the end of a sentence: a full stop, question or exclamation mark, then a space and what starts one
SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=[A-Z`(\"'])")


def summary(docstring: str | None) -> str:
    """The first sentence of the docstring's first paragraph, on one line (``|`` escaped for a table)."""
    if not docstring or not docstring.strip():
        return NO_DOCSTRING
    paragraph = " ".join(docstring.strip().split("\n\n", 1)[0].split())
    return SENTENCE_END.split(paragraph, 1)[0].replace("|", "\\|")


def docstring_of(path: Path) -> str | None:
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))


def packages(root: Path = REPO) -> dict[Path, list[Path]]:
    """Each package's folder (sorted) -> its modules (sorted, ``__init__.py`` left out)."""
    found: dict[Path, list[Path]] = {}
    for init in sorted((root / PACKAGE).rglob("__init__.py")):
        if "__pycache__" not in init.parts:
            found[init.parent] = sorted(p for p in init.parent.glob("*.py") if p.name != "__init__.py")
    return found


def module_list(root: Path = REPO) -> str:
    """The generated list, markers included, ending in a newline."""
    lines = [BEGIN, "", INTRO]
    for folder, modules in packages(root).items():
        name = folder.relative_to(root).as_posix() + "/"
        lines += ["", f"### `{name}`", "", summary(docstring_of(folder / "__init__.py"))]
        if modules:
            lines += ["", "| module | what it is |", "|---|---|"]
            lines += [f"| `{p.relative_to(root).as_posix()}` | {summary(docstring_of(p))} |" for p in modules]
    return "\n".join([*lines, "", END]) + "\n"


def with_list(text: str, generated: str) -> str:
    """``text`` with its list replaced by ``generated``: between the markers, or else as the body of
    the section ``SECTION`` (up to the next section of the same level, or the end)."""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        return head + generated.rstrip("\n") + tail
    if SECTION not in text:
        raise SystemExit(f"{MAP.name} has neither the markers of the module list nor a section {SECTION!r}")
    head, rest = text.split(SECTION, 1)
    following = re.search(r"^## ", rest, re.MULTILINE)
    tail = rest[following.start() :] if following else ""
    return head + SECTION + "\n\n" + generated + ("\n" + tail if tail else "")


def stale(path: Path = MAP, root: Path = REPO) -> str:
    """A unified diff from the file's list to the one the docstrings give ("" when they agree)."""
    text = path.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        return f"{path.name} has no generated module list yet (its markers are missing): run `make map`\n"
    wanted = with_list(text, module_list(root))
    diff = difflib.unified_diff(
        text.splitlines(keepends=True), wanted.splitlines(keepends=True), f"{path.name} (as it is)", "(make map)"
    )
    return "".join(diff)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 with a diff when the list is stale")
    args = parser.parse_args(argv)
    if args.check:
        diff = stale()
        sys.stdout.write(diff or f"{MAP.name}: the module list is up to date\n")
        return 1 if diff else 0
    text = MAP.read_text(encoding="utf-8")
    MAP.write_text(with_list(text, module_list()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

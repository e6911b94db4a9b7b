"""Is ARCHITECTURE.md a true map: is its list of every package and module of ``autograder/`` the
one the docstrings give (``tools/module_map.py``, ``make map``), does every dotted name in a
docstring name something that exists, and does any file of the repository cite a file it does not
have?"""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
from pathlib import Path
from types import ModuleType

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
TOOL = REPO / "tools" / "module_map.py"
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


def module_map() -> ModuleType:
    """``tools/module_map.py``, loaded from its file (tools/ is no package)."""
    spec = importlib.util.spec_from_file_location("module_map", TOOL)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_module_list_is_the_one_the_docstrings_give() -> None:
    """Is ARCHITECTURE.md's module list what ``make map`` would write now (a module added, moved or
    removed, or a docstring's first sentence changed, shows here until ``make map`` is run)?"""
    diff = module_map().stale()
    assert not diff, "ARCHITECTURE.md's module list is not the one the docstrings give (`make map` writes it):\n" + diff


def test_the_generated_list_names_every_package_and_module_and_nothing_else() -> None:
    """Does the list that ``make map`` writes name each package and module of autograder/, and only those?"""
    assert len(on_disk()) > 100
    listed = named(SECTION + "\n" + module_map().module_list())
    assert {"missing from the map": sorted(on_disk() - listed), "not in the tree": sorted(listed - on_disk())} == {
        "missing from the map": [],
        "not in the tree": [],
    }


def test_a_stale_list_is_found(tmp_path: Path) -> None:
    """Would the check see a list written before a module was added, and take one that is current?"""
    tool = module_map()
    (tmp_path / "autograder").mkdir()
    (tmp_path / "autograder" / "__init__.py").write_text('"""The package. More."""\n')
    (tmp_path / "autograder" / "a.py").write_text('"""Module a: its first sentence.\n\nNot this."""\n')
    page = tmp_path / "MAP.md"
    page.write_text(f"# Map\n\n{SECTION}\n\nhand-written\n\n## After\n")
    assert "markers are missing" in tool.stale(page, tmp_path)
    page.write_text(tool.with_list(page.read_text(), tool.module_list(tmp_path)))
    assert tool.stale(page, tmp_path) == ""
    assert "| `autograder/a.py` | Module a: its first sentence. |" in page.read_text()
    assert page.read_text().endswith("<!-- end of the module list -->\n\n## After\n")
    (tmp_path / "autograder" / "b.py").write_text("")
    assert "+| `autograder/b.py` | (no docstring) |" in tool.stale(page, tmp_path)


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


# --- dotted names in docstrings -----------------------------------------------------------------
# A dotted name in a docstring (in ``double backticks``, or ``autograder.x.y`` anywhere) must name
# something real. ``autograder.a.b`` is absolute. Any other, such as ``kernelspec.install`` or
# ``run.kernelspec.install``, is relative: it resolves when the dotted path of some module or
# package of autograder/ ends with its first parts (the longest such ending is tried first, at any
# depth, not only beside the docstring) and its remaining parts are attributes defined there (a
# top-level name, then a name bound in that class). A name whose first part is no module of
# autograder/ is left alone when that part is bound in the docstring's own module (an import, a
# parameter, a variable: ``torch.nn``, ``x.shape``, ``self.steps``), is an importable top-level
# module (``json.dumps``), is one of PyTorch's usual aliases (``F``, ``nn``), ``self`` or ``cls``,
# or starts with a capital that names no class of autograder/ (another library's class,
# ``HTMLExporter.preprocessors``, or a matrix, ``W.T``); a class of autograder/ must have the
# attribute (``Job.lab``). Any other is reported: it names a module that no longer exists
# (``sandbox.OUTPUT_CAP``). A span with ``=`` or braces is code, and its names are left alone.
SPAN = re.compile(r"``(.+?)``", re.DOTALL)
ABSOLUTE = re.compile(r"(?<![\w.])autograder(?:\.\w+)+(?![\w/-]|\.\w)")
DOTTED = re.compile(r"(?<![\w./-])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?![\w/-])")
FILE_LIKE = re.compile(r"\.(?:py|md|ipynb|json|csv|html|txt|toml|yml|yaml|cfg|sh|j2|pt|zip|svg|png|db)$")
CODE = re.compile(r"[={}]")  # a span that is a statement or a literal: code, whose names are its own
ALIASES = {"F", "nn", "np", "plt", "torch", "self", "cls"}


def _local_names(tree: ast.AST) -> set[str]:
    """Every name a module binds anywhere, but for what it imports from autograder/: definitions,
    parameters, assignments, and imports from elsewhere."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            ours = isinstance(node, ast.ImportFrom) and (node.level > 0 or (node.module or "").startswith("autograder"))
            names |= {
                (a.asname or a.name).split(".")[0] for a in node.names if not (ours or a.name.startswith("autograder"))
            }
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _attributes(body: list[ast.stmt]) -> dict[str, ast.AST]:
    """Name -> its node, for every name a module's (or a class's) own statements bind."""
    out: dict[str, ast.AST] = {}
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out[node.name] = node
        elif isinstance(node, ast.Import | ast.ImportFrom):
            out.update({(a.asname or a.name).split(".")[0]: a for a in node.names})
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                out.update({n.id: node for n in ast.walk(target) if isinstance(n, ast.Name)})
        elif isinstance(node, ast.If | ast.Try):
            out.update(_attributes(node.body))
    if any(isinstance(n, ast.FunctionDef) for n in body):  # a class's methods: the attributes they set
        for node in ast.walk(ast.Module(body=body, type_ignores=[])):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                out.setdefault(node.attr, node)
    return out


def module_index(root: Path = REPO) -> dict[str, ast.Module]:
    """Dotted name -> parsed module, for every module and package of ``autograder/``."""
    index = {}
    for path in sorted((root / "autograder").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        index[".".join(parts)] = ast.parse(path.read_text(encoding="utf-8"))
    return index


def _has(index: dict[str, ast.Module], module: str, attributes: list[str]) -> bool:
    """Are ``attributes`` (a name, then a name bound in that class) defined in ``module``?"""
    if not attributes:
        return True
    found = _attributes(index[module].body).get(attributes[0])
    if found is None:
        return False
    if len(attributes) > 1 and isinstance(found, ast.ClassDef):
        return attributes[1] in _attributes(found.body)
    return True  # beyond a class's own names (an instance's, an imported object's), not followed


def resolves(index: dict[str, ast.Module], name: str) -> bool | None:
    """True when ``name`` names a module of autograder/ or something in one, False when it does not,
    None when its first part is no module of autograder/ (the caller decides)."""
    parts = name.split(".")
    for length in range(len(parts), 0, -1):
        head = ".".join(parts[:length])
        matches = [m for m in index if m == head or (parts[0] != "autograder" and m.endswith("." + head))]
        if matches:
            return any(_has(index, m, parts[length:]) for m in matches)
    return False if parts[0] == "autograder" else None


def _docstrings(tree: ast.Module) -> list[str]:
    nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef))]
    return [doc for node in nodes if (doc := ast.get_docstring(node, clean=False))]


def dotted_names(docstring: str) -> set[str]:
    """The dotted names a docstring cites: in ``double backticks``, and ``autograder.x.y`` anywhere."""
    spans = [s for s in SPAN.findall(docstring) if not CODE.search(s)]
    names = {n for span in spans for n in DOTTED.findall(span) if not FILE_LIKE.search(n)}
    return names | set(ABSOLUTE.findall(docstring))


def _classes(index: dict[str, ast.Module]) -> dict[str, list[ast.ClassDef]]:
    """Class name -> the classes of that name that autograder/ defines at a module's top level."""
    out: dict[str, list[ast.ClassDef]] = {}
    for tree in index.values():
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                out.setdefault(node.name, []).append(node)
    return out


def _names_nothing(index: dict[str, ast.Module], classes: dict[str, list[ast.ClassDef]], local: set[str], name: str):
    head, *rest = name.split(".")
    if head in local and head != "autograder":  # a parameter, a variable, another library: not ours to follow
        return False
    found = resolves(index, name)
    if found is not None:
        return not found
    if head in classes:  # a class of ours: its own attribute
        return not any(rest[0] in _attributes(c.body) for c in classes[head])
    outside = head in ALIASES or importlib.util.find_spec(head) is not None
    return not (outside or head[0].isupper() or rest[0].startswith("__"))


def unresolved_names(index: dict[str, ast.Module]) -> dict[str, list[str]]:
    """Module -> the dotted names its docstrings cite that name nothing of autograder/."""
    classes, out = _classes(index), {}
    for module, tree in index.items():
        local = _local_names(tree)
        cited = set().union(*map(dotted_names, _docstrings(tree)))
        if bad := sorted(n for n in cited if _names_nothing(index, classes, local, n)):
            out[module] = bad
    return out


def test_every_dotted_name_in_a_docstring_names_something_real() -> None:
    """Does every dotted name a docstring of autograder/ cites (``autograder.x.y``, or a module-like
    ``kernelspec.install``) name a module, or something defined in one, that exists?"""
    assert unresolved_names(module_index()) == {}


def test_a_dotted_name_that_names_nothing_is_found(tmp_path: Path) -> None:
    """Would the check see an old module's name and a missing attribute, and leave alone what a
    module binds itself or imports from outside?"""
    (tmp_path / "autograder" / "run").mkdir(parents=True)
    (tmp_path / "autograder" / "__init__.py").write_text("")
    (tmp_path / "autograder" / "run" / "__init__.py").write_text("")
    (tmp_path / "autograder" / "run" / "kernelspec.py").write_text("def install(): ...\nLIMIT = 1\n")
    (tmp_path / "autograder" / "worker.py").write_text(
        '"""Runs ``kernelspec.install``, ``run.kernelspec.LIMIT``, ``x.shape``, ``json.dumps``\n'
        'and ``sandbox.OUTPUT_CAP``, ``kernelspec.remove``, autograder.run.gone."""\n\n'
        "def f(x): ...\n"
    )
    assert unresolved_names(module_index(tmp_path)) == {
        "autograder.worker": ["autograder.run.gone", "kernelspec.remove", "sandbox.OUTPUT_CAP"]
    }

"""Does the package keep its shape: no import circle, the grader's side apart from the sandboxed
side (autograder/grading/__init__.py), the reference's teaching path apart from its training hall
and its oracles, the grader's stations in the order a submission travels, short modules and
functions, no standard-library names, the command lines in one package, no twin classes,
nbgrader's cell metadata read in one module?

Read with ``ast`` alone: no module of ``autograder`` is imported here, so a module that
would misbehave on import cannot hide its own imports."""

from __future__ import annotations

import ast
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "autograder"
GRADER = "autograder.grading.grader"
SANDBOXED = "autograder.grading.sandboxed"
MAX_LINES = 350
MAX_FUNCTION_LINES = 60  # longer: a "Why long:" line in the docstring, or shown whole by the book
WHY_LONG = re.compile(r"^\s*Why long:", re.MULTILINE)
BOOK = PACKAGE.parent / "book"
CELL_METADATA = "autograder.notebook_cells"  # the one module that reads nbgrader's cell metadata
NBGRADER_KEY = "nbgrader"
RAW_METADATA = ("fields", "_kept")  # notebook_cells' own readers of the raw dict
# The grader's stations, in the order a submission travels through them, and what every station
# may read beside them (the data that crosses between stations, and in_parts: a grading in parts);
# the conductors run the stations' steps: pipeline for a class, in_parts.conductor in shards.
STATIONS = ("intake", "run", "verdict", "output", "report")
SHARED = ("job", "grading", "lab_cells", "verdicts_json", "safe_text", "in_parts")
CONDUCTORS = ("pipeline", "in_parts.conductor")
MAX_TOP_MODULES = 6  # modules at the grader's top level, beside its station packages
# The lists of steps, each run in order by one loop: the class's, and one submission's in the worker.
STEP_LISTS = (f"{GRADER}.pipeline", f"{GRADER}.run.steps")


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
            anchor = here[: len(here) - node.level + 1]
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


REFERENCE = "autograder.reference"
# Beside the teaching path (one module per idea, shown by the book): the training hall and the oracles.
BESIDE_THE_TEACHING_PATH = (f"{REFERENCE}.training", f"{REFERENCE}.oracles")


def teaching_path_imports_beside_it(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Module of the teaching path -> the modules of BESIDE_THE_TEACHING_PATH it imports, directly."""
    found: dict[str, list[str]] = {}
    for name, targets in graph.items():
        if not _on_side(name, REFERENCE) or any(_on_side(name, hall) for hall in BESIDE_THE_TEACHING_PATH):
            continue
        beside = sorted(t for t in targets if any(_on_side(t, hall) for hall in BESIDE_THE_TEACHING_PATH))
        if beside:
            found[name] = beside
    return found


def test_the_teaching_path_imports_nothing_beside_it() -> None:
    """Does a module of the reference's teaching path (``autograder/reference/``, the package's
    ``__init__`` included) import the training hall or the oracles, which build on it (a lecture's
    module would then drag training or ``nn.Transformer`` along)?"""
    graph = import_graph()
    assert all(hall in graph for hall in BESIDE_THE_TEACHING_PATH), "the training hall and the oracles are packages"
    assert teaching_path_imports_beside_it(graph) == {}


def test_a_teaching_module_importing_training_is_found() -> None:
    """Would the rule above see the package's ``__init__`` and a lecture's module importing training
    or an oracle, and let training import the teaching path?"""
    step, baseline = f"{REFERENCE}.training.step", f"{REFERENCE}.oracles.baseline"
    graph = {REFERENCE: {step}, f"{REFERENCE}.decode": {baseline, f"{REFERENCE}.model"}, step: {REFERENCE}}
    assert teaching_path_imports_beside_it(graph) == {REFERENCE: [step], f"{REFERENCE}.decode": [baseline]}


def station_of(name: str) -> str | None:
    """The station (or SHARED module, or one of the CONDUCTORS) a module of the grader belongs to; None
    outside the grader. Anything else at the grader's top level is named as it is, and fails."""
    if not _on_side(name, GRADER) or name == GRADER:
        return None
    rest = name.removeprefix(GRADER + ".")
    return next((c for c in CONDUCTORS if rest == c or rest.startswith(c + ".")), rest.split(".")[0])


def backward_imports(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Module -> the grader's modules it imports that it may not: a module of an earlier
    station, or (for a SHARED module) any station."""
    order = {station: i for i, station in enumerate(STATIONS)}
    found: dict[str, list[str]] = {}
    for name, targets in graph.items():
        mine = station_of(name)
        if mine is None or mine in CONDUCTORS:
            continue
        for target in sorted(targets):
            theirs = station_of(target)
            if theirs is None or theirs not in order:
                continue
            if mine in SHARED or mine in order and order[theirs] < order[mine]:
                found.setdefault(name, []).append(target)
    return found


def test_the_grader_is_laid_out_in_stations() -> None:
    """Is every module of the grader in a station (a package named in STATIONS), a module that
    every station may read (SHARED) or the conductor, with nothing else at the top level?"""
    graph = import_graph()
    places = {station_of(name) for name in graph} - {None}
    assert places == {*STATIONS, *SHARED, *CONDUCTORS}
    for station in STATIONS:
        assert (PACKAGE / "grading" / "grader" / station / "__init__.py").is_file()


def test_the_grader_has_few_modules_beside_its_stations() -> None:
    """Does the grader's top level hold at most MAX_TOP_MODULES modules beside its packages
    (more, and it is a hall again: group them in a package of what they serve)?"""
    top = [p.stem for p in (PACKAGE / "grading" / "grader").glob("*.py") if p.stem != "__init__"]
    assert len(top) <= MAX_TOP_MODULES, sorted(top)


def steps_of(module: str, graph_modules: dict[str, Path] | None = None) -> list[tuple[str, str]]:
    """(step, module that defines it) for each entry of ``module``'s ``STEPS`` list, in order,
    each name followed through the module's imports (``from X import step`` or ``X.step``)."""
    known = graph_modules or modules()
    tree = ast.parse(known[module].read_text())
    origin: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                origin[alias.asname or alias.name] = full if full in known else node.module
    listed: list[ast.expr] = []
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.List):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "STEPS" for t in targets):
                listed = list(node.value.elts)
    found = []
    for entry in listed:
        if isinstance(entry, ast.Attribute) and isinstance(entry.value, ast.Name):
            found.append((entry.attr, origin.get(entry.value.id, module)))
        elif isinstance(entry, ast.Name):
            found.append((entry.id, origin.get(entry.id, module)))
    return found


def walk_problems(steps: list[tuple[str, str]]) -> list[str]:
    """What is wrong with one list of steps: a step outside the stations (in a conductor or a
    shared module), or a step of an earlier station after one of a later station (a submission
    going back)."""
    order = {station: i for i, station in enumerate(STATIONS)}
    problems, last = [], 0
    for step, module in steps:
        station = station_of(module)
        if station not in order:
            problems.append(f"{step} is in {module}, not in a station")
            continue
        if order[station] < last:
            problems.append(f"{step} ({station}) comes after a step of {STATIONS[last]}")
        last = max(last, order[station])
    return problems


def test_each_step_is_in_its_station_and_the_walk_goes_forward() -> None:
    """Is every step of the class's list and of the worker's list defined in a station, and
    does each list visit the stations once, in the order a submission travels (no step of a
    station after one of a later station)?"""
    for listing in STEP_LISTS:
        steps = steps_of(listing)
        assert len(steps) > 3, listing
        assert walk_problems(steps) == [], listing


def test_a_step_out_of_place_is_found() -> None:
    """Would the rule above see a step left in the conductor, and a walk that goes back (an
    intake step after a run step)?"""
    intake, run = f"{GRADER}.intake.steps", f"{GRADER}.run.jobs"
    assert walk_problems([("intake", intake), ("make_jobs", run)]) == []
    assert walk_problems([("look", f"{GRADER}.pipeline")]) == [f"look is in {GRADER}.pipeline, not in a station"]
    assert walk_problems([("make_jobs", run), ("screen", intake)]) == ["screen (intake) comes after a step of run"]


def test_no_station_imports_an_earlier_one() -> None:
    """Following a submission from intake to report, does any module of a later station import a
    module of an earlier one (a step reaching back: what it needs should travel in its Job), or a
    shared module import any station?"""
    assert backward_imports(import_graph()) == {}


def test_a_step_reaching_back_is_found() -> None:
    """Would the rule above see the verdict station reading intake's record (what the record
    step did before the Job carried the original id), and a shared module importing a station?"""
    v, i = f"{GRADER}.verdict.save_verdicts", f"{GRADER}.intake.intake_record"
    shared = f"{GRADER}.job"
    assert backward_imports({v: {i}, i: set(), shared: {v}}) == {v: [i], shared: [v]}
    assert backward_imports({i: {v}, v: set()}) == {}


def test_no_module_is_over_the_line_count() -> None:
    """Is any module of autograder longer than MAX_LINES lines (split it by responsibility)?"""
    long = {name: n for name, path in modules().items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_no_module_is_named_like_the_standard_library() -> None:
    """Is any module of autograder named like a module of the standard library (which a
    script run from its folder, or a reader, would confuse with it)?"""
    clashes = [name for name, path in modules().items() if path.stem in sys.stdlib_module_names]
    assert clashes == []


COMMAND_LINE = "autograder.cli"  # python -m autograder COMMAND: every command's parser, one module each
OWN_COMMAND_LINE = (f"{SANDBOXED}.launcher",)  # a tool the grader starts by module name, not a command


def test_command_lines_are_made_in_autograder_cli() -> None:
    """Does any module outside autograder/cli/ (the course's commands, one module each) import argparse,
    apart from the sandbox's launcher (OWN_COMMAND_LINE: started by module name inside bubblewrap, not a
    command of the course)?"""
    outside = [
        name
        for name, path in modules().items()
        if not _on_side(name, COMMAND_LINE)
        and name not in OWN_COMMAND_LINE
        and any(
            target == "argparse" or target.startswith("argparse.")
            for node in ast.walk(ast.parse(path.read_text(), str(path)))
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for target in _imported(node, name, path.name == "__init__.py")
        )
    ]
    assert outside == []


def test_no_two_grading_classes_share_a_name() -> None:
    """Do two classes of autograder/grading have the same name (a reader could not tell them
    apart in a traceback or a review)?"""
    names = Counter(
        node.name
        for path in (PACKAGE / "grading").rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
    )
    assert [name for name, count in names.items() if count > 1] == []


def _is_key(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value == NBGRADER_KEY


def nbgrader_key_uses(tree: ast.AST) -> list[int]:
    """The lines where ``tree`` reads or writes the ``"nbgrader"`` key of a cell's metadata itself:
    ``m["nbgrader"]``, ``m.get("nbgrader")`` (or ``pop``, ``setdefault``), ``{"nbgrader": ...}``,
    ``"nbgrader" in m`` or ``cell.metadata.nbgrader``."""
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Subscript)
            and _is_key(node.slice)
            or isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "setdefault")
            and bool(node.args)
            and _is_key(node.args[0])
            or isinstance(node, ast.Dict)
            and any(_is_key(key) for key in node.keys)
            or isinstance(node, ast.Compare)
            and _is_key(node.left)
            and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops)
            or isinstance(node, ast.Attribute)
            and node.attr == NBGRADER_KEY
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "metadata"
        ):
            lines.append(node.lineno)
    return sorted(lines)


def metadata_readers(root: Path = PACKAGE) -> dict[str, list[int]]:
    """Module -> the lines where it handles the ``"nbgrader"`` metadata key itself, for every
    module of the package but CELL_METADATA."""
    found = {
        name: nbgrader_key_uses(ast.parse(path.read_text(), str(path)))
        for name, path in modules(root).items()
        if name != CELL_METADATA
    }
    return {name: lines for name, lines in found.items() if lines}


def raw_metadata_reads(tree: ast.AST) -> list[int]:
    """The lines where ``tree`` asks notebook_cells for the raw metadata dict (``fields``), to
    read its entries itself, however notebook_cells was imported."""
    aliases = {
        alias.asname or alias.name.split(".")[-1]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name == CELL_METADATA
    }
    aliases |= {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "autograder"
        for alias in node.names
        if alias.name == "notebook_cells"
    }
    lines = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and node.module == CELL_METADATA
        and any(alias.name in RAW_METADATA for alias in node.names)
    ]
    lines += [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in RAW_METADATA
        and (ast.unparse(node.value) in aliases or ast.unparse(node.value) == CELL_METADATA)
    ]
    return sorted(lines)


def test_notebook_metadata_is_read_in_one_module() -> None:
    """Does a module of autograder other than notebook_cells subscript, .get, .pop or write the
    "nbgrader" key of a cell's metadata (a grade id, a flag, points) itself, or take the raw dict
    from ``notebook_cells.fields`` to read it, rather than asking notebook_cells?"""
    assert CELL_METADATA in modules()
    assert metadata_readers() == {}
    raw = {
        name: lines
        for name, path in modules().items()
        if name != CELL_METADATA and (lines := raw_metadata_reads(ast.parse(path.read_text(), str(path))))
    }
    assert raw == {}


def test_a_read_of_the_raw_metadata_is_found() -> None:
    """Would the rule above see the raw dict taken from notebook_cells, by each way of importing it?"""
    for code in (
        "from autograder import notebook_cells as nbc\nnbc.fields(c).get('grade')",
        "import autograder.notebook_cells\nautograder.notebook_cells.fields(c)",
        "from autograder.notebook_cells import fields",
    ):
        assert raw_metadata_reads(ast.parse(code)) != [], code
    assert raw_metadata_reads(ast.parse("from autograder import notebook_cells as nbc\nnbc.name_of(c)")) == []


def shown_by_the_book(book: Path = BOOK) -> set[tuple[str, str]]:
    """(file name, function) for every ``literalinclude`` of the book with a ``:pyobject:``."""
    shown = set()
    for page in book.rglob("*.md"):
        for block in re.findall(r"```\{literalinclude\}\s+(\S+)\n((?::[^\n]*\n)*)", page.read_text()):
            for name in re.findall(r"^:pyobject:\s*(\S+)", block[1], re.MULTILINE):
                shown.add((Path(block[0]).name, name.rsplit(".", 1)[-1]))
    return shown


def long_functions(root: Path = PACKAGE, limit: int = MAX_FUNCTION_LINES) -> dict[str, int]:
    """``module.function`` -> its lines, for every function of the package longer than ``limit``
    lines that gives no reason (a ``Why long:`` line in its docstring) and that the book does not
    show whole through ``literalinclude`` (splitting it would change the lecture)."""
    shown = shown_by_the_book()
    long = {}
    for name, path in modules(root).items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if (
                lines > limit
                and not WHY_LONG.search(ast.get_docstring(node) or "")
                and (path.name, node.name) not in shown
            ):
                long[f"{name}.{node.name}"] = lines
    return long


def test_no_function_is_long_without_a_reason() -> None:
    """Is any function of autograder longer than MAX_FUNCTION_LINES lines without a "Why long:"
    line in its docstring, and not shown whole by the book (split it into set-up, loop and
    reporting, or say why it reads better whole)?"""
    assert ("generate.py", "beam_search") in shown_by_the_book(), "the book's literalincludes are read"
    assert long_functions() == {}


def test_a_long_function_is_found_unless_it_says_why(tmp_path: Path) -> None:
    """Would the rule above see a function one line over the limit, and let it pass once its
    docstring has a "Why long:" line?"""
    package = tmp_path / "autograder"
    package.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))  # + def and docstring
    module = package / "sample.py"
    module.write_text(f'def f():\n    """Sum."""\n{body}\n')
    assert long_functions(package) == {"autograder.sample.f": MAX_FUNCTION_LINES + 1}
    module.write_text(f'def f():\n    """Sum.\n\n    Why long: a table.\n    """\n{body}\n')
    assert long_functions(package) == {}

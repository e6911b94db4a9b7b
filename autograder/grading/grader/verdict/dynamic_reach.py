"""Answers that reach PyTorch's or the grader's machinery dynamically, found on their source.

Inside a submission's own process nothing is absolute: a cell can swap a module in
``sys.modules``, replace a function through ``importlib`` under a name built at run time, or
call an ATen operation that a check refuses by its Python name. Such code has a shape,
though, and the grader reads it on the source, without running it: an answer cell that holds
one of the constructs below is flagged for the instructor. A flag changes no score, except that
error carried forward is not applied to a submission that could see how it binds a function
(``retyped.observes_binding``: the harmless ``gc.collect()`` excepted); no lab's solution holds
one, and a test reads them all.
"""

from __future__ import annotations

import ast

_MODULES = {"importlib": "importlib", "gc": "gc", "inspect": "frame inspection", "ctypes": "ctypes"}
_BUILTINS = {"exec", "eval", "compile", "__import__", "globals", "locals", "breakpoint"}
_BY_NAME = {"getattr", "setattr", "delattr", "hasattr"}  # dynamic unless the name is a literal
_ATTRIBUTES = {
    "modules": ("sys", "sys.modules"),
    "_getframe": ("sys", "frame inspection"),
    "ops": ("torch", "torch.ops"),
    "_C": ("torch", "torch._C"),
    "attrgetter": ("operator", "operator.attrgetter"),
}
_FRAME = {
    "f_back",
    "f_globals",
    "f_locals",
    "f_builtins",
    "__globals__",
    "__builtins__",
    "__code__",
    "tb_frame",
    "gi_frame",
    "cr_frame",
}
_MODES = {"TorchDispatchMode", "TorchFunctionMode", "__torch_dispatch__", "__torch_function__"}


def _root(node: ast.expr) -> str:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def _call_found(node: ast.Call) -> str | None:
    name = node.func.id if isinstance(node.func, ast.Name) else None
    if name in _BUILTINS:
        return f"{name}()"
    if name == "vars":
        return "vars()"
    if name in _BY_NAME and not (
        len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
    ):
        return f"{name}() with a name built at run time"
    return None


def dynamic_constructs(source: str) -> list[str]:
    """The constructs of ``source`` through which code reaches the machinery dynamically, each
    once, in order of first appearance ([] for code that does not parse: it does not run either)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    found: list[str] = []
    for node in ast.walk(tree):
        what: str | None = None
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            what = next((_MODULES[n.split(".")[0]] for n in names if n.split(".")[0] in _MODULES), None)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("torch._C"):
                what = "torch._C"
        elif isinstance(node, ast.Call):
            what = _call_found(node)
        elif isinstance(node, ast.Attribute):
            if node.attr in _ATTRIBUTES and _root(node.value) == _ATTRIBUTES[node.attr][0]:
                what = _ATTRIBUTES[node.attr][1]
            elif node.attr in _FRAME:
                what = "frame inspection"
            elif node.attr in _MODES:
                what = "a dispatch or function mode"
        elif isinstance(node, ast.Name) and node.id in _MODES:
            what = "a dispatch or function mode"
        if what and what not in found:
            found.append(what)
    return found

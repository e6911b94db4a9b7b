"""One place for ``autograder``: every process grading starts imports the package from one
folder, chosen here, whatever its working directory, PYTHONPATH or editable install says.

``package_dir(root)`` is that folder: the course's own ``ROOT/autograder`` when it has one,
else the folder of the ``autograder`` this process imported. ``command(module, *args,
package=...)`` is the command line that runs ``module`` as ``__main__`` with that package:
``PYTHON -I THIS_FILE PACKAGE MODULE ARGS``. ``-I`` keeps out PYTHONPATH, the user's
site-packages and the script's or working directory's folder (it implies ``-P``), but not the
editable install's finder; so this file, run as a script, loads ``autograder`` itself from
``PACKAGE`` (``spec_from_file_location`` into ``sys.modules``) before anything imports it, and
its submodules then come from that folder too. The sandbox mounts exactly that folder.

Run as a script this file imports the standard library alone until the package is loaded.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import runpy
import sys
from pathlib import Path

SCRIPT = os.path.abspath(__file__)


def python() -> str:
    """This Python, by a path whose folders are real: a ``.venv`` that is a symlink would
    otherwise name a folder the sandbox does not have (the file itself stays a link, so the
    virtual environment is still found beside it)."""
    return os.path.join(os.path.realpath(os.path.dirname(sys.executable)), os.path.basename(sys.executable))


def running() -> Path:
    """The folder of the ``autograder`` package this process runs."""
    import autograder

    return Path(autograder.__file__).resolve().parent


def package_dir(root: str | Path | None = None) -> Path:
    """The ``autograder`` package every grading process imports: the course root's own when
    it has one, else the one this process imported."""
    if root is not None and (Path(root) / "autograder" / "__init__.py").is_file():
        return (Path(root) / "autograder").resolve()
    return running()


def installed() -> Path:
    """The ``autograder`` this environment's install provides: an editable install's source
    folder, a regular install's folder in site-packages (else the one this process imported)."""
    import json
    from importlib import metadata
    from urllib.parse import unquote, urlparse

    for name in set(metadata.packages_distributions().get("autograder", [])):
        dist = metadata.distribution(name)
        url = json.loads(dist.read_text("direct_url.json") or "{}")
        if url.get("dir_info", {}).get("editable") and str(url.get("url", "")).startswith("file:"):
            return (Path(unquote(urlparse(url["url"]).path)) / "autograder").resolve()
        folder = Path(str(dist.locate_file("autograder")))
        if (folder / "__init__.py").is_file():
            return folder.resolve()
    return running()


def mismatch(root: str | Path) -> str | None:
    """A warning when grading imports ``autograder`` from another folder than this
    environment's install (a second clone, a shared environment on a hub); None otherwise."""
    chosen, installed_here = package_dir(root), installed()
    if chosen == installed_here:
        return None
    return (
        f"grading imports autograder from the course ({chosen}), not from this environment's install "
        f"({installed_here}): check that the two are the same version"
    )


def command(module: str, *args: str, package: str | Path | None = None) -> list[str]:
    """The command line that runs ``python -m module args`` with ``autograder`` from
    ``package`` (default: this process's), immune to the working directory and PYTHONPATH."""
    folder = Path(package).resolve() if package is not None else running()
    return [python(), "-I", str(folder / "grading" / "protocol" / "boot.py"), str(folder), module, *args]


class _Finder(importlib.abc.MetaPathFinder):
    """Finds ``autograder`` in one folder, first of all finders: a later import of it (the
    hidden tests drop it from ``sys.modules`` and import it again) comes from there too."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if name != "autograder":
            return None  # its submodules: found through its __path__, which is [folder]
        return importlib.util.spec_from_file_location(
            "autograder", os.path.join(self.folder, "__init__.py"), submodule_search_locations=[self.folder]
        )


def _load(folder: str) -> None:
    """Import ``autograder`` from ``folder`` and nowhere else, now and later."""
    if not os.path.isfile(os.path.join(folder, "__init__.py")):
        raise ImportError(f"no autograder package in {folder}")
    sys.meta_path.insert(0, _Finder(folder))
    sys.modules.pop("autograder", None)
    importlib.import_module("autograder")


def main(argv: list[str]) -> None:
    """``boot.py PACKAGE MODULE ARGS``: load the package, then run MODULE as ``__main__``."""
    if len(argv) < 2:
        raise SystemExit("usage: python -I boot.py PACKAGE MODULE [ARGS...]")
    folder, module = os.path.realpath(argv[0]), argv[1]
    _load(folder)
    sys.argv = [module, *argv[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])

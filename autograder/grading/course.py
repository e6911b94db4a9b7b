"""The course folder: its labs and ``release`` (solutions/ -> notebooks/); a student's copy of
the released labs is ``workspace.sync``."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from autograder.grading.layout import CourseLayout

LAB_NAME = re.compile(r"^\d\d-[a-z0-9-]+$")


class UnknownLab(ValueError):
    """A lab name that solutions/ does not hold (the message names the labs it does)."""


def find_root(start: str | Path | None = None) -> Path:
    """The course root: the nearest folder, from ``start`` up, holding nbgrader_config.py."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "nbgrader_config.py").is_file() and (folder / "solutions").is_dir():
            return folder
    raise FileNotFoundError(f"no course (nbgrader_config.py beside solutions/) at or above {here}")


def labs(root: Path) -> list[str]:
    """Every lab of the course: the ``NN-slug`` folders of solutions/ holding ``NN-slug.ipynb``."""
    return sorted(
        p.name
        for p in CourseLayout(root).solutions.iterdir()
        if LAB_NAME.match(p.name) and (p / f"{p.name}.ipynb").is_file()
    )


def tool_env(**extra: str) -> dict[str, str]:
    """The environment for nbgrader subprocesses: this Python's scripts first on PATH
    (nbgrader calls ``alembic`` by name), one thread per kernel, and no PYTHON* variable of the
    caller's (PYTHONPATH, PYTHONSTARTUP...: what Python imports is chosen by autograder.grading.protocol.boot)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("MKL_NUM_THREADS", "1")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


@contextlib.contextmanager
def scripts_on_path() -> Iterator[None]:
    """This Python's scripts first on PATH while the block runs (nbgrader's Gradebook calls
    ``alembic`` by name); the caller's PATH is put back afterwards."""
    before = os.environ.get("PATH")
    os.environ["PATH"] = tool_env()["PATH"]
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = before


def nbgrader(root: Path, *args: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    """Run ``nbgrader ARGS`` in the course root (so its nbgrader_config.py applies), with the
    course's ``autograder`` (autograder.grading.protocol.boot), which its config names."""
    from autograder.grading.protocol import boot

    proc = subprocess.run(
        boot.command("nbgrader", *args, package=boot.package_dir(root)),
        cwd=root,
        env=tool_env(),
        capture_output=True,
        text=True,
        **kwargs,
    )
    if check and proc.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return proc


def generate(root: Path, lab: str, release_dir: str | Path | None = None, db_url: str | None = None) -> None:
    """nbgrader generate_assignment for one lab; it also records the lab's cells in the gradebook.
    ``release_dir`` (absolute) writes the release elsewhere, leaving notebooks/ alone. ``lab`` may
    be nbgrader's pattern of several (``*``: every folder of solutions/)."""
    args = ["generate_assignment", lab, "--force"]
    if release_dir is not None:
        args.append(f"--CourseDirectory.release_directory={Path(release_dir).resolve()}")
    if db_url is not None:
        args.append(f"--CourseDirectory.db_url={db_url}")
    nbgrader(root, *args)


def generate_all(
    root: Path, names: list[str], release_dir: str | Path | None = None, db_url: str | None = None
) -> None:
    """``generate`` for each lab of ``names``: in one nbgrader process when they are every folder
    of solutions/ (its pattern ``*``), else one lab at a time."""
    folders = sorted(p.name for p in CourseLayout(root).solutions.iterdir() if p.is_dir())
    if len(names) > 1 and sorted(names) == folders:
        generate(root, "*", release_dir=release_dir, db_url=db_url)
        return
    for name in names:
        generate(root, name, release_dir=release_dir, db_url=db_url)


def release(root: Path, names: list[str] | None = None) -> list[Path]:
    """Regenerate ``notebooks/LAB`` from ``solutions/LAB`` for every lab (or ``names``).
    A rerun writes the same bytes."""
    known = labs(root)
    names = list(names) if names else known
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UnknownLab(f"no such lab in solutions/: {', '.join(unknown)} (labs: {', '.join(known)})")
    generate_all(root, names)
    return [CourseLayout(root).notebooks / name for name in names]

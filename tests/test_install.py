"""Does the course package install where students work: Colab (Python 3.12, Colab's own
versions), Binder (binder/requirements.txt) and a fresh environment that installs a lab's
version from the site's wheel, even with another project's `autograder` on the path?"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement
from packaging.version import Version

import autograder
from autograder.authoring import METADATA_KEY
from autograder.version import wheel_name

REPO = Path(__file__).resolve().parents[1]
PYTHON312 = Path("/root/.pyenv/versions/3.12.1/bin/python3.12")
LAB = "02-self-attention"
# Versions a Colab runtime has carried since 2024 (Python 3.12): the wheel must accept them all.
COLAB = {
    "torch": ["2.5.1", "2.6.0", "2.8.0", "2.9.0"],
    "numpy": ["1.26.4", "2.0.2", "2.3.1"],
    "matplotlib": ["3.8.0", "3.10.0"],
    "tqdm": ["4.66.5", "4.67.1"],
    "safetensors": ["0.4.5", "0.5.3"],
    "sacrebleu": [],
}  # not in Colab: the install cell brings it
NOT_FOR_STUDENTS = {
    "jupyter-book",
    "selenium",
    "selenium-axe-python",
    "pytest",
    "pytest-xdist",
    "psycopg2-binary",
    "sqlalchemy",
    "sphinx-mathjax-offline",
    "sphinxcontrib-bibtex",
    "ruff",
    "mypy",
    "transformers",
}


def _pins(path: Path) -> dict[str, Requirement]:
    lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
    reqs = [Requirement(line) for line in lines if line and not line.startswith("-") and line != "."]
    return {r.name.lower(): r for r in reqs}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The course package's wheel, built from a copy of the sources as `make book` builds it."""
    src = tmp_path_factory.mktemp("src")
    for name in ["pyproject.toml", "README.md", "LICENSE", "LICENSE-CONTENT"]:
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "autograder", src / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheels")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(out),
            str(src),
        ],
        check=True,
        capture_output=True,
    )
    return out / wheel_name(autograder.__version__)


# ----------------------------------------------------------------------------- Colab's Python 3.12


@pytest.mark.skipif(not PYTHON312.is_file(), reason=f"no Python 3.12 at {PYTHON312}")
def test_package_compiles_with_python_312(tmp_path):
    """Does every module of the package byte-compile with Python 3.12, Colab's Python?"""
    run = subprocess.run(
        [str(PYTHON312), "-m", "compileall", "-q", "autograder"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPYCACHEPREFIX": str(tmp_path)},
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_wheel_accepts_colab_versions(wheel):
    """Does the wheel declare loose dependencies that Colab's own versions satisfy (Colab's torch stays)?"""
    with zipfile.ZipFile(wheel) as zf:
        metadata = zf.read(f"transformer_course-{autograder.__version__}.dist-info/METADATA").decode()
    assert re.search(r"^Name: transformer-course$", metadata, re.MULTILINE)
    assert re.search(rf"^Version: {re.escape(autograder.__version__)}$", metadata, re.MULTILINE)
    python = re.search(r"^Requires-Python: (.+)$", metadata, re.MULTILINE).group(1)
    assert Requirement(f"python{python}").specifier.contains("3.12") and not Requirement(
        f"python{python}"
    ).specifier.contains("3.10"), python
    declared = {r.name: r for r in map(Requirement, re.findall(r"^Requires-Dist: (.+)$", metadata, re.MULTILINE))}
    assert set(declared) == set(COLAB)
    # F.scaled_dot_product_attention gives a fully masked row NaN before torch 2.5 (reference.fused)
    assert not declared["torch"].specifier.contains("2.4.1"), declared["torch"]
    refused = [
        f"{name} {v} (wheel asks {declared[name].specifier})"
        for name, versions in COLAB.items()
        for v in versions
        if not declared[name].specifier.contains(v)
    ]
    assert not refused, refused


# ----------------------------------------------------------------------------- Binder


def test_binder_pins_equal_the_course_pins():
    """Does binder/ ask for Python 3.11, torch from PyTorch's CPU index, the course's own pins, and
    nothing only authors, publishers or instructors need?"""
    assert (REPO / "binder" / "runtime.txt").read_text().strip() == "python-3.11"
    text = (REPO / "binder" / "requirements.txt").read_text()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in text
    assert re.search(r"^\.$", text, re.MULTILINE), "binder/requirements.txt must install the course package (.)"
    binder, course = _pins(REPO / "binder" / "requirements.txt"), _pins(REPO / "requirements.txt")
    assert set(binder) >= {"torch", "numpy", "matplotlib", "tqdm", "safetensors", "jupyterlab", "ipykernel"}
    assert not set(binder) & NOT_FOR_STUDENTS, set(binder) & NOT_FOR_STUDENTS
    for name, req in binder.items():
        pinned = Version(str(req.specifier).removeprefix("=="))
        assert Version(str(course[name].specifier).removeprefix("==")) == Version(pinned.public), name
    assert Version(str(binder["torch"].specifier).removeprefix("==")).local == "cpu"
    readme = (REPO / "README.md").read_text()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt" in readme


def _torch_wheels() -> Path:
    """The folder of this machine's CPU torch wheel, where pip's find-links point."""
    config = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    folders = re.findall(r"find-links='([^']+)'", config) + os.environ.get("PIP_FIND_LINKS", "").split()
    for folder in map(Path, folders):
        if any(folder.glob("torch-*+cpu-cp311-*.whl")):
            return folder
    pytest.fail("no CPU torch wheel in pip's find-links: it stands in for PyTorch's CPU index")


def test_binder_requirements_resolve(tmp_path):
    """Does `pip install --dry-run` resolve binder/requirements.txt on Python 3.11, to CPU torch and no CUDA,
    with this machine's CPU torch wheel standing in for PyTorch's CPU index (which it cannot reach)?"""
    lines = (REPO / "binder" / "requirements.txt").read_text().splitlines()
    local = [f"--find-links {_torch_wheels()}" if line.startswith("--extra-index-url") else line for line in lines]
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("\n".join(local) + "\n")
    report = tmp_path / "report.json"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--report",
            str(report),
            "-r",
            str(requirements),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    report_items = json.loads(report.read_text())["install"]
    installed = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in report_items}
    assert installed["torch"].endswith("+cpu"), installed["torch"]
    assert installed["transformer-course"] == autograder.__version__
    assert not [n for n in installed if n.startswith("nvidia")], "CUDA libraries in the Binder image"
    assert not set(installed) & NOT_FOR_STUDENTS


# ----------------------------------------------------------------------------- the Colab path, offline


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def _serve(folder: Path):
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _fresh_env(root: Path) -> Path:
    """A venv from .venv's Python that sees .venv's packages (torch, numpy, pip, ...) but not the
    course package: no editable finder, no `transformer-course` metadata."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "env")], check=True)
    python = root / "env" / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    shared = root / "shared"
    shared.mkdir()
    ours = re.compile(r"(autograder|transformer.course)", re.IGNORECASE)
    for site in {Path(p) for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()}:
        for entry in site.iterdir():
            if not ours.search(entry.name) and not entry.name.endswith(".pth") and not (shared / entry.name).exists():
                (shared / entry.name).symlink_to(entry)
    Path(purelib, "course-test-deps.pth").write_text(f"{shared}\n")
    return python


def _run_install_cell(python: Path, site: str, cwd: Path, *extra: str) -> subprocess.CompletedProcess:
    nb = nbformat.read(str(REPO / "notebooks" / LAB / f"{LAB}.ipynb"), as_version=4)
    meta = nb.metadata[METADATA_KEY]
    cell = nb.cells[0].source.replace(f'"{meta["site"]}"', f'"{site}"')
    assert cell != nb.cells[0].source, "the install cell does not carry the site's address"
    probe = "\n".join([cell, *extra])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON", "VIRTUAL_ENV"))}
    env |= {"PIP_NO_INDEX": "1", "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return subprocess.run([str(python), "-c", probe], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def site_with_wheel(wheel, tmp_path):
    """The site, served on 127.0.0.1, with the wheel under wheels/ as `make book` publishes it."""
    (tmp_path / "html" / "wheels").mkdir(parents=True)
    shutil.copy2(wheel, tmp_path / "html" / "wheels" / wheel.name)
    server = _serve(tmp_path / "html")
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


CHECK_SOLUTION = f"""
import json, nbformat, autograder
nb = nbformat.read({str(REPO / "solutions" / LAB / f"{LAB}.ipynb")!r}, as_version=4)
import torch
scope = {{"torch": torch}}
exec(next(c.source for c in nb.cells if c.cell_type == "code" and "def softmax" in c.source), scope)
from autograder.checks import check_softmax
check_softmax(scope["softmax"])
print(json.dumps({{"version": autograder.__version__, "file": autograder.__file__}}))
"""


def _installed(run: subprocess.CompletedProcess, env: Path) -> dict:
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert found["version"] == autograder.__version__
    assert Path(found["file"]).resolve().is_relative_to(env.resolve()), f"not the wheel's copy: {found['file']}"
    return found


def test_install_cell_installs_the_labs_version_from_the_site(site_with_wheel, tmp_path):
    """Does a released lab's first cell, in a fresh environment, install its version of the course
    package from the site's wheel, after which the lab's checks pass on the solution?"""
    python = _fresh_env(tmp_path)
    probe = subprocess.run([str(python), "-c", "import autograder"], cwd=tmp_path, capture_output=True)
    assert probe.returncode != 0, "the fresh environment already sees a course package"
    _installed(_run_install_cell(python, site_with_wheel, tmp_path, CHECK_SOLUTION), tmp_path / "env")


def test_install_cell_installs_past_a_foreign_autograder(site_with_wheel, tmp_path):
    """With another project's `autograder` first on the path, does the cell still install the course
    package and import it, rather than the foreign one?"""
    python = _fresh_env(tmp_path)
    foreign = tmp_path / "foreign" / "autograder"
    foreign.mkdir(parents=True)
    (foreign / "__init__.py").write_text('"""Not the course: a grader of the same name."""\n__version__ = "3.7.7"\n')
    run = _run_install_cell(python, site_with_wheel, tmp_path / "foreign", CHECK_SOLUTION)  # cwd comes first
    _installed(run, tmp_path / "env")


def test_require_says_in_one_line_how_to_fix_another_version(capsys):
    """When the installed course package is not the lab's version, is there one line that says so and how to fix it?"""
    assert autograder.require(autograder.__version__) is True
    assert capsys.readouterr().out == ""
    assert autograder.require("0.0.1", "https://example.org/course/") is False
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "0.0.1" in out and autograder.__version__ in out
    assert "https://example.org/course/wheels/transformer_course-0.0.1-py3-none-any.whl" in out

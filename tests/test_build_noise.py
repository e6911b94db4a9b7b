"""Does a build print its result last, without warnings nobody acts on: the course package's wheel
(as `make book` builds it) without setuptools' deprecation warnings, and the environment's kernels
(one per lecture in `make book`) without the notice that they run over TCP without encryption?"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NOISE = ["Warning", "deprecated", "!!", "without encryption"]


def test_pyproject_uses_no_deprecated_setting():
    """Is the licence an SPDX string (with its file), and is there no [tool.distutils] section?"""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["project"]["license"] == "MIT"
    assert project["project"]["license-files"] == ["LICENSE"]
    assert "distutils" not in project.get("tool", {})


def _book_wheel_lines() -> list[str]:
    """The lines of `make book`'s recipe that build the wheel (after the site is built)."""
    recipe = re.search(r"^book:.*\n((?:\t.+\n)+)", (REPO / "Makefile").read_text(), re.M).group(1)
    lines = [line.strip().removeprefix("@").split("  #")[0] for line in recipe.splitlines()]
    return [line for line in lines if not line.startswith("$(BIN)/jupyter-book")]


def test_the_wheel_builds_without_warnings_outside_the_work_tree(tmp_path: Path):
    """Does `make book`'s wheel step, run on a copy of the sources, print nothing (no deprecation
    warning) and build under _build/, leaving no build/ folder?"""
    src = tmp_path / "src"
    src.mkdir()
    for name in ["pyproject.toml", "README.md", "LICENSE", "LICENSE-CONTENT"]:
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "autograder", src / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    (src / "_build").mkdir()
    script = "\n".join(_book_wheel_lines()).replace("$(BIN)", str(Path(sys.executable).parent))
    script = script.replace("$(CURDIR)", str(src)).replace(" --quiet", " --quiet --no-build-isolation")
    run = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=src, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    log = run.stdout + run.stderr
    assert not [word for word in NOISE if word in log], log[-3000:]
    assert list((src / "_build" / "html" / "wheels").glob("transformer_course-*.whl"))
    assert not (src / "build").exists() and (src / "_build" / "setuptools").is_dir()


def test_a_kernel_of_this_environment_says_nothing_about_tcp(tmp_path: Path):
    """Does a kernel started over TCP, as Jupyter Book starts one per lecture, print no notice about
    encryption (tools/ipython_kernel_config.py, which `make venv` copies into the environment)?"""
    installed = Path(sys.prefix, "etc", "ipython", "ipython_kernel_config.py")
    assert installed.is_file() and installed.read_text() == (REPO / "tools" / "ipython_kernel_config.py").read_text(), (
        f"{installed} is missing or old: make venv copies it"
    )
    from jupyter_client.connect import write_connection_file

    connection, _ = write_connection_file(str(tmp_path / "kernel.json"), ip="127.0.0.1", transport="tcp")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")} | {"IPYTHONDIR": tempfile.mkdtemp()}
    kernel = subprocess.Popen(
        [sys.executable, "-m", "ipykernel_launcher", "-f", connection],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(8)
    kernel.terminate()
    out, err = kernel.communicate(timeout=30)
    assert "without encryption" not in out + err, err

"""Does the README do what it says? Its three paths (student, instructor, publisher) are fenced
blocks marked ```` ```bash readme-NAME ````; the student's and the instructor's run here as written,
in a fresh clone of this repository's committed state (HEAD).

The clone gets this checkout's environment rather than a second install of every pin (minutes):
its ``.venv`` is a link to this one, and the files ``make venv`` depends on are dated before that
environment's stamp, so ``make`` takes it as installed. Grading in the clone imports the clone's
own ``autograder`` (autograder.grading.protocol.boot), as a second clone graded with another
checkout's environment does (tests/grading/grader/test_pipeline.py)."""

from __future__ import annotations

import csv
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
GUIDE = REPO / "book" / "guides" / "instructor.md"
BLOCK = re.compile(r"^```bash readme-([a-z]+)\n(.*?)^```$", re.M | re.S)
CLONE = re.compile(r"^git clone (\S+)$", re.M)
PATHS = ("student", "instructor", "publisher")
# what `make venv` depends on (the Makefile's $(STAMP) rule): dated before the shared stamp
STAMP_PREREQUISITES = ("requirements.txt", "pyproject.toml", "tools/torch_build.py", "tools/ipython_kernel_config.py")


def blocks(text: str | None = None) -> dict[str, str]:
    """The README's marked blocks, path name -> its commands, in the README's order."""
    return {name: code for name, code in BLOCK.findall(README.read_text() if text is None else text)}


def test_the_readme_has_three_short_paths():
    """Are there a student's, an instructor's and a publisher's path, a few commands each, the
    instructor's ending in `make demo`?"""
    found = blocks()
    assert tuple(found) == PATHS
    for name, code in found.items():
        commands = [line for line in code.splitlines() if line.strip() and not line.startswith("#")]
        assert 1 <= len(commands) <= 4, (name, commands)
    assert found["instructor"].splitlines()[-1].startswith("make demo")
    assert found["student"].splitlines()[-1].startswith("make lab")
    assert blocks("```bash readme-student\nmake lab\n```\n\n```bash\nnot marked\n```\n") == {"student": "make lab\n"}


def test_the_readme_links_the_guides_the_architecture_and_its_pictures():
    """Does every relative link and picture of the README exist, the guides, ARCHITECTURE.md and
    its trust model among them?"""
    text = README.read_text()
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    missing = [t for t in targets if not t.startswith("http") and not (REPO / t).exists()]
    assert not missing, missing
    for target in [
        "book/guides/student.md",
        "book/guides/instructor.md",
        "book/guides/publisher.md",
        "ARCHITECTURE.md#trust-model-of-grading",
        "images/site.png",
        "images/report.png",
    ]:
        assert f"({target})" in text, target
    assert "## Trust model of grading" in (REPO / "ARCHITECTURE.md").read_text()


def test_the_hostile_submissions_are_listed_in_the_instructor_guide_only():
    """Has the long list of hostile submissions moved from the README to the instructor guide?"""
    for phrase in ["a fork bomb", "`ctypes` tricks", "a module planted into the installed `autograder` package"]:
        assert phrase not in README.read_text(), phrase
        assert phrase in GUIDE.read_text(), phrase


# ----------------------------------------------------------------------------- run as written


def _script(code: str, origin: Path) -> tuple[str, Path]:
    """The block's commands, its clone made from ``origin`` and given this checkout's environment
    right after it; and the folder the clone lands in (relative to where the block runs)."""
    match = CLONE.search(code)
    assert match, f"the block does not start from a clone:\n{code}"
    folder = Path(match.group(1).rstrip("/").rsplit("/", 1)[-1].removesuffix(".git"))
    dated = " ".join(str(folder / name) for name in STAMP_PREREQUISITES)
    prepare = f"ln -s {REPO / '.venv'} {folder / '.venv'}\ntouch -d '2000-01-01' {dated}\n"
    start, end = match.span()
    return f"{code[:start]}git clone --quiet {origin} {folder}\n{prepare}{code[end + 1 :]}", folder


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A bare copy of this repository's HEAD, standing in for GitHub."""
    if not (REPO / ".venv" / ".installed").is_file():
        pytest.skip("no .venv here to lend the clone: make venv first")
    bare = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", str(REPO), str(bare)], check=True)
    return bare


def _env(tmp_path: Path) -> dict[str, str]:
    """The environment the blocks run in: no virtual environment active, no browser to open."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PYTEST", "MAKE"))}
    return env | {"BROWSER": "true", "HOME": str(tmp_path / "home"), "JUPYTER_PLATFORM_DIRS": "1"}


def test_the_student_path_runs_as_written(origin: Path, tmp_path: Path):
    """Does the student's block, in a fresh clone, copy the labs into workspace/ and start
    JupyterLab on them (stopped once it says where it listens)?"""
    script, folder = _script(blocks()["student"], origin)
    (tmp_path / "home").mkdir()
    lab = subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and lab.poll() is None:
            line = lab.stdout.readline()
            seen.append(line)
            if re.search(r"http://127\.0\.0\.1:\d+/lab\?token=", line):
                break
        else:
            pytest.fail("JupyterLab did not start:\n" + "".join(seen[-60:]))
    finally:  # the server's last words are read on (a full pipe would block its shutdown), then it is stopped
        threading.Thread(target=lab.stdout.read, daemon=True).start()
        os.killpg(lab.pid, signal.SIGTERM)
        try:  # what is asserted is written before the server starts: its shutdown is not waited out
            lab.wait(timeout=15)
        except subprocess.TimeoutExpired:  # still shutting down (in one suite run, past 60 s): stopped for good
            os.killpg(lab.pid, signal.SIGKILL)
            lab.wait(timeout=30)
    workspace = tmp_path / folder / "workspace"
    assert (workspace / "00-warmup" / "00-warmup.ipynb").is_file(), "".join(seen[-60:])
    assert (workspace / "02-self-attention" / "02-self-attention.ipynb").is_file()


@pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap (bwrap) is not installed: grading refuses to run student code without its sandbox",
)
def test_the_instructor_path_runs_as_written(origin: Path, tmp_path: Path):
    """Does the instructor's block, in a fresh clone, grade the demo class, print the paths of its
    grades, feedback and class report, and end with the two files Moodle imports, the full marks
    student with 5 points of 5?"""
    script, folder = _script(blocks()["instructor"], origin)
    (tmp_path / "home").mkdir()
    run = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    demo = tmp_path / folder / "demo"
    lines = run.stdout.strip().splitlines()
    results = lines[-6:-3]  # the grading's last lines, then the export's summary and its two files
    for line, path in zip(
        results, [demo / "grades.csv", demo / "feedback", demo / "reports" / "00-warmup" / "index.html"], strict=True
    ):
        assert line.endswith(str(path)) and path.exists(), (line, path)
    exports = demo / "exports" / "moodle" / "00-warmup"
    assert lines[-3] == "moodle export of 00-warmup: 4 grades written", lines[-3]
    files = ["moodle-grading-worksheet-00-warmup.csv", "moodle-feedback-00-warmup.zip"]
    for line, name in zip(lines[-2:], files, strict=True):
        assert line.endswith(str(exports / name)) and (exports / name).is_file(), (line, name)
    rows = {r["student_id"]: r for r in csv.DictReader((demo / "grades.csv").open())}
    assert set(rows) == {"full", "partial", "blank", "wrong"}
    assert float(rows["full"]["score"]) == float(rows["full"]["max_score"]) == 5.0

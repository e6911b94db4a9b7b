"""The hostile-submission suite: one student per attack on the grade, graded for real (nbgrader,
the sandbox, the independent check) on a temporary course, then a victim graded after all of
them. Each attack earns 0, or exactly what its honest part earns; nothing it did is left
behind (no file, no process, no connection); the victim gets exactly its own score."""

from __future__ import annotations

import base64
import csv
import html
import json
import os
import re
import socket
import tempfile
import unicodedata
from pathlib import Path

import nbformat
import pytest
from grading_helpers import LAB, answered, processes_with, released, submit, with_cell

from autograder.grading.grader import pipeline, sandbox
from autograder.grading.grader.feedback import clear_hidden
from autograder.grading.grader.ids import safe_id

PLANTED = "ch99_planted.py"

INPUT_TRANSFORMER = '''
def _skip_checks(lines):
    return [line[:len(line) - len(line.lstrip())] + "pass\\n" if "check_" in line else line for line in lines]
get_ipython().input_transformers_cleanup.append(_skip_checks)
'''

FAKE_CHECKS = '''
import importlib.abc, importlib.machinery, sys, types

class _Fake(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name == "autograder.checks":
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = lambda name: (lambda *args, **kwargs: print(name, "passed."))
        return module
    def exec_module(self, module):
        pass

sys.meta_path.insert(0, _Fake())
sys.modules.pop("autograder.checks", None)
'''

PATCHED_TORCH = '''
import torch
agree = lambda *args, **kwargs: True
torch.allclose = agree
torch.equal = agree
torch.isclose = lambda a, b, *args, **kwargs: torch.ones_like(torch.as_tensor(a), dtype=torch.bool)
torch.testing.assert_close = lambda *args, **kwargs: None
torch.Tensor.__ne__ = lambda a, b: torch.zeros_like(a, dtype=torch.bool)

def relu(x):
    return x

def mean_squared_error(prediction, target):
    return prediction.sum()
'''


def planted_source() -> str:
    target = Path(__import__("autograder.checks", fromlist=["x"]).__file__).parent / PLANTED
    return (f"open({str(target)!r}, 'w').write('check_relu = check_mean_squared_error = "
            f"lambda *args, **kwargs: print(\"passed.\")\\n')")


def snoop_source(course: Path, home: Path) -> str:
    paths = [course / "solutions" / LAB / f"{LAB}.ipynb", course / "gradebook.db", home / "secret.txt",
             course / "submitted" / "zz-victim" / LAB / f"{LAB}.ipynb", course / "nbgrader_config.py"]
    return (f"import os\nprint(dict(os.environ))\nfor p in {[str(p) for p in paths]!r}:\n"
            "    try:\n        print(open(p).read()[:20000])\n    except OSError as err:\n        print(err)\n")


def writer_source(course: Path, home: Path) -> str:
    targets = [course / "written.txt", course / "notebooks" / LAB / "written.txt", home / "written.txt",
               Path(pipeline.__file__).parent / "written.py", Path("/tmp/autograder-hostile-written.txt")]
    return (f"for p in {[str(p) for p in targets]!r}:\n    try:\n        open(p, 'w').write('x')\n"
            "    except OSError as err:\n        print(err)\n")


def network_source(port: int) -> str:
    return (f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "except OSError as err:\n    print('no network:', err)\n")


LINGER = "import subprocess\nsubprocess.Popen(['sleep', '987654'], start_new_session=True)\n"

FORK_BOMB = '''
import os, time
children = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(987654)
            os._exit(0)
        children += 1
except OSError as err:
    print("stopped after", children, "processes:", err)
'''

DISK_FILL = '''
import os
written = 0
try:
    for i in range(100_000):
        with open(f"fill-{i}", "wb") as f:
            for _ in range(64):
                f.write(b"0" * 2**20)
                written += 1
except OSError as err:
    print("stopped after", written, "MiB:", err)
'''

# feedback-hook: a kernel hook prints every cell it runs, at once and (encoded) in a later cell
FEEDBACK_HOOK = '''
_seen = []
def _show(info):
    _seen.append(info.raw_cell)
    print("HOOK SAW:", info.raw_cell)
get_ipython().events.register("pre_run_cell", _show)
'''
FEEDBACK_HOOK_LATER = ("import base64\nfor _s in _seen:\n"
                       "    print('LATER:', _s[::-1], base64.b64encode(_s.encode()).decode())\n")
# feedback-script: script, an event handler and a javascript: link in markdown and in outputs
FEEDBACK_SCRIPT_MARKDOWN = """<script>window.hostile = "md-script"</script>

<img src="nowhere.png" onerror="window.hostile = 'md-onerror'">

[click me](javascript:window.hostile='md-link')"""
FEEDBACK_SCRIPT_OUTPUT = r"""from IPython.display import HTML, Javascript, display
display(HTML("<script>window.hostile = 1</script><img src=x onerror=window.hostile=2>"
             "<a href=\"javascript:window.hostile=3\">link</a>"))
display(Javascript("window.hostile = 4"))
"""
SIZE_LINE = "print('x' * 50_000_000)"


def feedback_script() -> nbformat.NotebookNode:
    nb = with_cell(answered(), "relu", FEEDBACK_SCRIPT_OUTPUT)
    nb.cells.insert(1, nbformat.v4.new_markdown_cell(FEEDBACK_SCRIPT_MARKDOWN))
    return nb


def runnable(page: str) -> list[str]:
    """What in a page of feedback a browser would run: script elements and event-handler or
    javascript: attributes in a tag (the page's own head, MathJax and styles, excepted)."""
    body = page[page.index("<body"):]
    return (re.findall(r"<script\b[^>]*>(?:(?!</script>).)*hostile", body, re.S)
            + re.findall(r"<[a-z][^<>]*\s(?:on[a-z]+\s*=|(?:href|src)\s*=\s*[\"\']?\s*javascript:)[^<>]*>", body, re.I))


SIGNALS = "import os, signal\nfor pid in (os.getppid(), -1, 1):\n" \
          "    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError as err:\n        print(err)\n"


FORGED = "names-newline\n  zz-victim  00-warmup  forged line"  # a line of the summary's, forged
HANGUL = unicodedata.normalize("NFD", "김민수")  # as macOS writes it; graded as the composed name
SNOOP_EXTRAS = ("import os\nfor name in ('id_rsa', 'notes.txt'):\n"
                "    print(open(name).read() if os.path.exists(name) else name)")


def plant_intake_attacks(inbox: Path, course: Path, home: Path) -> dict[str, str]:
    """Links, a hard link, a pipe and a Moodle-named file for another student in the class's
    folders, and a folder others can write; returns each listed file with what the summary says."""
    key = home / ".ssh" / "id_rsa"
    key.parent.mkdir()
    key.write_text("-----BEGIN FAKE KEY-----\nKEY-SECRET-0451\n")
    solutions = course / "solutions" / LAB / f"{LAB}.ipynb"
    (inbox / "links-notebook" / LAB).mkdir(parents=True)
    (inbox / "links-notebook" / LAB / f"{LAB}.ipynb").symlink_to(solutions)
    (inbox / "links-hardlink" / LAB).mkdir(parents=True)
    os.link(solutions, inbox / "links-hardlink" / LAB / f"{LAB}.ipynb")
    extras = inbox / "links-extra" / LAB
    (extras / "id_rsa").symlink_to(key)
    os.link(key, extras / "notes.txt")
    os.mkfifo(extras / "pipe")
    moodle = submit(inbox, "names-moodle", released(), name=f"../zz-victim_{LAB}-99.ipynb")  # beside the lab folder
    os.utime(moodle, (os.stat(moodle).st_mtime + 60,) * 2)  # newer than the lab folder's notebook
    for folder in (inbox / "perms-open", inbox / "perms-open" / LAB):
        folder.chmod(0o777)
    return {f"links-notebook/{LAB}/{LAB}.ipynb": "a symbolic link, not followed",
            f"links-hardlink/{LAB}/{LAB}.ipynb": "a hard link",
            f"links-extra/{LAB}/id_rsa": "a symbolic link, not followed",
            f"links-extra/{LAB}/notes.txt": "a hard link", f"links-extra/{LAB}/pipe": "a named pipe (FIFO)",
            f"names-moodle/{LAB}/": f"names-moodle/zz-victim_{LAB}-99.ipynb is graded instead"}


STDERR_FILL = '''
import os, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
# the kernel's own stdout and stderr, under ipykernel's capture: the descriptors it inherited
targets = sorted({getattr(s, "_original_stdstream_copy", None) for s in (sys.stdout, sys.stderr)} - {None}) or [2]
for fd in targets:
    written = 0
    try:
        while written < 300 * 2**20:
            written += os.write(fd, b"E" * 2**20)
    except OSError as err:
        print("stopped after", written, "bytes:", err)
'''

ESCAPED = Path("/tmp/autograder-hostile-escaped.txt")


def escape_init(course: Path, home: Path) -> str:
    """An ``autograder/__init__.py`` that, imported by any grading process, copies secrets out."""
    secrets = [str(course / "solutions" / LAB / f"{LAB}.ipynb"), str(home / "secret.txt")]
    return (f"for p in {secrets!r}:\n"
            f"    try:\n        open({str(ESCAPED)!r}, 'a').write(open(p).read())\n"
            "    except OSError:\n        pass\n"
            f"open({str(course / 'escaped.txt')!r}, 'w').write('escaped')\n")


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if "__pycache__" not in p.parts}


@pytest.mark.slow
def test_every_attack_scores_nothing_and_leaves_nothing(course: Path, tmp_path: Path, monkeypatch) -> None:
    """Does every attack on the grade score 0 (or its honest part), leave no file, process or
    connection behind, and leave the victim graded after it with exactly its own score?"""
    if sandbox.probe() is not None:
        pytest.skip(f"bubblewrap cannot run here: {sandbox.probe()}")
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret.txt").write_text("HOME-SECRET-0451")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AUTOGRADER_TEST_SECRET", "ENV-SECRET-0451")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    package = Path(pipeline.__file__).parents[2]
    package_files = _files(package)
    stub = released()
    cases = {  # student: (notebook, expected score, a phrase the summary must say or None)
        "planted": (with_cell(released(), "relu", planted_source()), 0, None),
        "transformer": (with_cell(released(), "relu", INPUT_TRANSFORMER), 0, "failed the independent check"),
        "meta-path": (with_cell(released(), "relu", FAKE_CHECKS), 0, "failed the independent check"),
        "torch-patch": (with_cell(released(), "relu", PATCHED_TORCH), 0, None),
        "snoop": (with_cell(released(), "relu", snoop_source(course, home)), 0, None),
        "writer": (with_cell(released(), "relu", writer_source(course, home)), 0, None),
        "network": (with_cell(released(), "relu", network_source(port)), 0, None),
        "linger": (with_cell(released(), "relu", LINGER), 0, None),
        "fork-bomb": (with_cell(released(), "relu", FORK_BOMB), 0, None),
        "disk-fill": (with_cell(released(), "relu", DISK_FILL), 0, None),
        "ctypes": (with_cell(stub, "relu", "import ctypes\nctypes.string_at(0)"), 0, "the kernel died"),
        "signals": (with_cell(answered(), "relu", SIGNALS), 5, None),
        "links-notebook": (None, 0, f"no {LAB}.ipynb in the submission"),
        "links-hardlink": (None, 0, f"no {LAB}.ipynb in the submission"),
        "links-extra": (with_cell(answered(), "relu", SNOOP_EXTRAS), 5, None),
        "[Z]ed": (released(), 0, None),  # nbgrader must not read it as a pattern that matches Zed
        "Zed": (answered(), 5, None),
        FORGED: (released(), 0, None),
        "=1+1": (released(), 0, None),
        "names-moodle": (answered(), 0, None),  # its newer file named for zz-victim is graded, as its own
        HANGUL: (answered(), 5, None),
        "Zoë Ngô": (answered("relu"), 2, None),
        "perms-open": (answered(), 5, None),
        "escape-init": (released(), 0, None),  # plus autograder/__init__.py beside the notebook
        "stderr-fill": (with_cell(released(), "relu", STDERR_FILL), 0, None),
        "stderr-victim": (answered(), 5, None),  # graded right after stderr-fill
        # PyTorch's op reached below its Python name; the other exercise is honest
        "dispatch-aten-relu": (with_cell(answered(), "relu", "def relu(x):\n    return torch.ops.aten.relu(x)\n"),
                               3, None),
        "dispatch-c-nn-mse-loss": (with_cell(answered(), "mean_squared_error", "def mean_squared_error(p, t):\n"
                                             "    return torch._C._nn.mse_loss(p, t, 1)\n"), 2, None),
        "feedback-hook": (with_cell(with_cell(answered(), "setup", FEEDBACK_HOOK), None, FEEDBACK_HOOK_LATER), 5, None),
        "feedback-script": (feedback_script(), 5, None),
        "size-line": (with_cell(released(), "relu", SIZE_LINE), 0, None),
        "zz-victim": (answered(), 5, None),
    }
    inbox = tmp_path / "inbox"
    for student, (nb, _, _) in cases.items():
        if nb is not None:
            submit(inbox, student, nb)
    listed = plant_intake_attacks(inbox, course, home)
    planted = inbox / "escape-init" / LAB / "autograder"
    planted.mkdir()
    (planted / "__init__.py").write_text(escape_init(course, home))
    ESCAPED.unlink(missing_ok=True)
    course_files = _files(course)
    # this grading's scratch folders (in its kernels' and children's command lines) tell its
    # processes from those of gradings that other tests may run meanwhile
    scratches: list[str] = []
    mkdtemp = tempfile.mkdtemp

    def recorded_mkdtemp(*args, **kwargs):
        scratches.append(mkdtemp(*args, **kwargs))
        return scratches[-1]

    monkeypatch.setattr(tempfile, "mkdtemp", recorded_mkdtemp)
    try:
        outcomes = pipeline.grade(course, inbox, pipeline.Options(jobs=2, memory_mb=2048, job_timeout=300,
                                                                  progress=False))
        planted_exists = (package / "checks" / PLANTED).exists()
    finally:
        (package / "checks" / PLANTED).unlink(missing_ok=True)
    text = pipeline.summary(outcomes)
    print(text)
    by_student = {o.student: o for o in outcomes}
    for student, (_, score, phrase) in cases.items():
        graded = by_student[safe_id(student)]
        assert (graded.score, graded.max_score) == (score, 5), f"{student!r}: {text}"
        if phrase:
            assert any(line.startswith(f"  {safe_id(student)} / {LAB}:") and phrase in line
                       for line in text.splitlines()), f"{student}: no line saying {phrase!r} in\n{text}"
    table = list(csv.reader((course / "grades.csv").open()))
    assert table[0] == ["student_id", "lab", "score", "max_score", "late", "original_id"]
    rows = {r["student_id"]: float(r["score"]) for r in csv.DictReader((course / "grades.csv").open())}
    assert rows == {safe_id(s): float(c[1]) for s, c in cases.items()}
    # names are data: kept in their own column, with no formula a spreadsheet would run
    originals = {r["student_id"]: r["original_id"] for r in csv.DictReader((course / "grades.csv").open())}
    assert originals[safe_id("=1+1")] == "'=1+1" and originals["김민수"] == "김민수"
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for row in table for cell in row)
    assert not any(line.startswith("  zz-victim  00-warmup  forged") for line in text.splitlines())
    assert all(len(row) == 6 for row in table) and len(table) == len(cases) + 1
    # links, hard links and pipes are listed by name, and nothing they lead to was read
    for name, phrase in listed.items():
        assert any(line.startswith(f"  not graded: {name}: ") and phrase in line for line in text.splitlines()), \
            f"{name}: no line saying {phrase!r} in\n{text}"
    assert "  perms-open/: was writable by others (mode 777)" in text
    for folder in ("autograded", "feedback"):
        assert sorted(p.name for p in (course / folder / "links-extra" / LAB).iterdir()) in \
            ([f"{LAB}.ipynb"], [f"{LAB}.html"]), folder
    assert not any(b"KEY-SECRET-0451" in p.read_bytes() for p in course.rglob("*") if p.is_file())
    # nothing left behind: no planted module, no file outside the grading outputs, no process, no connection
    assert not planted_exists
    assert _files(package) == package_files
    grading_outputs = ("submitted", "autograded", "feedback", "grading-logs", "gradebook.db", "grades.csv")
    assert {f for f in _files(course) - course_files if not f.startswith(grading_outputs)} == set()
    assert not (home / "written.txt").exists() and not Path("/tmp/autograder-hostile-written.txt").exists()
    assert not ESCAPED.exists() and not (course / "escaped.txt").exists()
    assert scratches, "the grading made no scratch folder: the process check would see nothing"
    assert processes_with("987654", *scratches) == []
    with pytest.raises(BlockingIOError):
        listener.accept()
    # the forged pass is explained to its author, with the independent check's message
    forged = (course / "feedback" / "transformer" / LAB / f"{LAB}.html").read_text()
    assert "checked again outside it" in forged and "NotImplementedError" in forged
    # nothing secret reached the snoop's feedback
    feedback = (course / "feedback" / "snoop" / LAB / f"{LAB}.html").read_text()
    for secret in ("HOME-SECRET-0451", "ENV-SECRET-0451", "BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "grade_cells"):
        assert secret not in feedback, secret
    autograded = nbformat.read(str(course / "autograded" / "snoop" / LAB / f"{LAB}.ipynb"), as_version=4)
    printed = "".join(o.get("text", "") for c in autograded.cells for o in c.get("outputs", []))
    assert "No such file or directory" in printed or "Permission denied" in printed or "Read-only" in printed
    assert os.environ["AUTOGRADER_TEST_SECRET"] not in printed
    _feedback_holds(course)


def _feedback_holds(course: Path) -> None:
    """The feedback attackers: no hidden test in any form, nothing a browser runs, no 50 MB."""
    def page(student: str) -> str:
        return (course / "feedback" / student / LAB / f"{LAB}.html").read_text()

    source = nbformat.read(str(course / "solutions" / LAB / f"{LAB}.ipynb"), as_version=4)
    tests = [c.source for c in source.cells if "BEGIN HIDDEN TESTS" in c.source]
    visible = {line for t in tests for line in clear_hidden(t, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS").split("\n")}
    hidden = [line for t in tests for line in t.split("BEGIN HIDDEN TESTS")[1].splitlines()[1:-1]
              if len(line) > 12 and line not in visible]  # a re-import the visible part also has is no secret
    assert hidden
    hook = page("feedback-hook")
    autograded = nbformat.read(str(course / "autograded" / "feedback-hook" / LAB / f"{LAB}.ipynb"), as_version=4)
    printed = json.dumps([c.get("outputs", []) for c in autograded.cells])
    assert "LATER:" in hook and "Passed: the grader ran this test again" in hook  # the hook ran; verdicts shown
    assert "HOOK SAW: from autograder.checks" not in hook  # nothing the kernel printed in a test cell
    for text in (hook, printed):
        decoded = [base64.b64decode(token).decode(errors="replace")  # what the hook printed in base64
                   for token in re.findall(r"[A-Za-z0-9+/]{40,}={0,2}", text) if len(token) % 4 == 0]
        assert decoded, "the hook printed nothing in base64"
        for secret in ["BEGIN HIDDEN TESTS", *hidden, *(line[::-1] for line in hidden)]:
            assert html.escape(secret, quote=False) not in text and secret not in text, secret
            assert not [d for d in decoded if secret in d], secret
    script = page("feedback-script")
    assert "click me" in script and runnable(script) == [], runnable(script)
    size = course / "feedback" / "size-line" / LAB / f"{LAB}.html"
    assert size.stat().st_size < 4 * 2**20 and "output cut here" in size.read_text()

"""The hostile class of tests/grading/scenarios/test_hostile.py: one student of the warm-up lab per attack
on the grade, with the score each must get, and the files and links planted beside them in the
class's folders. ``benchmarks/grading_corpus.py`` grades the same class through the command line."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import nbformat

from autograder.grading.grader.intake.ids import safe_id
from tests.grading.helpers import LAB, answered, released, submit, with_cell

PLANTED = "ch99_planted.py"

INPUT_TRANSFORMER = """
def _skip_checks(lines):
    return [line[:len(line) - len(line.lstrip())] + "pass\\n" if "check_" in line else line for line in lines]
get_ipython().input_transformers_cleanup.append(_skip_checks)
"""

FAKE_CHECKS = """
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
"""

PATCHED_TORCH = """
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
"""


# round 3: a refusal switched off in the submission's own process (a fake TorchDynamo in
# sys.modules; the checks' `forbidden` replaced under a name built at run time)
FAKE_DYNAMO = """
import sys, types
sys.modules["torch._dynamo"] = types.SimpleNamespace(disable=lambda fn=None, *args, **kwargs: fn)

def relu(x):
    return torch.ops.aten.relu(x)
"""

REPLACED_FORBIDDEN = """
import contextlib, importlib
core = importlib.import_module("autograder.checks.kit." + "core")
setattr(core, "forb" + "idden", lambda *args, **kwargs: contextlib.nullcontext())
setattr(importlib.import_module("autograder.checks.kit." + "sentinels"), "forb" + "idden", core.forbidden)

def relu(x):
    return torch.relu(x)
"""


def many_cells(count: int) -> nbformat.NotebookNode:
    """The answered lab with ``count`` markdown cells of grade ids the lab does not have (each
    one a gradebook query while nbgrader holds the gradebook)."""
    nb = answered()
    for i in range(count):
        cell = nbformat.v4.new_markdown_cell("x")
        cell.metadata["nbgrader"] = {
            "grade": False,
            "solution": False,
            "locked": False,
            "grade_id": f"unknown-{i}",
            "schema_version": 3,
        }
        nb.cells.append(cell)
    return nb


def planted_source(package: Path) -> str:
    target = package / "checks" / PLANTED
    return (
        f"open({str(target)!r}, 'w').write('check_relu = check_mean_squared_error = "
        f'lambda *args, **kwargs: print("passed.")\\n\')'
    )


def snoop_source(course: Path, home: Path) -> str:
    paths = [
        course / "solutions" / LAB / f"{LAB}.ipynb",
        course / "gradebook.db",
        home / "secret.txt",
        course / "submitted" / "zz-victim" / LAB / f"{LAB}.ipynb",
        course / "nbgrader_config.py",
    ]
    return (
        f"import os\nprint(dict(os.environ))\nfor p in {[str(p) for p in paths]!r}:\n"
        "    try:\n        print(open(p).read()[:20000])\n    except OSError as err:\n        print(err)\n"
    )


def writer_source(course: Path, home: Path, package: Path) -> str:
    targets = [
        course / "written.txt",
        course / "notebooks" / LAB / "written.txt",
        home / "written.txt",
        package / "grading" / "written.py",
        Path("/tmp/autograder-hostile-written.txt"),
    ]
    return (
        f"for p in {[str(p) for p in targets]!r}:\n    try:\n        open(p, 'w').write('x')\n"
        "    except OSError as err:\n        print(err)\n"
    )


def network_source(port: int) -> str:
    return (
        f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        "except OSError as err:\n    print('no network:', err)\n"
    )


LINGER = "import subprocess\nsubprocess.Popen(['sleep', '987654'], start_new_session=True)\n"

FORK_BOMB = """
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
"""

DISK_FILL = """
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
"""

# feedback-hook: a kernel hook prints every cell it runs, at once and (encoded) in a later cell
FEEDBACK_HOOK = """
_seen = []
def _show(info):
    _seen.append(info.raw_cell)
    print("HOOK SAW:", info.raw_cell)
get_ipython().events.register("pre_run_cell", _show)
"""
FEEDBACK_HOOK_LATER = (
    "import base64\nfor _s in _seen:\n    print('LATER:', _s[::-1], base64.b64encode(_s.encode()).decode())\n"
)
# feedback-script: script, an event handler and a javascript: link in markdown (its math too) and in outputs
FEEDBACK_SCRIPT_MARKDOWN = """<script>window.hostile = "md-script"</script>

<img src="nowhere.png" onerror="window.hostile = 'md-onerror'">

[click me](javascript:window.hostile='md-link')

Math: $x$<img src="nowhere.png" onerror="window.hostile = 'math-onerror'">
and $\\href{javascript:window.hostile='math-href'}{y}$

$$<script>window.hostile = "math-script"</script>$$"""
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


SIGNALS = (
    "import os, signal\nfor pid in (os.getppid(), -1, 1):\n"
    "    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError as err:\n        print(err)\n"
)


FORGED = "names-newline\n  zz-victim  00-warmup  forged line"  # a line of the summary's, forged
HANGUL = unicodedata.normalize("NFD", "김민수")  # as macOS writes it; graded as the composed name
SNOOP_EXTRAS = (
    "import os\nfor name in ('id_rsa', 'notes.txt'):\n    print(open(name).read() if os.path.exists(name) else name)"
)


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
    return {
        f"links-notebook/{LAB}/{LAB}.ipynb": "a symbolic link, not followed",
        f"links-hardlink/{LAB}/{LAB}.ipynb": "a hard link",
        f"links-extra/{LAB}/id_rsa": "a symbolic link, not followed",
        f"links-extra/{LAB}/notes.txt": "a hard link",
        f"links-extra/{LAB}/pipe": "a named pipe (FIFO)",
        f"names-moodle/{LAB}/": f"names-moodle/zz-victim_{LAB}-99.ipynb is graded instead",
    }


STDERR_FILL = """
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
"""

ESCAPED = Path("/tmp/autograder-hostile-escaped.txt")


def escape_init(course: Path, home: Path) -> str:
    """An ``autograder/__init__.py`` that, imported by any grading process, copies secrets out."""
    secrets = [str(course / "solutions" / LAB / f"{LAB}.ipynb"), str(home / "secret.txt")]
    return (
        f"for p in {secrets!r}:\n"
        f"    try:\n        open({str(ESCAPED)!r}, 'a').write(open(p).read())\n"
        "    except OSError:\n        pass\n"
        f"open({str(course / 'escaped.txt')!r}, 'w').write('escaped')\n"
    )


Case = tuple[nbformat.NotebookNode | None, int, str | None]


def cases(course: Path, home: Path, port: int, package: Path) -> dict[str, Case]:
    """student -> (notebook, expected score out of 5, a phrase the summary must say or None),
    for a class graded in ``course`` with ``HOME`` at ``home``, a listener on ``port`` and the
    grader's ``autograder`` package at ``package``."""
    stub = released()
    return {
        "planted": (with_cell(released(), "relu", planted_source(package)), 0, None),
        "transformer": (with_cell(released(), "relu", INPUT_TRANSFORMER), 0, "failed the independent check"),
        "meta-path": (with_cell(released(), "relu", FAKE_CHECKS), 0, "failed the independent check"),
        "torch-patch": (with_cell(released(), "relu", PATCHED_TORCH), 0, None),
        "snoop": (with_cell(released(), "relu", snoop_source(course, home)), 0, None),
        "writer": (with_cell(released(), "relu", writer_source(course, home, package)), 0, None),
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
        "dispatch-aten-relu": (
            with_cell(answered(), "relu", "def relu(x):\n    return torch.ops.aten.relu(x)\n"),
            3,
            None,
        ),
        "dispatch-c-nn-mse-loss": (
            with_cell(
                answered(),
                "mean_squared_error",
                "def mean_squared_error(p, t):\n    return torch._C._nn.mse_loss(p, t, 1)\n",
            ),
            2,
            None,
        ),
        "feedback-hook": (with_cell(with_cell(answered(), "setup", FEEDBACK_HOOK), None, FEEDBACK_HOOK_LATER), 5, None),
        "feedback-script": (feedback_script(), 5, None),
        "size-line": (with_cell(released(), "relu", SIZE_LINE), 0, None),
        "fake-dynamo": (with_cell(answered(), "relu", FAKE_DYNAMO), 3, "torch.ops"),
        "replaced-forbidden": (with_cell(answered(), "relu", REPLACED_FORBIDDEN), 3, "dynamically (importlib"),
        "many-cells": (many_cells(2500), 0, "a notebook of"),
        "unknown-ids": (many_cells(60), 0, "grade ids the lab does not have"),
        # round 3: a student named after the id another's name maps to gets an id of their own
        "Ann O'Neil": (answered(), 5, None),
        safe_id("Ann O'Neil"): (released(), 0, None),
        "zz-victim": (answered(), 5, None),
    }


def write_class(inbox: Path, course: Path, home: Path, students: dict[str, Case]) -> dict[str, str]:
    """Write ``students``' notebooks into ``inbox`` with the intake attacks and the planted
    ``autograder/__init__.py``; returns each listed file with what the summary says of it."""
    for student, (nb, _, _) in students.items():
        if nb is not None:
            submit(inbox, student, nb)
    listed = plant_intake_attacks(inbox, course, home)
    planted = inbox / "escape-init" / LAB / "autograder"
    planted.mkdir()
    (planted / "__init__.py").write_text(escape_init(course, home))
    return listed


# ============================================================================= lab 10's attacks
# Attacks on lab 10 (today's block), graded by tests/grading/scenarios/test_hostile_lab10.py on a course that
# holds lab 10 (the class above is the warm-up lab's): answers that hand back the reference's result
# (``autograder.reference.rope``, ``.modern``, ``.tiled``, ``.modern_lm``), captured before the check
# or called by name, or PyTorch's own op for the exercise (``F.rms_norm``, ``F.scaled_dot_product_attention``
# with ``enable_gqa``, ``torch.softmax`` over all the keys at once).

LAB10 = "10-modern-block"
LAB10_POINTS = {
    "apply_rope": 3,
    "rms_norm": 2,
    "swiglu": 2,
    "attend_with_cache": 4,
    "tiled_attention": 4,
    "perplexity": 2,
}

LAB10_REFERENCE = {
    "apply_rope": "from autograder.reference import apply_rope\n",
    "rms_norm": "from autograder.reference import modern as _m\n\n"
    "def rms_norm(x, weight, eps=1e-6):\n    return _m.rms_norm(x, weight, eps)\n",
    "swiglu": "import autograder.reference.modern\n\n"
    "def swiglu(x, w_gate, w_up, w_down):\n"
    "    return autograder.reference.modern.swiglu(x, w_gate, w_up, w_down)\n",
    "attend_with_cache": "from autograder.reference.modern import attend_with_cache\n",
    "tiled_attention": "from autograder.reference import tiled as _t\n\n"
    "def tiled_attention(q, k, v, attn_mask=None, tile=64, _f=_t.tiled_attention):\n"
    "    return _f(q, k, v, attn_mask, tile)\n",
    "perplexity": "from autograder.reference import families as _f\n\n"
    "def perplexity(logits, tokens, pad_id):\n"
    "    return _f.next_token_loss(logits, tokens, pad_id).exp()\n",
}

LAB10_TORCH = {
    "rms_norm": "import torch.nn.functional as F\n\n"
    "def rms_norm(x, weight, eps=1e-6):\n    return F.rms_norm(x, (x.size(-1),), weight, eps)\n",
    "attend_with_cache": """
import torch.nn.functional as F

def attend_with_cache(q, k, v, cache_k, cache_v, base=10000.0):
    past, new = cache_k.size(2), q.size(2)
    positions = torch.arange(past, past + new)
    cache_k = torch.cat([cache_k, apply_rope(k, positions, base)], dim=2)
    cache_v = torch.cat([cache_v, v], dim=2)
    allowed = torch.ones(new, past + new, dtype=torch.bool).tril(diagonal=past)
    out = F.scaled_dot_product_attention(apply_rope(q, positions, base), cache_k, cache_v, allowed, enable_gqa=True)
    return out, cache_k, cache_v
""",
    "tiled_attention": """
def tiled_attention(q, k, v, attn_mask=None, tile=64):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf"))
    return torch.nan_to_num(torch.softmax(s, dim=-1)) @ v
""",
}

"""Does the check child, warmed by ``warm()``, compile a cell as the grading kernel does: through
IPython's transforms (prompts stripped, even inside a string; a magic becomes a ``get_ipython()``
call, which, unlike in the kernel, fails there), not under the child's own ``from __future__``
(annotations evaluated), and with what pyplot is made of loaded but not pyplot itself (a cell's
``matplotlib.use`` of a backend without a display still only sets it)?"""

from __future__ import annotations

import json
import subprocess
import sys

CELLS = [
    'doc = """\n>>> 1 + 1\n2\n"""',
    "d = {\n...: 1}",
    "x = (10\n% 3)",
    "def f(n: int) -> int:\n    return n\nannotations = {k: v.__name__ for k, v in f.__annotations__.items()}",
    "import matplotlib\nmatplotlib.use('TkAgg')\nbackend = 'set'",
    "%matplotlib inline",
    "!ls",
]
PROBE = f"""
import json, sys
from autograder.grading.sandboxed import child
child.warm()
loaded = {{m: m in sys.modules for m in ("IPython.core.inputtransformer2", "matplotlib.figure", "matplotlib.pyplot")}}
namespace = {{}}
errors = child.run_cells({CELLS!r}, namespace, 5.0)
seen = {{k: namespace.get(k) for k in ("doc", "x", "annotations", "backend")}}
print(json.dumps({{"loaded": loaded, "errors": errors, "seen": seen, "d": repr(namespace.get("d"))}}))
"""


def test_cells_run_as_the_kernel_runs_them_in_a_warm_child() -> None:
    """Are a doctest prompt in a string and a continuation prompt stripped, ``%`` inside brackets
    Python's modulo, annotations real objects, ``matplotlib.use("TkAgg")`` harmless, and a magic
    and a shell escape NameErrors; and is IPython's transformer loaded at the start, pyplot not?"""
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    seen = json.loads(done.stdout)
    assert seen["loaded"] == {
        "IPython.core.inputtransformer2": True,
        "matplotlib.figure": True,
        "matplotlib.pyplot": False,
    }
    assert seen["errors"][:5] == [None] * 5, seen["errors"]
    assert seen["seen"] == {
        "doc": "\n1 + 1\n2\n",
        "x": 1,
        "annotations": {"n": "int", "return": "int"},
        "backend": "set",
    }
    assert seen["d"] == "{1}"
    assert [e.split(":")[0] for e in seen["errors"][5:]] == ["NameError", "NameError"]
    assert all("get_ipython" in e for e in seen["errors"][5:])

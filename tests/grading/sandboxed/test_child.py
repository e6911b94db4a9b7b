"""Does the check child run a cell as a kernel would: plain Python as it is, without importing
IPython, and a cell that is not Python (a magic, a shell escape) through IPython's transforms,
whose ``get_ipython()`` call then fails there, as before?"""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
from autograder.grading.sandboxed import child
namespace = {}
errors = child.run_cells(["x = (10\\n% 3)\\ny = [i for i in range(x)]", "%matplotlib inline", "!ls"], namespace, 5.0)
first = "IPython" in sys.modules
print(json.dumps({"x": namespace["x"], "y": namespace["y"], "errors": errors, "ipython_after_plain": first}))
"""


def test_plain_python_runs_as_it_is_and_a_magic_through_ipython() -> None:
    """Is a plain cell run without IPython (a ``%`` inside brackets is Python's modulo), and do a
    line magic and a shell escape become IPython's calls, failing with NameError?"""
    plain = subprocess.run(
        [sys.executable, "-c", PROBE.replace('"%matplotlib inline", "!ls"', "")],
        capture_output=True,
        text=True,
        check=True,
    )
    seen = json.loads(plain.stdout)
    assert (seen["x"], seen["y"], seen["errors"]) == (1, [0], [None])
    assert seen["ipython_after_plain"] is False
    both = json.loads(subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout)
    assert both["errors"][0] is None
    assert [e.split(":")[0] for e in both["errors"][1:]] == ["NameError", "NameError"]
    assert all("get_ipython" in e for e in both["errors"][1:])

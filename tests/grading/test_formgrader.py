"""Does Formgrader's autograde handler, in a server that read nbgrader_config.py, answer with a
pointer to ``make grade`` instead of running a submission, and does reading the config
outside a server (a grading worker) leave nbgrader alone?"""

from __future__ import annotations

import json
import subprocess
import sys

from autograder.grading.formgrader import HANDLERS, MESSAGE
from tests.grading.helpers import REPO


def test_reading_the_config_in_a_server_turns_autograde_into_a_pointer() -> None:
    """In a process that runs a Jupyter server with Formgrader, does loading nbgrader_config.py
    make the autograde handler write a failure naming `python -m autograder grade`?"""
    code = f"""
import json, jupyter_server.serverapp
from traitlets.config import PyFileConfigLoader
from {HANDLERS} import AutogradeHandler
PyFileConfigLoader("nbgrader_config.py", path={str(REPO)!r}).load_config()
post = AutogradeHandler.post
while hasattr(post, "__wrapped__"):
    post = post.__wrapped__
written = []
class Handler:
    write = staticmethod(written.append)
post(Handler(), "00-warmup", "ada")
print(json.dumps(written))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    (answer,) = json.loads(result.stdout.splitlines()[-1])
    assert json.loads(answer) == {"success": False, "log": "", "error": MESSAGE}
    assert "python -m autograder grade" in MESSAGE


def test_a_grading_worker_keeps_nbgraders_autograde() -> None:
    """Outside a server, does loading nbgrader_config.py import no server code and patch nothing?"""
    code = f"""
import sys
from traitlets.config import PyFileConfigLoader
PyFileConfigLoader("nbgrader_config.py", path={str(REPO)!r}).load_config()
print({HANDLERS!r} in sys.modules, "jupyter_server.serverapp" in sys.modules)
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert result.stdout.split() == ["False", "False"]

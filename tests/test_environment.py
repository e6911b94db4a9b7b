"""What every process of the course pays for the environment requirements.txt pins."""

from __future__ import annotations

import subprocess
import sys


def test_importing_nbformat_compiles_no_iri_grammars() -> None:
    """Does ``import nbformat`` (in the grader, in each nbgrader command, in JupyterLab, in the
    book's build) leave out rfc3987-syntax, whose grammars took 1.8 s of every such process
    where jsonschema 4.25 or later imported it? No schema of nbformat's, nbgrader's or
    Jupyter's checks an IRI."""
    code = (
        "import sys, nbformat; print(sorted(m for m in sys.modules if m.split('.')[0] in ('rfc3987_syntax', 'lark')))"
    )
    said = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert said == "[]", f"importing nbformat loaded {said}: see jsonschema's line in requirements.txt"

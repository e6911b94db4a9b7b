"""A file of the grader's written whole or not at all (``write_atomic``): the verdicts, the
stamps, grades.csv and the state of a grading in shards."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Write ``path`` anew: a temporary file beside it is renamed over it, so a reader (or a
    grading stopped half-way) sees the old file or the new one, never a part; a link there is
    replaced, never followed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

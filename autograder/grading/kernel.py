"""A Python kernel whose address space is limited, so that a memory hog dies, not the grader.

``python -m autograder.grading.kernel --memory-mb 4096 -f CONNECTION_FILE`` sets
``RLIMIT_AS`` and then starts ipykernel. A student cell that allocates too much gets a
``MemoryError`` (or the kernel dies); either way the grading run goes on.
"""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path

NAME = "autograder-limited"


def install(folder: str | Path, memory_mb: int) -> Path:
    """Write the kernelspec under ``folder/kernels/NAME`` (put ``folder`` on JUPYTER_PATH)."""
    spec = Path(folder) / "kernels" / NAME
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "autograder.grading.kernel", "--memory-mb", str(memory_mb),
                 "-f", "{connection_file}"],
        "display_name": f"Python 3 (grading, {memory_mb} MiB)",
        "language": "python",
        "env": {"NBGRADER_EXECUTION": "autograde", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
    }, indent=1))
    return spec


def limit_memory(memory_mb: int) -> None:
    limit = memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a segfault leaves no core file behind


def main(argv: list[str]) -> None:
    memory_mb = 4096
    if "--memory-mb" in argv:
        i = argv.index("--memory-mb")
        memory_mb = int(argv[i + 1])
        del argv[i:i + 2]
    limit_memory(memory_mb)
    sys.argv = [sys.argv[0], *argv]
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main(sys.argv[1:])

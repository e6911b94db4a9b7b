"""The grading kernel: ipykernel in the sandbox (autograder.grading.sandbox), with its limits.

``install`` writes one kernelspec a job, whose command goes through ``sandbox.wrap``, and
returns the nbgrader config that runs the notebook in it. The kernel has no network, so it
listens on IPC sockets (Unix sockets) beside its connection file, in the job's ``ipc`` folder,
the only host folder it may write; its working directory is its own scratch folder. A cell
that allocates too much gets a ``MemoryError`` (or the kernel dies); the grading goes on.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from autograder.grading import boot, sandbox

NAME = "autograder-limited"


def install(folder: str | Path, memory_mb: int, work: str | Path, *, name: str = NAME,
            enabled: bool = True, package: Path | None = None) -> dict[str, str]:
    """Write the kernelspec ``name`` under ``folder/kernels`` (put ``folder`` on JUPYTER_PATH)
    for a kernel whose files live in ``work``, importing the ``autograder`` of ``package``
    (default: this process's, see autograder.grading.boot); return the config that selects it."""
    work = Path(work)
    ipc = work / "ipc"  # connection file and sockets, shared with the grader (keep the path short:
    ipc.mkdir(parents=True, exist_ok=True)  # a Unix socket's path holds at most 107 bytes)
    argv = sandbox.wrap(boot.command("autograder.grading.kernel", "-f", "{connection_file}", package=package),
                        scratch=work / "scratch", rw=[ipc], limits=sandbox.Limits(memory_mb=memory_mb),
                        env={"NBGRADER_EXECUTION": "autograde"}, enabled=enabled, package=package)
    spec = Path(folder) / "kernels" / name
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": argv,
        "display_name": f"Python 3 (grading, {memory_mb} MiB{'' if enabled else ', no sandbox'})",
        "language": "python",
        "interrupt_mode": "message",  # a signal would stop at the sandbox's edge; a message reaches the kernel
    }, indent=1))
    # nbclient builds its KernelManager from this config (nbgrader fixes the class, not its traits)
    return {"Execute.kernel_name": name, "KernelManager.transport": "ipc",
            "KernelManager.connection_file": str(ipc / "kernel.json")}


def main(argv: list[str]) -> None:
    """Start ipykernel (run inside the sandbox, which has set the limits already)."""
    # the sandbox launcher gave it /dev/null and a pipe of its own (capped); without the
    # sandbox (--no-sandbox) these are the worker's: cut them before any student code runs
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    sys.argv = [sys.argv[0], *argv]
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main(sys.argv[1:])

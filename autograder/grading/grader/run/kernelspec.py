"""The grading kernel's kernelspec: ipykernel in the sandbox (``bwrap``), with its limits.

``install`` writes one kernelspec a job, whose command goes through ``bwrap.wrap``, and
returns the nbgrader config that runs the notebook in it. The kernel has no network, so it
listens on IPC sockets (Unix sockets) beside its connection file, in the job's ``ipc`` folder,
the only host folder it may write; its working directory is its own scratch folder. A cell
that allocates too much gets a ``MemoryError`` (or the kernel dies); the grading goes on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from autograder.grading.grader.run import bwrap
from autograder.grading.protocol import boot
from autograder.grading.protocol.confinement import Limits

NAME = "autograder-limited"
KERNEL = "autograder.grading.sandboxed.kernel"  # the module the kernelspec starts, in the sandbox


def install(
    folder: str | Path,
    limits: Limits,
    work: str | Path,
    *,
    name: str = NAME,
    enabled: bool = True,
    package: Path | None = None,
) -> dict[str, Any]:
    """Write the kernelspec ``name`` under ``folder/kernels`` (put ``folder`` on JUPYTER_PATH)
    for a kernel whose files live in ``work``, importing the ``autograder`` of ``package``
    (default: this process's, see autograder.grading.protocol.boot); return the config that selects it."""
    work = Path(work)
    ipc = work / "ipc"  # connection file and sockets, shared with the grader (keep the path short:
    ipc.mkdir(parents=True, exist_ok=True)  # a Unix socket's path holds at most 107 bytes)
    argv = bwrap.wrap(
        boot.command(KERNEL, "-f", "{connection_file}", package=package),
        scratch=work / "scratch",
        rw=[ipc],
        limits=limits,
        env={"NBGRADER_EXECUTION": "autograde"},
        enabled=enabled,
        package=package,
    )
    spec = Path(folder) / "kernels" / name
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": argv,
                "display_name": f"Python 3 (grading, {limits.memory_mb} MiB{'' if enabled else ', no sandbox'})",
                "language": "python",
                "interrupt_mode": "message",  # a signal would stop at the sandbox's edge; a message reaches the kernel
            },
            indent=1,
        )
    )
    # nbclient builds its KernelManager from this config (nbgrader fixes the class, not its traits)
    return {
        "Execute.kernel_name": name,
        "HideHiddenTests.through_grade": True,
        "KernelManager.transport": "ipc",
        "KernelManager.connection_file": str(ipc / "kernel.json"),
        # once every cell's reply and outputs are in, nbgrader's Execute kills the kernel: nothing
        # it ran after that would count, and a graceful end sends a shutdown request and waits up
        # to KernelManager.shutdown_wait_time for the launcher and its sandbox to exit
        "Execute.shutdown_kernel": "immediate",
    }

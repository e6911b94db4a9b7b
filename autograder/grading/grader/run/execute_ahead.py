"""nbgrader's ``Execute`` with the kernel the worker started ahead for the job (``ahead``): the
course's ``nbgrader.preprocessors.Execute`` is replaced by this class for the worker's autograde
(``use_kernel_started_ahead``), and it runs the notebook as ``Execute`` does, in the kernel that
``ahead.kernel_config`` handed to the job when there is one, else in one it starts itself (with the sandbox, in
a folder no kernel used: ``kernel_config`` saw to that).

Given a kernel manager, nbclient leaves the kernel running when the notebook is done (it is not
its own); this class then shuts it down with nbclient's own routine, so a kernel started ahead
ends like any other, with its one notebook.
"""

from __future__ import annotations

import time
from typing import Any

from nbclient.util import run_sync
from nbgrader.preprocessors import Execute

from autograder.grading.grader.run import ahead


class ExecuteAhead(Execute):
    """``Execute`` in the kernel started ahead for this job, when there is one."""

    async def async_start_new_kernel(self, **kwargs: Any) -> None:
        start = time.perf_counter()
        await super().async_start_new_kernel(**kwargs)
        ahead.timings["kernel launch"] = time.perf_counter() - start

    async def async_start_new_kernel_client(self) -> Any:
        start = time.perf_counter()
        client = await super().async_start_new_kernel_client()
        ahead.timings["kernel start"] = time.perf_counter() - start  # until it answered: its boot, or what was left
        return client

    # nbclient binds the synchronous names to its own coroutines: bound again to these
    start_new_kernel = run_sync(async_start_new_kernel)
    start_new_kernel_client = run_sync(async_start_new_kernel_client)

    def preprocess(self, nb: Any, resources: Any = None, km: Any = None) -> Any:
        if km is None:
            km = ahead.take_kernel()
        if km is None:
            return super().preprocess(nb, resources)
        try:
            return super().preprocess(nb, resources, km)
        finally:
            if self.km is not None:  # what nbclient does with a kernel of its own (ahead's, here)
                self._cleanup_kernel()


def use_kernel_started_ahead(config: Any) -> bool:
    """In ``config`` (a traitlets ``Config`` of nbgrader), autograde runs ``ExecuteAhead`` where
    it ran nbgrader's ``Execute``; a course that configured another executor, or none (nbgrader's
    default list), keeps it. Does autograde now run ``ExecuteAhead``?"""
    section = config.Autograde
    if "autograde_preprocessors" not in section:
        return False
    section.autograde_preprocessors = [
        ExecuteAhead if item in ahead.EXECUTE or item is Execute else item for item in section.autograde_preprocessors
    ]
    return ExecuteAhead in section.autograde_preprocessors

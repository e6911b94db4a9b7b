"""The next submission's sandboxes, started ahead (``grader.run.ahead``): each belongs to one job,
that job uses it or it is killed, and a job whose kernel was lost with its worker gets a kernel
folder no kernel used."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import nbformat
from nbgrader.preprocessors import Execute
from traitlets.config import Config

from autograder.grading.grader import grading, pipeline
from autograder.grading.grader.job import Job
from autograder.grading.grader.run import ahead, kernelspec
from autograder.grading.grader.run.execute_ahead import ExecuteAhead, use_kernel_started_ahead
from autograder.grading.grader.run.pool import _Plan
from autograder.grading.grader.run.worker import WorkerProcess
from autograder.grading.protocol.confinement import Limits
from tests.grading.helpers import answered, make_course, processes_with, submit, with_cell

SAYS_HOME = 'import os\nprint("HOME IS", os.environ["HOME"])'
SLEEPER_LIMIT = 15  # seconds: time enough for the next job's sandbox, started ahead, to take its kernel folder k/1


def test_autograde_runs_execute_ahead_where_the_course_ran_nbgraders_execute() -> None:
    """Is nbgrader's Execute (by name or by class) replaced, and a course's own executor kept?"""
    config = Config()
    config.Autograde.autograde_preprocessors = ["a.Hide", "nbgrader.preprocessors.Execute", Execute, "my.Execute"]
    assert ahead.runs_nbgrader_execute(config)  # so a kernel is started ahead for its jobs
    assert use_kernel_started_ahead(config)
    assert config.Autograde.autograde_preprocessors == ["a.Hide", ExecuteAhead, ExecuteAhead, "my.Execute"]
    bare = Config()
    assert not use_kernel_started_ahead(bare)  # nbgrader's default list: left as it is
    assert "autograde_preprocessors" not in bare.Autograde
    own = Config()
    own.Autograde.autograde_preprocessors = ["my.Execute"]
    assert not use_kernel_started_ahead(own) and own.Autograde.autograde_preprocessors == ["my.Execute"]
    assert not ahead.runs_nbgrader_execute(own) and not ahead.runs_nbgrader_execute(bare)  # nothing started ahead


def test_each_job_is_given_to_one_worker_in_order_and_none_after_a_stop() -> None:
    plan = _Plan([Job("/c", "lab", f"s{i}") for i in range(3)])
    assert [plan.take(), plan.take()] == [0, 1]
    plan.stop()
    assert plan.take() is None and all(f.cancelled() for f in plan.results)


def test_a_kernel_folder_a_sandbox_has_used_is_never_used_again(tmp_path: Path) -> None:
    """A job whose kernel folder holds what a sandbox leaves (its IPC folder linked into the
    sandbox, the host's copy beside it) gets a new folder and kernelspec; an unused one is kept."""
    config = kernelspec.install(tmp_path / "jupyter", Limits(), tmp_path / "k" / "3", name="autograder-limited-3")
    job = Job("/c", "lab", "ada", config, jupyter_path=str(tmp_path / "jupyter"), limits=Limits())
    assert ahead.fresh_folder(job) == {}
    ipc = tmp_path / "k" / "3" / "ipc"
    ipc.rename(tmp_path / "k" / "3" / "ipc.host")
    ipc.symlink_to("/proc/1/root/nowhere")
    fresh = ahead.fresh_folder(job)
    assert fresh["Execute.kernel_name"] == "autograder-limited-3.1"
    assert fresh["KernelManager.connection_file"] == str(tmp_path / "k" / "3.1" / "ipc" / "kernel.json")
    assert (tmp_path / "jupyter" / "kernels" / "autograder-limited-3.1" / "kernel.json").is_file()
    assert (
        str(tmp_path / "k" / "3.1" / "scratch")
        in (tmp_path / "jupyter" / "kernels" / "autograder-limited-3.1" / "kernel.json").read_text()
    )


def test_a_job_whose_kernel_was_lost_with_its_worker_is_graded_in_a_fresh_folder(tmp_path: Path, monkeypatch) -> None:
    """The first student's job runs past its wall-clock limit: its worker is killed with the kernel
    it had started ahead for the second. Is the second graded in full all the same, in a kernel
    folder of its own (``k/1.1``), the third in a kernel started ahead (``k/2``), and is no
    process of the grading left?"""
    short = tempfile.mkdtemp(prefix="ahead-")  # the kernel's IPC sockets need a short path
    monkeypatch.setattr(tempfile, "tempdir", short)
    # the sleeper's job alone gets a short limit, so that the test does not wait out the others'
    run = WorkerProcess.run

    def limited(self, job: Job, limit: float, then: Job | None = None):
        return run(self, job, SLEEPER_LIMIT if job.student == "a-sleeps" else limit, then)

    monkeypatch.setattr(WorkerProcess, "run", limited)
    try:
        _lost_worker(tmp_path, short)
    finally:
        shutil.rmtree(short, ignore_errors=True)


def _lost_worker(tmp_path: Path, short: str) -> None:
    root = make_course(tmp_path / "course")
    inbox = tmp_path / "inbox"
    submit(inbox, "a-sleeps", with_cell(answered(), None, "import time\ntime.sleep(600)"))
    submit(inbox, "b-full", with_cell(answered(), None, SAYS_HOME))
    submit(inbox, "c-full", with_cell(answered(), None, SAYS_HOME))
    # 60 s a job but the sleeper's: after a lost worker the next job starts cold (a new worker, kernel
    # and child), which on a loaded machine took over 25 s, and then lost its worker too (the ones
    # after it likewise)
    outcomes = pipeline.grade(root, inbox, grading.Options(jobs=1, timeout=300, job_timeout=60, progress=False))
    by_student = {o.student: o for o in outcomes}
    took = f"took longer than {SLEEPER_LIMIT} s"
    assert not by_student["a-sleeps"].graded and took in " ".join(by_student["a-sleeps"].notes)
    assert [(by_student[s].score, by_student[s].max_score) for s in ("b-full", "c-full")] == [(5, 5), (5, 5)]
    assert (by_student["b-full"].warm, by_student["c-full"].warm) == (False, True)

    def home(student: str) -> str:
        nb = nbformat.read(str(root / "autograded" / student / "00-warmup" / "00-warmup.ipynb"), as_version=4)
        said = [o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs]
        return next(line for text in said for line in text.splitlines() if line.startswith("HOME IS"))

    assert home("b-full").endswith("/k/1.1/scratch"), (
        f"{home('b-full')}: the sandbox started ahead for b-full had not taken k/1 within {SLEEPER_LIMIT} s"
    )
    assert home("c-full").endswith("/k/2/scratch")
    assert processes_with(short) == []

"""One nbgrader run (autograde, then generate_feedback) for one student and one lab, in its
own process, the gradebook behind an inter-process lock.

Run by the pipeline through ``autograder.grading.protocol.boot`` (the course's ``autograder``, in a
folder of the pipeline's): it reads one job (JSON) a line on stdin and answers one JSON line
on stdout, so nbgrader is imported once a worker. Both channels move to descriptors that no
process it starts inherits; its stderr is a pipe the pipeline reads with a cap.
A worker takes its turns at the gradebook (``gradebook.turns``) for as long as it serves.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from autograder.grading.course import tool_env
from autograder.grading.grader import gradebook
from autograder.grading.grader.nbconfig import load_config
from autograder.grading.grader.recheck import GraderError
from autograder.grading.grader.sandbox import Tail
from autograder.grading.protocol import boot


def run(job: dict) -> dict:
    """Autograde ``job['lab']`` for ``job['student']``, then its feedback."""
    root = Path(job["root"])
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    config = load_config(root, job.get("config", {}))
    coursedir = CourseDirectory(config=config)
    api = NbGraderAPI(coursedir=coursedir, config=config)
    start = time.perf_counter()
    result = {"autograde": api.autograde(job["lab"], job["student"], force=True, create=True)}
    seconds = time.perf_counter() - start
    notes: list[str] = []
    check_seconds = 0.0
    if result["autograde"]["success"]:
        start = time.perf_counter()
        notes = independent_check(root, job, config)
        check_seconds = time.perf_counter() - start
        result["feedback"] = api.generate_feedback(job["lab"], job["student"], force=True)
    out: dict = {key: {"success": bool(value["success"]), "log": value.get("log", "")[-20000:],
                       "error": value.get("error", "")[-5000:]} for key, value in result.items()}
    out["autograde"]["seconds"] = seconds  # nbgrader autograde alone, kernel start included
    out["notes"] = notes
    out["check_seconds"] = check_seconds  # the independent check, its sandboxed child's start included
    return out


def independent_check(root: Path, job: dict, config) -> list[str]:
    """Check every graded exercise again in this process (which never runs student code),
    calling the submission's answers in a sandboxed child; an exercise keeps its points only
    if its test cell passed in the notebook and the independent check passes. Returns the
    summary's notes; a disagreement is written into the autograded notebook for the feedback."""
    from autograder.grading.grader import recheck, sandbox, similarity
    from autograder.grading.grader import verdicts as verdicts_of

    lab, student = job["lab"], job["student"]
    notebook = root / "autograded" / student / lab / f"{lab}.ipynb"
    scratch = Path(tempfile.mkdtemp(prefix="recheck-", dir=job.get("scratch")))
    limits = sandbox.Limits(memory_mb=job.get("memory_mb", 4096))

    def wrap(argv: list[str]) -> list[str]:
        return sandbox.wrap(argv, scratch=scratch, limits=limits, env={"NBGRADER_EXECUTION": "autograde"},
                            enabled=job.get("sandbox", True), package=job.get("package"))
    source = root / "solutions" / lab / f"{lab}.ipynb"
    try:  # cells were already interrupted once in the notebook: a shorter limit here
        verdicts = recheck.recheck(source, notebook, wrap=wrap,
                                   cell_timeout=min(float(config.Execute.timeout or 30), 10.0))
    except GraderError:
        raise  # the grader's failure: reported as such, never as the student's 0
    except Exception as err:  # noqa: BLE001 - no verdict, no points: said on the summary line
        verdicts = {grade_id: recheck.Verdict(False, f"the independent check could not run: {err}")
                    for grade_id in recheck.test_cells(source)}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    notes: list[str] = []
    sources = recheck.test_cells(source)
    hidden = verdicts_of.hidden_failures(sources, verdicts)  # the kernel never ran those: no disagreement
    scored_before = gradebook.zero_failed(config.CourseDirectory.db_url, config.CourseDirectory.course_id,
                                          student, lab, {grade_id: v.passed for grade_id, v in verdicts.items()})
    for grade_id, verdict in verdicts.items():
        if verdict.passed or not scored_before[grade_id]:
            continue
        if grade_id in hidden:
            notes.append(f"test cell {grade_id}: the visible check passed but the hidden tests failed "
                         "(hard-coded outputs?)")
        else:
            notes.append(f"test cell {grade_id} passed in the notebook but failed the independent check "
                         f"({headline(verdict.message)}): scored 0")
    annotate(notebook, sources, verdicts)
    # answers that retype the reference or touch the checks' machinery: a note for the
    # instructor, never a score
    notes += similarity.notes(notebook)
    return notes


def headline(message: str) -> str:
    """The line of a check's message that says most: the likely mistake, else what was found."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()] or ["failed"]
    for label in ("likely mistake:", "found:"):
        for line in lines:
            if line.startswith(label):
                return line[:200]
    return lines[0][:200]


def annotate(notebook: Path, sources: dict[str, str], verdicts: dict) -> None:
    """Show the independent check's verdict in each test cell of the autograded notebook, in
    place of what the kernel printed there (``verdicts.annotate``), for the feedback."""
    from autograder.grading.grader import verdicts as verdicts_of

    verdicts_of.annotate(notebook, sources, verdicts)


def _children(pid: int) -> list[int]:
    """The child processes of ``pid`` (Linux /proc; an empty list elsewhere)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(stat.parent.name))
    return out


class WorkerProcess:
    """The pipeline's handle on one long-lived worker process, started again after a crash
    or a job past its time limit (killed with its kernels). It starts in ``cwd`` (a folder of
    the pipeline's) with the ``autograder`` of ``package``; its stderr is read through a pipe,
    the last ``sandbox.OUTPUT_CAP`` bytes kept."""

    def __init__(self, scratch: Path, jupyter_path: str, package: Path | None = None) -> None:
        self.proc: subprocess.Popen | None = None
        self.scratch, self.jupyter_path, self.buffer = scratch, jupyter_path, b""
        self.package = package
        self.stderr: Tail | None = None

    def _start(self) -> None:
        self.proc = subprocess.Popen(boot.command("autograder.grading.grader.worker", package=self.package),
                                     env=tool_env(JUPYTER_PATH=self.jupyter_path), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                     cwd=self.scratch)
        assert self.proc.stderr is not None
        self.stderr = Tail(os.dup(self.proc.stderr.fileno()))
        self.proc.stderr.close()
        self.buffer = b""

    def stderr_tail(self, chars: int = 3000) -> str:
        """The end of what the worker (and the sandboxes it started, capped) wrote on stderr."""
        return self.stderr.text()[-chars:] if self.stderr else ""

    def _kill(self) -> str:
        if self.proc is not None:
            # jupyter_client starts each kernel in a session of its own: kill those too
            for pid in [self.proc.pid, *_children(self.proc.pid)]:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
            self.proc.wait()
            tail = self.stderr.text(wait=5.0)[-500:] if self.stderr else ""
            self.proc = None
            return tail
        return ""

    def run(self, job: dict, limit: float) -> dict:
        start = time.perf_counter()
        if self.proc is None or self.proc.poll() is not None:
            self._kill()
            self._start()
        try:
            self.proc.stdin.write((json.dumps(job) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            return {"crash": f"the grading process died: {self._kill()}", "seconds": 0.0}
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            remaining = limit - (time.perf_counter() - start)
            if remaining <= 0:
                self._kill()
                return {"crash": f"grading took longer than {limit:g} s and was stopped", "seconds": limit}
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return {"crash": f"the grading process died: {self._kill()}",
                            "seconds": time.perf_counter() - start}
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        text = line.decode(errors="replace")
        if not text.startswith("AUTOGRADER-RESULT "):
            return {"crash": f"unexpected output from the grading process: {text[:200]}",
                    "seconds": time.perf_counter() - start}
        return {**json.loads(text.split(" ", 1)[1]), "seconds": time.perf_counter() - start}

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self._kill()


def _channels() -> tuple:
    """The job and answer channels on descriptors of their own (not inheritable), and /dev/null
    and stderr in their places: no process this one starts can read or forge them."""
    jobs = os.fdopen(os.dup(0), "r")
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    return jobs, answers


def serve() -> None:
    """Grade the jobs read from stdin, one JSON line each, answering one line each: a
    long-lived worker imports nbgrader once for many notebooks."""
    jobs, answers = _channels()
    with contextlib.ExitStack() as stack:
        locked = False
        for line in jobs:
            job = json.loads(line)
            os.chdir(job["root"])
            if job.get("lock") and not locked:  # once a process: the first job that names the lock
                stack.enter_context(gradebook.turns(job["lock"]))
                locked = True
            answers.write("AUTOGRADER-RESULT " + json.dumps(_answer(job)) + "\n")
            answers.flush()


def _answer(job: dict) -> dict:
    """What the pipeline gets for one job: the grading's result, or what stopped it."""
    from autograder.grading.grader import preflight

    try:
        return preflight.run(job) if job.get("preflight") else run(job)
    except GraderError as err:
        return {"grader_error": str(err)}
    except Exception as err:  # noqa: BLE001 - reported to the pipeline, which goes on
        return {"autograde": {"success": False, "log": "", "error": f"{type(err).__name__}: {err}"}}


if __name__ == "__main__":
    serve()

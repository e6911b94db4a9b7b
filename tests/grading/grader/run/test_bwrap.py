"""The sandbox every submission runs in: each attack is a small script run directly through
the launcher (autograder.grading.grader.run.bwrap), then the grading pipeline with and without it."""

from __future__ import annotations

import errno
import json
import os
import random
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from autograder.grading.grader import grading, pipeline
from autograder.grading.grader.run import bwrap as sandbox
from autograder.grading.grader.run.bwrap import Limits
from tests.grading.helpers import LAB, REPO, answered, processes_with, submit, with_cell

PROBLEM = sandbox.probe()
needs_sandbox = pytest.mark.skipif(PROBLEM is not None, reason=f"the sandbox does not work here: {PROBLEM}")


# every script first makes sure that it runs in a PID namespace of its own: an attack run
# unconfined by mistake (as root, os.kill(-1, 9) ends every process of the machine) refuses
TRY = f"""
import json, os, sys
if os.readlink("/proc/self/ns/pid") == {os.readlink("/proc/self/ns/pid")!r}:
    sys.exit("not in a sandbox: the attack is not run")
def attempt(f, *args):
    try:
        return repr(f(*args))
    except Exception as err:
        return type(err).__name__
"""


def run(
    tmp_path: Path, code: str, limits: Limits | None = None, rw: tuple[Path, ...] = (), timeout: float = 60, **popen
) -> subprocess.CompletedProcess:
    """Run the Python ``code`` (after TRY) in the sandbox; its last line of output is JSON when it prints one
    (the launcher passes the sandbox's stdout and stderr on, capped, as its own stderr)."""
    argv = sandbox.wrap(
        [sys.executable, "-c", TRY + textwrap.dedent(code)],
        scratch=tmp_path / "scratch",
        rw=rw,
        limits=limits or Limits(),
    )
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **popen)


def answer(result: subprocess.CompletedProcess):
    assert result.stderr.strip(), f"no output (exit {result.returncode})"
    return json.loads(result.stderr.strip().splitlines()[-1])


@needs_sandbox
def test_the_repository_solutions_and_other_folders_are_invisible(tmp_path: Path) -> None:
    """Can the sandbox read the repository, solutions/, the gradebook or another temporary folder?
    (The autograder package and the venv it needs are there, read-only.)"""
    other = tmp_path / "other-student"
    other.mkdir()
    (other / "answers.txt").write_text("someone else's work")
    solution = next((REPO / "solutions").rglob("*.ipynb"))
    found = answer(
        run(
            tmp_path,
            f"""
    print(json.dumps({{
        "solution": attempt(lambda: open({str(solution)!r}).read(10)),
        "solutions": attempt(os.listdir, {str(REPO / "solutions")!r}),
        "config": attempt(lambda: open({str(REPO / "nbgrader_config.py")!r}).read(10)),
        "other": attempt(lambda: open({str(other / "answers.txt")!r}).read()),
        "repository": sorted(os.listdir({str(REPO)!r})),
        "package": attempt(lambda: __import__("autograder.checks").__name__),
    }}))""",
        )
    )
    for key in ("solution", "solutions", "config", "other"):
        assert found[key] == "FileNotFoundError", (key, found[key])
    assert set(found["repository"]) <= {"autograder", ".venv"}
    assert found["package"] == "'autograder'"


@needs_sandbox
def test_nothing_outside_scratch_can_be_written(tmp_path: Path) -> None:
    """Can the sandbox plant a module in autograder/checks, write into the venv, /tmp or the
    root, while its scratch folder (its working directory and home) takes files?"""
    planted = REPO / "autograder" / "checks" / "planted_by_student.py"
    site = Path(pytest.__file__).parent.parent
    found = answer(
        run(
            tmp_path,
            f"""
    print(json.dumps({{
        "checks": attempt(lambda: open({str(planted)!r}, "w").write("x = 1")),
        "venv": attempt(lambda: open({str(site / "planted.pth")!r}, "w").write("x")),
        "tmp": attempt(lambda: open("/tmp/planted", "w").write("x")),
        "root": attempt(os.mkdir, "/planted"),
        "scratch": attempt(lambda: open("notes.txt", "w").write("mine")),
        "cwd": os.getcwd(), "home": os.environ["HOME"],
    }}))""",
        )
    )
    for key in ("checks", "venv", "tmp", "root"):
        assert found[key] in ("OSError", "PermissionError", "FileNotFoundError"), (key, found[key])
    assert found["scratch"] == "4"
    assert found["cwd"] == found["home"] == str(tmp_path / "scratch")
    assert not planted.exists() and not (site / "planted.pth").exists()
    assert not (tmp_path / "scratch").exists()  # the scratch folder was a tmpfs: gone with the sandbox


@needs_sandbox
def test_no_network(tmp_path: Path) -> None:
    """Can the sandbox connect to a server listening on the grader's 127.0.0.1, or has it any
    network interface but its own loopback?"""
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        found = answer(
            run(
                tmp_path,
                f"""
        import socket
        print(json.dumps({{
            "local": attempt(socket.create_connection, ("127.0.0.1", {port}), 3),
            "interfaces": [name for _, name in socket.if_nameindex()],
        }}))""",
            )
        )
    assert found == {"local": "ConnectionRefusedError", "interfaces": ["lo"]}


@needs_sandbox
def test_nothing_outlives_the_sandbox(tmp_path: Path) -> None:
    """Is a daemonised child (new session, parent gone) gone once the sandboxed command exits?"""
    token = f"{random.randrange(10**5, 10**6)}.5"
    result = run(
        tmp_path,
        f'''
    import os, subprocess
    if os.fork() == 0:
        subprocess.Popen(["sleep", "{token}"], start_new_session=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        os._exit(0)
    os.wait()
    print("started")''',
    )
    assert result.stderr.strip().splitlines()[-1:] == ["started"], result.stderr
    assert processes_with(f"sleep {token}") == []


@needs_sandbox
def test_a_fork_bomb_is_bounded(tmp_path: Path) -> None:
    """Does a fork bomb stop at the process limit, and does everything it started end with it?"""
    limits = Limits(processes=24)
    result = run(
        tmp_path,
        """
    import json, os, time
    first, start, refused = os.getpid(), time.time(), 0
    while time.time() - start < 2:
        try:
            os.fork()
        except OSError:
            refused += 1
            time.sleep(0.01)
        if os.getpid() == first and time.time() - start > 1.5:
            print(json.dumps({"processes": sum(p.isdigit() for p in os.listdir("/proc")), "refused": refused}))
            break
    """,
        limits,
        timeout=60,
    )
    found = answer(result)
    assert found["refused"] > 0
    assert found["processes"] <= limits.processes + 1  # + bwrap's init
    assert processes_with("time.sleep(0.01)") == []


@needs_sandbox
def test_filling_the_scratch_disk_stops_at_the_limit(tmp_path: Path) -> None:
    """Does writing stop at the largest file and at the scratch folder's size?"""
    found = answer(
        run(
            tmp_path,
            """
    import json, os
    def fill(name, chunks):
        written = 0
        try:
            with open(name, "wb") as f:
                for _ in range(chunks):
                    f.write(b"x" * 2**20)
                    f.flush()
                    written += 1
        except OSError as err:
            return written, err.errno
        return written, 0
    one = fill("big", 100)
    many = [fill(f"part{i}", 7) for i in range(20)]
    print(json.dumps({"one": one, "total": one[0] + sum(w for w, _ in many), "last": many[-1][1]}))
    """,
            Limits(file_mb=8, scratch_mb=32),
        )
    )
    assert found["one"] == [8, errno.EFBIG]
    assert found["total"] <= 32 and found["last"] == errno.ENOSPC


@needs_sandbox
def test_a_shared_folder_is_bounded_at_write_time(tmp_path: Path) -> None:
    """Does a sandbox writing as fast as it can into its shared folder (the kernel's IPC folder)
    see the grader's file there, get "no space left" at its share of the scratch size, and
    leave nothing on the host?"""
    shared = tmp_path / "ipc"
    shared.mkdir()
    (shared / "kernel.json").write_text('{"given": true}')
    result = run(
        tmp_path,
        f'''
    import errno
    given = json.load(open("{shared}/kernel.json"))
    written = 0
    try:
        with open("{shared}/fill", "wb") as f:
            for _ in range(64):
                f.write(b"x" * 2**20)
                f.flush()
                written += 1
    except OSError as err:
        full = err.errno == errno.ENOSPC
    print(json.dumps({{"given": given, "full": full, "written": written}}))
    ''',
        Limits(scratch_mb=8, file_mb=64),
        rw=(shared,),
    )
    assert result.returncode == 0, result.stderr
    assert answer(result) == {"given": {"given": True}, "full": True, "written": answer(result)["written"]}
    assert answer(result)["written"] < 8
    assert sorted(p.name for p in (tmp_path / "ipc.host").iterdir()) == ["kernel.json"]


@needs_sandbox
def test_the_grader_reaches_a_socket_bound_in_the_shared_folder(tmp_path: Path) -> None:
    """Does a socket the sandbox binds in its shared folder answer the grader at the same path?"""
    import socket
    import time

    shared = tmp_path / "ipc"
    shared.mkdir()
    argv = sandbox.wrap(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f'''
        import socket
        server = socket.socket(socket.AF_UNIX)
        server.bind("{shared}/sock")
        server.listen(1)
        connection, _ = server.accept()
        connection.sendall(b"from the sandbox")
        '''),
        ],
        scratch=tmp_path / "scratch",
        rw=(shared,),
        limits=Limits(),
    )
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(200):
            try:
                client = socket.socket(socket.AF_UNIX)
                client.connect(str(shared / "sock"))
                break
            except OSError:
                time.sleep(0.05)
        assert client.recv(100) == b"from the sandbox"
    finally:
        process.wait(timeout=30)


@needs_sandbox
def test_the_instructors_environment_and_home_are_invisible(tmp_path: Path, monkeypatch) -> None:
    """Are the grader's environment variables and home directory out of the sandbox's sight?"""
    monkeypatch.setenv("INSTRUCTOR_TOKEN", "s3cr3t-token")
    home = Path.home()
    mine = sorted(p.name for p in home.iterdir() if p.name not in Path(sys.base_prefix).parts)
    found = answer(
        run(
            tmp_path,
            f"""
    print(json.dumps({{"environ": dict(os.environ), "init": attempt(lambda: open("/proc/1/environ").read()),
                       "home": attempt(os.listdir, {str(home)!r})}}))""",
        )
    )
    assert "s3cr3t-token" not in json.dumps(found)
    assert set(found["environ"]) <= {
        "PATH",
        "HOME",
        "TMPDIR",
        "LANG",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "MPLBACKEND",
        "PWD",
        "LC_CTYPE",
    }
    assert not any(name in found["home"] for name in mine), found["home"]


@needs_sandbox
def test_a_segfault_kills_only_the_sandbox(tmp_path: Path) -> None:
    """Does ctypes reading address 0 end the sandboxed command, and only it?"""
    result = run(tmp_path, "import ctypes\nctypes.string_at(0)")
    assert result.returncode == 128 + 11


@needs_sandbox
def test_signals_do_not_reach_the_grader(tmp_path: Path) -> None:
    """Do os.kill(os.getppid(), 9) and os.kill(-1, 9) leave the grader and its other processes alive?"""
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        result = run(
            tmp_path,
            """
        import time
        tried = [attempt(os.kill, os.getppid(), 9), attempt(os.kill, -1, 9)]
        time.sleep(0.5)
        print(json.dumps(tried))""",
        )
        assert result.returncode in (0, 128 + 9), result.stderr  # 9: its own kill(-1) may reach it
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


@needs_sandbox
def test_passed_descriptors_stay_open(tmp_path: Path) -> None:
    """Can the sandboxed command write to a pipe the caller passes (pass_fds), and does the caller
    see the end of it when the command exits?"""
    read, write = os.pipe()
    argv = sandbox.wrap(
        [sys.executable, "-c", f"import os; os.write({write}, b'hello')"], scratch=tmp_path / "scratch", limits=Limits()
    )
    with subprocess.Popen(argv, pass_fds=[write]) as proc:
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            assert pipe.read() == b"hello"  # read() returns: no copy of the write end stayed open
    assert proc.returncode == 0


def test_without_the_sandbox_limits_and_environment_still_apply(tmp_path: Path, monkeypatch) -> None:
    """With enabled=False (--no-sandbox) does the command still get the limits, a clean
    environment and the scratch folder as its home and working directory?"""
    monkeypatch.setenv("INSTRUCTOR_TOKEN", "s3cr3t-token")
    argv = sandbox.wrap(
        [
            sys.executable,
            "-c",
            "import json, os, resource; print(json.dumps("
            "[resource.getrlimit(resource.RLIMIT_AS)[0], os.getcwd(), dict(os.environ)]))",
        ],
        scratch=tmp_path / "scratch",
        limits=Limits(memory_mb=1024),
        enabled=False,
    )
    memory, cwd, environ = json.loads(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
    assert memory == 1024 * 2**20
    assert cwd == environ["HOME"] == str(tmp_path / "scratch")
    assert "INSTRUCTOR_TOKEN" not in environ


def _fake_bwrap(folder: Path, message: str) -> Path:
    folder.mkdir()
    fake = folder / "bwrap"
    fake.write_text(f"#!/bin/sh\necho '{message}' >&2\nexit 1\n")
    fake.chmod(0o755)
    return folder


def test_the_probe_names_the_apparmor_fixes(tmp_path: Path, monkeypatch) -> None:
    """When bwrap cannot set up its namespaces, does the probe quote it and name the fixes?"""
    monkeypatch.setenv(
        "PATH", f"{_fake_bwrap(tmp_path / 'bin', 'bwrap: setting up uid map: Permission denied')}:{os.environ['PATH']}"
    )
    message = sandbox.probe()
    assert message is not None
    for phrase in (
        "setting up uid map: Permission denied",
        "bwrap-userns-restrict",
        "kernel.apparmor_restrict_unprivileged_userns=0",
        "container",
        "--no-sandbox",
    ):
        assert phrase in message, phrase


def test_the_probe_says_how_to_install_bubblewrap(tmp_path: Path, monkeypatch) -> None:
    """Without bwrap on PATH, does the probe say how to install it?"""
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert "apt-get install bubblewrap" in sandbox.probe()


def test_grading_refuses_without_a_sandbox(course: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    """Does `grade` exit 2 with bwrap's error and the fixes when the sandbox cannot start,
    before it touches the course?"""
    from autograder import cli

    monkeypatch.setenv(
        "PATH", f"{_fake_bwrap(tmp_path / 'bin', 'bwrap: loopback: Failed RTM_NEWADDR')}:{os.environ['PATH']}"
    )
    submit(tmp_path / "inbox", "ada", answered())
    assert cli.main(["--course", str(course), "grade", str(tmp_path / "inbox"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "loopback: Failed RTM_NEWADDR" in err and "--no-sandbox" in err
    assert not (course / "submitted").exists()


@needs_sandbox
def test_a_notebook_is_graded_in_the_sandbox_and_no_sandbox_says_so(course: Path, tmp_path: Path) -> None:
    """Does a notebook run in its scratch folder, blind to the course, with full marks, in a
    kernel that loaded torch, what pyplot is made of (not pyplot) and the checks before its first cell; and
    does --no-sandbox grade the same but say so on every line?"""
    peek = (
        "import os\nprint('CWD', os.getcwd())\n"
        "print('SEES', sorted(os.listdir('/')), os.path.exists(" + repr(str(course / "solutions")) + "))"
    )
    loaded = (
        "import sys\nchecks = sys.modules.get('autograder.checks')\n"
        "print('LOADED', *(m in sys.modules for m in ('torch', 'matplotlib.figure')),\n"
        "      bool(checks) and checks.names() <= set(vars(checks)), 'matplotlib.pyplot' in sys.modules)"
    )
    nb = answered()
    nb.cells.insert(0, nbformat.v4.new_code_cell(loaded))
    submit(tmp_path / "inbox", "ada", with_cell(nb, None, peek))
    (outcome,) = pipeline.grade(course, tmp_path / "inbox", grading.Options(progress=False))
    assert (outcome.score, outcome.max_score) == (5, 5)
    graded = nbformat.read(str(course / "autograded" / "ada" / LAB / f"{LAB}.ipynb"), as_version=4)
    printed = "".join(o.get("text", "") for o in graded.cells[-1].outputs).splitlines()
    assert printed[0].startswith("CWD ") and printed[0].endswith("/k/0/scratch")
    assert printed[1].endswith("False") and "home" not in printed[1]
    assert "".join(o.get("text", "") for o in graded.cells[0].outputs) == "LOADED True True True False\n"
    assert "(no sandbox)" not in grading.summary([outcome])
    outcomes = pipeline.grade(course, tmp_path / "inbox", grading.Options(progress=False, sandbox=False))
    assert [(o.score, o.max_score) for o in outcomes] == [(5, 5)]
    rows = [line for line in grading.summary(outcomes).splitlines() if line.startswith("ada ")]
    assert rows and all(line.endswith("(no sandbox)") for line in rows)


@needs_sandbox
def test_what_the_sandbox_prints_is_capped_and_no_descriptor_of_the_caller_is_inherited(tmp_path: Path) -> None:
    """Does a command that writes 20 MiB on stderr pass on at most OUTPUT_CAP bytes (and a note),
    and does it get /dev/null and a pipe of the launcher's instead of the caller's stdio?"""
    code = """
    import stat
    def mine(fd):  # not the folder listdir opened
        link = f"/proc/self/fd/{fd}"
        return fd < 3 or os.path.exists(link) and not os.readlink(link).startswith("/proc")
    kinds = {fd: stat.S_IFMT(os.fstat(fd).st_mode) for fd in map(int, os.listdir("/proc/self/fd")) if mine(fd)}
    print(json.dumps([sorted(kinds), stat.S_ISCHR(kinds[0]), stat.S_ISFIFO(kinds[1]), stat.S_ISFIFO(kinds[2])]),
          flush=True)
    for _ in range(20):
        os.write(2, b"E" * 2**20)"""
    # the caller's stdout and stderr are files (as a worker's stderr was): the command must not get them
    with open(tmp_path / "out", "wb") as out, open(tmp_path / "err", "wb") as err:
        result = subprocess.run(
            sandbox.wrap(
                [sys.executable, "-c", TRY + textwrap.dedent(code)], scratch=tmp_path / "scratch", limits=Limits()
            ),
            stdout=out,
            stderr=err,
            timeout=60,
        )
    said = (tmp_path / "err").read_bytes()
    assert result.returncode == 0, said[-2000:]
    assert (tmp_path / "out").read_bytes() == b""  # its stdout is read by the launcher too
    assert len(said) <= sandbox.OUTPUT_CAP + 200 and b"dropped" in said
    fds, null_in, pipe_out, pipe_err = json.loads(said.decode(errors="replace").split("\n", 1)[0])
    assert (fds, null_in, pipe_out, pipe_err) == ([0, 1, 2], True, True, True)


PLANTED_INIT = """
import os
open({marker!r}, "a").write(os.getcwd() + "\\n")
raise SystemExit("the planted package ran")
"""


def _planted(folder: Path, marker: Path) -> Path:
    """``folder`` holding a planted ``autograder`` package that writes ``marker`` when imported."""
    (folder / "autograder" / "grading").mkdir(parents=True)
    (folder / "autograder" / "__init__.py").write_text(PLANTED_INIT.format(marker=str(marker)))
    (folder / "autograder" / "grading" / "__init__.py").write_text(PLANTED_INIT.format(marker=str(marker)))
    return folder


@needs_sandbox
def test_no_process_imports_a_planted_autograder_package(tmp_path: Path, monkeypatch) -> None:
    """With an ``autograder`` package planted in the working directory (where a kernel starts: the
    notebook's folder) and on PYTHONPATH, do the worker, the sandbox launcher, the kernel and the
    independent check's child all import the real package, never the planted one?"""
    from nbclient import NotebookClient

    from autograder.grading.grader.job import Job
    from autograder.grading.grader.run import independent_check as recheck
    from autograder.grading.grader.run import kernelspec
    from autograder.grading.grader.run.worker import WorkerProcess

    marker = tmp_path / "planted-ran.txt"
    planted = _planted(tmp_path / "notebook-folder", marker)
    monkeypatch.chdir(planted)
    monkeypatch.setenv("PYTHONPATH", str(planted))
    # the worker, started in a folder holding the package (and with PYTHONPATH), answers a job
    worker = WorkerProcess(planted, str(tmp_path / "jupyter"))
    try:
        answer = worker.run(Job(str(tmp_path), "none", "nobody"), 60)
    finally:
        worker.close()
    assert "planted" not in str(answer) and not marker.exists(), answer
    # the launcher, started there, runs its command
    launched = subprocess.run(
        sandbox.wrap(["true"], scratch=tmp_path / "scratch", limits=Limits()),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert launched.returncode == 0 and not marker.exists(), launched.stderr
    # a kernel started by jupyter_client in the notebook's folder, through our kernelspec
    config = kernelspec.install(tmp_path / "jupyter", Limits(memory_mb=2048), tmp_path / "k")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    from traitlets.config import Config

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import autograder; print(autograder.__file__)")])
    settings = Config()
    settings.KernelManager.transport = "ipc"
    settings.KernelManager.connection_file = config["KernelManager.connection_file"]
    NotebookClient(
        nb,
        kernel_name=config["Execute.kernel_name"],
        config=settings,
        timeout=60,
        resources={"metadata": {"path": str(planted)}},
    ).execute()
    assert nb.cells[0].outputs[0]["text"].strip() == str(Path(sandbox.__file__).parents[3] / "__init__.py")
    assert not marker.exists()
    # the independent check's child, in and out of the sandbox
    source = REPO / "solutions" / LAB / f"{LAB}.ipynb"
    verdicts = recheck.recheck(
        source,
        source,
        wrap=lambda argv: sandbox.wrap(
            argv, scratch=tmp_path / "child", limits=Limits(), env={"NBGRADER_EXECUTION": "autograde"}
        ),
    )
    assert all(v.passed for v in verdicts.values()), verdicts
    assert not marker.exists()


@needs_sandbox
def test_the_probe_works_from_a_linked_virtual_environment(tmp_path: Path) -> None:
    """When the course's .venv is a symlink to the real environment, does the sandbox still run
    its Python (the probe passes), instead of failing with a message about AppArmor?"""
    (tmp_path / "course").mkdir()
    linked = tmp_path / "course" / ".venv"
    linked.symlink_to(Path(sys.prefix).resolve())
    python = linked / "bin" / Path(sys.executable).name
    code = "from autograder.grading.grader.run import bwrap; print(repr(bwrap.probe()))"
    result = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.stdout.strip() == "None", result.stdout + result.stderr

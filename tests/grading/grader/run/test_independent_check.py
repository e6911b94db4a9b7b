"""Does the independent check grade the answers, and only the answers, of a submission whose
code runs in another process?"""

from __future__ import annotations

import os
import time
from pathlib import Path

import nbformat
import pytest

from autograder.grading.course import labs
from autograder.grading.grader.run import bwrap
from autograder.grading.grader.run import independent_check as recheck
from autograder.grading.protocol.confinement import Limits
from tests.grading.helpers import LAB, REPO, answered, index_of, processes_with, released, with_cell

ENV = dict(os.environ, NBGRADER_EXECUTION="autograde", MPLBACKEND="Agg", OMP_NUM_THREADS="1")
SOURCE = REPO / "solutions" / LAB / f"{LAB}.ipynb"


def _verdicts(tmp_path: Path, nb: nbformat.NotebookNode, **kwargs) -> dict[str, recheck.Verdict]:
    path = tmp_path / "submission.ipynb"
    nbformat.write(nb, str(path))
    return recheck.recheck(SOURCE, path, env=ENV, **kwargs)


def _answer(source: str) -> nbformat.NotebookNode:
    """The warm-up lab with ``source`` as the relu answer and a correct mean_squared_error."""
    nb = answered("mean_squared_error")
    nb.cells[index_of(nb, "relu")].source = source
    return nb


@pytest.mark.parametrize("lab", labs(REPO))
def test_every_labs_solutions_pass_and_its_stubs_fail(lab: str) -> None:
    """Does every exercise of every lab pass with the solutions and fail with the stubs?"""
    source = REPO / "solutions" / lab / f"{lab}.ipynb"
    solved = recheck.recheck(source, source, env=ENV)
    assert solved and all(v.passed for v in solved.values()), solved
    stubs = recheck.recheck(source, REPO / "notebooks" / lab / f"{lab}.ipynb", env=ENV)
    assert set(stubs) == set(solved)
    assert not any(v.passed for v in stubs.values())
    assert all("NotImplementedError" in v.message for v in stubs.values())


def test_patching_torch_in_the_submission_fools_nothing(tmp_path: Path) -> None:
    """Does a relu that is wrong fail, with the mistake named, although the submission made
    torch's comparisons always agree?"""
    nb = with_cell(
        _answer("def relu(x):\n    return x"),
        "relu",
        "import torch\ntorch.allclose = torch.equal = lambda *a, **k: True",
    )
    verdicts = _verdicts(tmp_path, nb)
    assert verdicts["test_mean_squared_error"].passed
    assert not verdicts["test_relu"].passed
    assert "check_relu failed" in verdicts["test_relu"].message


def test_a_fake_checks_module_in_the_submission_fools_nothing(tmp_path: Path) -> None:
    """Does an `autograder.checks` served from sys.meta_path in the submission change nothing here?"""
    fake = (
        "import sys, types\nfake = types.ModuleType('autograder.checks')\n"
        "fake.__getattr__ = lambda name: (lambda *a, **k: None)\nsys.modules['autograder.checks'] = fake"
    )
    verdicts = _verdicts(tmp_path, with_cell(released(), "relu", fake))
    assert not any(v.passed for v in verdicts.values())


def test_forbidden_ops_are_blocked_across_the_boundary(tmp_path: Path) -> None:
    """Is an answer that calls PyTorch's own relu refused, as in the notebook?"""
    verdicts = _verdicts(tmp_path, _answer("import torch\ndef relu(x):\n    return torch.relu(x)"))
    assert not verdicts["test_relu"].passed and "ForbiddenCall" in verdicts["test_relu"].message


def test_an_answer_that_never_returns_fails_in_time(tmp_path: Path) -> None:
    """Does a call that hangs fail its exercise, and the ones after it, within the time allowed?"""
    start = time.monotonic()
    verdicts = _verdicts(tmp_path, _answer("def relu(x):\n    while True:\n        pass"), call_timeout=2)
    assert time.monotonic() - start < 30
    assert not verdicts["test_relu"].passed and "stopped answering" in verdicts["test_relu"].message
    assert not verdicts["test_mean_squared_error"].passed


def test_an_answer_that_kills_its_process_fails_and_nothing_crashes(tmp_path: Path) -> None:
    """Does os._exit inside an answer fail the exercises still to check, without an exception here?"""
    verdicts = _verdicts(tmp_path, _answer("import os\ndef relu(x):\n    os._exit(3)"))
    assert not verdicts["test_relu"].passed and not verdicts["test_mean_squared_error"].passed
    assert "broke off" in verdicts["test_mean_squared_error"].message


def test_garbage_on_the_reply_pipe_is_a_failure(tmp_path: Path) -> None:
    """Does an answer that writes its own bytes on every open descriptor fail, not crash the grader?"""
    source = (
        "import os\ndef relu(x):\n    for fd in range(3, 20):\n        try:\n"
        "            os.write(fd, b'\\x00\\x00\\x00\\x05hello')\n        except OSError:\n            pass\n"
        "    return x.clamp(min=0)"
    )
    verdicts = _verdicts(tmp_path, _answer(source), call_timeout=5)
    assert not verdicts["test_relu"].passed


def test_a_cell_that_loops_forever_is_interrupted_and_the_rest_graded(tmp_path: Path) -> None:
    """Is a top-level infinite loop stopped after the cell limit, the answers still checked?"""
    verdicts = _verdicts(tmp_path, with_cell(answered(), "relu", "while True:\n    pass"), cell_timeout=1)
    assert all(v.passed for v in verdicts.values())


def test_a_missing_answer_is_a_name_error(tmp_path: Path) -> None:
    """Does a submission that deleted its answer cell fail that exercise with a NameError?"""
    nb = answered()
    del nb.cells[index_of(nb, "relu")]
    verdicts = _verdicts(tmp_path, nb)
    assert "NameError" in verdicts["test_relu"].message and verdicts["test_mean_squared_error"].passed


def test_candidate_names_are_the_checked_names() -> None:
    """Are the names handed to check_* calls found, once each, and nothing else?"""
    code = (
        "from autograder.checks import check_a\ncheck_a(softmax)\nx = other(1)\n"
        "for seed in (1, 2):\n    check_a(softmax, seed=seed)\ncheck_b(Model, 3)"
    )
    assert recheck.candidate_names(code) == ["softmax", "Model"]


def test_a_child_that_dies_before_its_first_reply_is_a_grader_error(tmp_path: Path) -> None:
    """When the child cannot even start (here: its package cannot be imported, as when the
    sandbox mounts another autograder than the one it finds), is that a GraderError showing the
    child's stderr, rather than a failed exercise blamed on the student?"""

    def broken(argv: list[str]) -> list[str]:
        return [argv[0], "-c", "import sys; sys.stderr.write('ModuleNotFoundError: BROKEN-0451'); sys.exit(1)"]

    path = tmp_path / "submission.ipynb"
    nbformat.write(answered(), str(path))
    with pytest.raises(recheck.GraderError, match="BROKEN-0451") as raised:
        recheck.recheck(SOURCE, path, wrap=broken, env=ENV)
    assert "grader" in str(raised.value)


def test_an_answer_that_kills_its_process_while_loading_is_the_students(tmp_path: Path) -> None:
    """Is a child killed by the student's own code while its cells load (after its first reply)
    a failure of the exercises, not a grader error?"""
    verdicts = _verdicts(tmp_path, with_cell(answered(), "relu", "import os\nos._exit(3)"))
    assert not any(v.passed for v in verdicts.values())
    assert "broke off" in verdicts["test_relu"].message


def _third_time_right(where: str) -> str:
    """A mean_squared_error wrong on its first two runs and right from its third, counted in
    the file ``where`` of the scratch folder: in any process whose scratch folder kept that file."""
    return (
        "import os\n\ndef mean_squared_error(pred, target):\n"
        "    d = pred - target\n"
        f"    os.makedirs(os.path.dirname({where!r}) or '.', exist_ok=True)\n"
        f"    n = len(open({where!r}).read()) if os.path.exists({where!r}) else 0\n"
        f"    open({where!r}, 'a').write('x')\n"
        "    return (d ** 2).mean() if n >= 2 else d.abs().mean()\n"
    )


def _under_a_wrong_relu(mean_squared_error: str) -> nbformat.NotebookNode:
    """The warm-up lab with relu the identity (wrong) and ``mean_squared_error`` as its answer."""
    nb = released()
    nb.cells[index_of(nb, "relu")].source = "def relu(x):\n    return x\n"
    nb.cells[index_of(nb, "mean_squared_error")].source = mean_squared_error
    return nb


def _sandboxed(tmp_path: Path, nb: nbformat.NotebookNode, **kwargs) -> dict[str, recheck.Verdict]:
    """The verdicts with error carried forward, the children in the sandbox as grading runs them."""
    problem = bwrap.probe()
    if problem is not None:
        pytest.skip(f"bubblewrap cannot run here: {problem}")
    path, scratch = tmp_path / "submission.ipynb", tmp_path / "scratch"
    nbformat.write(nb, str(path))

    def wrap(argv: list[str]) -> list[str]:
        return bwrap.wrap(argv, scratch=scratch, limits=Limits(), env={"NBGRADER_EXECUTION": "autograde"}, init=True)

    return recheck.recheck(SOURCE, path, wrap=wrap, carry_forward=True, **kwargs)


# "seen" beside the notebook, or inside the folders of matplotlib's caches, which the child wrote
# at its start, before any fork
@pytest.mark.parametrize("where", ["seen", ".cache/seen", ".config/matplotlib/seen"])
def test_each_carried_forward_check_starts_from_the_submission_as_loaded(tmp_path: Path, where: str) -> None:
    """Under a wrong relu, is a mean_squared_error that is right only once a file it writes
    has counted two runs given no credit (each fork of the sandboxed zygote starts without what an earlier one
    wrote, in the scratch folder or in a folder the child made there itself), while a
    relu-independent wrong answer's failure stays its own?"""
    nb = _under_a_wrong_relu(_third_time_right(where))
    verdicts = _sandboxed(tmp_path, nb)
    assert not verdicts["test_relu"].passed and not verdicts["test_mean_squared_error"].passed
    assert verdicts["test_mean_squared_error"].alone is False


@pytest.mark.parametrize(
    "attack",
    [
        "os.kill(os.getppid(), 9)",  # the zygote it was forked from
        "os._exit = lambda status: None",  # so that it would outlive its check
        "os.write(1, b'junk'); [os.write(fd, b'\\x00\\x00\\x00\\x05hello') for fd in range(3, 12) if fd != 1]",
    ],
)
def test_a_fork_that_attacks_its_zygote_gets_nothing_and_breaks_nothing(tmp_path: Path, attack: str) -> None:
    """Under a wrong relu, does a mean_squared_error whose call attacks the carried-forward
    machinery (kills the zygote, keeps its fork alive, writes on the pipes) get no credit, while
    the grader goes on and every verdict as written stands?"""
    nb = released()
    nb.cells[index_of(nb, "relu")].source = "def relu(x):\n    return x\n"
    nb.cells[index_of(nb, "mean_squared_error")].source = (
        "import os\n\ndef mean_squared_error(pred, target):\n"
        f"    try:\n        {attack}\n    except OSError:\n        pass\n"
        "    return (pred - target).abs().mean()\n"
    )
    verdicts = _sandboxed(tmp_path, nb, call_timeout=20)
    assert not verdicts["test_relu"].passed and not verdicts["test_mean_squared_error"].passed
    assert verdicts["test_mean_squared_error"].alone is False


RELU_BOUND_MSE = (  # right exactly when relu is: (relu(d)^2 + relu(-d)^2) = d^2
    "def mean_squared_error(pred, target):\n    d = pred - target\n    return (relu(d) ** 2 + relu(-d) ** 2).mean()\n"
)


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The roles of every sandboxed child the independent check starts from now on."""
    started: list[tuple[str, ...]] = []
    real = recheck.SandboxedChild

    def counting(wrap, env, timeout, *roles):
        started.append(roles)
        return real(wrap, env, timeout, *roles)

    monkeypatch.setattr(recheck, "SandboxedChild", counting)
    return started


def test_the_check_child_is_the_zygote_of_its_carried_forward_checks(tmp_path: Path, monkeypatch) -> None:
    """Under a wrong relu, is a mean_squared_error right with the solution's relu kept by error
    carried forward, in forks of the one child whose fork ran the answers as written (no second
    child started)?"""
    started = _counted(monkeypatch)
    nb = _under_a_wrong_relu(RELU_BOUND_MSE)
    verdicts = _sandboxed(tmp_path, nb)
    assert not verdicts["test_relu"].passed and not verdicts["test_mean_squared_error"].passed
    assert verdicts["test_mean_squared_error"].alone is True
    assert started == [()]


@pytest.mark.parametrize(
    ("attack", "children"),
    [
        # the process its answers' fork came from, and every other: none ends the sandbox's first process
        ("import os, signal\nfor pid in (os.getppid(), -1, 1):\n    os.kill(pid, signal.SIGKILL)", 1),
        ("import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)", 1),
        ("import os, signal\nos.kill(os.getppid(), signal.SIGINT)", 1),
        # the end of its fork refused: the carried-forward checks get a zygote of their own
        ("import __main__\n__main__._EXIT = lambda status: None", 2),
    ],
)
def test_answers_that_attack_their_forks_parent_lose_nothing_of_their_own(
    tmp_path: Path, monkeypatch, attack: str, children: int
) -> None:
    """Does a submission whose last cell attacks the process its answers' fork came from still
    get its verdicts as written and its carried-forward credit, from that process or, where the
    fork would not end, from a zygote started afresh?"""
    started = _counted(monkeypatch)
    nb = _under_a_wrong_relu(RELU_BOUND_MSE)
    nb.cells.append(nbformat.v4.new_code_cell(attack))
    verdicts = _sandboxed(tmp_path, nb, call_timeout=10)
    assert not verdicts["test_relu"].passed and not verdicts["test_mean_squared_error"].passed
    assert "check_relu failed" in verdicts["test_relu"].message
    assert verdicts["test_mean_squared_error"].alone is True
    assert started == [(), ("zygote",)][:children]


def test_a_fork_that_ends_itself_is_the_submissions_failure(tmp_path: Path, monkeypatch) -> None:
    """Is a submission whose cell kills its own process (the fork its answers run in) failed as
    one whose process broke off, every exercise alike, with no carried-forward check run?"""
    started = _counted(monkeypatch)
    nb = _under_a_wrong_relu(RELU_BOUND_MSE)
    nb.cells.append(nbformat.v4.new_code_cell("import os\nos.kill(os.getpid(), 9)"))
    verdicts = _sandboxed(tmp_path, nb, call_timeout=20)
    assert {v.message for v in verdicts.values()} == {
        "the submission's process broke off (the process that served the request ended)"
    }
    assert started == [()]


PROBES = {
    # background processes end as orphans: reaped as they end, they never fill the process limit
    "spawned": "import os\nfine = all(os.system('true &') == 0 for _ in range(80))",
    # the sandbox's PID 1, where no student code runs, is not open to its forks
    "parents memory": (
        "import os\ntry:\n    open(f'/proc/{os.getppid()}/mem', 'rb').close()\n    fine = False\n"
        "except OSError:\n    fine = True"
    ),
    # what pyplot is made of and IPython's transforms were loaded before any student code, pyplot not
    "warm": (
        "import sys\nfine = all(m in sys.modules for m in ('matplotlib.figure', 'IPython.core.inputtransformer2'))"
        " and 'matplotlib.pyplot' not in sys.modules"
    ),
}


@pytest.mark.parametrize("probe", list(PROBES))
def test_the_fork_of_the_answers_runs_as_a_fresh_child_would(tmp_path: Path, probe: str) -> None:
    """Is a relu right only where the probe finds what a fresh child would (its background
    processes all started, its parent's memory closed to it, what pyplot is made of loaded) passed?"""
    nb = released()
    nb.cells[index_of(nb, "relu")].source = (
        PROBES[probe] + "\n\ndef relu(x):\n    return torch.where(x > 0, x, torch.zeros_like(x)) if fine else x\n"
    )
    verdicts = _sandboxed(tmp_path, nb, call_timeout=60)
    assert verdicts["test_relu"].passed, verdicts["test_relu"].message


def _child_as_pid_1(tmp_path: Path, *roles: str) -> recheck.SandboxedChild:
    """A check child started as the grader starts it: its sandbox's PID 1 (skips without bubblewrap)."""
    problem = bwrap.probe()
    if problem is not None:
        pytest.skip(f"bubblewrap cannot run here: {problem}")

    def wrap(argv: list[str]) -> list[str]:
        return bwrap.wrap(argv, scratch=tmp_path / "scratch", limits=Limits(), init=True)

    return recheck.SandboxedChild(wrap, None, 5.0, *roles)


def _left_after(marker: str, seconds: float) -> list[str]:
    """The processes whose command line holds ``marker`` that are still there after ``seconds`` at most."""
    deadline = time.monotonic() + seconds
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return processes_with(marker)


def test_a_child_closed_while_its_fork_sleeps_leaves_no_process(tmp_path: Path) -> None:
    """Does closing a check child whose fork ignores its alarm and sleeps (so that neither ends on
    its own) end every process of its sandbox, as root too (where the sandbox changes its uid)?"""
    marker = f"600.{os.getpid()}"  # a sleep of its own, found by its command line
    child = _child_as_pid_1(tmp_path)
    try:
        child.hello()
        assert child.request({"op": "fork"}) == "forked"
        cell = (
            "import signal, subprocess, time\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
            f"subprocess.Popen(['sleep', '{marker}'])\ntime.sleep(600)"
        )
        with pytest.raises(TimeoutError):
            child.request({"op": "load", "cells": [cell], "limit": 30})
    finally:
        child.close()
    assert _left_after(marker, 10.0) == []


def test_a_child_closed_while_it_loads_leaves_no_process(tmp_path: Path) -> None:
    """Does closing a check child that is still loading (torch and what every lab imports, seconds
    before it first reads its pipe) end its sandbox at once, as root too (where its PID 1 runs
    under a uid that bwrap's death signal cannot reach)?"""
    marker = f"loading-{os.getpid()}"  # an argument the child ignores, found in its command line
    child = _child_as_pid_1(tmp_path, marker)
    try:
        deadline = time.monotonic() + 30
        # the child itself, started: not its launcher, bwrap, or the first step inside the sandbox
        while not [c for c in processes_with(marker) if not any(w in c for w in ("launcher", "bwrap", "setrlimit"))]:
            assert time.monotonic() < deadline, processes_with(marker)
            time.sleep(0.05)
    finally:
        child.close()
    assert _left_after(marker, 1.0) == []  # time for the kernel to take down the sandbox, not for the child to load

"""Tests of the check core: messages that teach, mistakes named, sentinels, everything
patched restored (even when the candidate raises), and fresh re-imports after a student
patched the package."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from autograder import reference
from autograder.checks.core import (CheckFailed, ForbiddenCall, call, check, expect_close, expect_equal,
                                    expect_shape, fail, forbidden)


def test_fail_message_has_the_four_parts() -> None:
    """Does a failure say what was checked, what was expected, what was found, the likely
    mistake and the hint, each on its own line?"""
    with pytest.raises(CheckFailed) as info:
        fail("f(x)", "3", "4", mistake="off by one", hint="count from zero")
    assert str(info.value).splitlines() == ["  checked:  f(x)", "  expected: 3", "  found:    4",
                                            "  likely mistake: off by one", "  hint: count from zero"]
    assert isinstance(info.value, AssertionError)  # nbgrader scores the cell 0


def test_check_names_itself_and_lets_not_implemented_through(capsys) -> None:
    """Does @check prefix the check's name on failure, print 'passed' on success, and leave an
    untouched stub's NotImplementedError alone?"""
    @check
    def check_thing(value):
        if value == "stub":
            raise NotImplementedError()
        if value != 1:
            fail("thing", "1", repr(value))

    check_thing(1)
    assert capsys.readouterr().out == "check_thing passed.\n"
    with pytest.raises(CheckFailed, match=r"^check_thing failed\.\n  checked:  thing"):
        check_thing(2)
    with pytest.raises(NotImplementedError):
        check_thing("stub")


def test_call_reports_the_students_error() -> None:
    """Does an exception raised inside the candidate become a failure naming the call and the error?"""
    def broken(x):
        return x @ torch.ones(5, 5)
    with pytest.raises(CheckFailed, match=r"(?s)checked:  broken\(x\).*RuntimeError"):
        call(broken, torch.ones(2, 3), what="broken(x)")


def test_expect_close_order_and_mistake_naming() -> None:
    """Are shape, dtype, NaN and values compared in that order, and is the matching mistake named?"""
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    expected = x.softmax(-1)
    with pytest.raises(CheckFailed, match=r"(?s)shape \(3, 4\).*shape \(4, 3\).*transposed"):
        expect_close("s", expected.T, expected, mistakes={"transposed": expected.T})
    with pytest.raises(CheckFailed, match="dtype torch.float32"):
        expect_close("s", expected.double(), expected)
    nan = expected.clone()
    nan[1, 2] = float("nan")
    with pytest.raises(CheckFailed, match=r"NaN at index \(1, 2\)"):
        expect_close("s", nan, expected)
    with pytest.raises(CheckFailed, match="likely mistake: softmax over dim 0"):
        expect_close("s", x.softmax(0), expected, mistakes={"softmax over dim 0": lambda: x.softmax(0),
                                                            "broken": lambda: 1 / 0})
    assert expect_close("s", expected.clone(), expected) is not None


def test_expect_shape_and_equal() -> None:
    """Do shape and exact comparisons name the mistake whose result the candidate matches?"""
    with pytest.raises(CheckFailed, match="likely mistake: kept the batch axis"):
        expect_shape("y", torch.zeros(2, 3), (3,), mistakes={"kept the batch axis": (2, 3)})
    with pytest.raises(CheckFailed, match="a torch.Tensor"):
        expect_shape("y", [1, 2, 3], (3,))
    with pytest.raises(CheckFailed, match="likely mistake: True means blocked"):
        expect_equal("mask", torch.tensor([False, True]), torch.tensor([True, False]),
                     mistakes={"True means blocked": torch.tensor([False, True])})
    with pytest.raises(CheckFailed, match="expected: 1"):
        expect_equal("count", True, 1)  # a bool is not an int here


def test_sentinel_blocks_the_op_and_restores_it_when_the_candidate_raises() -> None:
    """Is a forbidden op blocked inside the block (even when the candidate swallows the error),
    and is everything patched restored afterwards, also when the candidate raises?"""
    originals = (torch.softmax, torch.Tensor.softmax, torch.nn.functional.softmax, reference.softmax)

    def swallows(x):
        try:
            return torch.softmax(x, -1)
        except Exception:  # noqa: BLE001
            return x

    with pytest.raises(ForbiddenCall, match="Build it yourself"):
        with forbidden(swallows, ["torch.softmax", "torch.Tensor.softmax", "torch.nn.functional.softmax",
                                  "autograder.reference.softmax"], instead="Build it yourself."):
            swallows(torch.ones(2))
    assert (torch.softmax, torch.Tensor.softmax, torch.nn.functional.softmax, reference.softmax) == originals

    def raises(x):
        raise ValueError("boom")
    with pytest.raises(ValueError):
        with forbidden(raises, ["torch.softmax", "autograder.reference.softmax"], instead="no"):
            raises(torch.ones(2))
    assert (torch.softmax, reference.softmax) == (originals[0], originals[3])


def test_sentinel_catches_a_name_imported_into_the_candidates_module() -> None:
    """Is `from torch import softmax` in the student's namespace blocked too, and put back after?"""
    namespace = {"softmax": torch.softmax}
    exec("def candidate(x):\n    return softmax(x, -1)", namespace)
    with pytest.raises(ForbiddenCall):
        with forbidden(namespace["candidate"], ["torch.softmax"], instead="no"):
            namespace["candidate"](torch.ones(3))
    assert namespace["softmax"] is torch.softmax


def test_fresh_import_after_a_student_patched_the_package() -> None:
    """After a student cell replaces checks (in the package and in its own namespace), do the
    hidden tests' fresh imports bring back the real checks, which then fail a wrong answer?"""
    from autograder.authoring import FRESH_IMPORT

    script = textwrap.dedent(f"""
        import autograder.checks, autograder.checks.core
        def relu(x):
            return x
        autograder.checks.check_relu = lambda *a, **k: None
        autograder.checks.ch00_warmup.check_relu = lambda *a, **k: None
        autograder.checks.core.fail = lambda *a, **k: None
        check_relu = lambda *a, **k: None
        check_relu(relu)  # the visible part is fooled
        {FRESH_IMPORT}
        from autograder.checks import check_relu
        try:
            check_relu(relu, seed=1)
        except AssertionError as err:
            print("REAL CHECK FAILED:", str(err).splitlines()[0])
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                         env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert "REAL CHECK FAILED: check_relu failed." in out.stdout, out.stderr[-2000:]



def test_a_candidate_that_is_the_forbidden_object_is_refused() -> None:
    """Is `softmax = torch.softmax` (or the reference's own function) refused before it runs,
    with a message naming what it is?"""
    from autograder.checks.core import ForbiddenCall, forbidden

    for candidate, path in ((torch.softmax, "torch.softmax"), (reference.softmax, "autograder.reference.softmax")):
        with pytest.raises(ForbiddenCall, match=f"your answer is `{path}` itself"):
            with forbidden(candidate, [path], instead="Write it yourself."):
                pass
    assert torch.softmax(torch.zeros(2), 0).tolist() == [0.5, 0.5]  # nothing left patched


def test_a_subclass_of_a_stale_reference_class_is_refused() -> None:
    """After the checks are re-imported, is a student class built on the *earlier* import of
    a reference class still caught?"""
    import sys

    from autograder.checks.core import ForbiddenCall, forbidden

    stale = reference.MultiHeadAttention
    saved = {m: mod for m, mod in sys.modules.items() if m.split(".")[0] == "autograder"}
    try:
        for name in saved:
            sys.modules.pop(name)
        import autograder.reference  # noqa: F401 - the fresh copy the checks now use

        class Student(stale):
            pass

        with pytest.raises(ForbiddenCall, match="reference implementation"):
            with forbidden(Student, ["autograder.reference.MultiHeadAttention"], instead="Build it."):
                Student(8, 2)
        assert Student(8, 2).num_heads == 2  # restored afterwards
    finally:  # leave the other tests the modules they imported
        for name in [m for m in sys.modules if m.split(".")[0] == "autograder"]:
            sys.modules.pop(name)
        sys.modules.update(saved)


def test_expect_equal_does_not_take_1_for_true() -> None:
    """Is the integer 1 refused where the boolean True is expected, and True where 1 is?"""
    from autograder.checks.core import CheckFailed, expect_equal

    with pytest.raises(CheckFailed):
        expect_equal("flag", 1, True)
    with pytest.raises(CheckFailed):
        expect_equal("count", True, 1)
    assert expect_equal("flag", True, True) is True

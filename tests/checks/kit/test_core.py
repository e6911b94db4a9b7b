"""Tests of the check core: messages that teach, mistakes named, sentinels, everything
patched restored (even when the candidate raises), and fresh re-imports after a student
patched the package."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap

import torch

from autograder import reference
from autograder.checks.kit.core import check
from autograder.checks.kit.expect import call, expect_close, expect_equal, expect_shape, fail
from autograder.checks.kit.failures import CheckFailed, ForbiddenCall
from autograder.checks.kit.sentinels import forbidden


def test_fail_message_has_the_four_parts(fails) -> None:
    """Does a failure say what was checked, what was expected, what was found, the likely
    mistake and the hint, each on its own line, as an AssertionError (nbgrader scores the cell 0)?"""
    message = fails(
        lambda: fail("f(x)", "3", "4", mistake="off by one", hint="count from zero"),
        error=AssertionError,
        mistake="off by one",
    )
    assert message.splitlines() == [
        "  checked:  f(x)",
        "  expected: 3",
        "  found:    4",
        "  likely mistake: off by one",
        "  hint: count from zero",
    ]
    fails(fail, "f(x)", "3", "4", error=CheckFailed)


def test_check_names_itself_and_lets_not_implemented_through(capsys, fails) -> None:
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
    fails(check_thing, 2, match=r"^check_thing failed\.\n  checked:  thing")
    fails(check_thing, "stub", error=NotImplementedError)


def test_call_reports_the_students_error(fails) -> None:
    """Does an exception raised inside the candidate become a failure naming the call and the error?"""

    def broken(x):
        return x @ torch.ones(5, 5)

    fails(call, broken, torch.ones(2, 3), what="broken(x)", match=r"(?s)checked:  broken\(x\).*RuntimeError")


def test_expect_close_order_and_mistake_naming(fails) -> None:
    """Are shape, dtype, NaN and values compared in that order, and is the matching mistake named?"""
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    expected = x.softmax(-1)
    fails(
        expect_close,
        "s",
        expected.T,
        expected,
        mistakes={"transposed": expected.T},
        match=r"(?s)shape \(3, 4\).*shape \(4, 3\).*transposed",
    )
    fails(expect_close, "s", expected.double(), expected, match="dtype torch.float32")
    nan = expected.clone()
    nan[1, 2] = float("nan")
    fails(expect_close, "s", nan, expected, match=r"NaN at index \(1, 2\)")
    fails(
        expect_close,
        "s",
        x.softmax(0),
        expected,
        mistakes={"softmax over dim 0": lambda: x.softmax(0), "broken": lambda: 1 / 0},
        match="likely mistake: softmax over dim 0",
    )
    assert expect_close("s", expected.clone(), expected) is not None


def test_expect_shape_and_equal(fails) -> None:
    """Do shape and exact comparisons name the mistake whose result the candidate matches?"""
    fails(
        expect_shape,
        "y",
        torch.zeros(2, 3),
        (3,),
        mistakes={"kept the batch axis": (2, 3)},
        match="likely mistake: kept the batch axis",
    )
    fails(expect_shape, "y", [1, 2, 3], (3,), match="a torch.Tensor")
    fails(
        expect_equal,
        "mask",
        torch.tensor([False, True]),
        torch.tensor([True, False]),
        mistakes={"True means blocked": torch.tensor([False, True])},
        match="likely mistake: True means blocked",
    )
    fails(expect_equal, "count", True, 1, said="expected: 1")  # a bool is not an int here


def test_sentinel_blocks_the_op_and_restores_it_when_the_candidate_raises(fails) -> None:
    """Is a forbidden op blocked inside the block (even when the candidate swallows the error),
    and is everything patched restored afterwards, also when the candidate raises?"""
    originals = (torch.softmax, torch.Tensor.softmax, torch.nn.functional.softmax, reference.softmax)

    def swallows(x):
        try:
            return torch.softmax(x, -1)
        except Exception:
            return x

    def run(candidate, targets, instead):
        with forbidden(candidate, targets, instead=instead):
            candidate(torch.ones(2))

    fails(
        run,
        swallows,
        ["torch.softmax", "torch.Tensor.softmax", "torch.nn.functional.softmax", "autograder.reference.softmax"],
        "Build it yourself.",
        error=ForbiddenCall,
        said="Build it yourself",
    )
    assert (torch.softmax, torch.Tensor.softmax, torch.nn.functional.softmax, reference.softmax) == originals

    def raises(x):
        raise ValueError("boom")

    fails(run, raises, ["torch.softmax", "autograder.reference.softmax"], "no", error=ValueError)
    assert (torch.softmax, reference.softmax) == (originals[0], originals[3])


def test_sentinel_catches_a_name_imported_into_the_candidates_module(fails) -> None:
    """Is `from torch import softmax` in the student's namespace blocked too, and put back after?"""
    namespace = {"softmax": torch.softmax}
    exec("def candidate(x):\n    return softmax(x, -1)", namespace)

    def run():
        with forbidden(namespace["candidate"], ["torch.softmax"], instead="no"):
            namespace["candidate"](torch.ones(3))

    fails(run, error=ForbiddenCall)
    assert namespace["softmax"] is torch.softmax


def test_fresh_import_after_a_student_patched_the_package() -> None:
    """After a student cell replaces checks (in the package and in its own namespace), do the
    hidden tests' fresh imports bring back the real checks, which then fail a wrong answer?"""
    from autograder.authoring import FRESH_IMPORT

    script = textwrap.dedent(f"""
        import autograder.checks, autograder.checks.kit.expect
        def relu(x):
            return x
        autograder.checks.check_relu = lambda *a, **k: None
        autograder.checks.lab00_warmup.warmup.check_relu = lambda *a, **k: None
        autograder.checks.kit.expect.fail = lambda *a, **k: None
        check_relu = lambda *a, **k: None
        check_relu(relu)  # the visible part is fooled
        {FRESH_IMPORT}
        from autograder.checks import check_relu
        try:
            check_relu(relu, seed=1)
        except AssertionError as err:
            print("REAL CHECK FAILED:", str(err).splitlines()[0])
    """)
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    assert "REAL CHECK FAILED: check_relu failed." in out.stdout, out.stderr[-2000:]


def _enter(context) -> None:
    with context:
        pass


def test_a_candidate_that_is_the_forbidden_object_is_refused(fails) -> None:
    """Is `softmax = torch.softmax` (or the reference's own function) refused before it runs,
    with a message naming what it is?"""
    from autograder.checks.kit.failures import ForbiddenCall
    from autograder.checks.kit.sentinels import forbidden

    for candidate, path in ((torch.softmax, "torch.softmax"), (reference.softmax, "autograder.reference.softmax")):
        fails(
            _enter,
            forbidden(candidate, [path], instead="Write it yourself."),
            error=ForbiddenCall,
            said=f"your answer is `{path}` itself",
        )
    assert torch.softmax(torch.zeros(2), 0).tolist() == [0.5, 0.5]  # nothing left patched


def test_a_subclass_of_a_stale_reference_class_is_refused(fails) -> None:
    """After the checks are re-imported, is a student class built on the *earlier* import of
    a reference class still caught?"""
    import sys

    from autograder.checks.kit.failures import ForbiddenCall
    from autograder.checks.kit.sentinels import forbidden

    stale = reference.MultiHeadAttention
    saved = {m: mod for m, mod in sys.modules.items() if m.split(".")[0] == "autograder"}
    try:
        for name in saved:
            sys.modules.pop(name)
        import autograder.reference  # noqa: F401 - the fresh copy the checks now use

        class Student(stale):
            pass

        def run():
            with forbidden(Student, ["autograder.reference.MultiHeadAttention"], instead="Build it."):
                Student(8, 2)

        fails(run, error=ForbiddenCall, said="reference implementation")
        assert Student(8, 2).num_heads == 2  # restored afterwards
    finally:  # leave the other tests the modules they imported
        for name in [m for m in sys.modules if m.split(".")[0] == "autograder"]:
            sys.modules.pop(name)
        sys.modules.update(saved)


def test_expect_equal_does_not_take_1_for_true(fails) -> None:
    """Is the integer 1 refused where the boolean True is expected, and True where 1 is?"""
    from autograder.checks.kit.expect import expect_equal

    fails(expect_equal, "flag", 1, True)
    fails(expect_equal, "count", True, 1)
    assert expect_equal("flag", True, True) is True


def test_expect_equal_fails_a_tensor_where_a_value_is_expected(fails) -> None:
    """Is a tensor handed in where an int, a bool or a tuple is expected a failure that
    describes it, not a RuntimeError of PyTorch's?"""
    message = fails(expect_equal, "count", torch.tensor([3, 3]), 3)
    assert "tensor of shape (2,)" in message
    fails(expect_equal, "flags", torch.tensor([True, False]), (True, False), said="tensor of shape (2,)")
    fails(expect_equal, "count", torch.tensor([1, 2]), 3, mistakes={"two of them": 2})


def _captured_target_module():
    """A throwaway module (a plain function, one with free variables, and an ``@torch.no_grad()``
    wrapper) so the tests of captured references can also call the originals afterwards."""
    import types

    module = types.ModuleType("_captured_target")

    def scale(x, factor=2.0):
        return x * factor

    def make_offset(offset):
        def add_offset(x):
            return x + offset

        return add_offset

    @torch.no_grad()
    def doubled(x):
        return x * 2

    module.scale, module.add_offset, module.doubled = scale, make_offset(3.0), doubled
    return module


def test_a_function_captured_before_the_check_is_refused_and_restored_after(fails, monkeypatch) -> None:
    """Is a forbidden function refused when the candidate captured it before the check (a default
    argument, a closure, functools.partial, a list, an @torch.no_grad() wrapper), even with the
    error swallowed, and does the function work as before after the block, also after an error?"""
    import functools

    module = _captured_target_module()
    monkeypatch.setitem(sys.modules, "_captured_target", module)
    targets = [
        "_captured_target.scale",
        "_captured_target.add_offset",
        "_captured_target.doubled",
        "autograder.reference.softmax",
        "autograder.reference.greedy_decode",
    ]
    codes = [
        f.__code__
        for f in (module.scale, module.add_offset, module.doubled, reference.softmax, reference.greedy_decode)
    ]
    inner_code = reference.greedy_decode.__wrapped__.__code__

    def with_default(x, _f=module.scale):
        return _f(x)

    def closure(f):
        return lambda x: f(x)

    as_list = [reference.softmax]
    candidates = {
        "default": with_default,
        "closure": closure(module.add_offset),
        "partial": functools.partial(module.scale, factor=5.0),
        "wrapper": closure(module.doubled),
        "list": lambda x: as_list[0](x),
        "reference default": lambda x, _s=reference.softmax: _s(x, -1),
        "reference wrapper": closure(reference.greedy_decode),
        "under the wrapper": closure(reference.greedy_decode.__wrapped__),
    }

    def swallows(x, _f=module.scale):
        try:
            return _f(x)
        except Exception:
            return x

    def run(candidate, then=None):
        with forbidden(candidate, targets, instead="Build it yourself."):
            candidate(torch.ones(2))
            if then is not None:
                then()

    for name, candidate in {**candidates, "swallows": swallows}.items():
        message = fails(run, candidate, error=ForbiddenCall, said="Build it yourself.")
        assert "your code calls `" in message, name

    def boom():
        raise ValueError("boom")

    fails(run, lambda x: x, boom, error=ValueError)
    assert [
        f.__code__
        for f in (module.scale, module.add_offset, module.doubled, reference.softmax, reference.greedy_decode)
    ] == codes
    assert reference.greedy_decode.__wrapped__.__code__ is inner_code
    x = torch.ones(2)
    assert candidates["default"](x).tolist() == [2.0, 2.0]
    assert candidates["closure"](x).tolist() == [4.0, 4.0]
    assert candidates["partial"](x).tolist() == [5.0, 5.0]
    assert candidates["wrapper"](x).tolist() == [2.0, 2.0]
    assert candidates["list"](x).tolist() == [0.5, 0.5]


def test_nested_blocks_restore_the_original_code(fails) -> None:
    """Does a function forbidden by two nested blocks (the sandboxed child stacks a check's blocks)
    refuse until both are done, and then run its own code again?"""
    original, captured = reference.softmax.__code__, reference.softmax

    def nested():
        with forbidden(lambda: None, ["autograder.reference.softmax"], instead="outer"):
            with contextlib.suppress(ForbiddenCall):  # the inner block saw the call: it refuses at its end
                with forbidden(lambda: None, ["autograder.reference.softmax"], instead="inner"):
                    fails(captured, torch.ones(2), error=ForbiddenCall, said="inner")
            fails(captured, torch.ones(2), error=ForbiddenCall, said="outer")

    fails(nested, error=ForbiddenCall, said="outer")
    assert reference.softmax is captured and captured.__code__ is original
    assert captured(torch.zeros(2)).tolist() == [0.5, 0.5]


def test_a_reference_class_captured_before_the_check_is_refused(fails) -> None:
    """Is a reference class held in a default argument refused, and usable again afterwards?"""

    def candidate(x, _norm=reference.LayerNorm):
        return _norm(x.size(-1))(x)

    def run():
        with forbidden(candidate, ["autograder.reference.LayerNorm"], instead="Build it yourself."):
            candidate(torch.ones(2, 4))

    fails(run, error=ForbiddenCall, said="reference implementation")
    assert candidate(torch.ones(2, 4)).shape == (2, 4)


def test_a_pytorch_builtin_captured_before_the_check_is_refused(fails) -> None:
    """Is one of PyTorch's built-in ops (C code, nothing to swap) refused when the candidate captured
    it before the check, as a function (`torch.softmax`), a method (`torch.Tensor.softmax`) or
    `F.scaled_dot_product_attention`, and does it work again after the block?"""
    import torch.nn.functional as F

    def as_function(x, _f=torch.softmax):
        return _f(x, -1)

    def as_method(x, _f=torch.Tensor.softmax):
        return _f(x, -1)

    def fused(x, _f=F.scaled_dot_product_attention):
        return _f(x, x, x)

    def run(candidate, target):
        with forbidden(candidate, [target], instead="Build it yourself."):
            candidate(torch.ones(1, 2, 3))

    for candidate, target in [
        (as_function, "torch.softmax"),
        (as_method, "torch.Tensor.softmax"),
        (fused, "torch.nn.functional.scaled_dot_product_attention"),
    ]:
        message = fails(run, candidate, target, error=ForbiddenCall, said="Build it yourself.")
        assert f"`{target}`" in message
    assert as_function(torch.zeros(2)).tolist() == [0.5, 0.5]

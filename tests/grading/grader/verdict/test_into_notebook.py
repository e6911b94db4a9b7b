"""Does a test cell's feedback show the independent check's verdict (with the student's own
frames from its sandboxed child, and without a hidden test's expected value) in place of
anything the kernel printed, and does the kernel never see a hidden test?"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from autograder.checks.kit.failures import CheckFailed
from autograder.grading.grader import lab_cells
from autograder.grading.grader.job import Verdict
from autograder.grading.grader.run.hide_hidden_tests import HideHiddenTests
from autograder.grading.grader.run.restore_hidden_tests import RestoreHiddenTests
from autograder.grading.grader.verdict import into_notebook as verdicts
from autograder.grading.protocol.remote import Connection
from autograder.grading.sandboxed.child import ChildServer
from tests.grading.helpers import LAB, REPO, answered, index_of

SOURCE = REPO / "solutions" / LAB / f"{LAB}.ipynb"
TEST = lab_cells.test_cells(SOURCE)["test_relu"]
ANSWER = "import torch\n\ndef _helper(x):\n    return x.no_such_method()\n\ndef relu(x):\n    return _helper(x)\n"
MESSAGE = (
    "check_relu failed.\n  checked:  relu(x) (seed 2)\n  expected: tensor([0.0000, 1.2345,\n"
    "           2.0000])\n  found:    tensor([-1.0, 1.2, 2.0])\n  likely mistake: negatives kept"
)


@pytest.fixture
def child() -> Iterator[Connection]:
    """A grader's connection to a ChildServer serving from a thread, over two pipes, that has run
    ``ANSWER`` as its second cell (as the child compiles cells: ``<cell 2>``)."""
    to_child, from_grader = os.pipe()
    from_child, to_grader = os.pipe()
    serving = ChildServer(to_child, to_grader)
    exec(compile(ANSWER, "<cell 2>", "exec"), serving.namespace)  # the test's own code
    thread = threading.Thread(target=serving.run, daemon=True)
    thread.start()
    yield Connection(from_child, from_grader, trusting=False, timeout=30)
    os.close(from_grader)
    thread.join(timeout=10)
    for fd in (from_child, to_child, to_grader):
        os.close(fd)


def test_the_students_frames_cross_from_the_child(child: Connection) -> None:
    """Does an error raised in a submission's cell come back with the frames of its cells
    (cell number, line, function), innermost last, and nothing of the child's own code?"""
    reply, blobs = child.request({"op": "global", "name": "relu"}, {})
    relu = child._reply_value(reply, blobs)
    with pytest.raises(Exception, match="no_such_method") as info:
        relu(1.5)
    assert info.value.remote_frames == [(2, 7, "relu"), (2, 4, "_helper")]


def test_a_reply_with_forged_frames_keeps_only_their_shape() -> None:
    """Are frames the child sends in another shape dropped, not trusted?"""
    from autograder.grading.protocol.errors import frames_in as _frames_in

    assert _frames_in([[1, 2, "f"], ["1", 2, "g"], [1, 2], [True, 2, "h"], "x"]) == [(1, 2, "f")]
    assert _frames_in("not a list") == []


def _raised_at(line: int, error: BaseException) -> BaseException:
    """``error`` raised from line ``line`` of the test cell, as recheck runs it."""
    code = "\n" * (line - 1) + "raise error"
    try:
        exec(compile(code, "<test_relu>", "exec"), {"error": error})  # the test's own code
    except BaseException as err:
        return err
    raise AssertionError("not raised")


def _cells() -> list[nbformat.NotebookNode]:
    cell = nbformat.v4.new_code_cell(ANSWER, execution_count=4)
    return [nbformat.v4.new_code_cell("import torch", execution_count=1), cell]


def test_a_hidden_failure_shows_the_message_without_expected_and_the_students_frames() -> None:
    """For a failure raised by a hidden test: type, message without its expected: part, and the
    student's frames with their own lines?"""
    error = CheckFailed(MESSAGE)
    error.remote_frames = [(2, 7, "relu"), (2, 4, "_helper")]  # type: ignore[attr-defined]
    hidden_line = TEST.split("\n").index("for seed in (1, 2, 3):") + 2
    (output,) = verdicts.outputs(
        Verdict(False, f"CheckFailed: {MESSAGE}", _raised_at(hidden_line, error)),
        "test_relu",
        TEST,
        _cells(),
        failed_in_notebook=False,
    )
    text = "\n".join(output.traceback)
    assert output.ename == "CheckFailed" and "expected" not in text and "1.2345" not in text
    assert "checked:  relu(x) (seed 2)" in text and "likely mistake: negatives kept" in text
    assert "Cell In[4], line 7, in relu\n      6 def relu(x):\n----> 7     return _helper(x)" in text
    assert "Cell In[4], line 4, in _helper" in text and "x.no_such_method()" in text
    assert "passed in your notebook" not in text  # the kernel never ran a hidden test


def test_a_visible_failure_keeps_expected_and_a_forged_pass_says_so() -> None:
    """A failure of the visible test keeps its expected: line; where the notebook's cell
    passed, is the disagreement said?"""
    (output,) = verdicts.outputs(
        Verdict(False, "", _raised_at(2, CheckFailed(MESSAGE))), "test_relu", TEST, _cells(), failed_in_notebook=False
    )
    assert "expected: tensor([0.0000, 1.2345," in output.evalue
    assert "checked again outside it" in output.traceback[0]


def test_annotate_replaces_what_the_kernel_printed_in_test_cells(tmp_path: Path) -> None:
    """Does every test cell of the autograded notebook lose its kernel outputs (here a hook's
    print of the cell), keeping the other cells' outputs?"""
    nb = answered()
    printed = nbformat.v4.new_output("stream", name="stdout", text="SOURCE OF THE CELL: check_relu(relu, seed=seed)")
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [printed]
    path = tmp_path / "autograded.ipynb"
    nbformat.write(nb, str(path))
    verdicts.annotate(
        path,
        lab_cells.test_cells(SOURCE),
        {"test_relu": Verdict(True), "test_mean_squared_error": Verdict(False, "TimeoutError: too long")},
    )
    after = nbformat.read(str(path), as_version=4)
    relu, mse = after.cells[index_of(after, "test_relu")], after.cells[index_of(after, "test_mean_squared_error")]
    assert [o.text for o in relu.outputs] == [verdicts.PASSED + "\n"]
    assert (mse.outputs[0].ename, mse.outputs[0].evalue) == ("TimeoutError", "too long")
    assert after.cells[index_of(after, "relu")].outputs == [printed]


def test_a_blank_exercise_says_blank_in_words(tmp_path: Path) -> None:
    """Does a test cell whose exercise is left as released, and failed when the notebook ran, say
    "Blank (scored 0): ... not answered yet" (the class report's word) rather than a failure with a
    traceback, while an answered exercise that fails still shows its failure, and a stub whose test
    passed in the notebook is still called forged?"""
    nb = nbformat.read(str(REPO / "notebooks" / LAB / f"{LAB}.ipynb"), as_version=4)  # released: checksums kept
    mse = nb.cells[index_of(nb, "mean_squared_error")]
    mse.source = "def mean_squared_error(pred, target):\n    return (pred - target).sum()"
    raised = nbformat.v4.new_output("error", ename="NotImplementedError", evalue="", traceback=[])
    for grade_id in ("test_relu", "test_mean_squared_error"):  # both failed when the notebook ran
        nb.cells[index_of(nb, grade_id)].outputs = [raised]
    path = tmp_path / "autograded.ipynb"
    nbformat.write(nb, str(path))
    stub_error = NotImplementedError("relu is not answered yet: replace `raise NotImplementedError()` ...")
    verdicts.annotate(
        path,
        lab_cells.test_cells(SOURCE),
        {
            "test_relu": Verdict(False, f"NotImplementedError: {stub_error}", error=stub_error),
            "test_mean_squared_error": Verdict(False, "CheckFailed: summed, not averaged"),
        },
    )
    after = nbformat.read(str(path), as_version=4)
    relu, failed = after.cells[index_of(after, "test_relu")], after.cells[index_of(after, "test_mean_squared_error")]
    assert [(o.output_type, o.text) for o in relu.outputs] == [("stream", f"Blank (scored 0): {stub_error}\n")]
    assert str(stub_error).startswith("relu is not answered yet")
    assert (
        verdicts.outputs(Verdict(False, "NotImplementedError: "), "test_relu", "", [], True, True)[0].text
        == f"Blank (scored 0): {verdicts.NOT_ANSWERED}\n"
    )
    # a stub whose test passed in the notebook: forged, and said so, not "blank"
    forged = verdicts.outputs(Verdict(False, "NotImplementedError: "), "test_relu", "", [], False, True)
    assert forged[0].output_type == "error" and "checked again outside it" in forged[0].traceback[0]
    assert failed.outputs[0].output_type == "error" and failed.outputs[0].evalue == "summed, not averaged"


def test_the_kernel_runs_test_cells_without_their_hidden_tests() -> None:
    """Before Execute, does every test cell lose its hidden block (a solution cell keeps its
    text), and after it get the block back exactly?"""
    nb = nbformat.read(str(SOURCE), as_version=4)
    before = nbformat.writes(nb)
    resources: dict = {}
    nb, resources = HideHiddenTests(through_grade=True).preprocess(nb, resources)
    assert "BEGIN HIDDEN TESTS" not in "".join(c.source for c in nb.cells)
    assert "seed=seed" not in nb.cells[index_of(nb, "test_relu")].source
    assert "check_relu(relu)" in nb.cells[index_of(nb, "test_relu")].source
    nb, resources = RestoreHiddenTests().preprocess(nb, resources)
    assert nbformat.writes(nb) == before


def test_annotate_keeps_the_kernels_own_trouble_in_its_words(tmp_path: Path) -> None:
    """Where the kernel ran out of time in a test cell, does the cell keep that error's name
    (which the summary's notes read), in the grader's words, not the kernel's?"""
    nb = answered()
    timeout = nbformat.v4.new_output(
        "error", ename="CellTimeoutError", evalue="printed by the kernel", traceback=["kernel text"]
    )
    nb.cells[index_of(nb, "test_relu")].outputs = [timeout]
    path = tmp_path / "autograded.ipynb"
    nbformat.write(nb, str(path))
    verdicts.annotate(path, lab_cells.test_cells(SOURCE), {"test_relu": Verdict(True)})
    after = nbformat.read(str(path), as_version=4).cells[index_of(nb, "test_relu")].outputs
    assert [o.get("ename") for o in after] == [None, "CellTimeoutError"]
    assert verdicts.NOTEBOOK_FAILED in after[0].text and "printed by the kernel" not in str(after)


def test_annotate_works_on_the_read_only_notebook_nbgrader_leaves_for_a_user_who_is_not_root() -> None:
    """nbgrader leaves an autograded notebook read-only (0444): can its owner, not root, still put the
    verdicts in (as an instructor grading on a hub does), with the file's mode kept?"""
    sources = lab_cells.test_cells(SOURCE)
    top = Path(tempfile.mkdtemp(prefix="verdicts-"))  # not under pytest's tmp_path, which only root may enter
    try:
        top.chmod(0o755)
        folder = top / "autograded"
        folder.mkdir()
        path = folder / f"{LAB}.ipynb"
        nbformat.write(answered(), str(path))
        path.chmod(0o444)
        owner = 65534 if os.geteuid() == 0 else os.geteuid()  # as root, run as nobody: root ignores modes
        for p in (folder, path):
            os.chown(p, owner, -1)
        pid = os.fork()
        if pid == 0:  # the child writes as the owner and reports by its exit status
            code = 1
            try:
                if os.geteuid() != owner:
                    os.setuid(owner)
                verdicts.annotate(path, sources, {"test_relu": Verdict(True)})
                code = 0
            finally:
                os._exit(code)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0, "annotate could not write the notebook"
        after = nbformat.read(str(path), as_version=4)
        assert [o.text for o in after.cells[index_of(after, "test_relu")].outputs] == [verdicts.PASSED + "\n"]
        assert path.stat().st_mode & 0o777 == 0o444 and sorted(p.name for p in folder.iterdir()) == [path.name]
    finally:
        shutil.rmtree(top)


def test_nbgrader_autograde_by_hand_refuses_to_run_a_submission() -> None:
    """Does the course's own nbgrader_config.py, as `nbgrader autograde LAB` reads it, stop at its
    first step with a message naming the command to use, before any submission's code runs?"""
    from pathlib import Path

    from traitlets.config import PyFileConfigLoader

    from autograder.grading.grader.run.hide_hidden_tests import UnsandboxedGrading

    root = Path(__file__).resolve().parents[4]
    config = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    first = config.Autograde.autograde_preprocessors[0]
    assert first == "autograder.grading.grader.run.hide_hidden_tests.HideHiddenTests"
    assert config.Autograde.autograde_preprocessors.index("nbgrader.preprocessors.Execute") == 1
    with pytest.raises(UnsandboxedGrading, match="python -m autograder grade"):
        HideHiddenTests(config=config).preprocess(nbformat.v4.new_notebook(), {})

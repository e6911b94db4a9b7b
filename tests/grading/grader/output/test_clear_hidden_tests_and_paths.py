"""Does a student's feedback keep the check's message and lose the hidden tests and the
grader's file paths?"""

from __future__ import annotations

import html
import re
from pathlib import Path

import nbformat

from autograder.grading.grader import grading, pipeline
from autograder.grading.grader.output.clear_hidden_tests_and_paths import DROPPED, ClearHiddenTestsAndPaths
from autograder.grading.grader.verdicts_json import read_verdicts
from tests.grading.helpers import LAB, REPO, answered, index_of, released, submit, with_cell

TEST_CELL = """from autograder.checks import check_relu
check_relu(relu)
### BEGIN HIDDEN TESTS
for seed in (1, 2, 3):
    check_relu(relu, seed=seed)
### END HIDDEN TESTS"""

# "Cell In[4]" frames as IPython colours them, and one frame in a file of the grader
RED, GREEN, RESET = "\x1b[31m", "\x1b[32m", "\x1b[39m"
HIDDEN_FRAME = (
    f"Cell In[4], line 5\n{GREEN}      3{RESET} ### BEGIN HIDDEN TESTS\n"
    f"{GREEN}      4{RESET} for seed in (1, 2, 3):\n{GREEN}----> 5{RESET}     check_relu(relu, seed=seed)\n"
    f"{GREEN}      6{RESET} ### END HIDDEN TESTS\n"
)
VISIBLE_FRAME = (
    f"Cell In[4], line 2\n{GREEN}      1{RESET} from autograder.checks import check_relu\n"
    f"{GREEN}----> 2{RESET} check_relu(relu)\n{GREEN}      3{RESET} ### BEGIN HIDDEN TESTS\n"
    f"{GREEN}      4{RESET} for seed in (1, 2, 3):\n"
)
FILE_FRAME = "File /opt/course/autograder/checks/kit/core.py:54, in check.<locals>.wrapper(*args)\n     54 raise\n"
MESSAGE = f"{RED}CheckFailed{RESET}: check_relu failed.\n  checked:  relu(x) (seed 1)"


def _notebook(*frames: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(TEST_CELL, execution_count=4)
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": "test_relu", "points": 3, "solution": False}
    cell.outputs = [
        nbformat.v4.new_output(
            "error",
            ename="CheckFailed",
            evalue="check_relu failed.",
            traceback=["-" * 20, "CheckFailed   Traceback", *frames, MESSAGE],
        )
    ]
    return nbformat.v4.new_notebook(cells=[cell])


def _cleared(nb: nbformat.NotebookNode) -> tuple[str, list[str]]:
    nb, _ = ClearHiddenTestsAndPaths(grader_paths=["/opt/course"]).preprocess(nb, {})
    return nb.cells[0].source, nb.cells[0].outputs[0].traceback


def test_hidden_block_and_its_frame_are_dropped_message_kept() -> None:
    """Does a failing hidden test lose its source and frame, keeping the check's message last?"""
    source, traceback = _cleared(_notebook(HIDDEN_FRAME, FILE_FRAME))
    assert source == "from autograder.checks import check_relu\ncheck_relu(relu)"
    assert traceback[-1] == MESSAGE
    assert traceback[2:-1] == [DROPPED]  # the hidden frame and the file frame, one note for both
    assert "seed=seed" not in "".join(traceback) and "/opt/course" not in "".join(traceback)


def test_visible_frame_keeps_its_lines_without_the_hidden_ones() -> None:
    """Does a failing visible check keep its frame, minus the hidden lines it quotes as context?"""
    _, traceback = _cleared(_notebook(VISIBLE_FRAME))
    frame = traceback[2]
    assert "check_relu(relu)" in frame and "----> 2" in re.sub(r"\x1b\[[0-9;]*m", "", frame)
    assert "HIDDEN" not in frame and "for seed" not in frame


def test_grader_paths_are_replaced_in_printed_text() -> None:
    """Is a grader's folder printed by a cell replaced, and the rest of the line kept?"""
    cell = nbformat.v4.new_code_cell("print(path)")
    printed = "saved in /opt/course/submitted/ben/x.ipynb\n"
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
    nb = nbformat.v4.new_notebook(cells=[cell])
    nb, _ = ClearHiddenTestsAndPaths(grader_paths=["/opt/course"]).preprocess(nb, {})
    assert nb.cells[0].outputs[0].text == "saved in <grader>\n"


SUMMED_MSE = "def mean_squared_error(pred, target):\n    return ((pred - target) ** 2).sum()\n"
HELPER_RELU = "def _helper(x):\n    return x.no_such_method()\n\ndef relu(x):\n    return _helper(x)\n"


def _text(page: str) -> str:
    """The text a reader sees in an HTML page (highlighting spans split the code into words)."""
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_feedback_of_a_real_failing_hidden_test(course: Path, tmp_path: Path) -> None:
    """In a real autograded lab whose hidden tests fail, does the feedback HTML show the
    check's message (without the hidden test's expected value) but not the hidden tests, their
    seeds' loop, or the grader's paths; and where a student's function fails, its own frames?
    Does each student's verdicts.json record a wrong, a blank and a right answer as such?"""
    from tests.grading.scenarios.test_robustness import HARD_CODED_RELU

    nb = answered("mean_squared_error")
    nb.cells[index_of(nb, "relu")].source = HARD_CODED_RELU
    nb = with_cell(nb, None, 'import json\njson.loads("{")')  # a traceback through the standard library
    submit(tmp_path / "inbox", "hc", nb)
    frames = answered("mean_squared_error")
    frames.cells[index_of(frames, "relu")].source = HELPER_RELU
    submit(tmp_path / "inbox", "helper", frames)
    mixed = released()  # relu left as released, a mean squared error that sums
    mixed.cells[index_of(mixed, "mean_squared_error")].source = SUMMED_MSE
    submit(tmp_path / "inbox", "mixed", mixed)
    outcomes = pipeline.grade(course, tmp_path / "inbox", grading.Options(progress=False))
    # the hard-coded answer is told apart from an honest failure, and its import of the checks flagged
    hard_coded = [
        "test cell test_relu: the visible check passed but the hidden tests failed (hard-coded outputs?)",
        "relu: the answer imports `autograder.checks.kit.core`: flagged for a look, not scored 0",
    ]
    assert [(o.student, o.score, o.max_score, o.notes) for o in outcomes] == [
        ("hc", 3, 5, hard_coded),
        ("helper", 3, 5, []),
        ("mixed", 0, 5, []),
    ]
    _verdicts_recorded(course)
    page = (course / "feedback" / "hc" / LAB / f"{LAB}.html").read_text()
    text = _text(page)
    # the hidden test's failure, as the independent check raised it, without the hidden test's answer
    assert "check_relu failed." in text and "found:" in text and "expected:" not in text
    assert "Failed: the grader ran this test again" in text
    assert "JSONDecodeError" in text
    for secret in (
        "BEGIN HIDDEN TESTS",
        "for seed in (1, 2, 3)",
        "seed=seed",
        str(course),
        str(REPO),
        "site-packages",
        "json/decoder.py",
    ):
        assert secret not in text and secret not in page, secret
    autograded = nbformat.read(str(course / "autograded" / "hc" / LAB / f"{LAB}.ipynb"), as_version=4)
    assert "BEGIN HIDDEN TESTS" in autograded.cells[index_of(autograded, "test_relu")].source  # instructors keep them
    # the student's own frames, raised in the independent check's child, with their lines
    helper = _text((course / "feedback" / "helper" / LAB / f"{LAB}.html").read_text())
    count = (
        nbformat.read(str(course / "autograded" / "helper" / LAB / f"{LAB}.ipynb"), as_version=4)
        .cells[index_of(frames, "relu")]
        .execution_count
    )
    assert f"Cell In[{count}], line 5, in relu" in helper and "return _helper(x)" in helper, helper
    assert f"Cell In[{count}], line 2, in _helper" in helper and "x.no_such_method()" in helper
    assert "AttributeError" in helper


def _verdicts_recorded(course: Path) -> None:
    """The verdicts files of the class graded above: statuses, points, mistake ids, messages as
    the feedback shows them, answers as submitted; and never copied into the feedback."""
    from nbgrader.utils import find_all_files

    from autograder.grading.grader.run.nbconfig import load_config

    found = {
        student: read_verdicts(course / "autograded" / student / LAB / "verdicts.json")
        for student in ("hc", "helper", "mixed")
    }
    rows = {
        student: [(e.exercise, e.answer_cells, e.status, e.points, e.max_points, e.mistake) for e in v.exercises]
        for student, v in found.items()
    }
    right_mse = ("test_mean_squared_error", ["mean_squared_error"], "passed", 3.0, 3.0, None)
    assert rows == {
        "hc": [("test_relu", ["relu"], "failed", 0.0, 2.0, "unnamed"), right_mse],
        "helper": [("test_relu", ["relu"], "failed", 0.0, 2.0, "unnamed"), right_mse],
        "mixed": [
            ("test_relu", ["relu"], "blank", 0.0, 2.0, None),
            ("test_mean_squared_error", ["mean_squared_error"], "failed", 0.0, 3.0, "mean-squared-error/summed"),
        ],
    }
    mixed = found["mixed"]
    assert (mixed.student, mixed.original_id, mixed.lab) == ("mixed", None, LAB)
    assert mixed.answers == {
        "relu": released().cells[index_of(released(), "relu")].source,
        "mean_squared_error": SUMMED_MSE,
    }
    assert "likely mistake: summed the squared errors" in mixed.exercises[1].message
    hidden = found["hc"].exercises[0].message  # a hidden test failed: no expected value, as in the feedback
    assert "check_relu failed." in hidden and "found:" in hidden and "expected:" not in hidden
    assert not list((course / "feedback").rglob("verdicts.json"))
    ignore = load_config(course, {}).CourseDirectory.ignore  # nbgrader's generate_feedback copies the rest
    assert "verdicts.json" not in str(find_all_files(str(course / "autograded" / "mixed" / LAB), ignore))

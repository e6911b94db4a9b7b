"""Does the one description of a course's folders (``CourseLayout``) agree with what nbgrader
reads from the course's ``nbgrader_config.py``, so that both find the same files?"""

from __future__ import annotations

from pathlib import Path

from traitlets.config import PyFileConfigLoader

from autograder.grading.layout import CourseLayout

REPO = Path(__file__).resolve().parents[2]


def test_the_layout_is_the_folders_nbgrader_is_told() -> None:
    """Are solutions/, notebooks/, submitted/, autograded/, feedback/ and the SQLite gradebook the
    ones the course's nbgrader_config.py names (a rename in one shows here)?"""
    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO)).load_config().CourseDirectory
    layout = CourseLayout(Path(config.root))
    assert Path(config.root) == REPO
    named = {
        "source_directory": layout.solutions,
        "release_directory": layout.notebooks,
        "submitted_directory": layout.submitted,
        "autograded_directory": layout.autograded,
        "feedback_directory": layout.feedback,
    }
    assert {key: layout.root / config[key] for key in named} == named
    assert config.db_url == layout.db_url


def test_a_lab_and_a_student_have_their_paths() -> None:
    """Are a lab's notebooks and a student's folders where nbgrader puts them (ROOT/DIR/LAB/LAB.ipynb,
    ROOT/DIR/STUDENT/LAB/)?"""
    layout = CourseLayout(Path("/course"))
    assert layout.source("02-x") == Path("/course/solutions/02-x/02-x.ipynb")
    assert layout.release("02-x") == Path("/course/notebooks/02-x/02-x.ipynb")
    assert layout.submission("ada", "02-x") == Path("/course/submitted/ada/02-x")
    assert layout.autograded_notebook("ada", "02-x") == Path("/course/autograded/ada/02-x/02-x.ipynb")
    assert (layout.grades_csv, layout.reports, layout.grading_logs) == (
        Path("/course/grades.csv"),
        Path("/course/reports"),
        Path("/course/grading-logs"),
    )

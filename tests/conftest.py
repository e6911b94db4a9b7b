"""Shared by every test folder: the tests are shared out between pytest-xdist's processes a file
at a time. ``tests`` is a package (every folder has its ``__init__.py``), so a test imports a
helper module by its full name (``from tests.grading.helpers import ...``), never through
``sys.path``.

``make test`` runs the suite on ``TEST_WORKERS`` processes (``pytest -n 2``): most tests wait
on a kernel, a sandbox or a browser for much of their time, so two at once nearly halve the
wall time on two cores. The tests of one file run in one process, so a module's fixture (a
class graded once for all its tests) runs once; the book's tests share one build (a session
fixture), so the files of ``tests/book`` go to one process together.
"""

import os
import shutil
import tempfile

TOGETHER = ("tests/book/",)  # folders whose files share a session fixture
CHECKED = "AUTOGRADER_CHECKED"  # autograder.grading.grader.in_parts.stamps.SHARED_RECORD


# What a test costs, by where it lives (a folder, a file, or the tests of a file whose names
# begin with a text); the markers are described in pyproject.toml. ``make test-fast`` leaves
# out grading, book, browser, install, service and training.
COSTS: list[tuple[str, tuple[str, ...]]] = [
    ("tests/book/test_accessibility.py", ("book", "browser")),
    ("tests/book/test_book_browser.py", ("book", "browser")),
    ("tests/book/", ("book",)),
    ("tests/grading/scenarios/test_feedback_browser.py", ("grading", "browser")),
    ("tests/grading/scenarios/test_postgres.py", ("grading", "service")),
    ("tests/grading/scenarios/test_slurm.py", ("grading", "service")),
    ("tests/grading/scenarios/", ("grading",)),
    ("tests/grading/test_slurm_cluster.py", ("service",)),
    ("tests/grading/test_lab_browser.py", ("browser",)),
    ("tests/grading/grader/report/test_page_browser.py", ("browser",)),
    (
        "tests/grading/grader/output/test_gradebook.py::test_processes_take_turns_at_a_postgresql",
        ("grading", "service"),
    ),
    ("tests/grading/grader/output/test_gradebook.py::test_processes_take_turns", ("grading",)),
    ("tests/grading/grader/output/test_gradebook.py::test_a_class_of_every_lab_records", ("grading",)),
    ("tests/grading/grader/run/test_ahead.py::test_a_job_whose_kernel_was_lost", ("grading",)),
    ("tests/grading/grader/run/test_bwrap.py", ("grading",)),
    ("tests/grading/grader/run/test_bwrap_probe.py", ("grading",)),
    ("tests/grading/grader/run/test_independent_check.py", ("grading",)),
    ("tests/grading/grader/test_pipeline.py", ("grading",)),
    ("tests/grading/grader/intake/test_collect.py", ("grading",)),
    ("tests/grading/grader/output/test_clear_hidden_tests_and_paths.py", ("grading",)),
    ("tests/grading/protocol/test_remote.py", ("grading",)),
    ("tests/grading/sandboxed/", ("grading",)),
    ("tests/grading/lms/test_round_trip.py", ("grading",)),
    ("tests/cli/test_grade.py", ("grading",)),
    ("tests/cli/test_grade_stopped.py", ("grading",)),
    ("tests/cli/test_release.py", ("grading",)),
    ("tests/notebooks/test_validate.py", ("grading",)),
    ("tests/notebooks/test_release.py", ("grading",)),
    ("tests/test_demo.py", ("grading",)),
    ("tests/test_readme.py", ("grading", "install")),
    ("tests/test_install.py", ("install",)),
    ("tests/test_build_noise.py", ("install",)),
    ("tests/benchmarks/", ("grading", "training")),
    ("tests/reference/training/test_train.py", ("training",)),
    ("tests/reference/training/test_train_add.py", ("training",)),
    ("tests/reference/training/test_train_captured.py", ("training",)),
    ("tests/reference/training/test_distributed.py", ("training",)),
    ("tests/reference/test_bpe.py::test_pre_tokenize_classes_agree_on_every_code_point", ("training",)),
    ("tests/hub/test_hub.py", ("hub", "service")),
]


def costs(nodeid: str) -> tuple[str, ...]:
    """The cost markers of the test ``nodeid`` (the first entry of ``COSTS`` that it starts with)."""
    found = next((marks for where, marks in COSTS if nodeid.startswith(where)), ())
    return found + (("gpu",) if "on_cuda" in nodeid.split("::", 1)[-1] else ())


def pytest_collection_modifyitems(config, items) -> None:
    """Every test gets its cost markers from ``COSTS``, by where it lives."""
    import pytest

    for item in items:
        for name in costs(item.nodeid):
            item.add_marker(getattr(pytest.mark, name))


def pytest_configure(config) -> None:
    """One record of the grader's start-up check for the whole session (its processes and the
    gradings they start): the check runs once per state of a course, and every temporary course
    of that state is then graded without it. A test of the check changes the state (its grader,
    its settings) or removes the variable."""
    if CHECKED not in os.environ:  # set by the first process: pytest-xdist's workers inherit it
        folder = tempfile.mkdtemp(prefix="autograder-checked-")
        os.environ[CHECKED] = os.path.join(folder, "checked.json")
        config._checked_folder = folder


def pytest_unconfigure(config) -> None:
    folder = getattr(config, "_checked_folder", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(CHECKED, None)


def pytest_xdist_make_scheduler(config, log):
    """A scheduler that gives each process whole files (whole folders for ``TOGETHER``)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByFile(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return next((folder for folder in TOGETHER if path.startswith(folder)), path)

    return ByFile(config, log)

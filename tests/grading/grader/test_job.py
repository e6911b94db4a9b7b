"""Do jobs and results cross the pipe between the pipeline and a worker as typed data, and do
the steps of one submission run as a list?"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from autograder.grading.grader.job import Job, Result, Run, Submission
from autograder.grading.grader.run import steps
from autograder.grading.layout import CourseLayout
from autograder.grading.protocol.confinement import MEMORY_MB, Limits


def test_a_job_comes_back_from_its_json_the_same() -> None:
    """Does a job survive its one line of JSON, every field included (its limits a ``Limits``
    again, who the student is, the late flag), with the one memory default?"""
    job = Job(
        "/course",
        "00-warmup",
        "ada",
        {"Execute.timeout": 30},
        lock="/tmp/lock",
        scratch="/tmp/s",
        sandbox=False,
        package="/course/autograder",
        preflight=True,
        limits=Limits(memory_mb=1024),
        original_id="Ada L. (Moodle 7)",
        late="late 2026-11-01 10:00:00",
    )
    back = Job.from_json(job.to_json())
    assert back == job and isinstance(back.limits, Limits) and back.limits.memory_mb == 1024
    assert Job("/course", "00-warmup", "ada").limits.memory_mb == MEMORY_MB


def test_a_job_names_its_files_from_the_course_layout() -> None:
    """Are a job's notebooks the ones the one layout of the course names, not paths of its own?"""
    job = Job("/course", "00-warmup", "ada")
    layout = CourseLayout(Path("/course"))
    assert job.layout == layout
    assert job.source == layout.source("00-warmup") == Path("/course/solutions/00-warmup/00-warmup.ipynb")
    assert job.autograded == Path("/course/autograded/ada/00-warmup/00-warmup.ipynb")


def test_a_result_comes_back_from_its_json_the_same() -> None:
    """Does a result with both of nbgrader's runs, notes and times survive its JSON?"""
    result = Result(Run(True, "log", "", 1.5), Run(False, "", "no feedback"), ["a note"], 0.25)
    assert Result.from_json(result.to_json()) == result
    assert not result.failed and result.log() == "logno feedback"


def test_a_result_that_is_not_an_object_is_a_crash() -> None:
    """Is an answer that is JSON but not an object read as the worker's crash, not a KeyError?"""
    assert Result.from_json("[1, 2]").crash is not None
    assert Result.from_json("[1, 2]").failed


def test_a_grader_error_counts_even_without_words() -> None:
    """Does a grader error with an empty message still stop the submission (not score it)?"""
    assert Result(Run(True), grader_error="").failed
    assert Result(Run(False)).failed and not Result(Run(True)).failed


def test_the_steps_of_a_submission_run_in_order_and_stop_at_false() -> None:
    """Does ``steps.grade`` run its steps in order and skip the rest after one returns
    False (nbgrader could not autograde: nothing to check or give feedback on)?"""
    ran: list[str] = []

    def step(name: str, go_on: bool):
        def run(s: Submission) -> bool:
            ran.append(name)
            return go_on

        return run

    s = Submission(Job("/course", "lab", "ada"), SimpleNamespace(), None)
    result = steps.grade(s, [step("first", True), step("second", False), step("third", True)])
    assert ran == ["first", "second"] and result is s.result


def test_the_default_steps_are_autograde_check_points_notebook_flags_record_feedback() -> None:
    """Are the worker's steps, in order, autograde, the independent check, the points it decides,
    its verdicts into the notebook, the flags, the record of the verdicts (verdicts.json) and the
    feedback?"""
    assert [step.__name__ for step in steps.STEPS] == [
        "autograde",
        "independent_check",
        "points",
        "into_notebook",
        "flags",
        "record",
        "feedback",
    ]


def test_a_step_appended_to_a_grading_runs_after_the_others(tmp_path) -> None:
    """Can a new per-class step (a class report) be added by appending it to the list of
    ``pipeline.grade``'s steps, and does it see what the steps before it left?"""
    from autograder.grading.grader import grading, pipeline

    seen: list[str] = []

    def first(g: grading.Grading) -> None:
        g.pairs = [("ada", "00-warmup")]
        seen.append("first")

    def report(g: grading.Grading) -> None:
        seen.append(f"report of {g.pairs}")

    outcomes = pipeline.grade(tmp_path, tmp_path, grading.Options(sandbox=False, progress=False), steps=[first, report])
    assert seen == ["first", "report of [('ada', '00-warmup')]"] and list(outcomes) == []
    assert [step.__name__ for step in pipeline.STEPS] == [
        "intake",
        "screen",
        "prepare",
        "make_jobs",
        "grade_each",
        "score",
        "export",
        "report",
    ]

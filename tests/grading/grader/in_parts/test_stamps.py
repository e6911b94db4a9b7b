"""The start-up check's record: kept per course, and shared by the copies of a course that name
one file in ``$AUTOGRADER_CHECKED`` (the test session's temporary courses do)."""

from __future__ import annotations

from pathlib import Path

from autograder.grading.grader.in_parts import stamps
from autograder.grading.layout import CourseLayout


def test_a_state_checked_in_one_copy_is_checked_in_every_copy_sharing_the_record(tmp_path: Path, monkeypatch) -> None:
    """With a shared record, is a pass recorded in course A found in course B (and the state
    alone decides: another key is not)? Without it, is each course's record its own?"""
    first, second = CourseLayout(tmp_path / "a"), CourseLayout(tmp_path / "b")
    monkeypatch.delenv(stamps.SHARED_RECORD, raising=False)
    stamps.record_checked(first, "state-1")
    assert stamps.was_checked(first, "state-1") and not stamps.was_checked(second, "state-1")

    monkeypatch.setenv(stamps.SHARED_RECORD, str(tmp_path / "shared" / "checked.json"))
    stamps.record_checked(first, "state-2")
    assert stamps.was_checked(second, "state-2") and not stamps.was_checked(second, "state-3")
    assert not stamps.was_checked(second, "state-1")  # recorded before the record was shared
    assert stamps.was_checked(first, "state-1")  # the course's own record is still read
    monkeypatch.delenv(stamps.SHARED_RECORD)
    assert stamps.was_checked(second, "state-2")  # copied into the course's own record when found
    assert not stamps.was_checked(second, "state-3")


def test_the_shared_record_keeps_many_states_and_the_course_record_a_few(tmp_path: Path, monkeypatch) -> None:
    layout = CourseLayout(tmp_path / "a")
    monkeypatch.setenv(stamps.SHARED_RECORD, str(tmp_path / "checked.json"))
    for i in range(40):
        stamps.record_checked(layout, f"state-{i}")
    assert stamps.was_checked(CourseLayout(tmp_path / "b"), "state-0")
    assert len(stamps._passed(stamps.checked_path(layout))) == 16

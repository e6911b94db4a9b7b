"""Grades back into the LMS, offline: the files Moodle, Canvas and Blackboard import, written from
the gradebook and intake's record of who each student is (``python -m autograder export``)."""

LMSES = ("moodle", "canvas", "blackboard")

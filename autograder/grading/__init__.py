"""Grading the labs with nbgrader, from the command line (``python -m autograder ...``).

Modules:
    course      the course folder: labs, ``release`` (solutions/ -> notebooks/), ``workspace``
    kernel      a Python kernel whose address space is limited (a memory hog dies, not the grader)
    worker      long-lived grading processes (nbgrader imported once), the gradebook behind a lock
    inspect     what a submission looks like before grading (invalid JSON, renamed, edited tests)
    pipeline    ``grade``: collect, autograde in parallel, feedback, grades.csv, summary
    sample_lab  the source of the sample lab 00-warmup
"""

"""Grading the labs with nbgrader, from the command line (``python -m autograder ...``).

Modules:
    course      the course folder: labs, ``release`` (solutions/ -> notebooks/), ``workspace``
    workspace   a student's copy of the labs, updated to a new release with their answers kept
    lab         a student's JupyterLab on that copy (``make lab``), student tools only
    collect     submissions from a folder or an LMS zip; every other file listed with its reason
    sandbox     bubblewrap around every execution of student code, with its limits
    kernel      the grading kernel, sandboxed, on IPC sockets
    worker      long-lived grading processes (nbgrader imported once), the gradebook behind a lock
    recheck     the independent check: the test cells again, here, against the sandboxed child
    child       that child: runs the submission's cells, answers calls
    remote      handles to objects across the boundary; wire: the plain values that cross it
    feedback    feedback without hidden tests or the grader's paths
    inspect     what a submission looks like before grading (invalid JSON, renamed, edited tests)
    pipeline    ``grade``: collect, autograde in parallel, independent check, feedback, grades.csv
    sample_lab  the source of the sample lab 00-warmup
"""

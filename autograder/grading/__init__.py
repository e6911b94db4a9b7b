"""Grading the labs with nbgrader, from the command line (``python -m autograder ...``).

The packages follow the trust boundary (ARCHITECTURE.md, "Trust model of grading"):

    grader      code that never runs a submission: intake, the nbgrader worker, the
                independent check's grader side, scores, the gradebook, feedback, flags
    sandboxed   code that runs student code or lives beside it in its process or sandbox:
                the sandbox launcher, the grading kernel, the independent check's child
    protocol    what both sides use without executing a submission: the bootstrap that picks
                the ``autograder`` package, the sandbox's limits, the wire and its proxies

A module of ``grader`` never imports one of ``sandboxed`` (tests/test_architecture.py): it
starts them by module name, in a sandbox. Beside the three, the course's own tools, which
grade nothing:

    course      the course folder: its labs and ``release`` (solutions/ -> notebooks/)
    workspace   a student's copy of the labs, updated to a new release with their answers kept
    lab         a student's JupyterLab on that copy (``make lab``), student tools only
    answers     a released lab answered from the solutions (the grading tests' submissions)
    formgrader  the instructor's Formgrader, its Autograde buttons pointed at ``make grade``
                (nbgrader_config.py calls it when the server starts)
"""

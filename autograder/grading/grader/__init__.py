"""The grader's side: code that never runs a submission (ARCHITECTURE.md, "Trust model of grading").

    pipeline    ``grade``: its steps (``STEPS``: intake, prepare, make_jobs, grade_each, score,
                export) run in order on one ``Grading``
    outcomes    what came of each student's lab, and the summary
    jobs        ``Job`` and ``Result``: what the pipeline and a worker say, one JSON line each way
    collect     submissions from a folder or an LMS zip (folders, zipread, files, ids,
                lmsnames, marks, intake): every other file listed with its reason
    screening   what a submission looks like before grading (invalid JSON, renamed, edited tests)
    staging     the folder nbgrader's autograde reads: the inspected bytes and the hand-in time
    nbconfig    the course's nbgrader_config.py with a job's overrides
    gradebook   every write of ours to nbgrader's gradebook, and the one lock around it
    export      grades.csv
    submission  the steps of one submission (``STEPS``: autograde, independent_check,
                into_notebook, flags, feedback), run in the worker
    worker      long-lived grading processes running nbgrader, in turns at the gradebook. The
                worker executes no student code itself: nbgrader talks to the sandboxed kernel
                over sockets, so the worker sits here
    kernelspec  the kernelspec that starts the grading kernel in the sandbox
    sandbox     the command lines that ask for a sandbox, and its probe
    preflight   the lab's solution graded first, so a broken grader never yields a class of zeros
    recheck     the independent check: the test cells again, here, against the sandboxed child,
                and again with earlier wrong answers made right (error carried forward)
    verdicts    its verdicts written into the autograded notebook
    hidden, limits, feedback, sanitize
                nbgrader preprocessors: hidden tests kept from the kernel, outputs capped,
                feedback without hidden tests or the grader's paths, pages without scripts
    similarity  answers flagged for the instructor to read (never a change of points), with
                dynamic: the constructs that reach PyTorch or the grader dynamically
    formgrader  Formgrader's Autograde button, pointed at ``make grade``
"""

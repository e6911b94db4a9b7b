"""The sandboxed side: code that runs student code, or lives in the same process or sandbox as
it (ARCHITECTURE.md, "Trust model of grading"). Nothing here decides a point.

    launcher    ``python -m autograder.grading.sandboxed.launcher``: sets the limits, starts
                bubblewrap and caps what comes out (trusted, but the parent of what it runs)
    kernel      the grading kernel (ipykernel), started by the kernelspec in the sandbox
    child       the independent check's child: runs none of the submission's code itself; the
                cells run in a fork of it, which answers calls; as a zygote, it forks a fresh copy
                for each carried-forward check
    carry       error carried forward in such a fork: earlier wrong answers' calls answered by the
                solution or by the student's own functions, the two forks alike

The grader starts these by module name (``protocol.boot.command``); it never imports them.
"""

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

# what pyplot, which every lab's cells import, is made of: the kernel and the check child import
# these before their notebook comes. Not pyplot itself: once it is loaded, a cell's
# ``matplotlib.use("TkAgg")`` switches the backend at once, and fails without a display (with
# pyplot not loaded it only sets ``rcParams["backend"]``)
PYPLOT_PARTS = ("matplotlib.figure", "matplotlib.font_manager", "matplotlib.backends.backend_agg")

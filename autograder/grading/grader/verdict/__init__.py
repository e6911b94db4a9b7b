"""Verdict, the third station: what the independent check found, made the submission's record.
Its steps (``steps``): the points each exercise keeps, decided from its verdict, with the
gradebook settled (``points``); the verdicts into the autograded notebook's test cells
(``into_notebook``); answers that retype the reference or reach the machinery dynamically
flagged for the instructor, never scored (``flags``: ``retyped``, ``dynamic_reach``); and the
verdicts saved as data beside the notebook (``save_verdicts``: ``autograded/STUDENT/LAB/verdicts.json``).
What the kernel's run left in the notebook (timeouts, memory, a dead kernel) is read for the
summary by ``kernel_notes``. It reads the autograded notebook and the lab's source, writes the
autograded folder, and imports no module of intake or run.
"""

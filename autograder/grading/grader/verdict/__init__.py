"""Verdict, the third station: what the independent check found, made the submission's record.
The verdicts go into the autograded notebook's test cells (``into_notebook``), answers that
retype the reference or reach the machinery dynamically are flagged for the instructor, never
scored (``retyped``, ``dynamic_reach``), and the verdicts are saved as data beside the notebook
(``save_verdicts``: ``autograded/STUDENT/LAB/verdicts.json``). It reads the autograded notebook
and the lab's source, writes the autograded folder, and imports no module of intake or run.
"""

"""Intake, the first station: a class's submissions brought from an LMS zip, a folder of folders
or nbgrader's exchange into ``ROOT/submitted/STUDENT/LAB/``, each student given an id that is
theirs alone (``submitted/.intake.json``), every file that is not graded listed with its reason;
then each submission screened (``screening``) and its inspected bytes staged where nbgrader's
autograde reads them (``staging``). It may read the files handed in, never trusting them
(``untrusted``), and write ``submitted/`` and the staging folder; it imports no later station.
Its steps (``steps``): ``intake``, ``read_record`` (``intake_record``) and ``screen``.
"""

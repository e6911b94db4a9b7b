"""Output, the fourth station: what grading hands back. Its steps (``steps``): a submission's
feedback page, the class's scores and grades.csv. Our writes to nbgrader's gradebook and
the one lock around them (``gradebook``), ``grades.csv`` (``grades_csv``), the feedback pages
without hidden tests or the grader's paths (``clear_hidden_tests_and_paths``) and without
anything a browser would run (``sanitize_notebook``), both nbgrader preprocessors. It writes
the gradebook, ``grades.csv`` and ``feedback/``, and imports no module of an earlier station.
"""

"""Run, the second station: a job for each submission staged (``jobs``: ``prepare``,
``make_jobs``), the jobs on worker processes (``on_workers``, ``pool``, ``worker``), each
submission's notebook run by nbgrader's autograde in a sandboxed kernel and its graded exercises
checked again by the independent check against a sandboxed child (``steps``,
``independent_check``); before the first student, a known-good notebook (``preflight``). It
asks for sandboxes (``bwrap``, ``kernelspec``) and holds nbgrader's preprocessors of autograde,
one class to a module (``hide_hidden_tests``, ``restore_hidden_tests``, ``cap_output_bytes``).
It never runs student code in its own processes, and imports no module of intake: what a
submission needs arrives in its ``Job``. ``steps.STEPS`` is one submission's list of steps in
the worker: run's own, then verdict's and output's.
"""

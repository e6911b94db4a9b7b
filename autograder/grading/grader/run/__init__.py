"""Run, the second station: each submission's notebook run by nbgrader's autograde in a sandboxed
kernel (the worker processes, ``worker`` and the steps of one submission, ``steps``), and its
graded exercises checked again by the independent check against a sandboxed child
(``independent_check``); before the first student, a known-good notebook (``preflight``). It
asks for sandboxes (``bwrap``, ``kernelspec``) and holds nbgrader's preprocessors of autograde,
one class to a module (``hide_hidden_tests``, ``restore_hidden_tests``, ``cap_output_bytes``).
It never runs student code in its own processes, and imports no module of intake: what a
submission needs arrives in its ``Job``.
"""

"""Make a reference function look like a student's own answer, for the tests of the checks.

A check refuses a candidate that *is* the reference object (``softmax = reference.softmax``).
To test that the reference's math passes, the tests give the check a copy: the same code,
defined in a namespace of its own, as if a student had typed it into a notebook.
"""

import types


def as_student(fn: types.FunctionType) -> types.FunctionType:
    """The same function, defined in a copy of its module's globals under the name ``student``."""
    namespace = dict(fn.__globals__, __name__="student")
    clone = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    clone.__kwdefaults__ = fn.__kwdefaults__
    clone.__qualname__ = f"student.{fn.__name__}"
    return clone

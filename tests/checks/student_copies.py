"""Make a reference function look like a student's own answer, for the tests of the checks.

A check refuses a candidate that *is* the reference object (``softmax = reference.softmax``),
and a function that runs the reference's code object under another name
(``types.FunctionType(reference.softmax.__code__, ...)``). To test that the reference's math
passes, the tests give the check what a student who typed the same source would have: the
reference's source, compiled anew as a cell of its own, in a copy of its module's globals.
"""

import __future__

import inspect
import textwrap
import types


def as_student(fn: types.FunctionType) -> types.FunctionType:
    """The function's source compiled again in a copy of its module's globals, under the name
    ``student``; a decorated function (``@torch.no_grad()``) comes back decorated, as a student's
    decorated answer would."""
    source = textwrap.dedent(inspect.getsource(fn))
    namespace = dict(inspect.unwrap(fn).__globals__, __name__="student")  # a wrapper's are its decorator's
    code = compile(
        source, f"<student {fn.__name__}>", "exec", flags=__future__.annotations.compiler_flag, dont_inherit=True
    )
    exec(code, namespace)  # the course's own reference source
    copy = namespace[fn.__name__]
    copy.__qualname__ = f"student.{fn.__name__}"
    return copy

"""Make a reference function look like a student's own answer, for the tests of the checks.

A check refuses a candidate that *is* the reference object (``softmax = reference.softmax``).
To test that the reference's math passes, the tests give the check a copy: the same code,
defined in a namespace of its own, as if a student had typed it into a notebook.
"""

import types


def as_student(fn: types.FunctionType) -> types.FunctionType:
    """The same function, defined in a copy of its module's globals under the name ``student``.
    A decorated function (``@torch.no_grad()``) is copied through its wrapper: the copy's wrapper
    calls a copy of the inner function, as a student's decorated answer would."""
    inner = getattr(fn, "__wrapped__", None)
    if isinstance(inner, types.FunctionType) and fn.__closure__:
        own = as_student(inner)
        cells = tuple(types.CellType(own if cell.cell_contents is inner else cell.cell_contents)
                      for cell in fn.__closure__)
        wrapper = _clone(fn, cells)
        wrapper.__wrapped__ = own
        return wrapper
    return _clone(fn, fn.__closure__)


def _clone(fn: types.FunctionType, closure: tuple | None) -> types.FunctionType:
    namespace = dict(fn.__globals__, __name__="student")
    clone = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, closure)
    clone.__kwdefaults__ = fn.__kwdefaults__
    clone.__qualname__ = f"student.{fn.__name__}"
    return clone

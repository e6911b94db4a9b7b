"""The checks called by the labs' test cells: ``check_<exercise>(candidate, seed=0)``.

Every ``check_*`` function of the chapter modules (``chNN_*.py``) is importable from
here. A check raises ``CheckFailed`` (an ``AssertionError``) with a message that teaches,
and lets ``NotImplementedError`` from an untouched stub through unchanged.
"""

import importlib
import pkgutil

from autograder.checks.core import CheckFailed, ForbiddenCall

__all__ = ["CheckFailed", "ForbiddenCall"]

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name.startswith("ch"):
        _module = importlib.import_module(f"{__name__}.{_info.name}")
        for _name in dir(_module):
            if _name.startswith("check_") and _name not in __all__:  # a check re-exported by a second module
                globals()[_name] = getattr(_module, _name)
                __all__.append(_name)

"""The checks called by the labs' test cells: ``check_<exercise>(candidate, seed=0)``.

Every ``check_*`` function defined in a lab's package (``lab02_self_attention/``, ...) is
importable from here; ``kit/`` holds what the checks are made of. A check raises
``CheckFailed`` (an ``AssertionError``) with a message that teaches, and lets
``NotImplementedError`` from an untouched stub through unchanged.
"""

import importlib
import pkgutil

from autograder.checks.kit.failures import CheckFailed, ForbiddenCall

__all__ = ["CheckFailed", "ForbiddenCall"]

for _lab in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not (_lab.ispkg and _lab.name.startswith("lab")):
        continue
    _package = importlib.import_module(f"{__name__}.{_lab.name}")
    for _info in sorted(pkgutil.iter_modules(_package.__path__), key=lambda m: m.name):
        _module = importlib.import_module(f"{_package.__name__}.{_info.name}")
        for _name in dir(_module):
            _value = getattr(_module, _name)
            if _name.startswith("check_") and getattr(_value, "__module__", None) == _module.__name__:
                globals()[_name] = _value
                __all__.append(_name)

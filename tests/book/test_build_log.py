"""Does the book's build print its result last, with none of the notices nobody acts on: a kernel
"running over TCP without encryption" (once per lecture before tools/ipython_kernel_config.py) or
setuptools' deprecation warnings? A build from the execution cache starts no kernel: the kernel's
side is also checked on a kernel of its own, and the wheel's build, in tests/test_build_noise.py."""

from __future__ import annotations

from pathlib import Path

from ._book import BUILD_LOG

NOISE = ["without encryption", "BuildBackendWarning", "SetuptoolsDeprecationWarning"]


def test_the_build_log_is_quiet_and_ends_with_the_result(built_site: Path):
    log = BUILD_LOG.read_text()
    assert not [word for word in NOISE if word in log], [
        line for line in log.splitlines() if any(word in line for word in NOISE)
    ][:5]
    tail = "\n".join(log.strip().splitlines()[-8:])
    assert "_build/html/index.html" in tail, tail

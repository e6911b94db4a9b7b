"""Shared by every test folder: the tests are shared out between pytest-xdist's processes a file
at a time. ``tests`` is a package (every folder has its ``__init__.py``), so a test imports a
helper module by its full name (``from tests.grading.helpers import ...``), never through
``sys.path``.

``make test`` runs the suite on ``TEST_WORKERS`` processes (``pytest -n 2``): most tests wait
on a kernel, a sandbox or a browser for much of their time, so two at once nearly halve the
wall time on two cores. The tests of one file run in one process, so a module's fixture (a
class graded once for all its tests) runs once; the book's tests share one build (a session
fixture), so the files of ``tests/book`` go to one process together.
"""

TOGETHER = ("tests/book/",)  # folders whose files share a session fixture


def pytest_xdist_make_scheduler(config, log):
    """A scheduler that gives each process whole files (whole folders for ``TOGETHER``)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByFile(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return next((folder for folder in TOGETHER if path.startswith(folder)), path)

    return ByFile(config, log)

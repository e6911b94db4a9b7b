"""The hub tests: their marker, and their helper modules importable (tests/hub/ on sys.path)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def pytest_configure(config):
    config.addinivalue_line("markers", "hub: starts a JupyterHub as root with Linux accounts of its own; run it "
                                       "alone (pytest -m hub), not beside grading tests")

"""The hub tests: their marker."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "hub: starts a JupyterHub as root with Linux accounts of its own; run it "
        "alone (pytest -m hub), not beside grading tests",
    )

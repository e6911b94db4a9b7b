"""Does ``autograder.checks`` give every lab's checks, while the grading pipeline, which reads
only their names and the kit, runs without torch?"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from autograder import checks


def test_the_names_read_from_the_sources_are_the_checks_loaded() -> None:
    """Is each ``check_*`` that the package binds named by ``names()`` (which reads the labs'
    sources), and nothing else? Intake screening decides with those names."""
    loaded = {name for name in checks.__all__ if name.startswith("check_")}
    assert len(loaded) >= 40
    assert checks.names() == loaded
    assert all(callable(getattr(checks, name)) for name in loaded)


@pytest.mark.parametrize("first", ["check_relu", "lab00_warmup"])
def test_the_pipeline_and_the_names_import_no_torch_and_a_check_does(first: str) -> None:
    """Is torch left out of the grading pipeline's imports and of intake screening (which
    flags a cell that rebinds a check), and imported by the first use of a check or of a
    lab's package, with every lab's checks?"""
    script = textwrap.dedent(f"""
        import sys
        import autograder.grading.grader.pipeline
        from autograder import checks
        from autograder.grading.grader.intake.screening import patches_checks
        names, flagged = checks.names(), patches_checks("check_relu = print")
        print("torch" in sys.modules, len(names), flagged)
        checks.{first}
        print("torch" in sys.modules, all(name in vars(checks) for name in names))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    before, after = out.stdout.split("\n")[:2]
    assert before == f"False {len(checks.names())} True"
    assert after == "True True"

"""Do the hub's files agree with the course and with the guide, without starting a hub?"""

from __future__ import annotations

import grp
import os
import pwd
import re
from pathlib import Path
from types import SimpleNamespace

from traitlets.config.loader import PyFileConfigLoader

from tests.hub import hub_helpers as hh

HUB = hh.REPO / "hub"
BOOK_AND_TESTS = {
    "jupyter-book",
    "sphinx-mathjax-offline",
    "sphinxcontrib-bibtex",
    "selenium",
    "selenium-axe-python",
    "pytest",
    "pytest-xdist",
    "ruff",
    "mypy",
    "pre-commit",
    "transformers",
}


def _pins(path: Path) -> dict[str, str]:
    return {m.group(1).lower(): m.group(2) for m in re.finditer(r"^([A-Za-z0-9_.-]+)==(\S+)", path.read_text(), re.M)}


def test_hub_pins_are_the_course_pins():
    """Does hub/requirements.txt pin each package at the version requirements.txt pins, adding only JupyterHub,
    and leaving out only what builds the book or tests the course (grading on the hub needs the rest)?"""
    hub, course = _pins(HUB / "requirements.txt"), _pins(hh.REPO / "requirements.txt")
    assert set(hub) - set(course) == {"jupyterhub"}
    assert set(course) - set(hub) == BOOK_AND_TESTS
    assert {name: v for name, v in hub.items() if course.get(name, v) != v} == {}
    assert "-e" not in (HUB / "requirements.txt").read_text().split()  # the package comes as a wheel


def test_the_guide_blocks_are_the_steps_the_hub_test_runs():
    """Is every marked block of the guide's hub section a step of the end-to-end test, in the guide's
    order, run by a named role, and do the names block's names match the ones the test sets?"""
    blocks = hh.blocks()
    assert [b.name for b in blocks if b.role != "hub-names"] == list(hh.STEPS)
    assert {b.role for b in blocks} <= {"hub-names", *hh.ROLES}
    assert tuple(hh.names_block()) == hh.NAMES
    used = set(re.findall(r"\$\{?([A-Z_]+)", "\n".join(b.code for b in blocks if b.role != "hub-names")))
    assert used <= {*hh.NAMES, "STUDENT"}, used - {*hh.NAMES, "STUDENT"}


def test_block_parser_reads_class_and_name():
    """Does the parser take a block's role from its class and skip code blocks without a hub class?"""
    text = (
        "```{code-block} bash\n:class: hub-root\n:name: one\necho 1\n```\n\n"
        "```{code-block} bash\n:caption: other\necho 2\n```\n"
    )
    assert hh.blocks(text) == [hh.Block("one", "hub-root", "echo 1\n")]


def _config(env: dict[str, str], monkeypatch) -> SimpleNamespace:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    loader = PyFileConfigLoader("jupyterhub_config.py", path=str(HUB))
    return SimpleNamespace(config=loader.load_config())


def test_hub_config_gives_students_the_student_settings_only(monkeypatch):
    """Does the hub's pre-spawn hook give a student's server the student's Jupyter settings, and an
    instructor's (a member of the instructors' group) the course folder as its root, leaving the
    shared environment dict alone?"""
    me = pwd.getpwuid(os.getuid()).pw_name
    instructors = grp.getgrgid(os.getgid()).gr_name  # this account's group: its owner is an "instructor"
    cfg = _config(
        {"COURSE_ENV": "/opt/env", "COURSE_ROOT": "/srv/course", "COURSE_INSTRUCTORS": instructors}, monkeypatch
    ).config
    assert cfg.PAMAuthenticator.open_sessions is False
    assert cfg.Spawner.cmd == ["/opt/env/bin/jupyterhub-singleuser"]
    assert instructors in cfg.PAMAuthenticator.allowed_groups
    shared = cfg.Spawner.environment
    hook = cfg.Spawner.pre_spawn_hook

    student = SimpleNamespace(user=SimpleNamespace(name="no-such-account-xyz"), environment=shared)
    hook(student)
    settings = Path(student.environment["JUPYTER_CONFIG_PATH"])
    assert (settings / "labconfig" / "page_config.json").is_file(), settings
    assert "JUPYTER_CONFIG_PATH" not in shared

    assert not hasattr(student, "notebook_dir")  # a student's server opens on their home

    teacher = SimpleNamespace(user=SimpleNamespace(name=me), environment=shared)
    hook(teacher)
    assert "JUPYTER_CONFIG_PATH" not in teacher.environment
    assert teacher.notebook_dir == "/srv/course"  # Formgrader needs the course inside the server's root

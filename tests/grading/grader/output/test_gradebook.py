"""The gradebook's one lock: a path beside an SQLite gradebook that every process of the course
shares, PostgreSQL's advisory lock for a server; and processes that open the gradebook at the
same moment really take turns (what one holds, the other waits for), on both."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograder.grading.grader.output import gradebook

HOLDER = textwrap.dedent(
    """
    import sys, time
    from nbgrader.api import Gradebook
    from autograder.grading.grader.output import gradebook
    url, lock, log, name = sys.argv[1:]
    with gradebook.turns(lock):
        open(log + ".ready." + name, "w").close()
        while not all(__import__("os").path.exists(log + ".ready." + n) for n in ("a", "b")):
            time.sleep(0.01)
        gb = Gradebook(url, "course")
        with open(log, "a") as out:
            out.write(f"{name} in {time.time()}\\n")
        time.sleep(1.0)
        with open(log, "a") as out:
            out.write(f"{name} out {time.time()}\\n")
        gb.close()
    """
)


@pytest.fixture
def scripts_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """This Python's scripts first on PATH, as grading puts them (nbgrader's Gradebook runs ``alembic``)."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")


def test_the_lock_is_one_path_beside_an_sqlite_gradebook_and_the_database_for_a_server() -> None:
    assert gradebook.lock_for("sqlite:////course/gradebook.db") == "/course/gradebook.db.lock"
    url = "postgresql+psycopg2://grader@db.example.org/course"
    assert gradebook.lock_for(url) == url
    assert gradebook.lock_for("mysql://grader@db/course") == ""  # no turns: nothing patched


def _turns(url: str, lock: str, tmp_path: Path) -> list[tuple[str, str, float]]:
    log = tmp_path / "log"
    procs = [
        subprocess.Popen([sys.executable, "-c", HOLDER, url, lock, str(log), name], stderr=subprocess.PIPE, text=True)
        for name in ("a", "b")
    ]
    for proc in procs:
        assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    return [(w[0], w[1], float(w[2])) for w in (line.split() for line in log.read_text().splitlines())]


def _no_overlap(events: list[tuple[str, str, float]]) -> None:
    order = [(name, what) for name, what, _ in sorted(events, key=lambda e: e[2])]
    assert order in (
        [("a", "in"), ("a", "out"), ("b", "in"), ("b", "out")],
        [("b", "in"), ("b", "out"), ("a", "in"), ("a", "out")],
    ), order


def test_processes_take_turns_at_an_sqlite_gradebook(tmp_path: Path, scripts_on_path: None) -> None:
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    gradebook.opened(url, "course").close()  # made before the two race for it
    _no_overlap(_turns(url, gradebook.lock_for(url), tmp_path))
    assert (tmp_path / "gradebook.db.lock").is_file()


def test_processes_take_turns_at_a_postgresql_gradebook(
    tmp_path: Path, postgres_url: str, scripts_on_path: None
) -> None:
    gradebook.opened(postgres_url, "course").close()
    _no_overlap(_turns(postgres_url, gradebook.lock_for(postgres_url), tmp_path))
    (tmp_path / "free").mkdir()
    events = _turns(postgres_url, "", tmp_path / "free")
    ins = sorted(t for _, what, t in events if what == "in")
    outs = sorted(t for _, what, t in events if what == "out")
    assert ins[1] < outs[0]  # without the lock they overlap: the turns above were the lock's doing


def test_a_new_gradebook_records_the_version_the_alembic_command_names(tmp_path: Path, scripts_on_path: None) -> None:
    """Is the schema version read in this process the one nbgrader's own ``alembic heads``
    command names, and is it what a gradebook opened new records?"""
    from nbgrader import api
    from sqlalchemy import create_engine, text

    command = gradebook._nbgrader_alembic_version or api.get_alembic_version
    assert command is not gradebook.alembic_head
    assert gradebook.alembic_head() == command()
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with gradebook.opened(url, "course"):
        pass
    assert api.get_alembic_version is gradebook.alembic_head
    with create_engine(url).connect() as connection:
        recorded = connection.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    assert recorded == [command()]


def _recorded(url: str) -> dict[str, dict[str, list[str]]]:
    """Every lab in the gradebook at ``url``: its notebooks' graded and locked cells, by name."""
    from nbgrader.api import Gradebook

    with Gradebook(url, "course") as gb:
        return {
            a.name: {
                nb.name: sorted(
                    [f"grade {c.name} {c.max_score}" for c in nb.grade_cells]
                    + [f"source {c.name} {c.checksum}" for c in nb.source_cells]
                )
                for nb in a.notebooks
            }
            for a in gb.assignments
        }


def test_a_class_of_every_lab_records_them_in_one_nbgrader_process(tmp_path: Path, monkeypatch) -> None:
    """Does a new gradebook get every lab of the course, cell for cell as one nbgrader process a
    lab records them, from a single nbgrader process?"""
    from autograder.grading import course as course_module
    from tests.grading.helpers import REPO

    root = tmp_path / "course"
    root.mkdir()
    (root / "nbgrader_config.py").write_text((REPO / "nbgrader_config.py").read_text())
    for lab in ("00-warmup", "02-self-attention"):
        (root / "solutions").mkdir(exist_ok=True)
        shutil.copytree(REPO / "solutions" / lab, root / "solutions" / lab)
    calls: list[tuple[str, ...]] = []
    real = course_module.nbgrader

    def counted(where: Path, *args: str, **kwargs):
        calls.append(args)
        return real(where, *args, **kwargs)

    monkeypatch.setattr(course_module, "nbgrader", counted)
    together = f"sqlite:///{tmp_path / 'together.db'}"
    gradebook.ensure_labs(root, ["00-warmup", "02-self-attention"], together, "course", tmp_path / "s1")
    assert [args[:2] for args in calls] == [("generate_assignment", "*")]
    apart = f"sqlite:///{tmp_path / 'apart.db'}"
    for lab in ("00-warmup", "02-self-attention"):
        gradebook.ensure_labs(root, [lab], apart, "course", tmp_path / "s2")
    assert [args[1] for args in calls[1:]] == ["00-warmup", "02-self-attention"]
    recorded = _recorded(together)
    assert set(recorded) == {"00-warmup", "02-self-attention"} and all(recorded.values())
    assert recorded == _recorded(apart)

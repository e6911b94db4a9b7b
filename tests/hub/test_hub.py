"""Does the guide's hub section, followed word for word, give a course on a real JupyterHub that
grades each student what they earned and keeps students out of each other's work and the course?

One run (a module fixture) does what the guide says, with the commands of its marked blocks
(``hub_helpers.STEPS``), each as the account the block names: two student accounts and an
instructor with per-run names (removed at teardown), JupyterHub from the course's shared
environment with configurable-http-proxy, PAM logins without sessions, on the loopback. The
instructor releases lab 00; one student fetches, answers both exercises and submits from a
terminal; the other logs in through the hub's page in Chromium, fetches with the Assignment
List, answers one exercise in JupyterLab and submits with the Assignment List. The instructor
collects, grades with ``python -m autograder grade`` and releases the feedback; both fetch it.
The tests then look at what each got and at what each could reach.

The shared environment is kept between runs (``ENV_CACHE``, one per content of
hub/requirements.txt), so the guide's ``pip install`` finds everything there after the first
run (which builds it in about a minute); the course's wheel is built and installed each run.
Root only (it creates accounts); skips where jupyterhub, configurable-http-proxy or Chromium
are absent (``.ci/run`` installs them).
Run it alone (``pytest -m hub``): it takes a few minutes and grades with the sandbox.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

from autograder.grading.grader.verdict import into_notebook as verdicts
from tests import chromium
from tests.hub import hub_helpers as hh
from tests.hub.hub_client import HubUser

LAB = "00-warmup"
ENV_CACHE = Path("/var/cache/transformer-course-hub-test")
TIMEOUT = 90  # seconds to wait for the hub, a server, a page or a button
INSTRUCTOR_TOOLS = [
    "@jupyter/nbgrader:formgrader",
    "@jupyter/nbgrader:create-assignment",
    "@jupyter/nbgrader:course-list",
]


@dataclass
class Run:
    base: str  # the hub's address
    names: dict[str, str]
    instructor: str
    students: tuple[str, str]  # (the terminal's, the browser's)
    passwords: dict[str, str]
    log: Path
    menu: list[str] = field(default_factory=list)  # the browser student's Nbgrader menu
    hub: subprocess.Popen | None = None

    def user(self, name: str) -> HubUser:
        return HubUser(self.base, name, self.passwords[name], timeout=TIMEOUT)


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "creates Linux accounts and runs JupyterHub's PAM login: run as root"
    if importlib.util.find_spec("jupyterhub") is None:
        return "jupyterhub is not installed (pip install -r hub/requirements.txt; .ci/run does)"
    if shutil.which("configurable-http-proxy") is None:
        return "configurable-http-proxy is not installed (npm install --global configurable-http-proxy; .ci/run does)"
    for tool in ("python3.11", "useradd", "runuser", "bwrap", "git"):
        if shutil.which(tool, path=hh.SYSTEM_PATH) is None:
            return f"{tool} is not installed on the system's PATH"
    if chromium.find() is None:
        return chromium.SKIP_REASON
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _course_repo(dest: Path, owner: str) -> None:
    """A git repository holding this work tree's files (tracked and new, as they are now), owned by ``owner``."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=hh.REPO, check=True, capture_output=True, text=True
    ).stdout.split("\0")
    for name in filter(None, files):
        if (hh.REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(hh.REPO / name, dest / name)
    git = ["git", "-c", "user.name=hub test", "-c", "user.email=hub-test@example.org", "-C", str(dest)]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "the course"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    subprocess.run(["chown", "-R", f"{owner}:", str(dest)], check=True)


def _solution(cell_id: str) -> str:
    nb = nbformat.read(hh.REPO / "solutions" / LAB / f"{LAB}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == cell_id)
    return "\n".join(
        line for line in cell.source.splitlines() if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line
    )


def _answer(path: Path, cell_ids: list[str]) -> None:
    """Fill the exercises ``cell_ids`` of the fetched notebook at ``path`` with the solutions (keeping its owner)."""
    st = path.stat()
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") in cell_ids:
            cell.source = _solution(cell.metadata.nbgrader.grade_id)
    nbformat.write(nb, path)
    os.chown(path, st.st_uid, st.st_gid)


def _start_hub(run: Run) -> None:
    """The guide's hub-start block as root, in the background (the hub is a long-running server)."""
    ports = {k: f"http://127.0.0.1:{_free_port()}" for k in ("HUB_INTERNAL_URL", "HUB_PROXY_API_URL")}
    args, env = hh.command(hh.step("hub-start"), run.names, HUB_BIND_URL=run.base, **ports)
    with open(run.log.with_name("hub.log"), "w") as out:
        run.hub = subprocess.Popen(
            args, env={**env, "HOME": "/root"}, cwd="/", stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        assert run.hub.poll() is None, f"the hub exited:\n{run.log.with_name('hub.log').read_text()[-4000:]}"
        try:
            with socket.create_connection(("127.0.0.1", int(run.base.rsplit(":", 1)[1])), timeout=2):
                pass
            import urllib.request

            urllib.request.urlopen(f"{run.base}/hub/api", timeout=5).read()
            return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"no hub at {run.base}:\n{run.log.with_name('hub.log').read_text()[-4000:]}")


def _wait(browser, condition, message: str):
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(browser, TIMEOUT).until(condition)
    except TimeoutException:
        shot = hh.REPO / "_build" / "screenshots" / "hub-failure.png"
        shot.parent.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(shot))
        raise AssertionError(f"{message} (after {TIMEOUT} s; screenshot in {shot})") from None


def _menu(browser, name: str) -> dict:
    """Open the main menu ``name``; its visible entries, label to element."""
    from selenium.webdriver.common.by import By

    item = _wait(
        browser,
        lambda b: next(
            (i for i in b.find_elements(By.CSS_SELECTOR, "#jp-menu-panel .lm-MenuBar-item") if i.text.strip() == name),
            None,
        ),
        f"no {name} menu",
    )
    item.click()
    entries = _wait(
        browser,
        lambda b: [e for e in b.find_elements(By.CSS_SELECTOR, ".lm-Menu .lm-Menu-item") if e.is_displayed()],
        f"the {name} menu did not open",
    )
    return {e.find_element(By.CSS_SELECTOR, ".lm-Menu-itemLabel").text.strip(): e for e in entries}


def _button(browser, label: str):
    from selenium.webdriver.common.by import By

    return _wait(
        browser,
        lambda b: next(
            (
                e
                for e in b.find_elements(By.XPATH, f"//button[normalize-space()='{label}']")
                if e.is_displayed() and e.is_enabled()
            ),
            None,
        ),
        f"no {label} button in the Assignment List",
    )


PASTE = """
const [editor, text] = arguments;
const data = new DataTransfer();
data.setData('text/plain', text);
editor.dispatchEvent(new ClipboardEvent('paste', {clipboardData: data, bubbles: true, cancelable: true}));
"""


def _browser_student(run: Run, name: str, profile: Path) -> None:
    """Log in on the hub's page, fetch with the Assignment List, answer relu in JupyterLab, save, submit."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser = chromium.start(profile, "1400,1000", TIMEOUT)
    try:
        browser.get(f"{run.base}/hub/login")
        browser.find_element(By.ID, "username_input").send_keys(name)
        browser.find_element(By.ID, "password_input").send_keys(run.passwords[name])
        browser.find_element(By.ID, "login_submit").click()
        entries = _menu(browser, "Nbgrader")
        run.menu = list(entries)
        entries["Assignment List"].click()
        _button(browser, "Fetch").click()
        _button(browser, "Submit")  # the lab is fetched

        notebook = hh.home(name) / LAB / f"{LAB}.ipynb"
        browser.get(f"{run.base}/user/{name}/lab/tree/{LAB}/{LAB}.ipynb")
        cells = ".jp-NotebookPanel .jp-Notebook .jp-Cell"
        _wait(browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, cells)) > 5, "the lab did not open")
        editor = browser.find_elements(By.CSS_SELECTOR, cells)[4].find_element(By.CSS_SELECTOR, ".cm-content")
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", editor)
        editor.click()
        editor.send_keys(Keys.CONTROL, "a")
        browser.execute_script(PASTE, editor, _solution("relu"))
        editor.send_keys(Keys.CONTROL, "s")
        _wait(
            browser,
            lambda b: (
                "torch.where" in notebook.read_text()
                or "x > 0" in notebook.read_text()
                or _solution("relu").splitlines()[-1].strip() in notebook.read_text()
            ),
            "the answer was not saved",
        )

        _menu(browser, "Nbgrader")["Assignment List"].click()
        _button(browser, "Submit").click()
        _button(browser, "Fetch Feedback")  # the lab is submitted
    finally:
        browser.quit()


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Iterator[Run]:
    """The guide's hub section, run end to end; everything it made is removed afterwards."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    prefix = "tc" + secrets.token_hex(3)
    instructor, students = f"{prefix}-ins", (f"{prefix}-s1", f"{prefix}-s2")
    base = Path("/var/tmp") / prefix  # not /tmp: the sandbox has a /tmp of its own
    base.mkdir(mode=0o755)
    digest = __import__("hashlib").sha256((hh.REPO / "hub" / "requirements.txt").read_bytes()).hexdigest()[:12]
    ENV_CACHE.mkdir(mode=0o755, parents=True, exist_ok=True)
    names = {
        "COURSE_ROOT": str(base / "course"),
        "COURSE_ENV": str(ENV_CACHE / f"env-{digest}"),
        "COURSE_REPO": str(base / "repo"),
        "COURSE_INSTRUCTORS": f"{prefix}-instructors",
        "COURSE_STUDENTS": f"{prefix}-students",
        "NBGRADER_EXCHANGE": str(base / "exchange"),
        "HUB_DIR": str(base / "hub"),
        "INSTRUCTOR": instructor,
        "LAB": LAB,
    }
    log = hh.REPO / "_build" / "hub-test" / "steps.log"  # each step's output and time; hub.log beside it
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    passwords = {u: secrets.token_urlsafe(12) for u in (instructor, *students)}
    run = Run(f"http://127.0.0.1:{_free_port()}", names, instructor, students, passwords, log)
    try:
        for user in (instructor, *students):  # homes open to all, as many distributions make them
            subprocess.run(
                ["useradd", "--create-home", "--key", "HOME_MODE=0755", "--shell", "/bin/bash", "--user-group", user],
                check=True,
                capture_output=True,
            )
        subprocess.run(
            ["chpasswd"],
            input="".join(f"{u}:{p}\n" for u, p in passwords.items()),
            text=True,
            check=True,
            capture_output=True,
        )
        (base / "repo").mkdir()
        _course_repo(base / "repo", instructor)

        hh.run("hub-groups", names, log=log)
        for student in students:
            hh.run("hub-student-account", names, log=log, STUDENT=student)
        hh.run("hub-clone", names, instructor, log=log)
        # One try per index and package: where PyTorch's index cannot be reached (these machines, CI),
        # pip's five retries with back-off cost seconds per package, over 15 minutes in all.
        hh.run("hub-env", names, log=log, PIP_RETRIES="0")
        hh.run("hub-wheel", names, instructor, log=log)
        hh.run("hub-install", names, log=log)
        _start_hub(run)
        hh.run("hub-formgrader", names, instructor, log=log)
        hh.run("hub-release", names, instructor, log=log)

        terminal, browser = students
        hh.run("hub-fetch", names, terminal, log=log)
        _answer(hh.home(terminal) / LAB / f"{LAB}.ipynb", ["relu", "mean_squared_error"])
        hh.run("hub-submit", names, terminal, log=log)
        _browser_student(run, browser, tmp_path_factory.mktemp("chromium-profile"))

        hh.run("hub-grade", names, instructor, log=log)
        for student in students:
            hh.run("hub-feedback", names, student, log=log)
        yield run
    finally:
        _teardown(run, base, prefix)


def _teardown(run: Run, base: Path, prefix: str) -> None:
    """Stop the hub (it stops the servers), then remove the per-run accounts, groups and folders."""
    import pwd

    if run.hub is not None:
        try:
            os.killpg(run.hub.pid, signal.SIGTERM)
            run.hub.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(run.hub.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for user in (run.instructor, *run.students):
        try:
            hh.kill_processes_of(pwd.getpwnam(user).pw_uid)
        except KeyError:
            continue
        subprocess.run(["userdel", "--remove", user], capture_output=True)
    for group in (f"{prefix}-instructors", f"{prefix}-students"):
        subprocess.run(["groupdel", group], capture_output=True)
    shutil.rmtree(base, ignore_errors=True)


def _grades(run: Run) -> dict[str, tuple[float, float]]:
    text = (Path(run.names["COURSE_ROOT"]) / "grades.csv").read_text()
    return {
        row["student_id"]: (float(row["score"]), float(row["max_score"]))
        for row in csv.DictReader(io.StringIO(text))
        if row["lab"] == LAB
    }


def _feedback(student: str) -> Path:
    found = sorted((hh.home(student) / LAB / "feedback").glob(f"*/{LAB}.html"))
    assert found, f"no feedback fetched into {hh.home(student) / LAB / 'feedback'}"
    return found[-1]


def test_each_student_gets_what_they_earned(run):
    """Does grading the collected submissions give the terminal student full marks and the browser
    student the points of the one exercise answered, and does each fetch their own feedback?"""
    terminal, browser = run.students
    assert _grades(run) == {terminal: (5.0, 5.0), browser: (2.0, 5.0)}
    assert verdicts.PASSED in _feedback(terminal).read_text()  # the independent check's verdict
    assert "check_mean_squared_error" in _feedback(browser).read_text()
    assert "BEGIN HIDDEN TESTS" not in _feedback(browser).read_text()


def test_students_get_the_student_settings_and_the_instructor_formgrader(run):
    """Is Formgrader off for a student (menu, plugins, server route) and on, bound to the course, for the instructor?"""
    terminal, browser = run.students
    assert "Assignment List" in run.menu and "Formgrader" not in run.menu, run.menu
    student = run.user(terminal)
    student.start()
    disabled = _page_config(student)["disabledExtensions"]
    assert all(tool in disabled for tool in INSTRUCTOR_TOOLS), disabled
    assert student.get("/formgrader")[0] == 404

    teacher = run.user(run.instructor)
    teacher.start()
    assert not [t for t in INSTRUCTOR_TOOLS if t in _page_config(teacher)["disabledExtensions"]]
    status, body = teacher.get("/formgrader/api/submissions/" + LAB)
    assert status == 200, body
    assert sorted(s["student"] for s in json.loads(body)) == sorted(run.students)


def test_students_run_the_course_wheel(run):
    """Does a student's Python import the course package from the shared environment's own copy of
    the wheel (not an editable install pointing into the instructor's clone)?"""
    env = run.names["COURSE_ENV"]
    found = hh.as_user(
        run.students[0],
        f"{env}/bin/python",
        "-c",
        "import autograder, importlib.metadata as m; print(autograder.__file__);"
        "print(m.distribution('transformer-course').read_text('direct_url.json'))",
    )
    assert found.returncode == 0, found.stderr
    where, origin = found.stdout.split("\n", 1)
    assert where.startswith(f"{env}/lib/") and '"editable": true' not in origin, found.stdout


def _page_config(user: HubUser) -> dict:
    status, page = user.get("/lab")
    assert status == 200, page[-2000:]
    start = page.index(">", page.index('id="jupyter-config-data"')) + 1
    return json.loads(page[start : page.index("</script>", start)])


def test_a_student_reads_nothing_of_another_or_of_the_course(run):
    """Can a student read a classmate's notebook, cache or feedback, or the course's solutions,
    submissions, grades or gradebook? (Each path is readable by its owner: the refusals are the modes'.)"""
    terminal, browser = run.students
    course = Path(run.names["COURSE_ROOT"])
    theirs = [
        hh.home(terminal) / LAB / f"{LAB}.ipynb",
        _feedback(terminal),
        hh.home(terminal) / ".local/share/jupyter/nbgrader_cache",
    ]
    courses = [
        course / "solutions" / LAB / f"{LAB}.ipynb",
        course / "gradebook.db",
        course / "grades.csv",
        course / "submitted" / terminal / LAB / f"{LAB}.ipynb",
    ]
    for owner, paths in ((terminal, theirs), (run.instructor, courses)):
        for path in paths:
            assert hh.as_user(owner, "ls", "-d", str(path)).returncode == 0, f"{owner} cannot reach {path}"
            found = hh.as_user(browser, "ls", "-d", str(path))
            assert found.returncode != 0 and "Permission denied" in found.stderr, f"{browser} reaches {path}"
    assert hh.as_user(browser, "touch", str(course / "submitted" / terminal / LAB / "x")).returncode != 0


def test_formgrader_turned_back_on_by_a_student_reaches_nothing(run):
    """A student who starts a Jupyter server of their own from a terminal (their hub server's settings
    cannot be undone from ~/.jupyter, but this can), with Formgrader on, the whole disk as its root
    and the course's folder and settings named in their nbgrader_config.py: does it serve Formgrader,
    and show no lab, student, submission or grade of the course?"""
    terminal, browser = run.students
    course = run.names["COURSE_ROOT"]
    config = hh.home(browser) / ".jupyter" / "nbgrader_config.py"
    config.parent.mkdir(exist_ok=True)
    config.write_text(
        f"c = get_config()\nc.CourseDirectory.root = {course!r}\nload_subconfig({course + '/nbgrader_config.py'!r})\n"
    )
    subprocess.run(["chown", "-R", f"{browser}:", str(config.parent)], check=True)
    port, token, env = _free_port(), secrets.token_hex(8), run.names["COURSE_ENV"]
    server = subprocess.Popen(
        [
            "runuser",
            "-u",
            browser,
            "--",
            "env",
            "-i",
            f"HOME={hh.home(browser)}",
            f"PATH={env}/bin:{hh.SYSTEM_PATH}",
            f"{env}/bin/jupyter",
            "server",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            f"--IdentityProvider.token={token}",
            "--ServerApp.root_dir=/",
        ],
        cwd=hh.home(browser),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        user = _Local(f"http://127.0.0.1:{port}", token)
        user.wait()
        status, page = user.get("/formgrader")
        assert status != 404, "Formgrader is not on in the student's server: the test would show nothing"
        for path in ("assignments", "students", f"submissions/{LAB}", "grades"):
            status, body = user.get(f"/formgrader/api/{path}")
            assert terminal not in body and "BEGIN HIDDEN TESTS" not in body, body[:2000]
            assert f'"{LAB}"' not in body, body[:2000]
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


class _Local:
    """A Jupyter server on the loopback, reached with its token."""

    def __init__(self, url: str, token: str):
        self.url, self.token = url, token

    def get(self, path: str) -> tuple[int, str]:
        import urllib.error
        import urllib.request

        req = urllib.request.Request(f"{self.url}{path}", headers={"Authorization": f"token {self.token}"})
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT) as reply:
                return reply.status, reply.read().decode(errors="replace")
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode(errors="replace")

    def wait(self) -> None:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            try:
                if self.get("/api/status")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"the student's own server did not start within {TIMEOUT} s")

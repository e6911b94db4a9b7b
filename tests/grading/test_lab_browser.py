"""Does ``make lab`` give a student a working JupyterLab with a student's tools only, and an
instructor's ``jupyter lab`` keep Formgrader?

The student's server is started exactly as ``make lab`` starts it
(``python -m autograder lab DIR``, here with a free port, no browser and a known token) on a
temporary workspace; headless Chromium then works through lab 02 as a student would. The
instructor's server is ``jupyter lab`` at a temporary copy of the course root. Servers are
stopped by their process group. The browser cannot reach any other host.

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them); where they
are missing the browser tests skip and say so.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from autograder.grading import course
from tests import chromium

REPO = Path(__file__).resolve().parents[2]
LAB = "02-self-attention"
TOKEN = "course-test-token"
TIMEOUT = 40  # seconds to wait for a server, a page, a kernel or a validation
INSTRUCTOR_ENTRIES = ["Formgrader", "Course List", "Create assignment"]  # entries of the Nbgrader menu
CELLS = ".jp-NotebookPanel .jp-Notebook .jp-Cell"


@dataclass
class Server:
    url: str
    proc: subprocess.Popen


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(tmp: Path) -> dict[str, str]:
    """This environment without an activated venv, with Jupyter's user folders in ``tmp`` (not ~/.jupyter)."""
    env = {k: v for k, v in os.environ.items() if k not in ("JUPYTER_CONFIG_PATH", "VIRTUAL_ENV")}
    scripts = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != scripts)
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTERLAB_SETTINGS_DIR", "JUPYTERLAB_WORKSPACES_DIR"):
        env[name] = str(tmp / name.lower())
    return env


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read()


def _start(args: list[str], cwd: Path, port: int, tmp: Path) -> Server:
    """Start a server in its own process group and wait until its API answers."""
    log = tmp / "server.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            args, cwd=cwd, env=_env(tmp), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = Server(f"http://127.0.0.1:{port}", proc)
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            _get(f"{server.url}/api/status?token={TOKEN}")
            return server
        except OSError:
            time.sleep(0.5)
    _stop(server)
    pytest.fail(f"no server on port {port} after {TIMEOUT} s:\n{log.read_text()[-3000:]}")


def _stop(server: Server) -> None:
    """Stop the server by its process id: SIGTERM to its process group, then SIGKILL if it lingers."""
    try:
        os.killpg(server.proc.pid, signal.SIGTERM)
        server.proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(server.proc.pid, signal.SIGKILL)
        server.proc.wait(timeout=5)
    except ProcessLookupError:
        pass


@pytest.fixture(scope="module")
def student(tmp_path_factory) -> Iterator[Server]:
    """`python -m autograder lab DIR`, the command of `make lab`, on a temporary workspace."""
    tmp = tmp_path_factory.mktemp("student")
    port = _free_port()
    args = [
        sys.executable,
        "-m",
        "autograder",
        "lab",
        str(tmp / "workspace"),
        "--no-browser",
        "--port",
        str(port),
        "--token",
        TOKEN,
    ]
    server = _start(args, REPO, port, tmp)
    yield server
    _stop(server)


@pytest.fixture(scope="module")
def instructor(tmp_path_factory) -> Iterator[Server]:
    """`jupyter lab` started by an instructor at (a copy of) the course root."""
    tmp = tmp_path_factory.mktemp("instructor")
    root = tmp / "course"
    root.mkdir()
    shutil.copy2(REPO / "nbgrader_config.py", root)
    for folder in ("solutions", "notebooks"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    port = _free_port()
    args = [
        str(Path(sys.executable).parent / "jupyter"),
        "lab",
        "--no-browser",
        f"--port={port}",
        f"--IdentityProvider.token={TOKEN}",
        *(["--allow-root"] if os.geteuid() == 0 else []),
    ]
    server = _start(args, root, port, tmp)
    yield server
    _stop(server)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Headless Chromium through chromedriver, with a fresh profile and no route to other hosts."""
    driver = chromium.start(tmp_path_factory.mktemp("chromium-profile"), "1400,1000", TIMEOUT)
    yield driver
    driver.quit()


def _wait(browser, condition, message: str, timeout: float = TIMEOUT):
    """Wait until ``condition(browser)`` is truthy; on timeout, fail with ``message`` and keep a screenshot."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(browser, timeout).until(condition)
    except TimeoutException:
        shot = REPO / "_build" / "screenshots" / "lab-failure.png"
        shot.parent.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(shot))
        pytest.fail(f"{message} (after {timeout} s; screenshot in {shot.relative_to(REPO)})")


def _open_menu(browser, menu: str) -> dict:
    """Open the main menu ``menu``; return its visible entries, label to element."""
    from selenium.webdriver.common.by import By

    def item(b):  # an extension's menu may join the bar after the bar is shown
        return next(
            (i for i in b.find_elements(By.CSS_SELECTOR, "#jp-menu-panel .lm-MenuBar-item") if i.text.strip() == menu),
            None,
        )

    _wait(browser, item, f"no {menu} menu in the menu bar").click()
    entries = _wait(
        browser,
        lambda b: [e for e in b.find_elements(By.CSS_SELECTOR, ".lm-Menu .lm-Menu-item") if e.is_displayed()],
        f"the {menu} menu did not open",
    )
    return {e.find_element(By.CSS_SELECTOR, ".lm-Menu-itemLabel").text.strip(): e for e in entries}


def _menu_entries(browser, menu: str) -> list[str]:
    """The labels of the entries of the main menu ``menu`` (opened, then closed)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    labels = list(_open_menu(browser, menu))
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
    return labels


def _menu_entry(browser, menu: str, label: str):
    """The entry ``label`` of the main menu ``menu``, opened."""
    entries = _open_menu(browser, menu)
    assert label in entries, f"no {label} in the {menu} menu: {list(entries)}"
    return entries[label]


def _open_lab(browser, server: Server, path: str = "") -> None:
    """Load JupyterLab (logging in with the token) and wait until its menu bar is there."""
    from selenium.webdriver.common.by import By

    browser.get(f"{server.url}/lab{'/tree/' + path if path else ''}?token={TOKEN}")
    _wait(
        browser,
        lambda b: b.find_elements(By.CSS_SELECTOR, "#jp-menu-panel .lm-MenuBar-item"),
        "JupyterLab did not load",
    )


def _kernel_states(server: Server) -> list[str]:
    """The execution state of each kernel the server runs; ``["busy answering"]`` while the server
    answers 500, as it can for a moment while a kernel starts on a loaded machine (the caller waits
    on: a kernel that never becomes idle still fails it)."""
    try:
        return [k["execution_state"] for k in json.loads(_get(f"{server.url}/api/kernels?token={TOKEN}"))]
    except urllib.error.HTTPError as err:
        if err.code < 500:
            raise
        return ["busy answering"]


def _cell(browser, index: int):
    from selenium.webdriver.common.by import By

    return browser.find_elements(By.CSS_SELECTOR, CELLS)[index]


def _output(browser, index: int) -> str:
    from selenium.webdriver.common.by import By

    return " ".join(o.text for o in _cell(browser, index).find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output"))


def _solution(grade_id: str) -> str:
    """The solution of exercise ``grade_id`` from solutions/, without its BEGIN/END SOLUTION lines."""
    nb = nbformat.read(REPO / "solutions" / LAB / f"{LAB}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    return "\n".join(
        line for line in cell.source.splitlines() if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line
    )


PASTE = """
const [editor, text] = arguments;
const data = new DataTransfer();
data.setData('text/plain', text);
editor.dispatchEvent(new ClipboardEvent('paste', {clipboardData: data, bubbles: true, cancelable: true}));
"""


def test_lab_serves_the_labs(student):
    """Does the server of `python -m autograder lab DIR` serve DIR, holding every released lab?"""
    listing = json.loads(_get(f"{student.url}/api/contents?token={TOKEN}"))
    names = sorted(item["name"] for item in listing["content"] if item["type"] == "directory")
    assert names == course.labs(REPO)
    notebook = json.loads(_get(f"{student.url}/api/contents/{LAB}/{LAB}.ipynb?content=0&token={TOKEN}"))
    assert notebook["type"] == "notebook"


def test_student_server_has_no_instructor_tools(student):
    """Does the student's server disable nbgrader's instructor plugins and serve no Formgrader, keeping Validate?"""
    page = _get(f"{student.url}/lab?token={TOKEN}").decode()
    start = page.index(">", page.index('id="jupyter-config-data"')) + 1
    config = json.loads(page[start : page.index("</script>", start)])
    disabled = set(config["disabledExtensions"])
    assert {f"@jupyter/nbgrader:{p}" for p in ("create-assignment", "formgrader", "course-list")} <= disabled
    assert not {f"@jupyter/nbgrader:{p}" for p in ("validate-assignment", "assignment-list", "menu")} & disabled
    with pytest.raises(urllib.error.HTTPError, match="404"):
        _get(f"{student.url}/formgrader?token={TOKEN}")


def test_student_works_through_lab_02(browser, student):
    """In a student's JupyterLab: does Run All show the stub's error, a pasted solution pass its check,
    Validate report the rest, and the Nbgrader menu hold no instructor entry?"""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    _open_lab(browser, student, f"{LAB}/{LAB}.ipynb")
    _wait(browser, lambda b: len(b.find_elements(By.CSS_SELECTOR, CELLS)) > 5, "lab 02 did not open")
    _wait(browser, lambda b: _kernel_states(student) == ["idle"], "the kernel of lab 02 did not start")
    assert "check_softmax(softmax)" in _cell(browser, 5).text  # the first exercise's test cell

    _menu_entry(browser, "Run", "Run All Cells").click()
    _wait(browser, lambda b: "NotImplementedError" in _output(b, 5), "Run All did not reach the first check")

    editor = _cell(browser, 4).find_element(By.CSS_SELECTOR, ".cm-content")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", editor)
    editor.click()
    editor.send_keys(Keys.CONTROL, "a")
    browser.execute_script(PASTE, editor, _solution("softmax"))
    assert "### BEGIN" not in editor.text and "torch.exp(x - top)" in editor.text
    editor.send_keys(Keys.SHIFT, Keys.ENTER)  # runs the exercise and selects its test cell
    browser.switch_to.active_element.send_keys(Keys.SHIFT, Keys.ENTER)
    _wait(browser, lambda b: "check_softmax passed." in _output(b, 5), "the pasted solution did not pass")

    browser.find_element(By.CSS_SELECTOR, ".validate-button").click()
    dialog = _wait(
        browser,
        lambda b: b.find_elements(By.CSS_SELECTOR, ".jp-Dialog-content"),
        "Validate showed no dialog",
        timeout=2 * TIMEOUT,
    )[0]
    report = dialog.text
    assert "check_single_query_attention" in report and "NotImplementedError" in report, report
    assert "check_softmax(softmax)" not in report, report  # the solved exercise is not listed as failing
    dialog.find_element(By.CSS_SELECTOR, ".jp-Dialog-button").click()

    entries = _menu_entries(browser, "Nbgrader")
    assert "Assignment List" in entries
    assert not [e for e in INSTRUCTOR_ENTRIES if e in entries], entries
    tabs = browser.execute_script(
        "return [...document.querySelectorAll('.jp-SideBar .lm-TabBar-tab')].map(t => t.title + ' ' + t.textContent)"
    )
    assert not [t for t in tabs if "Create Assignment" in t], tabs
    assert not browser.find_elements(By.ID, "nbgrader-create_assignemnt")  # (sic) nbgrader's id


def test_instructor_keeps_formgrader(browser, instructor):
    """In `jupyter lab` at the course root: does the Nbgrader menu offer Formgrader, and Formgrader list the labs?"""
    from selenium.webdriver.common.by import By

    _open_lab(browser, instructor)
    entries = _menu_entries(browser, "Nbgrader")
    assert all(e in entries for e in INSTRUCTOR_ENTRIES), entries
    assert browser.find_elements(By.ID, "nbgrader-create_assignemnt")  # the Create Assignment sidebar

    browser.get(f"{instructor.url}/formgrader/manage_assignments")
    labs = course.labs(REPO)
    _wait(
        browser,
        lambda b: all(lab in b.find_element(By.TAG_NAME, "body").text for lab in labs),
        f"Formgrader did not list {labs}",
    )

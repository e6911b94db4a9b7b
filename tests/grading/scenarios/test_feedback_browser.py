"""In real Chromium, does a hostile submission's script, event handler or ``javascript:`` link
run neither in its feedback page nor in Formgrader's view of it, and does Formgrader's
Autograde button grade nothing, pointing to ``make grade`` instead?

One student is graded for real (``pipeline.grade``: nbgrader, the sandbox, the independent
check) on a temporary course; an instructor's ``jupyter lab`` then runs at that course's root,
serving the feedback page (``/files/feedback/...``, which Jupyter serves with scripts allowed)
and Formgrader. The submission sets ``window.hostile`` from every place it can: a markdown
``<script>``, an ``onerror`` handler, ``javascript:`` links (clicked here), an HTML output's
script and handler, a JavaScript output (and math around a handler, ``\\href`` and ``<script>``).
The feedback page, opened from its file with no network, shows its math as MathML. Images whose
URLs a browser reads as another host's (``/\\127.0.0.2:PORT/...``, a tab inside ``//``, inside
``<mtext>``, in an HTML output) are fetched from nowhere: a second loopback host counts what it is
asked, and the same markup on a page written without the sanitiser shows that it would be asked.
Needs Debian's ``chromium`` and ``chromium-driver``; where they are missing the test skips and says so.
"""

from __future__ import annotations

import http.server
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from autograder.grading.formgrader import MESSAGE
from autograder.grading.grader import grading, pipeline
from autograder.grading.grader.run import bwrap as sandbox
from tests import chromium
from tests.grading.helpers import LAB, make_course, submit, with_cell
from tests.grading.scenarios.hostile_class import feedback_script
from tests.grading.test_lab_browser import TIMEOUT, TOKEN, Server, _free_port, _start, _stop

STUDENT = "mallory"
ELSEWHERE = "127.0.0.2"  # another host to a browser, on this machine's loopback


class Elsewhere(http.server.ThreadingHTTPServer):
    """A server on the other host that records the path of every request it gets."""

    asked: list[str]


class _Record(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.server.asked.append(self.path)  # type: ignore[attr-defined]
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def payloads(port: int) -> dict[str, str]:
    """Markup whose image a browser fetches from the other host, by the path it asks for."""
    return {
        "/md-backslash": f'<img src="/\\{ELSEWHERE}:{port}/md-backslash">',
        "/md-tab": f'<img src="/\t/{ELSEWHERE}:{port}/md-tab">',
        "/md-mtext": f'<math><mtext><img src="/\\{ELSEWHERE}:{port}/md-mtext"></mtext></math>',
        "/html-output": f'<img src="/\\{ELSEWHERE}:{port}/html-output">',
    }


@pytest.fixture(scope="module")
def elsewhere() -> Iterator[Elsewhere]:
    server = Elsewhere((ELSEWHERE, 0), _Record)
    server.asked = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def course(tmp_path_factory, elsewhere: Elsewhere) -> Path:
    """A course with one hostile submission graded, feedback included."""
    if chromium.find() is None:
        pytest.skip(chromium.SKIP_REASON)
    tmp = tmp_path_factory.mktemp("feedback-browser")
    root = make_course(tmp / "course")
    markup = payloads(elsewhere.server_address[1])
    nb = with_cell(feedback_script(), "relu", f"from IPython.display import HTML\nHTML({markup['/html-output']!r})")
    markdown = " ".join(v for k, v in markup.items() if k.startswith("/md-"))
    nb.cells.insert(2, nbformat.v4.new_markdown_cell("Elsewhere: " + markdown))
    submit(tmp / "inbox", STUDENT, nb)
    (outcome,) = pipeline.grade(root, tmp / "inbox", grading.Options(progress=False, sandbox=sandbox.probe() is None))
    assert (outcome.score, outcome.max_score) == (5, 5), outcome
    return root


@pytest.fixture(scope="module")
def server(course: Path, tmp_path_factory) -> Iterator[Server]:
    """An instructor's `jupyter lab` at the course root (Formgrader included)."""
    port = _free_port()
    args = [
        str(Path(sys.executable).parent / "jupyter"),
        "lab",
        "--no-browser",
        f"--port={port}",
        f"--IdentityProvider.token={TOKEN}",
        *(["--allow-root"] if os.geteuid() == 0 else []),
    ]
    started = _start(args, course, port, tmp_path_factory.mktemp("feedback-server"))
    yield started
    _stop(started)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    driver = chromium.start(tmp_path_factory.mktemp("feedback-chromium"), "1200,900", TIMEOUT, reach=(ELSEWHERE,))
    yield driver
    driver.quit()


def _wait(browser, condition, message: str):
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(browser, TIMEOUT).until(condition)
    except TimeoutException:
        pytest.fail(f"{message} (after {TIMEOUT} s)")


def _nothing_ran(browser) -> None:
    """Wait for the page's images to fail (their handlers would have run), click every link the
    submission wrote, and check that no code of the submission set ``window.hostile``."""
    from selenium.webdriver.common.by import By

    _wait(browser, lambda b: b.execute_script("return document.readyState") == "complete", "the page did not load")
    _wait(
        browser,
        lambda b: b.execute_script("return [...document.images].every(i => i.complete)"),
        "the page's images did not settle",
    )
    assert browser.execute_script("return window.hostile") is None
    for text in ("click me", "link"):
        for link in browser.find_elements(By.LINK_TEXT, text):
            browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", link)
            link.click()
    assert browser.execute_script("return window.hostile") is None
    assert browser.find_elements(By.LINK_TEXT, "click me"), "the submission's markdown is not on the page"


def test_the_feedback_page_runs_nothing_of_the_submission(browser, server: Server, elsewhere: Elsewhere) -> None:
    """Opened from the server, does the feedback page show the submission, run none of it, and
    fetch none of its images from another host?"""
    elsewhere.asked.clear()
    browser.get(f"{server.url}/files/feedback/{STUDENT}/{LAB}/{LAB}.html?token={TOKEN}")
    _nothing_ran(browser)
    assert "Elsewhere:" in browser.find_element("tag name", "body").text  # the payloads' cell is on the page
    assert elsewhere.asked == []


def test_the_same_images_unsanitised_are_fetched_from_the_other_host(
    browser, server: Server, course: Path, elsewhere: Elsewhere
) -> None:
    """Control: does the payloads' markup, on a page written without the sanitiser and served
    the same way, make Chromium ask the other host for every one of them?"""
    markup = payloads(elsewhere.server_address[1])
    (course / "feedback" / "unsanitised.html").write_text(f"<!DOCTYPE html><p>{''.join(markup.values())}</p>")
    elsewhere.asked.clear()
    browser.get(f"{server.url}/files/feedback/unsanitised.html?token={TOKEN}")
    _wait(browser, lambda b: set(markup) <= set(elsewhere.asked), f"the other host was asked {elsewhere.asked}")


def test_the_feedback_page_typesets_its_math_offline(browser, course: Path) -> None:
    """Opened from its file with no network (Chromium offline, no route to other hosts), does the
    feedback page show its math typeset as MathML, laid out, with no ``$`` of TeX left in the
    text of its markdown, and load no script (MathJax's from a CDN included)?"""
    page = course / "feedback" / STUDENT / LAB / f"{LAB}.html"
    assert "cdnjs" not in page.read_text() and "<script" not in page.read_text().lower()
    offline = {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.emulateNetworkConditions", offline)
    try:
        browser.get(page.as_uri())
        _wait(browser, lambda b: b.execute_script("return document.readyState") == "complete", "the page did not load")
        maths = browser.execute_script(
            "return [...document.querySelectorAll('.text_cell_render math')].map(m => {"
            "  const r = m.getBoundingClientRect();"
            "  return [r.width, r.height, m.namespaceURI, getComputedStyle(m).display]; })"
        )
        text = browser.execute_script(
            "return [...document.querySelectorAll('.text_cell_render')].map(e => e.innerText).join('\\n')"
        )
    finally:
        browser.execute_cdp_cmd("Network.emulateNetworkConditions", {**offline, "offline": False})
    assert len(maths) >= 5, maths  # the lab's two formulas and the submission's three
    assert all(
        w > 0 and h > 0 and ns == "http://www.w3.org/1998/Math/MathML" and "math" in display
        for w, h, ns, display in maths
    ), maths
    assert "mean_squared_error" in text and "$" not in text, text
    assert browser.execute_script("return window.hostile") is None


def test_formgraders_view_runs_nothing_of_the_submission(
    browser, server: Server, course: Path, elsewhere: Elsewhere
) -> None:
    """Does Formgrader's view of the submission (its own page, scripts and all) run none of it
    and fetch none of its images from another host?"""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "transformer-course") as gb:
        submission = gb.find_submission_notebook(LAB, LAB, STUDENT).id
    elsewhere.asked.clear()
    browser.get(f"{server.url}/formgrader/submissions/{submission}/?token={TOKEN}")
    _wait(
        browser,
        lambda b: "Submission 1 / 1" in b.find_element("tag name", "body").text,
        "Formgrader did not show the submission",
    )
    _nothing_ran(browser)
    assert elsewhere.asked == []


def test_formgraders_autograde_button_points_to_make_grade(browser, server: Server, course: Path) -> None:
    """Does the Autograde button of Manage Submissions grade nothing and say how to grade?"""
    from selenium.webdriver.common.by import By

    autograded = course / "autograded" / STUDENT / LAB / f"{LAB}.ipynb"
    before = autograded.stat().st_mtime_ns
    browser.get(f"{server.url}/formgrader/manage_submissions/{LAB}?token={TOKEN}")
    button = _wait(
        browser, lambda b: b.find_elements(By.CSS_SELECTOR, "td.autograde a"), "Manage Submissions listed no submission"
    )[0]
    button.click()
    dialog = _wait(
        browser,
        lambda b: [d for d in b.find_elements(By.CSS_SELECTOR, "#error-modal") if d.text],
        "the Autograde button showed no dialog",
    )[0]
    assert MESSAGE in dialog.text, dialog.text
    assert autograded.stat().st_mtime_ns == before  # nothing was graded again

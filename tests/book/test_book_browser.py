"""Headless Chromium opens every page of the built site, served on 127.0.0.1.

For each page: the math is rendered by MathJax (no raw TeX left), every image loaded, the
browser logged no error, the sidebar lists every page of the book, and the launch menu
(Colab, Binder) is offered on the labs only. Then the table of
contents is followed by a click and the search box finds pages. Screenshots of the intro
and of a chapter go to ``_build/screenshots/``. The browser cannot reach any other host
(``--host-resolver-rules``), so a page that needs the network fails here, even in CI.

Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them); where
they are missing the tests skip and say so.
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
from pathlib import Path

import pytest

from tests import chromium

from ._book import ROOT, toc_pages

PAGES = toc_pages()
CHAPTER = "book/02-self-attention"  # the chapter page whose screenshot is kept
SCREENSHOTS = ROOT / "_build" / "screenshots"
TIMEOUT = 30  # seconds to wait for a page, MathJax or the search results


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@pytest.fixture(scope="module")
def site_url(built_site):
    """Serve the built site on 127.0.0.1 (search needs http://, not file://)."""
    handler = functools.partial(_QuietHandler, directory=str(built_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Headless Chromium through chromedriver, with a fresh profile and no route to other hosts."""
    driver = chromium.start(tmp_path_factory.mktemp("chromium-profile"), "1280,900", TIMEOUT, console_log=True)
    yield driver
    driver.quit()


def _open(browser, url: str) -> None:
    """Load ``url``, clear the log of the previous page, and wait until MathJax has typeset."""
    browser.get_log("browser")  # drop what the previous page logged
    browser.get(url)
    browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const ready = () => (window.MathJax && MathJax.startup && MathJax.startup.promise)
            ? MathJax.startup.promise.then(() => done(true), () => done(false)) : done(true);
        if (document.readyState === 'complete') ready(); else window.addEventListener('load', ready);
    """)


PAGE_REPORT = """
const article = document.querySelector('article.bd-article') || document.body;
const maths = [...article.querySelectorAll('.math')];
const raw = maths.filter(m => !m.querySelector('mjx-container')).map(m => m.textContent.slice(0, 60));
const prose = article.cloneNode(true);
prose.querySelectorAll('pre, code, mjx-container, .highlight').forEach(n => n.remove());
const images = [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src);
const toc = [...document.querySelectorAll('nav.bd-docs-nav a.reference')].map(a => a.href);
const launch = [...document.querySelectorAll('.dropdown-launch-buttons a[href]')].map(a => a.getAttribute('href'));
return {launch, maths: maths.length, rendered: article.querySelectorAll('mjx-container').length, raw,
        dollars: /\\$\\$|\\\\\\[|\\\\\\(/.test(prose.innerText), broken_images: images, toc,
        title: document.title};
"""


@pytest.mark.parametrize("page", PAGES)
def test_page_renders(browser, site_url, page):
    """Does the page render its math, load every image, log no error, and list every page in its sidebar?"""
    _open(browser, f"{site_url}/{page}.html")
    report = browser.execute_script(PAGE_REPORT)
    errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, f"console errors on {page}: {errors}"
    assert not report["raw"], f"math left as raw TeX on {page}: {report['raw']}"
    assert report["rendered"] >= report["maths"]
    assert not report["dollars"], f"unrendered $$, \\[ or \\( in the text of {page}"
    assert not report["broken_images"], f"images that did not load on {page}: {report['broken_images']}"
    linked = {url.split("#")[0].removeprefix(site_url + "/") for url in report["toc"]}
    missing = [p for p in PAGES if f"{p}.html" not in linked and p != page]
    assert not missing, f"sidebar of {page} lacks {missing}"
    unopenable = [url for url in report["launch"] if re.search(r"\.md(?=$|[?#&])", url)]
    assert not unopenable, f"launch links on {page} to a .md file that Colab/Binder cannot open: {unopenable}"
    if page.startswith("notebooks/"):
        assert any(url.startswith("https://colab.research.google.com/") for url in report["launch"]), page
    if page in ("book/intro", CHAPTER):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(SCREENSHOTS / f"{Path(page).name}.png"))


def test_math_is_rendered_on_notation_page(browser, site_url):
    """Does MathJax, served from the site, typeset the formulas of the notation page?"""
    _open(browser, f"{site_url}/book/notation.html")
    count = browser.execute_script("return document.querySelectorAll('article mjx-container').length")
    assert count >= 10


def test_toc_navigation(browser, site_url):
    """Does clicking an entry of the table of contents open that page?"""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    _open(browser, f"{site_url}/book/intro.html")
    link = browser.find_element(By.CSS_SELECTOR, f'nav.bd-docs-nav a.reference[href$="{Path(CHAPTER).name}.html"]')
    title = link.text
    link.click()
    WebDriverWait(browser, TIMEOUT).until(ec.url_contains(f"{CHAPTER}.html"))
    active = browser.find_element(By.CSS_SELECTOR, "nav.bd-docs-nav li.current.active > a")
    assert active.text == title  # the sidebar marks the page it opened as the current one
    heading = browser.find_element(By.CSS_SELECTOR, "article h1").text
    assert heading.rstrip("#").strip() == title.strip()


def test_search(browser, site_url):
    """Does typing a word into the search box list the pages that contain it?"""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    _open(browser, f"{site_url}/book/intro.html")
    button = next(b for b in browser.find_elements(By.CSS_SELECTOR, "button.search-button__button") if b.is_displayed())
    button.click()
    field = WebDriverWait(browser, TIMEOUT).until(
        ec.visibility_of_element_located((By.CSS_SELECTOR, "#pst-search-dialog input[name=q]"))
    )
    field.send_keys("LayerNorm", Keys.ENTER)
    WebDriverWait(browser, TIMEOUT).until(ec.url_contains("search.html"))
    # Sphinx lists the hits one at a time, 5 ms apart, and says "Search finished" after the
    # last: read the list only then, or a slow machine sees the first few hits only.
    WebDriverWait(browser, TIMEOUT).until(
        ec.text_to_be_present_in_element((By.CSS_SELECTOR, "#search-results p.search-summary"), "Search finished")
    )
    results = browser.find_elements(By.CSS_SELECTOR, "#search-results ul.search li a")
    hrefs = [a.get_attribute("href") for a in results]
    assert any("book/notation.html" in h for h in hrefs), hrefs
    errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors

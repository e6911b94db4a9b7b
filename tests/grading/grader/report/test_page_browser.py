"""In real Chromium, does the report show its tables and plots, does its summary fit the first screen
of a 1280x800 window, and does axe-core find no WCAG 2.1 A/AA violation (the site's own test: the
same rules, the same axe-core) on either copy?

The pages are opened from disk (file://), with JavaScript left as Chromium has it: the report
has none of its own. Needs Debian's ``chromium`` and ``chromium-driver``; where they are missing
the test skips and says so.
"""

from __future__ import annotations

import pytest

from tests import chromium
from tests.book.test_accessibility import AXE_RUN, HEADING_RULES, MUST_RUN, WCAG_TAGS
from tests.grading.grader.report import report_class

SHOWN = """
return {tables: [...document.querySelectorAll('table')].map(t => ({
            caption: t.caption ? t.caption.textContent : '', rows: t.tBodies[0].rows.length,
            headers: t.tHead ? t.tHead.rows[0].cells.length : 0})),
        plots: [...document.querySelectorAll('figure img')].map(i => ({alt: i.alt, width: i.naturalWidth,
            shown: i.getBoundingClientRect().width})),
        scripts: document.scripts.length};
"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    driver = chromium.start(tmp_path_factory.mktemp("report-chromium"), "1280,4000", 60)
    yield driver
    driver.quit()


@pytest.mark.parametrize("copy", ["index.html", "class/index.html"])
def test_report_in_chromium(browser, reported, copy):
    """Are the report's tables and both plots drawn, and does axe-core find no violation?"""
    from selenium_axe_python import Axe

    browser.get((reported.root / "reports" / report_class.LAB / copy).as_uri())
    shown = browser.execute_script(SHOWN)
    assert shown["scripts"] == 0
    assert len(shown["plots"]) == 2 and all(p["width"] > 100 and p["shown"] > 100 for p in shown["plots"]), shown
    assert all(p["alt"] for p in shown["plots"])
    captions = [t["caption"] for t in shown["tables"]]
    assert len(captions) == (5 if copy == "index.html" else 4), captions
    assert all(t["headers"] >= 3 and t["rows"] >= 1 for t in shown["tables"])
    Axe(browser).inject()
    result = browser.execute_async_script(AXE_RUN, WCAG_TAGS, HEADING_RULES)
    assert "error" not in result, result
    assert MUST_RUN <= set(result["rules"]) and result["passes"] > 0
    assert not result["violations"], "\n".join(
        f"{v['id']} ({v['impact']}): {v['help']} at {v['targets'][:3]}" for v in result["violations"]
    )


FIRST_SCREEN = """
const summary = document.getElementById('summary').getBoundingClientRect();
return {top: summary.top, bottom: summary.bottom, height: window.innerHeight, width: window.innerWidth,
        scrolled: window.scrollY, first: document.querySelector('main > :nth-child(2)').id,
        items: document.querySelectorAll('#summary li').length, text: document.getElementById('summary').innerText};
"""


@pytest.fixture(scope="module")
def small_screen(tmp_path_factory):
    driver = chromium.start(tmp_path_factory.mktemp("report-chromium-800"), "1280,1000", 60)
    # the page's viewport itself 1280x800 (the window's size would include the browser's own bars)
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False}
    )
    yield driver
    driver.quit()


@pytest.mark.parametrize("copy", ["index.html", "class/index.html"])
def test_the_summary_is_on_the_first_screen(small_screen, reported, copy):
    """At 1280x800, is the summary the page's first section, wholly on the first screen, with the
    class size, the median and the three most common mistakes (and, with ids, the pairs of students with
    similar answers)?"""
    small_screen.get((reported.root / "reports" / report_class.LAB / copy).as_uri())
    shown = small_screen.execute_script(FIRST_SCREEN)
    assert shown["first"] == "summary" and shown["scrolled"] == 0, shown
    assert (shown["width"], shown["height"]) == (1280, 800), shown
    assert 0 <= shown["top"] and shown["bottom"] <= shown["height"], shown
    assert shown["items"] == 3 and f"{len(reported.planted.students)} students" in shown["text"]
    assert "Median score" in shown["text"]
    assert ("pair of students to look at" in shown["text"]) == (copy == "index.html"), shown["text"]

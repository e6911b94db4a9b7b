"""Debian's Chromium driven by Selenium, for the browser tests of the site and of the labs."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

SKIP_REASON = "Chromium or chromedriver not installed (Debian: apt-get install chromium chromium-driver)"


def find() -> tuple[str, str] | None:
    """(browser, chromedriver) paths, or None where either is missing."""
    browser = next(
        (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None
    )
    driver = shutil.which("chromedriver") or (
        "/usr/bin/chromedriver" if Path("/usr/bin/chromedriver").exists() else None
    )
    return (browser, driver) if browser and driver else None


def start(profile: Path, window: str, timeout: float, console_log: bool = False, reach: tuple[str, ...] = ()) -> Any:
    """Headless Chromium with a fresh profile and no route to other hosts than 127.0.0.1 and
    ``reach`` (the rules map IP addresses too); skips the test where Chromium is absent."""
    found = find()
    if found is None:
        pytest.skip(SKIP_REASON)
    webdriver = pytest.importorskip("selenium.webdriver")
    binary, driver_path = found
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-extensions",
        f"--window-size={window}",
        "--host-resolver-rules=MAP * ~NOTFOUND, " + ", ".join(f"EXCLUDE {host}" for host in ("127.0.0.1", *reach)),
        f"--user-data-dir={profile}",
    ]:
        options.add_argument(arg)
    if console_log:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver_path))
    driver.set_page_load_timeout(timeout)
    driver.set_script_timeout(timeout)
    return driver

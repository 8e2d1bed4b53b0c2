"""The review console in a real browser: Debian's Chromium driven over WebDriver (selenium, with
the system chromedriver: nothing is downloaded). Sign in, search, open a memory, edit it, forget
by query with preview and confirm, restore it, watch the history grow; a screenshot of every page
goes into the test's tmp folder. Skips, saying why, where Chromium is not installed."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_memory.db import Database
from mcp_memory.service import MemoryService

from .conftest import principal
from .http_server import http_server
from .test_http import make_key

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

pytestmark = pytest.mark.skipif(
    not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)),
    reason=f"no browser: {CHROMIUM} and {CHROMEDRIVER} are needed (Debian: apt-get install chromium chromium-driver)")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install '.[test]')")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

ALICE = principal("alice", agent=None, project=None)


@pytest.fixture
def chrome(tmp_path: Path) -> Iterator[webdriver.Chrome]:
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must never fetch a browser or driver
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000",
                f"--user-data-dir={tmp_path / 'profile'}", "--no-first-run", "--disable-extensions"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


class Shots:
    def __init__(self, driver: webdriver.Chrome, folder: Path) -> None:
        self.driver, self.folder, self.n = driver, folder, 0
        folder.mkdir(parents=True, exist_ok=True)

    def __call__(self, name: str) -> None:
        self.n += 1
        height = self.driver.execute_script("return document.documentElement.scrollHeight")
        width = self.driver.get_window_size()["width"]
        self.driver.set_window_size(width, min(max(height + 150, 600), 4000))  # the whole page in the picture
        assert self.driver.save_screenshot(str(self.folder / f"{self.n:02d}-{name}.png"))


def history_length(driver: webdriver.Chrome) -> int:
    return len(driver.find_elements(By.CSS_SELECTOR, ".timeline > li"))


async def test_console_in_chromium(database: Database, db_url: str, service: MemoryService, chrome, tmp_path: Path,
                                   request: pytest.FixtureRequest) -> None:
    for content, tags in (("Alice lives in Paris near the canal", ["home"]),
                          ("Alice prefers green tea in the morning", ["food"]),
                          ("The team chose Kafka for the event bus", ["infra"]),
                          ("The team stopped using RabbitMQ last year", ["infra"])):
        await service.write(ALICE, content, tags=tags, kind="fact")
    key = await make_key(database, "alice", name="reviewer")
    shots = Shots(chrome, tmp_path / "screenshots")
    wait = WebDriverWait(chrome, 30)
    with http_server(db_url) as base:
        chrome.get(f"{base}/ui/")
        assert "/ui/signin" in chrome.current_url
        shots("signin")
        chrome.find_element(By.NAME, "key").send_keys(key + Keys.ENTER)
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "figure.drawn canvas")))  # Chart.js drew
        assert "key:reviewer#" in chrome.page_source
        assert len(chrome.find_elements(By.CSS_SELECTOR, "figure.drawn")) >= 4
        assert chrome.find_elements(By.CSS_SELECTOR, "table.chart-table")  # the table fallback stays
        shots("overview")

        # Keyboard: the first Tab lands on the skip link.
        chrome.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
        assert chrome.switch_to.active_element.get_attribute("class") == "skip"

        chrome.find_element(By.LINK_TEXT, "Search").click()
        box = wait.until(ec.presence_of_element_located((By.NAME, "q")))
        chrome.find_element(By.NAME, "explain").click()
        box.send_keys("where does alice live" + Keys.ENTER)
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "ol.hits a.hit-title")))
        assert "found by" in chrome.page_source
        shots("search")

        chrome.find_element(By.PARTIAL_LINK_TEXT, "Paris").click()
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "form#edit")))
        shots("memory")
        before = history_length(chrome)

        content = chrome.find_element(By.NAME, "content")
        content.clear()
        content.send_keys("Alice lives in Lisbon near the river")
        chrome.find_element(By.CSS_SELECTOR, "form#edit input[name=reason]").send_keys("she moved")
        chrome.find_element(By.CSS_SELECTOR, "form#edit button[type=submit]").click()
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "p.done")))
        assert history_length(chrome) == before + 1
        assert chrome.find_element(By.CSS_SELECTOR, ".timeline ins").text.startswith("Lisbon")
        memory_url = chrome.current_url.split("?")[0]
        shots("edited")

        chrome.find_element(By.LINK_TEXT, "Browse").click()
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "table.memories")))
        shots("browse")

        chrome.find_element(By.LINK_TEXT, "Forget").click()
        chrome.find_element(By.NAME, "q").send_keys("Lisbon river")
        chrome.find_element(By.CSS_SELECTOR, "main form button[type=submit]").click()
        wait.until(ec.presence_of_element_located((By.NAME, "token")))
        candidates = chrome.find_elements(By.CSS_SELECTOR, ".candidates input[name=ids]")
        assert candidates and "Lisbon" in chrome.find_element(By.CSS_SELECTOR, ".candidates").text
        for box in candidates[1:]:  # keep only the best match
            box.click()
        shots("forget-preview")
        chrome.find_element(By.NAME, "reason").send_keys("testing forget")
        chrome.find_element(By.CSS_SELECTOR, "button.danger").click()
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Forgotten"))
        assert "restored until" in chrome.page_source
        shots("forgotten")

        chrome.find_element(By.LINK_TEXT, "Recently forgotten").click()
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "main"), "testing forget"))
        shots("recently-forgotten")
        chrome.find_element(By.CSS_SELECTOR, "tbody input[name=ids]").click()
        chrome.find_element(By.XPATH, "//button[text()='Restore selected']").click()
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "p.done")))
        assert chrome.current_url.split("?")[0] == memory_url
        assert history_length(chrome) == before + 3  # UPDATE, DELETE, RESTORE
        events = [e.text for e in chrome.find_elements(By.CSS_SELECTOR, ".timeline .when strong")]
        assert events[:3] == ["RESTORE", "DELETE", "UPDATE"]
        shots("restored-history")

        chrome.set_window_size(390, 900)  # a phone
        chrome.get(memory_url)
        overflow = chrome.execute_script("return document.documentElement.scrollWidth > window.innerWidth + 2")
        assert not overflow, "the memory page scrolls sideways on a narrow screen"
        shots("narrow-memory")
    copy = os.environ.get("MCP_MEMORY_SCREENSHOTS")  # optional: keep the pictures somewhere stable
    if copy:
        shutil.copytree(tmp_path / "screenshots", copy, dirs_exist_ok=True)
    print(f"screenshots in {tmp_path / 'screenshots'}")
    assert len(list((tmp_path / "screenshots").glob("*.png"))) == shots.n

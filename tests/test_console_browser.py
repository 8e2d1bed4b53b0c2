"""The review console in a real browser: Debian's Chromium driven over WebDriver (selenium, with
the system chromedriver: nothing is downloaded). Sign in, search, open a memory, edit it, forget
by query with preview and confirm, restore it, watch the history grow; a screenshot of every page
goes into the test's tmp folder. Skips, saying why, where Chromium is not installed."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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
from selenium.common.exceptions import WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

ALICE = principal("alice", agent=None, project=None)


def waiting(chrome) -> WebDriverWait:
    """A wait that reads the page again where Chromium refused a read: an element of the page a form
    post is replacing comes back as "Node with given id does not belong to the document", an inspector
    error rather than a stale element, which a plain wait gives up on at once."""
    return WebDriverWait(chrome, 30, ignored_exceptions=(WebDriverException,))


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
    wait = waiting(chrome)
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
        assert not chrome.find_element(By.NAME, "content").is_displayed()  # the edit form starts closed
        shots("memory")
        before = history_length(chrome)
        chrome.find_element(By.XPATH, "//summary[text()='Edit']").click()

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

        chrome.set_window_size(390, 844)  # a phone
        chrome.get(memory_url)
        header = chrome.execute_script("return document.querySelector('header').getBoundingClientRect().height")
        assert header < 130, f"the header takes {header} px of a phone's 844"
        overflow = chrome.execute_script("return document.documentElement.scrollWidth > window.innerWidth + 2")
        assert not overflow, "the memory page scrolls sideways on a narrow screen"
        shots("narrow-memory")
    copy = os.environ.get("MCP_MEMORY_SCREENSHOTS")  # optional: keep the pictures somewhere stable
    if copy:
        shutil.copytree(tmp_path / "screenshots", copy, dirs_exist_ok=True)
    print(f"screenshots in {tmp_path / 'screenshots'}")
    assert len(list((tmp_path / "screenshots").glob("*.png"))) == shots.n


def sign_in_browser(chrome: webdriver.Chrome, base: str, key: str) -> None:
    chrome.get(f"{base}/ui/signin")
    chrome.find_element(By.NAME, "key").send_keys(key + Keys.ENTER)
    WebDriverWait(chrome, 30).until(ec.presence_of_element_located((By.CSS_SELECTOR, "header .who")))


def signed_in(chrome: webdriver.Chrome) -> bool:
    return "/ui/signin" not in chrome.current_url and bool(chrome.find_elements(By.CSS_SELECTOR, "header .who"))


@contextmanager
def other_site(html: str) -> Iterator[str]:
    """A page on another site (localhost is not the same site as 127.0.0.1 to a browser)."""
    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            body = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://localhost:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


async def test_sessions_links_namespaces_and_caps_in_chromium(database: Database, db_url: str,
                                                              service: MemoryService, chrome, tmp_path: Path) -> None:
    """Issue 28 in a real browser: a link from another site keeps the session (SameSite=Lax);
    sign-out ends it and a copy of the old cookie is refused; cookies made of what the database
    holds are refused; the namespace picker and the all-namespaces view; a 100,000-character query."""
    from mcp_memory.repository.secrets import cursor_secret

    await service.write(ALICE, "Alice lives in Paris near the canal", kind="fact")
    for agent, project in (("planner", "shop"), ("coder", "garden")):
        await service.write(principal("alice", agent=agent, project=project), f"A note of {agent} in {project}",
                            scope="agent_project")
    key = await make_key(database, "alice", name="reviewer")
    shots = Shots(chrome, tmp_path / "screenshots")
    with http_server(db_url) as base:
        sign_in_browser(chrome, base, key)
        cookie = chrome.get_cookie("mcpm-console")
        assert cookie and cookie["sameSite"] == "Lax" and cookie["httpOnly"]

        with other_site(f'<a id="go" href="{base}/ui/browse">my memories</a>') as elsewhere:
            chrome.get(elsewhere)
            chrome.find_element(By.ID, "go").click()
            WebDriverWait(chrome, 30).until(ec.url_contains("/ui/"))
            assert "/ui/browse" in chrome.current_url and signed_in(chrome), chrome.current_url
            assert "Alice lives in Paris" in chrome.page_source
            shots("cross-site-link")
        chrome.get(f"{base}/ui/")
        assert signed_in(chrome) and chrome.get_cookie("mcpm-console")["value"] == cookie["value"]

        # The namespace picker with counts, a typo said to be unknown, the all-namespaces view.
        chrome.find_element(By.LINK_TEXT, "Namespaces").click()
        rows = [r.text for r in chrome.find_elements(By.CSS_SELECTOR, "table.namespaces tbody tr")]
        assert any(r.startswith("planner shop 1") for r in rows) and any(r.startswith("coder garden 1") for r in rows)
        shots("namespaces")
        chrome.find_element(By.CSS_SELECTOR, "form input[name=agent]:not([type=hidden])").send_keys("planer")
        chrome.find_element(By.XPATH, "//button[text()='Switch']").click()
        wait = waiting(chrome)
        error = wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "p.error")))
        assert "agent 'planer' is unknown" in error.text
        chrome.get(f"{base}/ui/namespaces")
        chrome.find_element(By.XPATH, "//button[starts-with(text(), 'View all namespaces')]").click()
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "p.done")))
        chrome.find_element(By.LINK_TEXT, "the newest memories of every namespace").click()
        text = chrome.find_element(By.TAG_NAME, "main").text
        assert "3 live memories" in text and "A note of planner in shop" in text and "A note of coder in garden" in text
        shots("all-namespaces")
        chrome.find_element(By.PARTIAL_LINK_TEXT, "A note of coder").click()
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, ".timeline")))
        assert "read-only here" in chrome.page_source and not chrome.find_elements(By.ID, "edit")

        # A 100,000-character query: a clear 400 naming the field, not a 500 or a 218 KB page.
        chrome.get(f"{base}/ui/search?q={'word+' * 20_000}")
        error = wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "p.error")))
        error = chrome.find_element(By.CSS_SELECTOR, "p.error").text
        assert "q: at most 2,000 characters, got 100,000" in error and len(chrome.page_source) < 12_000
        shots("long-query")

        # Sign out; the old cookie, put back, is refused.
        chrome.get(f"{base}/ui/")
        chrome.find_element(By.XPATH, "//button[text()='Sign out']").click()
        WebDriverWait(chrome, 30).until(ec.url_contains("/ui/signin"))
        chrome.delete_all_cookies()
        chrome.add_cookie({"name": "mcpm-console", "value": cookie["value"], "path": "/"})
        chrome.get(f"{base}/ui/browse")
        assert "/ui/signin" in chrome.current_url and "Alice lives" not in chrome.page_source
        shots("replayed-cookie")

        # Cookies made of what a dump holds: the old signed form, and the stored token hash.
        async with database.admin.acquire() as conn:
            key_hash = await conn.fetchval("SELECT key_hash FROM api_keys WHERE name = 'reviewer'")
            stored = await conn.fetchval("SELECT token_hash FROM console_sessions LIMIT 1")
        signing = hmac.new(await cursor_secret(database.admin), b"mcp-memory console session v1",
                           hashlib.sha256).digest()
        data = json.dumps({"sid": "s" * 24, "exp": int(time.time()) + 3600, "user": "alice",
                           "key_hash": key_hash}).encode()
        b64 = lambda raw: base64.urlsafe_b64encode(raw).decode().rstrip("=")  # noqa: E731
        forged = [f"{b64(data)}.{b64(hmac.new(signing, data, hashlib.sha256).digest())}"]
        if stored:
            forged.append(f"{b64(b'alice')}.{stored}")
        for value in forged:
            chrome.delete_all_cookies()
            chrome.add_cookie({"name": "mcpm-console", "value": value, "path": "/"})
            chrome.get(f"{base}/ui/browse")
            assert "/ui/signin" in chrome.current_url and "Alice lives" not in chrome.page_source, value


async def test_outage_page_keeps_the_typed_text_in_chromium(chrome, tmp_path: Path) -> None:
    """Stop PostgreSQL with the memory page open, type an edit, Save: a 503 page in the console's
    layout with the text as typed; once the database is back, one click sends it."""
    import anyio

    from mcp_memory.config import Settings
    from mcp_memory.db import open_database
    from mcp_memory.db.embedded import EmbeddedPostgres

    pg = EmbeddedPostgres(tmp_path / "own")
    await anyio.to_thread.run_sync(pg.start)
    dsn = pg.dsn("postgres")
    settings = Settings(database_url=dsn, data_dir=tmp_path / "unused")
    db = await open_database(settings)
    memory = (await (await MemoryService.open(db, settings)).write(ALICE, "Alice lives in Paris")).memory
    key = await make_key(db, "alice", name="owner")
    await db.close()
    shots = Shots(chrome, tmp_path / "screenshots")
    wait = waiting(chrome)
    try:
        with http_server(dsn) as base:
            sign_in_browser(chrome, base, key)
            chrome.get(f"{base}/ui/memories/{memory.id}")
            chrome.find_element(By.XPATH, "//summary[text()='Edit']").click()
            content = chrome.find_element(By.NAME, "content")
            content.clear()
            typed = "Alice moved to Lisbon last spring <script>alert(1)</script>"
            content.send_keys(typed)
            chrome.find_element(By.CSS_SELECTOR, "form#edit input[name=reason]").send_keys("she moved")
            await anyio.to_thread.run_sync(pg.stop)
            chrome.find_element(By.CSS_SELECTOR, "form#edit button[type=submit]").click()
            wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "h1"), "Unavailable"))
            assert chrome.find_elements(By.CSS_SELECTOR, "header nav a.brand")  # the console's layout
            kept = chrome.find_element(By.CSS_SELECTOR, "#resend-form textarea[name=content]")
            assert kept.get_attribute("value") == typed
            shots("outage")
            pg = EmbeddedPostgres(tmp_path / "own")
            await anyio.to_thread.run_sync(pg.start)
            with anyio.fail_after(60):
                while True:
                    chrome.find_element(By.CSS_SELECTOR, "#resend-form button[type=submit]").click()
                    await anyio.sleep(0.5)
                    if chrome.find_elements(By.CSS_SELECTOR, "p.done"):
                        break
                    chrome.back()  # still starting: back to the kept form, and send again
                    await anyio.sleep(1)
            assert chrome.find_element(By.CSS_SELECTOR, ".content").text == typed
            shots("resent")
    finally:
        await anyio.to_thread.run_sync(pg.stop)

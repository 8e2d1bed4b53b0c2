"""Console sessions, caps, namespaces and outages over real HTTP (issue 28): a server subprocess,
real keys, an HTTP client with a cookie jar, and for outages a PostgreSQL of the test's own that
is stopped under the console."""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import httpx2

from mcp_memory.config import Settings
from mcp_memory.db import Database, open_database
from mcp_memory.db.embedded import EmbeddedPostgres
from mcp_memory.repository.secrets import cursor_secret
from mcp_memory.service import MemoryService

from .conftest import principal
from .http_server import SERVE, free_port, http_server
from .test_console import ENV, browser, csrf, seed, sign_in
from .test_http import make_key

ALICE = principal("alice", agent=None, project=None)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


@contextmanager
def server_logging_to(db_url: str, log: Path, env: dict[str, str]) -> Iterator[str]:
    """`serve --transport http` as http_server starts it, with its stderr kept in a file."""
    port = free_port()
    with log.open("w") as err:
        proc = subprocess.Popen([SERVE, "serve", "--transport", "http", "--port", str(port)],
                                env={**os.environ, "MCP_MEMORY_DATABASE_URL": db_url, **env},
                                stdout=subprocess.DEVNULL, stderr=err)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                assert proc.poll() is None, log.read_text()
                try:
                    if httpx2.get(f"{base}/health", timeout=1).status_code == 200:
                        break
                except httpx2.HTTPError:
                    pass
                assert time.monotonic() < deadline, "server did not become healthy"
                time.sleep(0.1)
            yield base
        finally:
            proc.terminate()
            proc.wait(timeout=15)


def raw_get(base: str, target: str, client: httpx2.Client) -> tuple[int, str]:
    """A GET of a URL longer than httpx accepts, with the client's cookies."""
    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    cookies = "; ".join(f"{k}={v}" for k, v in client.cookies.items())
    conn.request("GET", target, headers={"Cookie": cookies})
    response = conn.getresponse()
    return response.status, response.read().decode()


def cookie_of(client: httpx2.Client) -> tuple[str, str]:
    name = next(iter(client.cookies.keys()))
    return name, client.cookies[name]


def replay(base: str, name: str, value: str) -> httpx2.Client:
    """A browser that holds only a copied cookie."""
    other = browser(base)
    other.cookies.set(name, value)
    return other


async def test_sign_out_ends_the_session_and_every_copy_of_its_cookie(database: Database, db_url: str,
                                                                      service: MemoryService) -> None:
    await seed(service)
    key = await make_key(database, "alice", name="owner")
    with http_server(db_url, env=ENV) as base:
        client, token = sign_in(base, key)
        name, value = cookie_of(client)
        assert "Alice" in replay(base, name, value).get("/ui/browse").text  # a copy works while signed in
        assert client.post("/ui/signout", data={"csrf": token}).status_code == 303
        copy = replay(base, name, value)
        refused = copy.get("/ui/browse")
        assert refused.status_code == 303 and refused.headers["location"].startswith("/ui/signin")
        assert copy.post("/ui/signout-everywhere", data={"csrf": token}).status_code == 403
        async with database.admin.acquire() as conn:
            assert await conn.fetchval("SELECT count(*) FROM console_sessions") == 0


async def test_nothing_read_from_the_database_mints_or_revives_a_session(database: Database, db_url: str,
                                                                         service: MemoryService) -> None:
    """Everything a dump holds: the keys' hashes, the meta secrets, the sessions' rows. None of it
    makes a cookie the console honours (the old cookie was an HMAC under meta.cursor_secret over
    api_keys.key_hash: a dump was enough)."""
    await seed(service)
    key = await make_key(database, "alice", name="owner")
    with http_server(db_url, env=ENV) as base:
        client, _ = sign_in(base, key)
        name, _ = cookie_of(client)
        async with database.admin.acquire() as conn:
            key_hash = await conn.fetchval("SELECT key_hash FROM api_keys WHERE name = 'owner'")
            rows = await conn.fetch("SELECT user_id, token_hash FROM console_sessions")
        secret = await cursor_secret(database.admin)
        signing = hmac.new(secret, b"mcp-memory console session v1", hashlib.sha256).digest()
        data = json.dumps({"sid": "x" * 24, "exp": int(time.time()) + 3600, "user": "alice",
                           "key_hash": key_hash}).encode()
        forged = [f"{_b64(data)}.{_b64(hmac.new(signing, data, hashlib.sha256).digest())}"]
        for row in rows:  # the stored hash in place of the token, under either cookie form
            forged += [f"{_b64(row['user_id'].encode())}.{row['token_hash']}", f"~.{row['token_hash']}"]
        for value in forged:
            response = replay(base, name, value).get("/ui/browse")
            assert response.status_code == 303 and "Alice" not in response.text, value


async def test_idle_and_absolute_expiry_and_sign_out_everywhere(database: Database, db_url: str,
                                                                 service: MemoryService) -> None:
    await seed(service)
    key = await make_key(database, "alice", name="owner")
    other_key = await make_key(database, "alice", name="other")
    with http_server(db_url, env=ENV) as base:
        idle, _ = sign_in(base, key)
        ended, _ = sign_in(base, key)
        async with database.admin.acquire() as conn:
            ids = [r["id"] for r in await conn.fetch("SELECT id FROM console_sessions ORDER BY created_at")]
            await conn.execute("UPDATE console_sessions SET last_seen_at = now() - interval '61 minutes' "
                               "WHERE id = $1", ids[0])
            await conn.execute("UPDATE console_sessions SET expires_at = now() - interval '1 second' "
                               "WHERE id = $1", ids[1])
        assert idle.get("/ui/").status_code == 303
        assert ended.get("/ui/").status_code == 303

        laptop, _ = sign_in(base, key)
        phone, phone_csrf = sign_in(base, key)
        elsewhere, _ = sign_in(base, other_key)  # another key of the same user: not "your sessions"
        account = phone.get("/ui/account", headers={"User-Agent": "phone"}).text
        assert account.count("<tr><td>") == 2 and "this one" in account and "Sign out everywhere" in account
        done = phone.post("/ui/signout-everywhere", data={"csrf": phone_csrf})
        assert done.status_code == 303 and "done=everywhere" in done.headers["location"]
        assert laptop.get("/ui/").status_code == 303 and phone.get("/ui/").status_code == 303
        assert elsewhere.get("/ui/").status_code == 200


async def test_a_get_never_replaces_the_cookie_and_posts_are_checked(database: Database, db_url: str,
                                                                     service: MemoryService) -> None:
    await seed(service)
    key = await make_key(database, "alice", name="owner")
    with http_server(db_url, env=ENV) as base:
        client, token = sign_in(base, key)
        name, value = cookie_of(client)
        # A top-level navigation from another site (the Lax cookie comes along): signed in, untouched.
        linked = client.get("/ui/browse", headers={"Sec-Fetch-Site": "cross-site", "Referer": "https://other.example/"})
        assert linked.status_code == 200 and "Alice" in linked.text and "set-cookie" not in linked.headers
        # An unknown or ended session's cookie is not replaced by a GET either.
        stranger = replay(base, name, "~." + "a" * 43)
        assert "set-cookie" not in stranger.get("/ui/signin").headers
        memory = re.search(r'href="/ui/memories/([0-9a-f-]+)"', linked.text).group(1)
        for headers in ({"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
            refused = client.post(f"/ui/memories/{memory}/pin", data={"csrf": token, "pinned": "1"}, headers=headers)
            assert refused.status_code == 403 and "another site" in refused.text
        assert cookie_of(client) == (name, value)


async def test_inputs_are_capped_like_the_tools(database: Database, db_url: str, service: MemoryService) -> None:
    ids = await seed(service)
    key = await make_key(database, "alice", name="owner")
    with http_server(db_url, env=ENV) as base:
        client, token = sign_in(base, key)
        huge = ("word+" * 20_000)[:100_000]  # 100,000 characters in the URL, as a browser sends them
        started = time.perf_counter()
        status, page = raw_get(base, f"/ui/search?q={huge}", client)
        assert status == 400 and "q: at most 2,000 characters, got 100,000" in page
        assert len(page) < 12_000 and "word word word word word word" not in page
        assert time.perf_counter() - started < 5
        many_tags = ",".join(f"t{i}" for i in range(40))
        assert "tag: at most 32 tags" in client.get("/ui/browse", params={"tag": many_tags}).text
        long_kind = client.get("/ui/browse", params={"kind": "k" * 150})
        assert long_kind.status_code == 400 and "k" * 100 not in long_kind.text
        edit = client.post(f"/ui/memories/{ids['tea']}/edit", data={
            "csrf": token, "if_version": "1", "content": "x" * 40_000})
        assert edit.status_code == 400 and "content: at most 32,000 characters" in edit.text
        title = client.post(f"/ui/memories/{ids['tea']}/edit",
                            data={"csrf": token, "if_version": "1", "title": "t" * 300})
        assert title.status_code == 400 and "title: at most 200" in title.text
        assert (await service.get_one(ALICE, ids["tea"])).version == 1  # nothing changed
        tag_edit = client.post(f"/ui/memories/{ids['tea']}/edit", data={"csrf": token, "if_version": "1",
                                                                        "tags": "a" * 70})
        assert tag_edit.status_code == 400 and "tags: a tag has at most 64 characters" in tag_edit.text


async def test_namespace_picker_counts_unknown_and_all_namespaces(database: Database, db_url: str,
                                                                 service: MemoryService) -> None:
    await seed(service)
    for agent, project, n in (("planner", "shop", 3), (None, "shop", 2), ("coder", None, 1), ("coder", "garden", 4)):
        level = "agent_project" if agent and project else "agent" if agent else "project"
        for i in range(n):
            await service.write(principal("alice", agent=agent, project=project), f"note {i} for {agent}/{project}",
                                scope=level)
    await service.write(principal("bob", agent="planner", project="shop"), "Bob's planner note",
                        scope="agent_project")
    owner = await make_key(database, "alice", name="owner")
    confined = await make_key(database, "alice", agents=["planner"], projects=["shop"], name="confined")
    with http_server(db_url, env=ENV) as base:
        client, token = sign_in(base, owner)
        picker = client.get("/ui/namespaces").text
        for agent, project, n in (("planner", "shop", 3), ("(shared)", "shop", 2), ("coder", "(shared)", 1),
                                  ("coder", "garden", 4), ("(shared)", "(shared)", 3)):
            assert f"<td>{agent}</td><td>{project}</td><td>{n}</td>" in picker, (agent, project)
        assert "Bob" not in picker and "View all namespaces" in picker
        unknown = client.post("/ui/namespace", data={"csrf": token, "agent": "planer", "project": "shop"})
        assert unknown.status_code == 404 and "agent &#39;planer&#39; is unknown" in unknown.text
        assert client.post("/ui/namespace", data={"csrf": token, "agent": "coder", "project": "garden"}
                           ).status_code == 303
        browse = client.get("/ui/browse").text
        assert "note 3 for coder/garden" in browse and "note 0 for planner/shop" not in browse

        assert client.post("/ui/namespace", data={"csrf": token, "all": "1"}).status_code == 303
        everywhere = client.get("/ui/everywhere").text
        assert "13 live memories" in everywhere and "Bob" not in everywhere
        planner = re.search(r'href="/ui/memories/([0-9a-f-]+)">note 0 for planner/shop', everywhere).group(1)
        opened = client.get(f"/ui/memories/{planner}").text
        assert "note 0 for planner/shop" in opened and "read-only here" in opened and 'id="edit"' not in opened

        limited, limited_token = sign_in(base, confined)
        picked = limited.get("/ui/namespaces").text
        assert "View all namespaces" not in picked and "garden" not in picked and "<td>planner</td>" in picked
        refused = limited.post("/ui/namespace", data={"csrf": limited_token, "all": "1"})
        assert refused.status_code == 403 and "names its agents or projects" in refused.text
        assert limited.get("/ui/everywhere").status_code == 303  # no such view for it


async def test_plain_http_off_loopback_signs_in_with_a_warning(database: Database, db_url: str,
                                                               service: MemoryService) -> None:
    """A LAN address over plain HTTP: the cookie is not marked Secure (a browser would drop it and
    every form failed with the CSRF message), and every page says the traffic is readable."""
    await seed(service)
    key = await make_key(database, "alice", name="owner")
    lan = "192.168.77.5"
    with http_server(db_url, env={**ENV, "MCP_MEMORY_ALLOWED_HOSTS": json.dumps([lan])}) as base:
        port = base.rsplit(":", 1)[1]
        client = httpx2.Client(base_url=base, timeout=30, headers={"Host": f"{lan}:{port}"})
        form = client.get("/ui/signin")
        assert "secure" not in form.headers["set-cookie"].lower() and "plain HTTP" in form.text
        assert "TLS-terminating proxy" in form.text
        done = client.post("/ui/signin", data={"csrf": csrf(form.text), "key": key})
        assert done.status_code == 303, done.text
        page = client.get("/ui/")
        assert page.status_code == 200 and "key:owner#" in page.text and "plain HTTP" in page.text
    with http_server(db_url, env={**ENV, "MCP_MEMORY_PUBLIC_URL": "https://mem.example.com"}) as base:
        first = browser(base).get("/ui/signin")
        assert "secure" in first.headers["set-cookie"].lower() and "plain HTTP" not in first.text


async def test_small_items(database: Database, db_url: str, service: MemoryService) -> None:
    ids = await seed(service)
    for i in range(30):
        await service.write(ALICE, f"filler memory number {i}")
    key = await make_key(database, "alice", name="owner")
    with http_server(db_url, env=ENV) as base:
        client, token = sign_in(base, key)
        missing = client.get("/ui/no/such/page")
        assert missing.status_code == 404 and "<nav" in missing.text and "no console page" in missing.text
        static = client.get("/ui/static/console.css")
        assert static.status_code == 200 and static.headers["x-content-type-options"] == "nosniff"
        assert "frame-ancestors 'none'" in static.headers["content-security-policy"]

        edited = client.post(f"/ui/memories/{ids['tea']}/edit", data={"csrf": token, "if_version": "1",
                                                                     "importance": "0.8"})
        assert edited.status_code == 303
        history = client.get(f"/ui/memories/{ids['tea']}").text
        assert "0.800000011920929" not in history and "<ins>0.8</ins>" in history
        assert "<details open>" not in history  # the edit form starts closed

        stale = client.post(f"/ui/memories/{ids['tea']}/edit", data={
            "csrf": token, "if_version": "1", "content": "my careful rewrite of the tea memory"})
        assert stale.status_code == 409 and "my careful rewrite of the tea memory</textarea>" in stale.text

        # Browse: how many match, which page, the previous page, sortable columns.
        first = client.get("/ui/browse", params={"size": "10"}).text
        assert "33 memories match · page 1 of 4" in first and 'rel="prev"' not in first
        first_ids = re.findall(r'name="ids" value="([0-9a-f-]+)"', first)
        go = re.search(r'href="(\?[^"]*)" rel="next"', first).group(1).replace("&amp;", "&")
        second = client.get("/ui/browse" + go).text
        assert "page 2 of 4" in second
        go = re.search(r'href="(\?[^"]*)" rel="next"', second).group(1).replace("&amp;", "&")
        third = client.get("/ui/browse" + go).text
        assert "page 3 of 4" in third
        back = re.search(r'href="(\?[^"]*)" rel="prev"', third).group(1).replace("&amp;", "&")
        assert re.findall(r'name="ids" value="([0-9a-f-]+)"', client.get("/ui/browse" + back).text) == \
            re.findall(r'name="ids" value="([0-9a-f-]+)"', second)
        back = re.search(r'href="(\?[^"]*)" rel="prev"', second).group(1).replace("&amp;", "&")
        assert re.findall(r'name="ids" value="([0-9a-f-]+)"', client.get("/ui/browse" + back).text) == first_ids
        assert 'aria-sort="descending"><a href="?size=10&amp;order=oldest">when</a>' in first

        # A text filter, taken literally (100% is not a wildcard), paged by number.
        contains = client.get("/ui/browse", params={"text": "NUMBER 1", "size": "5", "order": "oldest"}).text
        assert "11 memories match · page 1 of 3" in contains  # filler 1 and 10..19
        assert "filler memory number 1<" in contains and "filler memory number 2<" not in contains
        go = re.search(r'href="(\?[^"]*)" rel="next"', contains).group(1).replace("&amp;", "&")
        assert "page 2 of 3" in client.get("/ui/browse" + go).text
        assert "0 memories match" in client.get("/ui/browse", params={"text": "100%"}).text

        # Per day by when it happened: an import of an old note lands on its own day, not today's.
        ten_days_ago = (datetime.now(UTC) - timedelta(days=10)).replace(hour=12)
        await service.write(ALICE, "an imported note from ten days ago", occurred_at=ten_days_ago)
        overview = client.get("/ui/").text
        assert f"<tr><th scope=\"row\">{ten_days_ago.date().isoformat()}</th><td>1</td></tr>" in overview

        assert 'max="25"' in client.get("/ui/forget").text
        browse = client.get("/ui/browse", params={"size": "40"}).text
        ticked = re.findall(r'name="ids" value="([0-9a-f-]+)"', browse)[:30]
        assert len(ticked) == 30
        too_many = client.post("/ui/forget/preview", data={"csrf": token, "ids": ticked})
        assert too_many.status_code == 400 and "30 memories are ticked" in too_many.text
        fine = client.post("/ui/forget/preview", data={"csrf": token, "ids": ticked[:22]})
        assert fine.status_code == 200 and fine.text.count('name="ids"') == 22  # not cut to 20


async def test_outage_page_keeps_the_form_and_logs_once(tmp_path: Path) -> None:
    pg = EmbeddedPostgres(tmp_path / "own")  # its own server: the session's stays up
    await anyio.to_thread.run_sync(pg.start)
    dsn = pg.dsn("postgres")
    db = await open_database(Settings(database_url=dsn, data_dir=tmp_path / "unused"))
    service = await MemoryService.open(db, Settings(database_url=dsn, data_dir=tmp_path / "unused"))
    memory = (await service.write(ALICE, "Alice lives in Paris")).memory
    key = await make_key(db, "alice", name="owner")
    await db.close()
    log = tmp_path / "stderr.log"
    try:
        with server_logging_to(dsn, log, {**ENV, "MCP_MEMORY_LOG_LEVEL": "WARNING"}) as base:
            client, token = sign_in(base, key)
            assert client.get(f"/ui/memories/{memory.id}").status_code == 200
            await anyio.to_thread.run_sync(pg.stop)
            typed = "Alice moved to Lisbon <b>last</b> spring\nand likes it"
            for _ in range(3):
                down = client.post(f"/ui/memories/{memory.id}/edit", data={
                    "csrf": token, "if_version": "1", "content": typed, "reason": "she moved"})
                assert down.status_code == 503 and down.headers["retry-after"] == "5"
                assert "<nav" in down.text and "not available" in down.text
                assert "Alice moved to Lisbon &lt;b&gt;last&lt;/b&gt; spring\nand likes it</textarea>" in down.text
                assert 'value="she moved"' in down.text and 'name="if_version" value="1"' in down.text
            for url in ("/ui/", "/ui/browse", "/ui/search?q=paris", f"/ui/memories/{memory.id}", "/ui/namespaces",
                        "/ui/account"):
                page = client.get(url)
                assert page.status_code == 503 and "<nav" in page.text and page.headers["retry-after"] == "5", url
            signin = browser(base).get("/ui/signin")
            assert signin.status_code in (200, 503) and "Traceback" not in signin.text
            pg = EmbeddedPostgres(tmp_path / "own")
            await anyio.to_thread.run_sync(pg.start)
            resend = csrf(down.text)
            with anyio.fail_after(30):
                while True:
                    again = client.post(f"/ui/memories/{memory.id}/edit", data={
                        "csrf": resend, "if_version": "1", "content": typed, "reason": "she moved"})
                    if again.status_code == 303:
                        break
                    await anyio.sleep(0.5)
        text = log.read_text()
        # One line for the outage, no traceback per request (asyncpg's own pool may warn once, with its
        # traceback, that it could not refill: that is the pool's, not a request's).
        assert "Exception in ASGI application" not in text and text.count("database unavailable") == 1, text
        assert text.count("Traceback") <= text.count("asyncpg.pool"), text
    finally:
        await anyio.to_thread.run_sync(pg.stop)


async def test_sessions_are_tenant_rows(database: Database) -> None:
    """Row-level security holds console_sessions like every tenant table: under one user's setting
    the application role sees and deletes only that user's sessions."""
    from datetime import UTC, datetime, timedelta

    from mcp_memory.repository.console_sessions import ConsoleSessionRepository
    from mcp_memory.repository.sql import local_transaction

    repo = ConsoleSessionRepository(database.pool, database.admin)
    later = datetime.now(UTC) + timedelta(hours=1)
    for user in ("alice", "bob"):
        await repo.create(user, f"hash-{user}", kind="local", key_id=None, credential=None, agent_id=None,
                          project_id=None, all_namespaces=False, user_agent="", expires_at=later)
    row = await database.admin.fetchrow(
        "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE relname = 'console_sessions'")
    assert tuple(row) == (True, True)
    async with local_transaction(database.pool, {"mcp_memory.user_id": "alice"}) as conn:
        assert await conn.fetchval("SELECT array_agg(user_id) FROM console_sessions") == ["alice"]
        assert await conn.execute("DELETE FROM console_sessions WHERE user_id = 'bob'") == "DELETE 0"
    assert await repo.live("bob", "hash-bob", timedelta(minutes=5)) is not None
    assert await repo.live("alice", "hash-bob", timedelta(minutes=5)) is None

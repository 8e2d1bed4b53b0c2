"""The review console over real HTTP: a server subprocess, real keys, an HTTP client with a cookie
jar. Sign-in, every page, the curation flows through the service; and the isolation attackers on
the console's routes (another user's ids, forged forms, a read-only key): nothing leaks or changes."""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from pathlib import Path

import anyio
import httpx2
import pytest

from mcp_memory.config import Settings
from mcp_memory.console import diff
from mcp_memory.db import Database, open_database
from mcp_memory.service import MemoryService

from .conftest import principal
from .http_server import SERVE, free_port, http_server
from .test_http import make_key

ENV = {"MCP_MEMORY_WRITE_RATE_PER_MINUTE": "0", "MCP_MEMORY_FORGET_RATE_PER_MINUTE": "0"}
ALICE = principal("alice", agent=None, project=None)  # user level: what a key without grants sees
BOB = principal("bob", agent=None, project=None)


def csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "the page has no CSRF field"
    return found.group(1)


def browser(base: str) -> httpx2.Client:
    return httpx2.Client(base_url=base, timeout=30, follow_redirects=False)


def sign_in(base: str, key: str, **namespace: str) -> tuple[httpx2.Client, str]:
    """A client signed in with `key`; returns it with the session's CSRF token."""
    client = browser(base)
    form = client.get("/ui/signin")
    assert form.status_code == 200
    done = client.post("/ui/signin", data={"csrf": csrf(form.text), "key": key, "next": "/ui/browse", **namespace})
    assert done.status_code == 303, done.text
    assert done.headers["location"] == "/ui/browse"
    page = client.get("/ui/")
    assert page.status_code == 200, page.text
    return client, csrf(page.text)


async def seed(service: MemoryService) -> dict[str, uuid.UUID]:
    ids = {}
    for name, content, tags in (("paris", "Alice lives in Paris near the canal", ["home"]),
                                ("tea", "Alice prefers green tea in the morning", ["food", "morning"]),
                                ("kafka", "The team chose Kafka for the event bus", ["infra"])):
        ids[name] = (await service.write(ALICE, content, tags=tags, kind="fact")).memory.id
    ids["bob"] = (await service.write(BOB, "Bob's secret bunker code is 4711", tags=["home"])).memory.id
    return ids


def test_word_diff() -> None:
    runs = diff.words("lives in Paris near the canal", "lives in Lisbon near the canal")
    assert ("del", "Paris") in runs and ("ins", "Lisbon") in runs
    assert "".join(t for op, t in runs if op != "del") == "lives in Lisbon near the canal"


async def test_sign_in_pages_and_curation(database: Database, db_url: str, service: MemoryService) -> None:
    ids = await seed(service)
    key = await make_key(database, "alice", name="curator")
    with http_server(db_url, env=ENV) as base:
        anonymous = browser(base)
        first = anonymous.get("/ui/")
        assert first.status_code == 303 and first.headers["location"].startswith("/ui/signin")
        cookie = first.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=lax" in cookie and "path=/" in cookie
        signin = anonymous.get("/ui/signin")
        assert "default-src 'self'" in signin.headers["content-security-policy"]
        wrong = {"csrf": csrf(signin.text), "key": key[:-3] + "xyz"}
        assert anonymous.post("/ui/signin", data=wrong).status_code == 401
        assert anonymous.post("/ui/signin", data={"key": key}).status_code == 403  # no CSRF token

        client, token = sign_in(base, key)
        overview = client.get("/ui/").text
        assert "Memories per day, by when they happened" in overview and "chart-data" in overview
        assert "key:curator#" in overview
        assert "<td>3</td>" in overview or ">3<" in overview  # three live memories in the table fallback
        assert "bunker" not in overview

        found = client.get("/ui/search", params={"q": "where does alice live", "explain": "1"}).text
        assert str(ids["paris"]) in found and "found by" in found and "recency" in found
        # Bob's memory, by its text or its id ("4711" alone also matched a random id of Alice's).
        bunker = client.get("/ui/search", params={"q": "bunker code"}).text
        assert "code is 4711" not in bunker and str(ids["bob"]) not in bunker
        tagged = client.get("/ui/search", params={"q": "alice", "tag": "food"}).text
        assert str(ids["tea"]) in tagged and str(ids["paris"]) not in tagged
        assert "kind: &#39;nonsense&#39;" in client.get("/ui/search", params={"q": "x", "kind": "nonsense"}).text

        page = client.get("/ui/browse", params={"size": "2", "order": "oldest"})
        assert str(ids["paris"]) in page.text and str(ids["kafka"]) not in page.text
        next_url = re.search(r'href="(\?[^"]*cursor=[^"]+)"', page.text).group(1).replace("&amp;", "&")
        assert str(ids["kafka"]) in client.get("/ui/browse" + next_url).text

        memory = client.get(f"/ui/memories/{ids['paris']}").text
        assert "Alice lives in Paris" in memory and "ADD" in memory
        edited = client.post(f"/ui/memories/{ids['paris']}/edit", data={
            "csrf": token, "if_version": "1", "content": "Alice lives in Lisbon near the canal",
            "tags": "home, moved", "reason": "she moved", "priority": "3"})
        assert edited.status_code == 303 and "done=updated" in edited.headers["location"]
        memory = client.get(f"/ui/memories/{ids['paris']}").text
        assert "<del>Paris</del>" in memory and "<ins>Lisbon</ins>" in memory and "she moved" in memory
        assert "via <span class=\"client\">console</span>" in memory
        stale = client.post(f"/ui/memories/{ids['paris']}/edit", data={
            "csrf": token, "if_version": "1", "content": "Alice lives in Rome"})
        assert stale.status_code == 409 and "not 1" in stale.text
        stored = await service.get_one(ALICE, ids["paris"])
        assert stored.content == "Alice lives in Lisbon near the canal" and stored.tags == ["home", "moved"]
        assert stored.priority == 3 and stored.version == 2

        pinned = client.post(f"/ui/memories/{ids['tea']}/pin", data={"csrf": token, "pinned": "1"})
        assert pinned.status_code == 303 and (await service.get_one(ALICE, ids["tea"])).pinned
        marked = client.post(f"/ui/memories/{ids['paris']}/supersede", data={"csrf": token, "older": str(ids["kafka"])})
        assert marked.status_code == 303
        assert (await service.get_one(ALICE, ids["kafka"])).superseded_by == ids["paris"]

        preview = client.post("/ui/forget/preview", data={"csrf": token, "q": "kafka event bus"})
        assert preview.status_code == 200 and str(ids["kafka"]) in preview.text
        assert str(ids["tea"]) not in preview.text  # pinned, and no match
        forget_token = re.search(r'name="token" value="([^"]+)"', preview.text).group(1)
        done = client.post("/ui/forget/confirm", data={"csrf": token, "token": forget_token,
                                                       "ids": str(ids["kafka"]), "reason": "obsolete"})
        assert done.status_code == 200 and "restored until" in done.text
        assert client.post("/ui/forget/confirm", data={"csrf": token, "token": forget_token}).status_code in (404, 409)
        listed = client.get("/ui/forgotten").text
        assert str(ids["kafka"]) in listed and "obsolete" in listed
        assert "deleted for good" in client.get("/ui/").text  # retention's next step lists it
        back = client.post("/ui/restore", data={"csrf": token, "ids": str(ids["kafka"])})
        assert back.status_code == 303
        history = client.get(back.headers["location"]).text
        assert all(event in history for event in ("ADD", "DELETE", "RESTORE", "superseded_by"))

        by_selection = client.post("/ui/forget/preview", data={"csrf": token, "ids": [str(ids["kafka"])]})
        assert str(ids["kafka"]) in by_selection.text and 'name="token"' in by_selection.text

        assert client.post("/ui/signout", data={"csrf": token}).status_code == 303
        assert client.get("/ui/").status_code == 303  # signed out: back to the sign-in page


@pytest.mark.parametrize("scope_filter", ["repository filter + RLS", "RLS alone"])
async def test_console_attackers(database: Database, db_url: str, service: MemoryService,
                                 scope_filter: str) -> None:
    ids = await seed(service)
    owner = await make_key(database, "alice", name="owner")
    reader = await make_key(database, "alice", perms=("read",), name="reader")
    bob_key = await make_key(database, "bob", name="bob")
    confined = await make_key(database, "alice", agents=["planner"], projects=["shop"], name="confined")
    before = {i: (await service.repo.peek_many(ALICE if name != "bob" else BOB, [i]))[0]
              for name, i in ids.items()}
    with http_server(db_url, env=ENV, scope_filter=scope_filter != "RLS alone") as base:
        bob, bob_csrf = sign_in(base, bob_key)
        for name, memory_id in ids.items():
            if name == "bob":
                continue
            page = bob.get(f"/ui/memories/{memory_id}")
            assert page.status_code == 404 and "Alice" not in page.text and "Kafka" not in page.text
            for action, data in (("edit", {"if_version": "1", "content": "pwned"}), ("pin", {"pinned": "1"}),
                                 ("supersede", {"older": str(ids["bob"])})):
                assert bob.post(f"/ui/memories/{memory_id}/{action}", data={"csrf": bob_csrf, **data}
                                ).status_code == 404
        assert bob.post(f"/ui/memories/{ids['bob']}/supersede",
                        data={"csrf": bob_csrf, "older": str(ids["paris"])}).status_code == 404
        preview = bob.post("/ui/forget/preview", data={"csrf": bob_csrf, "ids": [str(ids["paris"])]})
        assert "Alice" not in preview.text and 'name="token"' not in preview.text
        assert bob.post("/ui/restore", data={"csrf": bob_csrf, "ids": str(ids["paris"])}).status_code == 404
        for url in ("/ui/", "/ui/browse", "/ui/forgotten", "/ui/search?q=alice+paris+tea+kafka"):
            text = bob.get(url).text
            assert not any(str(i) in text for n, i in ids.items() if n != "bob") and "Alice " not in text, url

        alice, alice_csrf = sign_in(base, owner)
        target = f"/ui/memories/{ids['tea']}/edit"
        forged = {"if_version": "1", "content": "forged"}
        assert alice.post(target, data=forged).status_code == 403  # no token
        assert alice.post(target, data={**forged, "csrf": bob_csrf}).status_code == 403  # another session's
        assert alice.post(target, data={**forged, "csrf": alice_csrf},
                          headers={"Origin": "https://evil.example"}).status_code == 403
        assert alice.post(target, data={**forged, "csrf": alice_csrf},
                          headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
        stolen = browser(base)  # a valid token but no session cookie: not signed in
        assert stolen.post(target, data={**forged, "csrf": alice_csrf}).status_code == 403
        cookie_name = next(iter(alice.cookies.keys()))
        user_part, session_token = alice.cookies[cookie_name].split(".", 1)
        tampered = browser(base)
        tampered.cookies.set(cookie_name, user_part + "." + session_token[::-1])
        assert tampered.get("/ui/").status_code == 303  # forged cookie: a stranger
        assert alice.get("/ui/", headers={"Host": "evil.example"}).status_code == 421  # DNS rebinding

        ro, ro_csrf = sign_in(base, reader)
        assert "Alice prefers green tea" in ro.get(f"/ui/memories/{ids['tea']}").text
        assert 'action="/ui/memories/' not in ro.get(f"/ui/memories/{ids['tea']}").text  # no edit forms shown
        for url, data in ((f"/ui/memories/{ids['tea']}/edit", {"if_version": "1", "content": "read-only edit"}),
                          (f"/ui/memories/{ids['tea']}/pin", {"pinned": "1"}),
                          (f"/ui/memories/{ids['tea']}/supersede", {"older": str(ids["paris"])}),
                          ("/ui/forget/preview", {"q": "tea"}), ("/ui/restore", {"ids": str(ids["tea"])})):
            response = ro.post(url, data={"csrf": ro_csrf, **data})
            assert response.status_code == 403 and "lacks the" in response.text, url

        # A key confined to agent planner / project shop may not switch to another namespace.
        limited, limited_csrf = sign_in(base, confined)
        refused = limited.post("/ui/namespace", data={"csrf": limited_csrf, "agent": "coder", "project": "shop"})
        assert refused.status_code == 403 and "may not act as agent &#39;coder&#39;" in refused.text

        # A revoked key ends its sessions at once.
        async with database.admin.acquire() as conn:
            await conn.execute("UPDATE api_keys SET revoked_at = now() WHERE name = 'reader'")
        assert ro.get("/ui/").status_code == 303

    after = {i: (await service.repo.peek_many(ALICE if name != "bob" else BOB, [i]))[0] for name, i in ids.items()}
    assert after == before  # nothing changed


async def _carol_in_the_garden(db_url: str, tmp: Path) -> None:
    settings = Settings(database_url=db_url, data_dir=tmp / "unused")
    db = await open_database(settings)
    try:
        service = await MemoryService.open(db, settings)
        await service.write(principal("carol", agent=None, project="garden"), "Carol planted tomatoes in the garden")
    finally:
        await db.close()


def test_ui_command_serves_loopback_without_key(db_url: str, tmp_path: Path) -> None:
    anyio.run(_carol_in_the_garden, db_url, tmp_path)
    port = free_port()
    env = {**os.environ, "MCP_MEMORY_DATABASE_URL": db_url, "MCP_MEMORY_USER": "carol", "MCP_MEMORY_PROJECT": "none"}
    proc = subprocess.Popen([SERVE, "ui", "--no-browser", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read()
            try:
                if httpx2.get(f"{base}/ui/", timeout=2).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            assert time.monotonic() < deadline, "mcp-memory ui did not come up"
            time.sleep(0.2)
        client = browser(base)
        assert client.get("/").headers["location"] == "/ui/"
        home = client.get("/ui/")
        assert home.status_code == 200 and "local:carol" in home.text
        assert client.post("/ui/namespace", data={"agent": "x"}).status_code == 403  # still needs the CSRF token
        picker = client.get("/ui/namespaces").text
        assert re.search(r"<td>\(shared\)</td><td>garden</td><td>1</td>", picker), picker
        typo = client.post("/ui/namespace", data={"csrf": csrf(picker), "project": "gardn"})
        assert typo.status_code == 404 and "project &#39;gardn&#39; is unknown" in typo.text
        switched = client.post("/ui/namespace", data={"csrf": csrf(picker), "project": "garden"})
        assert switched.status_code == 303
        assert "project garden" in client.get("/ui/").text
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    refused = subprocess.run([SERVE, "ui", "--no-browser", "--host", "0.0.0.0"], env=env, capture_output=True,
                             text=True, timeout=60)
    assert refused.returncode == 2 and "loopback only" in refused.stderr


async def test_sign_in_with_an_oauth_token(db_url: str, service: MemoryService) -> None:
    from .test_http import JWT_ENV, token

    ids = await seed(service)
    with http_server(db_url, env={**ENV, **JWT_ENV}) as base:
        client, _ = sign_in(base, token("alice", scope="memory:read", expires_in=120))
        assert "Alice lives in Paris" in client.get(f"/ui/memories/{ids['paris']}").text
        assert "jwt:alice" in client.get("/ui/").text
        expired = browser(base)
        form = expired.get("/ui/signin")
        assert expired.post("/ui/signin", data={"csrf": csrf(form.text), "key": token("alice", expires_in=-120)}
                            ).status_code == 401


async def test_a_models_decision_is_undone_from_the_memory_page(database: Database, db_url: str, settings,
                                                                chat) -> None:
    from mcp_memory.decisions import provider_from
    from mcp_memory.decisions.jobs import DecisionWorker

    from .test_decisions import decisions_settings, drain

    s = decisions_settings(settings, chat.url)
    deciding = await MemoryService.open(database, s)
    worker = DecisionWorker(database.admin, deciding, provider_from(s), s)
    old = (await deciding.write(ALICE, "Alice lives in Oslo, Norway.")).memory
    await drain(worker)
    new = (await deciding.write(ALICE, "Alice lives in Lisbon, Portugal now.")).memory
    chat.script(("json", {"action": "UPDATE", "ids": ["1"], "reason": "Alice moved to Lisbon."}))
    assert await drain(worker) == 1
    assert (await deciding.get_one(ALICE, old.id)).superseded_by == new.id
    seq = next(e.seq for e in (await deciding.history(ALICE, old.id)).entries if e.actor == "pipeline:decisions")
    curator = await make_key(database, "alice", name="curator")
    reader = await make_key(database, "alice", name="reader", perms=("read",))
    with http_server(db_url, env=ENV) as base:
        looker, looker_token = sign_in(base, reader)
        assert "Undo this decision" not in looker.get(f"/ui/memories/{old.id}").text
        refused = looker.post(f"/ui/memories/{old.id}/undo-decision", data={"csrf": looker_token, "seq": str(seq)})
        assert refused.status_code == 403
        assert (await deciding.get_one(ALICE, old.id)).superseded_by == new.id

        client, token = sign_in(base, curator)
        page = client.get(f"/ui/memories/{old.id}").text
        assert "Undo this decision" in page and "pipeline:decisions" in page and "Alice moved to Lisbon." in page
        undone = client.post(f"/ui/memories/{old.id}/undo-decision", data={"csrf": token, "seq": str(seq)})
        assert undone.status_code == 303 and "done=undone" in undone.headers["location"]
        assert (await deciding.get_one(ALICE, old.id)).superseded_by is None
        last = (await deciding.history(ALICE, old.id)).entries[-1]
        assert (last.event, last.new, last.client) == ("UPDATE", {"superseded_by": None}, "console")
        again = client.post(f"/ui/memories/{old.id}/undo-decision", data={"csrf": token, "seq": str(seq)})
        assert again.status_code == 409 and "already undone" in again.text

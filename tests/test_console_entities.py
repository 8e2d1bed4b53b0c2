"""The console's entity pages over real HTTP (a server subprocess, real keys, a cookie jar): the list,
an entity's profile and timeline, links from a memory's page, and the edits (merge, split, fix or
remove a key, undo), each through the service and recorded. Every refused form (bad or forged
fields, another user's ids, a read-only key, the all-namespaces view, no CSRF token) says why and
changes nothing; with the repository's scope filter off, row-level security alone keeps it so."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from html import unescape

import pytest

from mcp_memory.db import Database
from mcp_memory.service import MemoryService

from .conftest import principal
from .http_server import http_server
from .test_console import ENV, browser, sign_in
from .test_entity_edits import as_before, consistent, day, snapshot
from .test_http import make_key

ALICE = principal("alice", agent=None, project=None)  # what a key without grants acts as
BOB = principal("bob", agent=None, project=None)


async def seed(service: MemoryService) -> dict[str, uuid.UUID]:
    ids = {}
    for name, content, about, key, when in (
            ("oslo", "Greta Ibarra lives in Oslo.", ["Greta Ibarra"], "home city", "2024-01-01"),
            ("works", "Greta works at Ironbark Studios.", ["Greta"], "employer", "2024-02-01"),
            ("lisbon", "Gigi moved to Lisbon.", ["Gigi"], "where she lives", "2025-03-01"),
            ("lunch", "Greta Ibarra had lunch with Gigi <script>alert(1)</script> by the harbour.", None, None,
             "2025-04-01"),
            ("title", "Greta is now lead designer.", ["Greta"], "employer", "2025-05-01")):
        ids[name] = (await service.write(ALICE, content, about=about, key=key, occurred_at=day(when))).memory.id
    ids["bob"] = (await service.write(BOB, "Bob's friend Greta Ibarra keeps bees.", about=["Greta Ibarra"],
                                      key="hobby")).memory.id
    return ids


async def entity(service: MemoryService, p, name: str) -> uuid.UUID:
    return (await service.entities.profile(p, name)).entity.id


def edit_ids(html: str) -> list[str]:
    return re.findall(r'action="/ui/entities/edits/([0-9a-f-]{36})/undo"', html)


async def test_entity_pages_and_edits_over_http(database: Database, db_url: str, service: MemoryService) -> None:
    ids = await seed(service)
    greta, gigi = await entity(service, ALICE, "Greta Ibarra"), await entity(service, ALICE, "Gigi")
    bobs_greta = await entity(service, BOB, "Greta Ibarra")
    owner = await make_key(database, "alice", name="curator")
    reader = await make_key(database, "alice", perms=("read",), name="reader")
    bob_key = await make_key(database, "bob", name="bob")
    with http_server(db_url, env=ENV) as base:
        client, token = sign_in(base, owner)
        listed = client.get("/ui/entities")
        assert listed.status_code == 200 and 'aria-current="page">Entities' in listed.text
        names = re.findall(r'<a href="/ui/entities/[0-9a-f-]{36}">([^<]+)</a></td><td>\w+</td>', listed.text)
        assert names[0] == "Greta Ibarra" and "Gigi" in names and names.count("Greta Ibarra") == 1  # not Bob's
        assert f'<a href="/ui/entities/{greta}">Greta Ibarra</a></td><td>named</td><td><span class="scope">user' \
               f'</span></td><td>4</td>' in listed.text

        page = client.get(f"/ui/entities/{greta}").text
        assert "home city" in page and "employer" in page
        timeline = page.split('id="memories"')[1].split("</ol>")[0]
        assert [m for m in re.findall(r'href="/ui/memories/([0-9a-f-]{36})"', timeline)] == \
            [str(ids[n]) for n in ("title", "lunch", "works", "oslo")]
        assert '<time datetime="2025-05-01' in timeline and "2025-05-01</time>" in timeline
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page
        assert "marked superseded by" in page  # the employer Greta had first was replaced by a write
        assert f'href="/ui/entities/{gigi}">Gigi</a>' in page  # appears with (one hop)

        memory = client.get(f"/ui/memories/{ids['lunch']}").text
        assert f'<a href="/ui/entities/{greta}">Greta Ibarra</a> <span class="note">about' in memory
        assert f'<a href="/ui/entities/{gigi}">Gigi</a> <span class="note">mentioned' in memory

        # Refused, each saying why, nothing changed.
        before = await snapshot(database)
        for data, status, says in (
                ({"into": str(greta), "source": str(gigi)}, 403, "CSRF"),
                ({"csrf": token, "into": "nonsense", "source": str(gigi)}, 400, "is not an entity id"),
                ({"csrf": token, "into": str(greta)}, 400, "name both entities"),
                ({"csrf": token, "into": str(greta), "source": str(uuid.uuid4())}, 404, "no entity"),
                ({"csrf": token, "into": str(greta), "source": str(bobs_greta)}, 404, "no entity"),  # Bob's
                ({"csrf": token, "into": str(greta), "source": str(greta)}, 400, "into itself"),
                ({"csrf": token, "into": str(greta), "source": str(gigi), "reason": "x" * 1001}, 400, "reason")):
            refused = client.post("/ui/entities/merge", data=data)
            assert refused.status_code == status and says in unescape(refused.text), (data, refused.text)
            assert "Nothing was changed by this request" in refused.text or status == 403
        for data, status, says in (
                ({"csrf": token, "memory": str(ids["title"])}, 400, "attribute: say which"),
                ({"csrf": token, "memory": str(ids["title"]), "attribute": "the"}, 400, "names no attribute"),
                ({"csrf": token, "memory": str(ids["bob"]), "attribute": "job title"}, 404, "no memory"),
                ({"csrf": token, "memory": "x", "attribute": "job title"}, 400, "not a memory id"),
                ({"csrf": token, "memory": str(ids["lunch"]), "attribute": "job title"}, 400, "no keyed attribute")):
            refused = client.post("/ui/entities/key", data=data)
            assert refused.status_code == status and says in unescape(refused.text), (data, refused.text)
        assert client.post(f"/ui/entities/{gigi}/split", data={"csrf": token}).status_code == 409
        assert client.post(f"/ui/entities/edits/{uuid.uuid4()}/undo", data={"csrf": token}).status_code == 404
        assert client.post("/ui/entities/edits/nope/undo", data={"csrf": token}).status_code == 400
        assert client.get("/ui/entities/nope").status_code == 400
        assert client.get(f"/ui/entities/{bobs_greta}").status_code == 404
        ro, ro_token = sign_in(base, reader)
        read_only = ro.get(f"/ui/entities/{greta}").text
        assert "Greta Ibarra" in read_only and 'action="/ui/entities/' not in read_only  # no edit forms
        for url, data in (("/ui/entities/merge", {"into": str(greta), "source": str(gigi)}),
                          ("/ui/entities/key", {"memory": str(ids["title"]), "attribute": "job title"}),
                          (f"/ui/entities/{gigi}/split", {})):
            response = ro.post(url, data={"csrf": ro_token, **data})
            assert response.status_code == 403 and "lacks the" in response.text, url
        bob, bob_token = sign_in(base, bob_key)
        assert bob.get(f"/ui/entities/{greta}").status_code == 404
        assert bob.post("/ui/entities/merge", data={"csrf": bob_token, "into": str(bobs_greta),
                                                    "source": str(gigi)}).status_code == 404
        assert await snapshot(database) == before

        # Merge Gigi into Greta: Lisbon is her current city; the page records it.
        merged = client.post("/ui/entities/merge", data={"csrf": token, "into": str(greta), "source": str(gigi),
                                                         "reason": "the same person"})
        assert merged.status_code == 303 and merged.headers["location"] == f"/ui/entities/{greta}?done=merged"
        page = client.get(merged.headers["location"]).text
        assert "Merged: the other entity" in page and "gigi" in page and "the same person" in page
        city = page.split("<h3>home city")[1].split("</table>")[0]
        assert city.index(str(ids["lisbon"])) < city.index(str(ids["oslo"]))  # current first
        assert f'/ui/entities/{gigi}/split' in page and len(edit_ids(page)) == 1
        gone = client.get(f"/ui/entities/{gigi}").text
        assert 'id="merged-into"' in gone and f'href="/ui/entities/{greta}">Greta Ibarra</a>' in gone
        await consistent(database)

        split = client.post(f"/ui/entities/{gigi}/split", data={"csrf": token})
        assert split.status_code == 303 and split.headers["location"] == f"/ui/entities/{greta}?done=split"
        assert await snapshot(database) == before
        await consistent(database)

        # Fix a key: "lead designer" is a job title; the employer is Ironbark again.
        fixed = client.post("/ui/entities/key", data={"csrf": token, "memory": str(ids["title"]),
                                                      "attribute": "job title", "entity": str(greta)})
        assert fixed.status_code == 303 and fixed.headers["location"] == f"/ui/entities/{greta}?done=key"
        page = client.get(fixed.headers["location"]).text
        assert "which memory replaces which, were worked out again" in page
        employer = page.split("<h3>employer")[1].split("</table>")[0]
        assert "Ironbark Studios" in employer and "lead designer" not in employer
        assert "marked superseded by" not in employer  # no longer replaced by a job title
        assert "lead designer" in page.split("<h3>job title")[1].split("</table>")[0]
        assert (await service.get_one(ALICE, ids["works"])).superseded_by is None
        await consistent(database)
        newest = edit_ids(page)[0]
        assert client.post(f"/ui/entities/edits/{newest}/undo", data={"csrf": token}).status_code == 303
        assert bob.post(f"/ui/entities/edits/{newest}/undo", data={"csrf": bob_token}).status_code == 404
        assert as_before(await snapshot(database), before)
        removed = client.post("/ui/entities/key", data={"csrf": token, "memory": str(ids["title"]), "remove": "1",
                                                        "entity": str(uuid.uuid4())})  # a forged return: ignored
        assert removed.status_code == 303 and removed.headers["location"] == f"/ui/entities/{greta}?done=key"
        assert (await service.get(ALICE, [ids["title"]])).memories[0].key is None
        again = client.post(f"/ui/entities/edits/{edit_ids(client.get(f'/ui/entities/{greta}').text)[0]}/undo",
                            data={"csrf": token})
        assert again.status_code == 303 and "done=entity-undone" in again.headers["location"]
        assert as_before(await snapshot(database), before)

        # The all-namespaces view reads only.
        picker = client.get("/ui/namespaces").text
        assert client.post("/ui/namespace", data={"csrf": token, "all": "1"}).status_code == 303
        assert 'action="/ui/entities/merge"' not in client.get(f"/ui/entities/{greta}").text
        refused = client.post("/ui/entities/merge", data={"csrf": token, "into": str(greta), "source": str(gigi)})
        assert refused.status_code == 403 and "read-only" in refused.text and picker
    assert as_before(await snapshot(database), before)
    await consistent(database)


@pytest.mark.parametrize("scope_filter", ["repository filter + RLS", "RLS alone"])
async def test_another_users_entity_forms_change_nothing(database: Database, db_url: str, service: MemoryService,
                                                        scope_filter: str) -> None:
    ids = await seed(service)
    greta, gigi = await entity(service, ALICE, "Greta Ibarra"), await entity(service, ALICE, "Gigi")
    edit = await service.entities.merge(ALICE, greta, gigi)
    bob_key = await make_key(database, "bob", name="bob")
    before = await snapshot(database)
    with http_server(db_url, env=ENV, scope_filter=scope_filter != "RLS alone") as base:
        bob, token = sign_in(base, bob_key)
        for url in (f"/ui/entities/{greta}", f"/ui/entities/{gigi}"):
            page = bob.get(url)
            assert page.status_code == 404 and "Lisbon" not in page.text and "Gigi" not in page.text
        listed = bob.get("/ui/entities").text
        assert str(greta) not in listed and "Gigi" not in listed
        assert "Gigi" not in bob.get(f"/ui/memories/{ids['bob']}").text
        for url, data in (("/ui/entities/merge", {"into": str(greta), "source": str(gigi)}),
                          (f"/ui/entities/{gigi}/split", {}),
                          (f"/ui/entities/edits/{edit.id}/undo", {}),
                          ("/ui/entities/key", {"memory": str(ids["title"]), "attribute": "job title"})):
            response = bob.post(url, data={"csrf": token, **data})
            assert response.status_code == 404 and "Greta" not in response.text, url
        stranger = browser(base)
        assert stranger.post("/ui/entities/merge", data={"into": str(greta), "source": str(gigi)}).status_code == 403
    assert await snapshot(database) == before


async def test_a_value_dated_ahead_shows_as_upcoming(database: Database, db_url: str, service: MemoryService) -> None:
    """The entity page lists a value dated later than now as upcoming, before the current one that
    holds until it begins."""
    now = datetime.now(UTC)
    old = await service.write(ALICE, "Greta Ibarra drives a Fiat Panda.", about=["Greta Ibarra"], key="car",
                              occurred_at=now - timedelta(days=100))
    new = await service.write(ALICE, "Greta Ibarra gets her Volvo in the spring.", about=["Greta Ibarra"],
                              key="car", occurred_at=now + timedelta(days=100))
    greta = await entity(service, ALICE, "Greta Ibarra")
    owner = await make_key(database, "alice", name="curator")
    with http_server(db_url, env=ENV) as base:
        client, _ = sign_in(base, owner)
        car = client.get(f"/ui/entities/{greta}").text.split("<h3>car")[1].split("</table>")[0]
    rows = car.split("<tr")[2:]
    assert [str(new.memory.id) in rows[0], str(old.memory.id) in rows[1]] == [True, True]
    assert 'class="upcoming"' in rows[0].split(">")[0] and 'class="current"' in rows[1].split(">")[0]

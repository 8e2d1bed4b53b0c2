"""A keyed replace never reaches past what the writing credential may change: a key confined to its
projects (or agents) writing a newer value of a one-at-a-time key leaves the user-wide older value
live (no superseded_by, no history row, nothing in `replaced`), and the wider credential's later
write does replace it. Another user's entities of the same name are never resolved, linked or
touched, with the repository's scope filter off (row-level security alone)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mcp_memory.db import Database

from .conftest import principal
from .http_server import http_client, http_server
from .test_http import make_key
from .test_server import call


def day(d: str) -> str:
    return f"{d}T00:00:00Z"


CONFINED = {
    # key grants, the headers its session is opened with, the older value's scope, the newer value's
    "project": ({"projects": ["shop"]}, {"X-MCP-Memory-Project": "shop"}, "user", "project"),
    "agent": ({"agents": ["planner"]}, {"X-MCP-Memory-Agent": "planner", "X-MCP-Memory-Project": "shop"},
              "project", "agent_project"),
}


@pytest.mark.parametrize("confined", sorted(CONFINED))
async def test_a_confined_credential_never_replaces_a_value_wider_than_its_grant(
        database: Database, db_url: str, confined: str) -> None:
    grants, headers, old_scope, new_scope = CONFINED[confined]
    wide_key = await make_key(database, "alice", name="wide")
    narrow_key = await make_key(database, "alice", name="narrow", **grants)
    with http_server(db_url) as base:
        async with http_client(base, wide_key, **headers) as wide:
            old = (await call(wide, "memory_write", {
                "content": "Greta Ibarra lives in Oslo.", "about": ["Greta Ibarra"], "key": "home city",
                "scope": old_scope, "occurred_at": day("2024-01-01")}))["memory"]
            assert old["scope"]["level"] == old_scope
        async with http_client(base, narrow_key, **headers) as narrow:
            newer = await call(narrow, "memory_write", {
                "content": "Greta moved to Lisbon.", "about": ["Greta"], "key": "where she lives",
                "scope": new_scope, "occurred_at": day("2025-01-01")})
            # The same entity and attribute (the namespace's Greta Ibarra, home city), but not its to change.
            assert newer["memory"]["key"] == "home city" and not newer["memory"].get("replaced")
            assert not any(r.get("same_key") for r in newer["related"])
            got = {m["id"]: m for m in (await call(narrow, "memory_get", {
                "ids": [old["id"], newer["memory"]["id"]]}))["memories"]}
            assert got[newer["memory"]["id"]]["about"] == ["Greta Ibarra"]
            assert got[old["id"]]["superseded_by"] is None
        async with http_client(base, wide_key, **headers) as wide:
            history = (await call(wide, "memory_history", {"id": old["id"]}))["entries"]
            assert [e["event"] for e in history] == ["ADD"]
            latest = await call(wide, "memory_write", {
                "content": "Greta moved on to Porto.", "about": ["Greta"], "key": "home city",
                "scope": old_scope, "occurred_at": day("2025-06-01")})
            assert set(latest["memory"]["replaced"]) == {old["id"], newer["memory"]["id"]}
            got = {m["id"]: m for m in (await call(wide, "memory_get", {
                "ids": [old["id"], newer["memory"]["id"]]}))["memories"]}
            assert {m["superseded_by"] for m in got.values()} == {latest["memory"]["id"]}
            history = (await call(wide, "memory_history", {"id": old["id"]}))["entries"]
            assert [e["event"] for e in history] == ["ADD", "UPDATE"]
            assert "same key (home city)" in history[-1]["reason"]


async def test_the_service_leaves_a_user_wide_value_to_a_wider_credential(service) -> None:
    """The same at the service, for both narrowings at once."""
    wide = principal()
    old = await service.write(wide, "Tomasz Wolak works at Ironbark.", about=["Tomasz Wolak"], key="employer",
                              scope="user", occurred_at=datetime(2024, 1, 1, tzinfo=UTC))
    previous = None
    for narrow in (wide.model_copy(update={"project_confined": True}),
                   wide.model_copy(update={"agent_confined": True}),
                   wide.model_copy(update={"agent_confined": True, "project_confined": True})):
        newer = await service.write(narrow, f"Tomasz joined Saltmarsh ({narrow.agent_confined}, "
                                    f"{narrow.project_confined}).", about=["Tomasz"], key="works for",
                                    scope="agent_project", occurred_at=datetime(2025, 1, 1, tzinfo=UTC))
        # Its own namespace's earlier value it replaces; the user-wide one never.
        assert newer.memory.key == "employer"
        assert newer.memory.replaced == ([previous] if previous else None)
        previous = newer.memory.id
    assert (await service.get(wide, [old.memory.id])).memories[0].superseded_by is None
    assert [e.event for e in (await service.history(wide, old.memory.id)).entries] == ["ADD"]


async def test_another_users_entities_of_the_same_name_are_never_resolved_linked_or_touched(
        service, database: Database, monkeypatch) -> None:
    from mcp_memory.repository import sql

    monkeypatch.setattr(sql, "SCOPE_FILTER", False)  # row-level security alone
    alice, bob = principal("alice"), principal("bob")
    theirs = await service.write(bob, "Greta Ibarra lives in Oslo.", about=["Greta Ibarra"], key="home city",
                                 scope="user", occurred_at=datetime(2024, 1, 1, tzinfo=UTC))
    async with database.admin.acquire() as conn:
        before = await conn.fetch("SELECT * FROM entities WHERE user_id = 'bob' ORDER BY id")
    # Alice's lone "Greta" is no full name she knows: a new entity of hers, not bob's Greta Ibarra.
    mine = await service.write(alice, "Greta moved to Lisbon.", about=["Greta"], key="home city",
                               occurred_at=datetime(2025, 1, 1, tzinfo=UTC))
    assert mine.memory.about == ["Greta"] and mine.memory.replaced is None
    full = await service.write(alice, "Greta moved on to Porto.", about=["Greta"], key="home city",
                               occurred_at=datetime(2025, 6, 1, tzinfo=UTC))
    assert full.memory.replaced == [mine.memory.id]  # her own Greta's value, not bob's
    async with database.admin.acquire() as conn:
        assert await conn.fetch("SELECT * FROM entities WHERE user_id = 'bob' ORDER BY id") == before
        crossed = await conn.fetchval(
            """SELECT (SELECT count(*) FROM memory_entities x JOIN entities e ON e.id = x.entity_id
                       WHERE e.user_id <> x.user_id)
                    + (SELECT count(*) FROM memory_facts x JOIN entities e ON e.id = x.entity_id
                       WHERE e.user_id <> x.user_id)""")
        assert crossed == 0
        assert await conn.fetchval("SELECT count(*) FROM memory_history WHERE user_id = 'bob'") == 1
    got = (await service.get(bob, [theirs.memory.id])).memories[0]
    assert got.superseded_by is None and got.about == ["Greta Ibarra"]
    profile = await service.entities.profile(bob, "Greta Ibarra")
    city = next(a for a in profile.attributes if a.attribute == "home city")
    assert [v.memory for v in city.current] == [theirs.memory.id] and not city.earlier
    hits = (await service.search(alice, "Where does Greta live now?")).hits
    assert theirs.memory.id not in {h.id for h in hits} and hits[0].id == full.memory.id

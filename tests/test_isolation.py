"""The isolation suite, over real HTTP with real keys: users, agents and projects with
overlapping content try every tool and resource on what they must not see, by id, by guessed
id, by query and through resources, with injection and smuggling attempts in every string.
They get 'not found', never 'forbidden'. It runs twice: with the repository's own scope filter,
and with that filter switched off, so row-level security alone must hold the line."""

from __future__ import annotations

import json
import uuid

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import ResourceTemplateReference

from mcp_memory.db import Database
from mcp_memory.models import MemoryFilter

from .conftest import principal
from .http_server import http_client, http_server
from .test_http import make_key
from .test_server import call

NASTY = ["' OR 1=1 --", "x'); DELETE FROM memories; --", "alice", "%' OR user_id LIKE '%", "*",
         "\\\\x00", "../../etc/passwd", "memory://memories/../", "${MCP_MEMORY_USER}", "🙂" * 3]


async def tool(client: Client, name: str, args: dict) -> tuple[bool, str, dict | None]:
    result = await client.call_tool(name, args)
    return result.is_error, result.content[0].text if result.content else "", result.structured_content


OWNER_HEADERS = {"X-MCP-Memory-Agent": "planner", "X-MCP-Memory-Project": "shop"}


async def seed(base: str, key: str) -> dict[str, str]:
    """alice's planner agent in project shop writes one memory at every level (with a key not
    limited to agents or projects: limited keys may not write to shared levels)."""
    ids = {}
    async with http_client(base, key, **OWNER_HEADERS) as client:
        for level in ("user", "project", "agent", "agent_project"):
            w = await call(client, "memory_write", {"content": f"zebra secret at the {level} level",
                                                    "scope": level, "tags": ["zebra"], "pinned": True})
            ids[level] = w["memory"]["id"]
        gone = await call(client, "memory_write", {"content": "zebra secret, forgotten", "scope": "agent_project"})
        await call(client, "memory_forget", {"ids": [gone["memory"]["id"]]})
        ids["forgotten"] = gone["memory"]["id"]
    return ids


async def assert_cannot_reach(client: Client, targets: list[str]) -> None:
    leaked = set(targets)
    hits = (await call(client, "memory_search", {"query": "zebra secret", "limit": 50}))["hits"]
    assert not leaked & {h["id"] for h in hits}
    listed = (await call(client, "memory_list", {"limit": 100}))["memories"]
    assert not leaked & {m["id"] for m in listed}
    page = json.loads((await client.read_resource("memory://memories")).contents[0].text)
    assert not leaked & {m["id"] for m in page["memories"]}
    uris = {r.uri for r in (await client.list_resources()).resources}
    assert not {f"memory://memories/{t}" for t in leaked} & uris
    by_tag_page = json.loads((await client.read_resource("memory://tags/zebra")).contents[0].text)
    assert not leaked & {m["id"] for m in by_tag_page["memories"]}
    core = (await client.read_resource("memory://core")).contents[0].text
    recall = (await client.get_prompt("recall", {"query": "zebra secret", "limit": "50"})).messages[0].content.text
    assert not any(t in core or t in recall for t in leaked)
    preview = await call(client, "memory_forget", {"query": "zebra secret", "limit": 25})
    assert not leaked & {c["id"] for c in preview["candidates"]}
    by_tag = await call(client, "memory_forget", {"tags": ["zebra"], "limit": 25})
    assert not leaked & {c["id"] for c in by_tag["candidates"]}

    for target in [*targets, str(uuid.uuid4())]:  # the real ids, and a guessed one
        attempts = [
            ("memory_get", {"ids": [target]}),
            ("memory_update", {"id": target, "content": "pwned"}),
            ("memory_update", {"id": target, "pinned": True}),
            ("memory_forget", {"ids": [target]}),
            ("memory_restore", {"ids": [target]}),
            ("memory_history", {"id": target}),
            ("memory_write", {"content": f"successor {uuid.uuid4()}", "supersedes": [target]}),
        ]
        for name, args in attempts:
            is_error, text, _ = await tool(client, name, args)
            assert is_error, (name, target, text)
            assert "no " in text and "memory" in text, (name, text)
            assert "forbidden" not in text.lower() and "permission" not in text.lower(), (name, text)
        preview = await call(client, "memory_forget", {"ids": [target], "mode": "preview"})
        assert preview["candidates"] == [] and preview["token"] is None
        with pytest.raises(MCPError, match="no memory"):
            await client.read_resource(f"memory://memories/{target}")
        completed = await client.complete(ResourceTemplateReference(uri="memory://memories/{id}"),
                                          {"name": "id", "value": target[:6]})
        assert target not in completed.completion.values


async def assert_strings_are_only_data(client: Client) -> None:
    """Every string parameter takes hostile text without effect beyond its own session.
    (Idempotency keys are per user, so each session salts its own.)"""
    salt = uuid.uuid4().hex
    for text in NASTY:
        await tool(client, "memory_search", {"query": text, "tags": [text]})
        await tool(client, "memory_list", {"tags": [text], "cursor": text})
        await tool(client, "memory_forget", {"query": text})
        await tool(client, "memory_forget", {"mode": "execute", "token": text})
        for uri in (f"memory://tags/{text}", f"memory://core?model={text}", f"memory://memories?cursor={text}"):
            try:
                await client.read_resource(uri)
            except MCPError as exc:
                assert "cursor" in str(exc) or "Unknown resource" in str(exc) or "not" in str(exc), (uri, exc)
        await client.complete(ResourceTemplateReference(uri="memory://tags/{tag}{?cursor}"),
                              {"name": "tag", "value": text})
        w = await tool(client, "memory_write", {"content": text, "title": text, "tags": [text],
                                                "metadata": {text: text}, "idempotency_key": text + salt})
        if w[0]:  # a key that grants no agent or project may only read
            assert "may only read" in w[1], w[1]
            continue
        await tool(client, "memory_update", {"id": w[2]["memory"]["id"], "title": text, "reason": text})
        await tool(client, "memory_forget", {"ids": [w[2]["memory"]["id"]], "reason": text})
        with pytest.raises(MCPError):
            await client.read_resource(f"memory://memories/{text}")


@pytest.mark.parametrize("scope_filter", ["repository filter + RLS", "RLS alone"])
async def test_isolation(database: Database, db_url: str, scope_filter: str) -> None:
    env = {"MCP_MEMORY_WRITE_RATE_PER_MINUTE": "0", "MCP_MEMORY_FORGET_RATE_PER_MINUTE": "0"}  # probes galore
    owner = await make_key(database, "alice", perms=("read", "write", "forget"))
    keys = {
        "bob, same agent and project names": await make_key(database, "bob", agents=["planner"], projects=["shop"]),
        "alice's other agent": await make_key(database, "alice", agents=["coder"], projects=["shop"]),
        "alice's other project": await make_key(database, "alice", agents=["planner"], projects=["blog"]),
        "alice without agent or project grants": await make_key(database, "alice", agents=[], projects=[]),
    }
    with http_server(db_url, env=env, scope_filter=scope_filter != "RLS alone") as base:
        ids = await seed(base, owner)
        forbidden = {
            "bob, same agent and project names": list(ids.values()),
            "alice's other agent": [ids["agent"], ids["agent_project"], ids["forgotten"]],
            "alice's other project": [ids["project"], ids["agent_project"], ids["forgotten"]],
            "alice without agent or project grants": [ids["project"], ids["agent"], ids["agent_project"],
                                                      ids["forgotten"]],
        }
        visible = {
            "bob, same agent and project names": set(),
            "alice's other agent": {ids["user"], ids["project"]},
            "alice's other project": {ids["user"], ids["agent"]},
            "alice without agent or project grants": {ids["user"]},
        }
        for who, key in keys.items():
            for mode in ("legacy", "auto"):
                async with http_client(base, key, mode=mode) as client:
                    hits = (await call(client, "memory_search", {"query": "zebra secret level", "limit": 50}))["hits"]
                    assert {h["id"] for h in hits} == visible[who], who
                    await assert_cannot_reach(client, forbidden[who])
            async with http_client(base, key) as client:
                await assert_strings_are_only_data(client)
            # Asking for a namespace the key does not grant is refused outright.
            async with http_client(base, key, **{"X-MCP-Memory-Agent": "planner' OR '1'='1",
                                                 "X-MCP-Memory-Project": "shop"}) as client:
                is_error, text, _ = await tool(client, "memory_list", {})
                assert is_error and "may not act as" in text

        async with http_client(base, owner, **OWNER_HEADERS) as client:  # the owner's memories are untouched
            mine = {m["id"]: m for m in (await call(client, "memory_list", {"limit": 100}))["memories"]}
            for level in ("user", "project", "agent", "agent_project"):
                assert mine[ids[level]]["version"] == 1 and mine[ids[level]]["superseded_by"] is None
                assert "pwned" not in mine[ids[level]]["content"]
            history = await call(client, "memory_history", {"id": ids["forgotten"]})
            assert [e["event"] for e in history["entries"]] == ["ADD", "DELETE"]


# --- the same guarantee in process, at the service layer -------------------------------------------

async def test_row_level_security_alone_at_the_service_layer(service, monkeypatch, database: Database) -> None:
    from mcp_memory.repository import sql

    alice, bob = principal("alice"), principal("bob")
    mine = (await service.write(alice, "alice's diary entry")).memory
    monkeypatch.setattr(sql, "SCOPE_FILTER", False)
    assert (await service.search(bob, "diary entry")).hits == []
    assert (await service.list(bob, MemoryFilter())).memories == []
    assert (await service.overview.stats(bob)).active == 0
    assert [h.id for h in (await service.search(alice, "diary entry")).hits] == [mine.id]
    async with database.pool.acquire() as conn:
        assert await conn.fetchval("SELECT current_user") == "mcp_memory_app"
        assert await conn.fetchval("SELECT count(*) FROM memories") == 0  # no user set: no rows
    async with database.admin.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM memories") == 1


async def test_pooled_connections_carry_no_identity_between_transactions(service) -> None:
    """Settings are transaction-local and an error's open transaction is rolled back before the
    connection is reused, so the next caller never runs under the previous caller's identity.
    A user id full of quotes is a literal, not SQL."""
    odd = principal("o'brien'); SELECT set_config('mcp_memory.user_id', 'alice', false); --")
    written = await service.write(odd, "quoted identity")
    assert [m.id for m in (await service.list(odd)).memories] == [written.memory.id]
    assert (await service.list(principal("alice"))).memories == []
    pool = service.repo.pool
    with pytest.raises(ZeroDivisionError):
        async with service.repo.transaction(odd) as conn:
            await conn.execute("SELECT 1")
            raise ZeroDivisionError
    for _ in range(pool.get_size()):   # whichever connection comes next
        async with pool.acquire() as conn:
            assert not conn.is_in_transaction()
            assert await conn.fetchval("SELECT coalesce(current_setting('mcp_memory.user_id', true), '')") == ""


async def test_no_server_runs_with_isolation_off(settings, monkeypatch) -> None:
    """Neither the scope filter nor row-level security: the database does not open."""
    from mcp_memory.db import open_database
    from mcp_memory.repository import sql

    monkeypatch.setattr(sql, "SCOPE_FILTER", False)
    with pytest.raises(RuntimeError, match="refusing to run with tenant isolation off"):
        await open_database(settings.model_copy(update={"db_app_role": ""}))
    db = await open_database(settings)  # with RLS in force it may (the isolation tests run so)
    await db.close()


async def test_every_table_of_a_users_rows_is_under_row_level_security(database: Database) -> None:
    """A table with a `user_id` column holds some user's rows: each one the application role may
    read is under forced row-level security with the tenant policy, so a table added later cannot
    be read across users by a query that forgot its filter (the owner's own tables, such as the
    graph's backlog, it cannot read at all)."""
    async with database.admin.acquire() as conn:
        rows = await conn.fetch(
            """SELECT c.relname, c.relrowsecurity AND c.relforcerowsecurity AS forced,
                      EXISTS (SELECT 1 FROM pg_policies p WHERE p.tablename = c.relname AND p.policyname = 'tenant')
                      AS tenant
               FROM pg_class c JOIN information_schema.columns col
                 ON col.table_name = c.relname AND col.column_name = 'user_id' AND col.table_schema = 'public'
               WHERE c.relkind IN ('r', 'p') AND c.relnamespace = 'public'::regnamespace
                 AND has_table_privilege('mcp_memory_app', c.oid, 'SELECT')""")
    assert {"memories", "entities", "entity_aliases"} <= {r["relname"] for r in rows}
    assert [r["relname"] for r in rows if not (r["forced"] and r["tenant"])] == []


async def test_a_session_reads_the_alias_rows_and_only_the_triggers_write_them(service, database: Database) -> None:
    """An alias row names the entity a name resolves to; one a session wrote for another
    namespace's entity would make that namespace's lookups resolve a name it never had (foreign
    keys do not see row-level security). Sessions read them; the triggers write them as the owner,
    so a merge made by a session still records its aliases."""
    import asyncpg

    p = principal()
    await service.write(p, "Greta Ibarra moved to Oslo.", about=["Greta Ibarra"])
    await service.write(p, "Gigi likes tea.", about=["Gigi"])
    greta = (await service.entities.profile(p, "Greta Ibarra")).entity.id
    gigi = (await service.entities.profile(p, "Gigi")).entity.id
    for statement in ("INSERT INTO entity_aliases (user_id, entity_id, alias) VALUES ($1, $2, 'forged')",
                      "UPDATE entity_aliases SET alias = 'forged' WHERE user_id = $1 AND entity_id = $2",
                      "DELETE FROM entity_aliases WHERE user_id = $1 AND entity_id = $2"):
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            async with service.repo.transaction(p) as conn:
                await conn.execute(statement, p.user_id, greta)
    await service.entities.merge(p, greta, gigi, reason="one person")
    async with service.repo.transaction(p) as conn:
        aliases = await conn.fetchval("SELECT array_agg(alias) FROM entity_aliases WHERE entity_id = $1", greta)
    assert aliases == ["gigi"]
    assert (await service.entities.profile(p, "Gigi")).entity.id == greta

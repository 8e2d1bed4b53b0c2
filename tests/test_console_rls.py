"""The console's namespace picker and all-namespaces view read every namespace of one user as the
application role, under row-level security (sql/rls.sql `tenant_user_read`), never as the owner:
a transaction that sets mcp_memory.scope = 'user' reads all of its user's memories, nothing of
another user's, and writes no more than before."""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from mcp_memory.db import Database
from mcp_memory.db.migrate import migrate
from mcp_memory.repository import sql
from mcp_memory.repository.console_sessions import ConsoleSessionRepository
from mcp_memory.repository.sql import local_transaction

# (user, agent, project): alice in four namespaces; bob in the same names and one of his own.
PLACES = [("alice", None, None), ("alice", "planner", "shop"), ("alice", "coder", None), ("alice", None, "garden"),
          ("bob", None, None), ("bob", "planner", "shop"), ("bob", "bobs-agent", "bobs-project")]
WIDE = {"mcp_memory.scope": "user"}


async def seed(database: Database) -> dict[tuple[str, str | None, str | None], uuid.UUID]:
    """One live memory per place, plus a forgotten one of alice's (written as the owner)."""
    ids = {}
    async with database.admin.acquire() as conn:
        for user, agent, project in PLACES:
            ids[(user, agent, project)] = await conn.fetchval(
                """INSERT INTO memories (user_id, agent_id, project_id, content, content_hash)
                   VALUES ($1, $2, $3, $4, md5($4)) RETURNING id""",
                user, agent, project, f"{user} secret in {agent}/{project}")
        await conn.execute("""INSERT INTO memories (user_id, agent_id, project_id, content, content_hash, deleted_at)
                              VALUES ('alice', 'coder', 'garden', 'forgotten', 'f', now())""")
    return ids


async def refused(conn: asyncpg.Connection, statement: str, *args: object) -> None:
    """Row-level security refuses `statement`; a savepoint keeps the test's transaction going
    (local_transaction began it by hand, so asyncpg's nested transaction() is not available)."""
    await conn.execute("SAVEPOINT probe")
    with pytest.raises(asyncpg.InsufficientPrivilegeError, match="row-level security"):
        await conn.execute(statement, *args)
    await conn.execute("ROLLBACK TO SAVEPOINT probe")


def of(ids: dict, user: str) -> set[uuid.UUID]:
    return {i for (u, _, _), i in ids.items() if u == user}


@pytest.mark.parametrize("scope_filter", ["repository filter + RLS", "RLS alone"])
async def test_console_reads_across_namespaces_as_the_app_role(database: Database, monkeypatch,
                                                               scope_filter: str) -> None:
    ids = await seed(database)
    if scope_filter == "RLS alone":
        monkeypatch.setattr(sql, "SCOPE_FILTER", False)
    repo = ConsoleSessionRepository(database.pool)  # no owner pool at all
    async with database.pool.acquire() as conn:
        assert await conn.fetchval("SELECT current_user") == "mcp_memory_app"

    counts = {(n.agent_id, n.project_id): n.live for n in await repo.namespaces("alice", None, None)}
    assert counts == {(a, p): 1 for u, a, p in PLACES if u == "alice"}
    rows, total = await repo.recent_across("alice", None, None, limit=50, offset=0)
    assert {r["id"] for r in rows} == of(ids, "alice") and total == 4
    assert not any("bob" in r["content"] for r in rows)
    bobs = await repo.namespaces("bob", None, None)
    assert {(n.agent_id, n.project_id) for n in bobs} == {(a, p) for u, a, p in PLACES if u == "bob"}

    # A key's grants still narrow the view (the WHERE keeps them; RLS keeps the users apart).
    confined = {(n.agent_id, n.project_id) for n in await repo.namespaces("alice", ["planner"], ["shop"])}
    assert confined == {(None, None), ("planner", "shop")}
    rows, total = await repo.recent_across("alice", ["planner"], ["shop"], limit=50, offset=0)
    assert total == 2 and {r["id"] for r in rows} == {ids[("alice", None, None)], ids[("alice", "planner", "shop")]}

    assert await repo.namespace_of("alice", ids[("alice", "coder", None)]) == ("coder", None)
    for bob_id in of(ids, "bob"):
        assert await repo.namespace_of("alice", bob_id) is None
    assert await repo.namespace_of("alice", uuid.uuid4()) is None
    assert await repo.namespaces("carol", None, None) == []
    assert await repo.recent_across("carol", None, None, limit=50, offset=0) == ([], 0)


async def test_user_wide_policy_reads_one_user_and_writes_nothing_more(database: Database) -> None:
    ids = await seed(database)
    async with local_transaction(database.pool, {"mcp_memory.user_id": "alice", **WIDE}) as conn:
        assert set(await conn.fetchval("SELECT array_agg(id) FROM memories")) == of(ids, "alice") | {
            await database.admin.fetchval("SELECT id FROM memories WHERE content = 'forgotten'")}
        assert await conn.fetchval("SELECT count(*) FROM memories WHERE user_id = 'bob'") == 0
        assert await conn.fetchval("SELECT count(*) FROM memories WHERE user_id <> 'alice'") == 0
        # Reading is all it opens: no row outside the transaction's own namespace (here: the
        # user-wide level, since no agent / project is set) can be updated, locked or written.
        for target in (ids[("alice", "planner", "shop")], ids[("alice", "coder", None)], ids[("bob", None, None)],
                       ids[("bob", "planner", "shop")]):
            assert await conn.execute("UPDATE memories SET title = 'pwned' WHERE id = $1", target) == "UPDATE 0"
            assert await conn.fetch("SELECT id FROM memories WHERE id = $1 FOR UPDATE", target) == []
        for user, agent, project in (("alice", "planner", "shop"), ("alice", None, "garden"), ("bob", None, None)):
            await refused(conn, """INSERT INTO memories (user_id, agent_id, project_id, content, content_hash)
                                     VALUES ($1, $2, $3, 'smuggled', 'smuggled')""", user, agent, project)
        # Moving one of its own user-level memories into another namespace or user is refused too.
        for change in ("agent_id = 'planner'", "user_id = 'bob'"):
            await refused(conn, f"UPDATE memories SET {change} WHERE id = $1", ids[("alice", None, None)])
    async with database.admin.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM memories WHERE title = 'pwned' OR content = 'smuggled'") == 0
        assert await conn.fetchval("SELECT user_id || coalesce(agent_id, '-') FROM memories WHERE id = $1",
                                   ids[("alice", None, None)]) == "alice-"


async def test_without_user_scope_a_transaction_sees_one_namespace(database: Database) -> None:
    ids = await seed(database)
    one = {"mcp_memory.user_id": "alice", "mcp_memory.agent_id": "planner", "mcp_memory.project_id": "shop"}
    in_shop = {ids[("alice", None, None)], ids[("alice", "planner", "shop")]}
    for settings in (one, {**one, "mcp_memory.scope": ""}, {**one, "mcp_memory.scope": "USER"},
                     {**one, "mcp_memory.scope": "user' OR '1'='1"}, {**one, "mcp_memory.scope": "project"}):
        async with local_transaction(database.pool, settings) as conn:
            assert set(await conn.fetchval("SELECT array_agg(id) FROM memories")) == in_shop, settings
    # The user comes only from mcp_memory.user_id: the wide scope without it shows nothing.
    async with local_transaction(database.pool, WIDE) as conn:
        assert await conn.fetchval("SELECT count(*) FROM memories") == 0
    repo = ConsoleSessionRepository(database.pool)
    await repo.namespaces("alice", None, None)
    pool = database.pool
    for _ in range(pool.get_size()):  # the wide scope ended with its transaction, on every connection
        async with pool.acquire() as conn:
            assert await conn.fetchval("SELECT coalesce(current_setting('mcp_memory.scope', true), '')") == ""
            assert await conn.fetchval("SELECT count(*) FROM memories") == 0


async def test_migrate_adds_the_policy_to_an_existing_store_once(database: Database) -> None:
    """A deployment migrated before the policy existed gets it on its next `migrate`, and a second
    run adds no copy."""
    policy = """SELECT count(*) FILTER (WHERE cmd = 'SELECT' AND permissive = 'PERMISSIVE'
                                        AND roles = '{mcp_memory_app}')
                FROM pg_policies WHERE tablename = 'memories' AND policyname = 'tenant_user_read'"""
    async with database.admin.acquire() as conn:
        await conn.execute("DROP POLICY tenant_user_read ON memories")
        assert await conn.fetchval(policy) == 0
        await migrate(conn)
        await migrate(conn)
        assert await conn.fetchval(policy) == 1

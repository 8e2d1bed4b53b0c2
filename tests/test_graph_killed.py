"""`mcp-memory serve` killed (SIGKILL) while it writes keyed memories: what any harness, OOM killer or
power cut does. It is sent a stream of memory_write and memory_write_many calls naming people by
`about` with one-at-a-time keys (so each write replaces the person's older value), killed while a
write transaction is open, and the database is then read as it is: every acknowledged write is
there, every memory has its mentions and its keyed fact, a batch is all there or not at all, no
memory is superseded by one that does not exist, the graph's checks (and `mcp-memory doctor`) find
nothing, and a new server on the same database replaces the newest value."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import asyncpg
from mcp import Client, StdioServerParameters

from mcp_memory.repository.graph_checks import inconsistencies

from .test_server import call

SERVE = str(Path(sys.executable).with_name("mcp-memory"))
PEOPLE = ["Greta Ibarra", "Tomasz Wolak", "Odalys Pellegrini", "Kwame Larsen", "Hana Dubois", "Diego Yilmaz"]
CITIES = ["Oslo", "Lisbon", "Bergen", "Porto", "Kraków", "Basel", "Leipzig", "Tromsø"]
EMPLOYERS = ["Ironbark Studios", "Saltmarsh Bank", "Kestrel Labs", "Juniper Freight"]
CALLS = 240  # every fourth a batch of four: 420 memories in all
START = datetime(2020, 1, 1, tzinfo=UTC)


def item(n: int) -> dict[str, Any]:
    """The n-th memory: a person's home city or employer, each newer than the one before."""
    person = PEOPLE[n % len(PEOPLE)]
    if n % 3:
        content, key = f"{person} moved to {CITIES[n % len(CITIES)]} (move {n}).", "where they live"
    else:
        content, key = f"{person} started at {EMPLOYERS[n % len(EMPLOYERS)]} (job {n}).", "employer"
    # The writer's words vary: the full name or the first alone (the text's full name resolves it).
    return {"content": content, "about": [person.split()[0] if n % 2 else person], "key": key,
            "occurred_at": (START + timedelta(days=n)).isoformat()}


def calls() -> list[tuple[str, dict[str, Any], list[str]]]:
    """(tool, arguments, the contents it writes) for each call, in the order sent."""
    out, n = [], 0
    for i in range(CALLS):
        if i % 4 == 3:
            items = [item(n + j) for j in range(4)]
            out.append(("memory_write_many", {"items": items}, [x["content"] for x in items]))
            n += 4
        else:
            one = item(n)
            out.append(("memory_write", one, [one["content"]]))
            n += 1
    return out


class Server:
    """`mcp-memory serve` over stdio, spoken to line by line; replies gathered by a thread."""

    def __init__(self, db_url: str) -> None:
        env = {**os.environ, "MCP_MEMORY_DATABASE_URL": db_url, "MCP_MEMORY_USER": "alice",
               "MCP_MEMORY_PROJECT": "demo", "MCP_MEMORY_LOG_LEVEL": "WARNING"}
        self.proc = subprocess.Popen([SERVE, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, env=env)
        self.replies: dict[int, dict[str, Any]] = {}
        self.arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            reply = json.loads(line)
            with self.arrived:
                if "id" in reply:
                    self.replies[reply["id"]] = reply
                self.arrived.notify_all()

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def call(self, call_id: int, tool: str, arguments: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": call_id, "method": "tools/call",
                   "params": {"name": tool, "arguments": arguments}})

    def wait_for(self, count: int, timeout: float = 60) -> int:
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.replies) >= count or self.proc.poll() is not None, timeout)
            return len(self.replies)

    def call_in_turn(self, sent: list[tuple[str, dict[str, Any], list[str]]]) -> None:
        """Each call once the one before is answered, as one agent makes them, until the server dies."""
        for i, (tool, args, _) in enumerate(sent, start=1):
            try:
                self.call(i, tool, args)
            except (BrokenPipeError, ValueError):
                return
            if self.wait_for(i + 1) <= i:
                return


async def open_write_transactions(conn: asyncpg.Connection, *, waiting: bool = False) -> list[str]:
    """The ids of the server's transactions that have written and not yet committed (`waiting`: and
    now wait for a lock)."""
    rows = await conn.fetch("""SELECT backend_xid::text FROM pg_stat_activity WHERE datname = current_database()
                               AND pid <> pg_backend_pid() AND backend_xid IS NOT NULL
                               AND (NOT $1 OR wait_event_type = 'Lock')""", waiting)
    return [r[0] for r in rows]


async def rolled_back(conn: asyncpg.Connection, caught: list[str]) -> None:
    """Once the killed server's sessions are gone, its write transactions `caught` open were aborted."""
    with anyio.fail_after(30):
        while True:
            if not await open_write_transactions(conn):
                break
            await anyio.sleep(0.05)
    assert {await conn.fetchval("SELECT pg_xact_status($1::text::xid8)", x) for x in caught} == {"aborted"}


async def held_up(conn: asyncpg.Connection) -> list[str]:
    """The server's write transactions once one waits for a lock."""
    with anyio.fail_after(30):
        while True:
            if found := await open_write_transactions(conn, waiting=True):
                return found
            await anyio.sleep(0.01)


async def test_a_server_killed_mid_write_leaves_a_consistent_graph(db_url: str) -> None:
    sent = calls()
    server = Server(db_url)
    try:
        server.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "killed", "version": "0"}}})
        assert server.wait_for(1) == 1, "the server did not start"
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        threading.Thread(target=server.call_in_turn, args=(sent,), daemon=True).start()
        assert server.wait_for(1 + CALLS // 4) > CALLS // 4
        # Kill it inside a write: the next call's transaction has stored its memory, entities and
        # mentions and waits to store its keyed fact (the table held) when the server is killed.
        holder, watcher = await asyncpg.connect(db_url), await asyncpg.connect(db_url)
        try:
            held = holder.transaction()
            await held.start()
            await holder.execute("LOCK TABLE memory_facts IN SHARE MODE")
            caught = await held_up(watcher)  # (not in the holder's transaction: it keeps one view of activity)
            server.proc.send_signal(signal.SIGKILL)
            assert server.proc.wait(timeout=30) == -signal.SIGKILL
            await held.rollback()
        finally:
            await holder.close()
            await watcher.close()
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait(timeout=30)
    with server.arrived:
        replies = dict(server.replies)
    acknowledged = {i: r for i, r in replies.items() if i and not r.get("result", {}).get("isError", True)}
    assert all("error" not in r and not r["result"]["isError"] for i, r in replies.items() if i), "a write failed"

    conn = await asyncpg.connect(db_url)
    try:
        # PostgreSQL has ended the killed server's sessions; the write the kill cut short was rolled back whole.
        await rolled_back(conn, caught)
        rows = await conn.fetch("SELECT id, content, superseded_by FROM memories")
        stored = {r["content"]: r for r in rows}
        # Killed mid-way: some of the calls were answered, not all were written.
        assert 0 < len(acknowledged) < CALLS
        assert len(acknowledged) <= len(rows) < sum(len(c) for _, _, c in sent)
        # Every write the server answered is there, the one cut short is not at all, and a batch is
        # there whole or not at all.
        assert sorted(acknowledged) == list(range(1, len(acknowledged) + 1))
        for i in acknowledged:
            assert all(c in stored for c in sent[i - 1][2]), f"call {i} was answered but is not stored"
        assert not [c for c in sent[len(acknowledged)][2] if c in stored]
        for tool, _, contents in sent:
            if tool == "memory_write_many":
                assert len({c in stored for c in contents}) == 1, contents
        assert await inconsistencies(conn) == {name: 0 for name in await inconsistencies(conn)}
        # Every memory has its subject's mention and its keyed fact (each was written with both).
        unlinked = await conn.fetchval(
            """SELECT count(*) FROM memories m
               WHERE NOT EXISTS (SELECT 1 FROM memory_entities me WHERE me.user_id = m.user_id
                                 AND me.memory_id = m.id AND me.role = 'about')
                  OR NOT EXISTS (SELECT 1 FROM memory_facts f WHERE f.user_id = m.user_id AND f.memory_id = m.id)""")
        assert unlinked == 0
        # No memory is superseded by one that does not exist, and each replace has its history row.
        dangling = await conn.fetchval(
            """SELECT count(*) FROM memories m WHERE m.superseded_by IS NOT NULL AND NOT EXISTS (
                   SELECT 1 FROM memories s WHERE s.user_id = m.user_id AND s.id = m.superseded_by)""")
        assert dangling == 0
        unrecorded = await conn.fetchval(
            """SELECT count(*) FROM memories m WHERE m.superseded_by IS NOT NULL AND NOT EXISTS (
                   SELECT 1 FROM memory_history h WHERE h.user_id = m.user_id AND h.memory_id = m.id
                   AND h.new->>'superseded_by' = m.superseded_by::text)""")
        assert unrecorded == 0
        assert sum(r["superseded_by"] is not None for r in rows) > 0  # replacements did happen
        # One live value per person and one-at-a-time attribute: the newest stored.
        stale = await conn.fetchval(
            """SELECT count(*) FROM memory_facts f JOIN memories m ON m.user_id = f.user_id AND m.id = f.memory_id
               WHERE f.single AND m.superseded_by IS NULL AND f.valid_from < (
                   SELECT max(g.valid_from) FROM memory_facts g WHERE g.user_id = f.user_id
                   AND g.entity_id = f.entity_id AND g.attribute = f.attribute)""")
        assert stale == 0
        heads = await conn.fetch(
            """SELECT e.name, f.attribute, count(*) AS live FROM memory_facts f
               JOIN memories m ON m.user_id = f.user_id AND m.id = f.memory_id
               JOIN entities e ON e.user_id = f.user_id AND e.id = f.entity_id
               WHERE f.single AND m.superseded_by IS NULL AND m.deleted_at IS NULL
               GROUP BY e.name, f.attribute""")
        assert {r["name"] for r in heads} == set(PEOPLE)
        assert [dict(r) for r in heads if r["live"] != 1] == []
    finally:
        await conn.close()

    doctor = await anyio.run_process([SERVE, "doctor"], check=False,
                                     env={**os.environ, "MCP_MEMORY_DATABASE_URL": db_url})
    report = doctor.stdout.decode()
    graph = next(line for line in report.splitlines() if " graph" in line)
    assert graph.startswith("[ok  ]") and "consistent" in graph, report

    # A new server on the same database: the newest value of a person's city is replaced as ever.
    async with restarted(db_url) as client:
        # Dated now, after every value of the workload (a value dated ahead would be upcoming).
        newest = await call(client, "memory_write", {
            "content": "Tomasz moved to Reykjavík.", "about": ["Tomasz"], "key": "home city"})
        assert len(newest["memory"]["replaced"]) == 1
        hits = (await call(client, "memory_search", {"query": "Where does Tomasz Wolak live now?"}))["hits"]
        assert hits[0]["id"] == newest["memory"]["id"]


@contextlib.asynccontextmanager
async def killable(db_url: str) -> AsyncIterator[tuple[Server, asyncpg.Connection, asyncpg.Connection]]:
    """A server, initialized, with a connection to hold rows (`holder`) and one to watch (`watcher`);
    all closed, and the server killed if it still runs, after."""
    server = Server(db_url)
    holder, watcher = await asyncpg.connect(db_url), await asyncpg.connect(db_url)
    try:
        initialized(server)
        yield server, holder, watcher
    finally:
        await holder.close()
        await watcher.close()
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait(timeout=30)


def restarted(db_url: str) -> Client:
    """A new server on the same database, as the harness starts it again."""
    return Client(StdioServerParameters(command=SERVE, args=["serve"], env={
        "MCP_MEMORY_DATABASE_URL": db_url, "MCP_MEMORY_USER": "alice", "MCP_MEMORY_PROJECT": "demo"}), mode="legacy")


def initialized(server: Server) -> None:
    server.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "killed", "version": "0"}}})
    assert server.wait_for(1) == 1, "the server did not start"
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


async def killed_while_waiting(server: Server, holder: asyncpg.Connection, watcher: asyncpg.Connection,
                               lock: str, call_id: int, tool: str, arguments: dict[str, Any]) -> str:
    """`tool` called while `holder` holds the rows `lock` selects FOR UPDATE, the server killed once
    its transaction waits for them; the lock released, that transaction is aborted. Returns the
    statement that waited."""
    held = holder.transaction()
    await held.start()
    await holder.execute(lock)
    server.call(call_id, tool, arguments)
    caught = await held_up(watcher)
    waiting = await watcher.fetchval(
        """SELECT query FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
           AND backend_xid IS NOT NULL""")
    server.proc.send_signal(signal.SIGKILL)
    assert server.proc.wait(timeout=30) == -signal.SIGKILL
    await held.rollback()
    await rolled_back(watcher, caught)
    return str(waiting)


async def test_a_server_killed_while_it_refiles_a_subjects_facts_leaves_them_as_they_were(db_url: str) -> None:
    """A key that says which attribute a subject's earlier value was ("works from": an office) files
    the facts the lexicon's order alone placed ("based in": a home city) under it, in the write's
    transaction. Killed while that refile waits for a row, the write is not there at all and the
    earlier fact is filed and current as before; the same write again refiles and replaces it."""
    based = {"content": "Heard today: Fenna Kuznetsov is based in Toronto.", "about": ["Fenna Kuznetsov"],
             "key": "based in", "occurred_at": "2024-01-01T00:00:00+00:00"}
    moved = {"content": "1:1 notes: Fenna is remote from Zurich now.", "about": ["Fenna Kuznetsov"],
             "key": "works from", "occurred_at": "2025-01-01T00:00:00+00:00"}
    async with killable(db_url) as (server, holder, watcher):
        server.call(1, "memory_write", based)
        assert server.wait_for(2) == 2 and not server.replies[1]["result"]["isError"]
        assert await watcher.fetchval("SELECT attribute FROM memory_facts") == "home city"
        # The earlier fact's row held: the new fact is inserted, the refile's UPDATE waits for it.
        waiting = await killed_while_waiting(server, holder, watcher, "SELECT 1 FROM memory_facts FOR UPDATE", 2,
                                             "memory_write", moved)
        assert "UPDATE memory_facts" in waiting, waiting
        rows = await watcher.fetch("""SELECT m.content, m.superseded_by, f.attribute FROM memories m
                                      LEFT JOIN memory_facts f ON f.user_id = m.user_id AND f.memory_id = m.id""")
        assert [tuple(r) for r in rows] == [(based["content"], None, "home city")]
        assert await inconsistencies(watcher) == {name: 0 for name in await inconsistencies(watcher)}

    async with restarted(db_url) as client:
        again = await call(client, "memory_write", moved)
        assert again["memory"]["key"] == "office" and len(again["memory"]["replaced"]) == 1
        hits = (await call(client, "memory_search", {"query": "Where is Fenna Kuznetsov based?"}))["hits"]
        assert hits[0]["id"] == again["memory"]["id"]


async def test_a_server_killed_while_it_fixes_whom_a_memory_is_about_leaves_it_as_it_was(db_url: str) -> None:
    """An about fix moves the memory's mentions and its keyed fact in one transaction: killed while it
    waits to record the fix, all else done, the memory is about the user as before, its fact the
    user's, no edit is recorded and no entity is left of the names given; the same fix again goes
    through."""
    promoted = {"content": "Got promoted to staff engineer.", "about": ["the user"], "key": "job title",
                "occurred_at": "2025-01-01T00:00:00+00:00"}
    async with killable(db_url) as (server, holder, watcher):
        server.call(1, "memory_write", promoted)
        assert server.wait_for(2) == 2 and not server.replies[1]["result"]["isError"]
        memory = server.replies[1]["result"]["structuredContent"]["memory"]["id"]
        before = [tuple(r) for r in await watcher.fetch(
            """SELECT e.kind, e.name, x.role FROM memory_entities x JOIN entities e ON e.id = x.entity_id
               ORDER BY e.name""")]
        # The edit's record is written last, once the mentions and the fact have moved: it waits there.
        waiting = await killed_while_waiting(server, holder, watcher, "LOCK TABLE entity_edits IN SHARE MODE", 2,
                                             "memory_update", {"id": memory, "about": ["Rui Costa"]})
        assert "INSERT INTO entity_edits" in waiting, waiting
        assert [tuple(r) for r in await watcher.fetch(
            """SELECT e.kind, e.name, x.role FROM memory_entities x JOIN entities e ON e.id = x.entity_id
               ORDER BY e.name""")] == before
        assert await watcher.fetchval("""SELECT e.kind FROM memory_facts f JOIN entities e ON e.id = f.entity_id""") \
            == "user"
        assert await watcher.fetchval("SELECT count(*) FROM entity_edits") == 0
        assert await watcher.fetchval("SELECT count(*) FROM entities WHERE name = 'Rui Costa'") == 0
        assert await inconsistencies(watcher) == {name: 0 for name in await inconsistencies(watcher)}

    async with restarted(db_url) as client:
        fixed = await call(client, "memory_update", {"id": memory, "about": ["Rui Costa"]})
        assert fixed["memory"]["about"] == ["Rui Costa"]

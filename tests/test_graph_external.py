"""The graph on a PostgreSQL set up as docs/operations.md tells a user to set up their own: a cluster
of its own (default settings), the schema owned by a role that is no superuser (LOGIN CREATEROLE),
the extensions made by a superuser. There the migrations cannot mark the search operators'
functions LEAKPROOF, as the embedded server does, and row-level security is in force through
mcp_memory_app. Writes with `about` and `key`, replacing by key, first names, the entity resource,
a keyed search and the isolation of two users' graphs must all work there as on the embedded one."""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from mcp_memory.config import Settings
from mcp_memory.db import Database, open_database
from mcp_memory.db.doctor import diagnose
from mcp_memory.db.embedded import EmbeddedPostgres
from mcp_memory.db.migrate import migrate
from mcp_memory.errors import NotFound
from mcp_memory.graph.name_forms import Name
from mcp_memory.models import WriteItem
from mcp_memory.repository import graph, graph_checks, graph_reads
from mcp_memory.service import MemoryService

from .conftest import principal
from .exports import copied, exported_with_vectors
from .test_server import call, connect

OWNER = "mcp_memory"
# The functions rls.sql marks LEAKPROOF when it can (none of them the graph's entity lookup needs).
FUNCTIONS = ["ts_match_vq(tsvector, tsquery)", "word_similarity_op(text, text)", "cosine_distance(vector, vector)",
             "arraycontains(anyarray, anyarray)", "arrayoverlap(anyarray, anyarray)"]


@pytest.fixture(scope="module")
def own_server() -> Iterator[EmbeddedPostgres]:
    """A PostgreSQL of the user's own: a fresh cluster, none of the embedded server's tuning."""
    home = Path(tempfile.mkdtemp(prefix="mcp-memory-external-"))
    server = EmbeddedPostgres(home)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


@asynccontextmanager
async def users_own_database(own_server: EmbeddedPostgres, tmp_path: Path,
                             owner_creates: bool = True) -> AsyncIterator[tuple[Settings, Database]]:
    """A database as operations.md sets one up; migrated by its owner when the server opens it.
    `owner_creates=False`: the owner may not create in the database (so no extension of its own)."""
    name = f"ext_{uuid.uuid4().hex[:10]}"
    su = await asyncpg.connect(own_server.dsn("postgres"))
    try:
        if not await su.fetchval("SELECT 1 FROM pg_roles WHERE rolname = $1", OWNER):
            await su.execute(f"CREATE ROLE {OWNER} LOGIN CREATEROLE")
        await su.execute(f'CREATE DATABASE "{name}" OWNER {OWNER}')
        if not owner_creates:
            await su.execute(f'REVOKE CREATE ON DATABASE "{name}" FROM {OWNER}')
    finally:
        await su.close()
    su = await asyncpg.connect(own_server.dsn(name))
    try:
        await su.execute("CREATE EXTENSION vector; CREATE EXTENSION pg_trgm")
    finally:
        await su.close()
    url = own_server.dsn(name).replace("postgresql://postgres:@", f"postgresql://{OWNER}@", 1)
    settings = Settings(database_url=url, data_dir=tmp_path / "unused", user="alice", agent="agent-a",
                        project="proj-x")
    database = await open_database(settings)
    try:
        yield settings, database
    finally:
        await database.close()
        su = await asyncpg.connect(own_server.dsn("postgres"))
        try:
            await su.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await su.close()


@pytest.fixture
async def external(own_server: EmbeddedPostgres, tmp_path: Path) -> AsyncIterator[tuple[Settings, Database]]:
    async with users_own_database(own_server, tmp_path) as opened:
        yield opened


def day(d: str) -> datetime:
    return datetime.fromisoformat(d).replace(tzinfo=UTC)


async def test_the_server_is_set_up_as_a_users_own_would_be(external) -> None:
    """What the other tests stand on: no superuser, no LEAKPROOF marks, row-level security in force."""
    _, database = external
    assert database.app_role == "mcp_memory_app"
    async with database.admin.acquire() as conn:
        assert await conn.fetchval("SELECT current_user") == OWNER
        assert await conn.fetchval("SELECT rolsuper FROM pg_roles WHERE rolname = current_user") is False
        marked = {f: await conn.fetchval("SELECT proleakproof FROM pg_proc WHERE oid = $1::regprocedure", f)
                  for f in FUNCTIONS}
    assert marked == dict.fromkeys(FUNCTIONS, False)


async def memories_indexes(database: Database) -> set[str]:
    async with database.admin.acquire() as conn:
        return {r[0] for r in await conn.fetch("SELECT indexname FROM pg_indexes WHERE tablename = 'memories'")}


async def test_the_owner_adds_the_users_full_text_index(external) -> None:
    """btree_gin is trusted: the database's owner creates it, and with it memories_user_kind_fts and
    memories_user_tags (sql/user_text_index.sql); memories_fts and memories_tags stay for a store of one user."""
    settings, database = external
    assert {"memories_fts", "memories_user_kind_fts", "memories_tags", "memories_user_tags"} \
        <= await memories_indexes(database)
    checks = {c.name: c for c in await diagnose(settings)}
    assert checks["extension btree_gin"].ok and "installed" in checks["extension btree_gin"].detail


async def test_without_btree_gin_the_server_starts_and_searches_as_before(own_server, tmp_path) -> None:
    """An owner who may not create extensions: the server starts and searches with memories_fts,
    doctor says what is missing and how to add it, and the next `migrate` after a superuser
    creates btree_gin builds the index."""
    async with users_own_database(own_server, tmp_path, owner_creates=False) as (settings, database):
        indexes = await memories_indexes(database)
        assert {"memories_fts", "memories_tags"} <= indexes
        assert not {"memories_user_kind_fts", "memories_user_tags"} & indexes
        service = await MemoryService.open(database, settings)
        alice = principal()
        await service.write(alice, "The staging database moved to new disks in rack 7.")
        hits = (await service.search(alice, "staging database", limit=5)).hits
        assert [h.snippet for h in hits] == ["The staging database moved to new disks in rack 7."]
        check = {c.name: c for c in await diagnose(settings)}["extension btree_gin"]
        assert check.ok and "available, not created" in check.detail and "CREATE EXTENSION btree_gin" in check.detail
        dsn = settings.database_url.replace(f"postgresql://{OWNER}@", "postgresql://postgres:@", 1)
        su = await asyncpg.connect(dsn)
        try:
            await su.execute("CREATE EXTENSION btree_gin")
        finally:
            await su.close()
        async with database.admin.acquire() as conn:
            await migrate(conn)
        assert {"memories_user_kind_fts", "memories_user_tags"} <= await memories_indexes(database)


async def test_the_graph_through_mcp_on_an_external_server(external) -> None:
    settings, _ = external
    async with connect(settings) as client:
        first = await call(client, "memory_write", {"content": "Odalys lives in Leipzig.",
                                                    "about": ["Odalys Pellegrini"], "key": "home city",
                                                    "occurred_at": "2024-08-10T00:00:00Z"})
        second = await call(client, "memory_write", {"content": "Odalys left Leipzig behind for Berlin.",
                                                     "about": ["Odalys"], "key": "where she lives",
                                                     "occurred_at": "2025-10-11T00:00:00Z"})
        assert second["memory"]["replaced"] == [first["memory"]["id"]]
        assert second["related"][0]["id"] == first["memory"]["id"] and second["related"][0]["same_key"]
        # A first name is the one full name it begins; with two, neither.
        await call(client, "memory_write_many", {"items": [
            {"content": "Benedikt Pereira runs the Lisbon office.", "about": ["Benedikt Pereira"], "key": "office"},
            {"content": "Benedikt Nascimento joined the data team.", "about": ["Benedikt Nascimento"],
             "key": "team"}]})
        lone = await call(client, "memory_write", {"content": "Benedikt called about the invoice.",
                                                   "about": ["Benedikt"]})
        got = {m["id"]: m for m in (await call(client, "memory_get", {
            "ids": [second["memory"]["id"], lone["memory"]["id"]]}))["memories"]}
        assert got[second["memory"]["id"]]["about"] == ["Odalys Pellegrini"]
        assert got[second["memory"]["id"]]["key"] == "home city"
        assert got[second["memory"]["id"]]["mentions"] == ["Berlin", "Leipzig"]
        assert got[lone["memory"]["id"]]["about"] == ["Benedikt"]
        # The entity resource: the list and the profile with the earlier value and its end.
        listed = json.loads((await client.read_resource("memory://entities")).contents[0].text)
        counts = {e["name"]: e["memories"] for e in listed["entities"]}
        assert counts["Odalys Pellegrini"] == 2 and counts["Benedikt Pereira"] == 1 and "Benedikt" in counts
        profile = json.loads((await client.read_resource("memory://entities/Odalys Pellegrini")).contents[0].text)
        city = next(a for a in profile["attributes"] if a["attribute"] == "home city")
        assert [v["memory"] for v in city["current"]] == [second["memory"]["id"]]
        assert city["earlier"][0]["memory"] == first["memory"]["id"]
        assert city["earlier"][0]["valid_until"].startswith("2025-10-11")
        # A keyed search: the current value first, the earlier one after it.
        hits = (await call(client, "memory_search", {"query": "Where does Odalys live these days?",
                                                     "explain": True}))["hits"]
        assert [h["id"] for h in hits[:2]] == [second["memory"]["id"], first["memory"]["id"]]
        assert hits[0]["explain"]["fact"] == 1 and hits[1]["valid_until"].startswith("2025-10-11")
        # A date corrected: Berlin came first after all, and Leipzig holds (repository/fact_order.py).
        await call(client, "memory_update", {"id": second["memory"]["id"], "occurred_at": "2024-01-01T00:00:00Z"})
        got = {m["id"]: m["superseded_by"] for m in (await call(client, "memory_get", {
            "ids": [first["memory"]["id"], second["memory"]["id"]]}))["memories"]}
        assert got == {first["memory"]["id"]: None, second["memory"]["id"]: first["memory"]["id"]}


async def test_related_reads_whom_a_writer_said_on_an_external_server(external) -> None:
    """`related` reads the new memory's and its nearest's mentions through row-level security there
    too: said about Greta, "Lives in Berlin these days." lists her Lisbon first, as its earlier version."""
    settings, _ = external
    async with connect(settings) as client:
        home = await call(client, "memory_write", {"content": "Greta Ibarra lives in Lisbon."})
        await call(client, "memory_write", {"content": "Greta Ibarra drives a Hyundai Ioniq."})
        moved = await call(client, "memory_write", {"content": "Lives in Berlin these days.", "about": ["Greta"]})
        first = moved["related"][0]
        assert first["id"] == home["memory"]["id"] and first["earlier_version"] is True, moved["related"]


async def rls_alone(external, monkeypatch) -> tuple[MemoryService, Database]:
    """The service on the external server with the code's own scope filter off: row-level security
    alone keeps the users apart."""
    from mcp_memory.repository import sql

    settings, database = external
    monkeypatch.setattr(sql, "SCOPE_FILTER", False)
    return await MemoryService.open(database, settings), database


async def test_row_level_security_alone_keeps_two_users_graphs_apart_on_an_external_server(
        external, monkeypatch) -> None:
    service, database = await rls_alone(external, monkeypatch)
    alice, bob = principal("alice"), principal("bob")
    mine = await service.write(alice, "Greta Ibarra lives in Oslo.", about=["Greta Ibarra"], key="home city",
                               occurred_at=day("2024-01-01"))
    theirs = await service.write(bob, "Greta Ibarra lives in Rome.", about=["Greta Ibarra"], key="home city",
                                 occurred_at=day("2025-01-01"))
    assert theirs.memory.replaced is None  # bob's Greta is bob's: alice's value is not his to replace
    newer = await service.write(alice, "Greta moved to Bergen.", about=["Greta"], key="home city",
                                occurred_at=day("2026-01-01"))
    assert newer.memory.replaced == [mine.memory.id]
    assert [e.name for e in (await service.entities.list(bob)).entities] == ["Greta Ibarra", "Rome"]
    bobs = await service.entities.profile(bob, "Greta Ibarra")
    assert [v.memory for a in bobs.attributes for v in a.current] == [theirs.memory.id]
    hits = (await service.search(bob, "Where does Greta Ibarra live now?")).hits
    assert {h.id for h in hits} == {theirs.memory.id}
    with pytest.raises(NotFound):
        await service.entities.profile(principal("alice", project="proj-y"), "Greta Ibarra")
    async with service.repo.transaction(bob) as conn:
        for table in ("entities", "memory_entities", "memory_facts"):
            assert await conn.fetchval(f"SELECT count(*) FROM {table} WHERE user_id = 'alice'") == 0
    async with database.pool.acquire() as conn:  # the application role with no user set sees nothing
        for table in ("entities", "memory_entities", "memory_facts", "memory_edges"):
            assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 0


async def test_a_newer_plain_memory_goes_before_a_keyed_value_under_row_level_security_alone_on_an_external_server(
        external, monkeypatch) -> None:
    """Which memories someone described is read through row-level security alone there too: alice's
    plain note goes before her keyed value, the one she said is about Greta with no key does not, and
    bob's plain note of his own Greta moves nothing of alice's."""
    service, _ = await rls_alone(external, monkeypatch)
    alice, bob = principal("alice"), principal("bob")
    oslo = await service.write(alice, "Greta Ibarra lives in Oslo.", about=["Greta Ibarra"], key="home city",
                               occurred_at=day("2024-01-01"))
    await service.write(bob, "Greta Ibarra moved to Rome.", occurred_at=day("2025-06-01"))
    question = "Where does Greta Ibarra live now?"
    assert (await service.search(alice, question)).hits[0].id == oslo.memory.id
    said = await service.write(alice, "Greta Ibarra moved to Bergen.", about=["Greta Ibarra"],
                               occurred_at=day("2025-01-01"))
    assert (await service.search(alice, question)).hits[0].id == oslo.memory.id
    await service.forget(alice, ids=[said.memory.id])
    plain = await service.write(alice, "Greta Ibarra moved to Bergen.", occurred_at=day("2025-01-01"))
    hits = (await service.search(alice, question, explain=True)).hits
    assert [h.id for h in hits[:2]] == [plain.memory.id, oslo.memory.id] and hits[0].explain["newer_than_fact"]


async def test_whom_the_users_results_are_about_is_read_under_row_level_security_alone_on_an_external_server(
        external, monkeypatch) -> None:
    """How the store introduced a result's subject is read through row-level security alone: alice's
    brother's news is no answer about her (bob's note naming an Oskar his brother beside it); what an
    agent's own notes say of someone is read by that agent, and by no key confined to another of
    alice's agents nor by bob."""
    service, _ = await rls_alone(external, monkeypatch)
    alice, bob, other_agent = principal("alice"), principal("bob"), principal("alice", agent="agent-b")
    question = "Where am I working these days?"
    await service.write(bob, "My brother Oskar Lindgren lives in Nantes.", occurred_at=day("2024-01-01"))
    for text, when in (("User is on the payroll of Tessellate.", "2024-02-01"),
                       ("My brother Oskar Lindgren lives in Nantes.", "2024-03-01"),
                       ("We host the reporting pipeline on a Hetzner box.", "2024-06-01"),
                       ("User plays rowing twice a week.", "2024-09-01"),
                       ("User accepted an offer from Halcyon Air.", "2025-06-01"),
                       ("I prefer meetings after 10.", "2025-08-01"), ("Oskar just settled in Lisbon.", "2025-09-01")):
        await service.write(alice, text, occurred_at=day(when))
    assert (await service.search(alice, question)).hits[0].snippet == "User accepted an offer from Halcyon Air."
    secret = await service.write(alice, "Ines Moreau, my cousin, moved to Porto.", scope="agent")
    news = await service.write(alice, "Ines just settled in Lisbon.", scope="agent")
    async with service.repo.reading(alice) as conn:
        assert [r["contents"] for r in await graph_reads.subjects_named(conn, alice, [news.memory.id], 5)] == [
            ["Ines Moreau, my cousin, moved to Porto.", "Ines just settled in Lisbon."]]
    async with service.repo.reading(other_agent) as conn:
        assert await graph_reads.subjects_named(conn, other_agent, [news.memory.id, secret.memory.id], 5) == []
    async with service.repo.reading(bob) as conn:
        assert await graph_reads.subjects_named(conn, bob, [news.memory.id], 5) == []


async def test_a_note_about_someone_else_is_taken_down_under_row_level_security_alone_on_an_external_server(
        external, monkeypatch) -> None:
    """Which entities a note is filed about is read through row-level security alone: alice's notes on
    Dana go below her notes on Kenji; bob's Kenji, another entity in his store, takes nothing down
    of hers nor lifts his note into her results."""
    service, _ = await rls_alone(external, monkeypatch)
    alice, bob = principal("alice"), principal("bob")
    await service.write(bob, "Kenji Sato works from the Berlin office.", occurred_at=day("2025-01-01"))
    for text, when in (("Dana Okafor is based in the Lagos office.", "2025-03-10"),
                       ("Kenji Sato started as our new SRE; he sits in Tokyo.", "2025-07-03"),
                       ("Dana moved to London, working from the London office now.", "2025-08-12"),
                       ("Kenji Sato relocated to Singapore.", "2025-11-20")):
        await service.write(alice, text, occurred_at=day(when))
    hits = (await service.search(alice, "Which office is Kenji in?", explain=True)).hits
    assert {h.snippet for h in hits[:2]} == {"Kenji Sato relocated to Singapore.",
                                             "Kenji Sato started as our new SRE; he sits in Tokyo."}
    assert all(h.explain["subject"] < 1 for h in hits if h.snippet.startswith("Dana"))
    assert all("Berlin" not in h.snippet for h in hits)


async def test_a_speakers_share_is_counted_in_the_sessions_own_memories_on_an_external_server(
        external, monkeypatch) -> None:
    """Ana speaks half of alice's turns, so alice's question is embedded without her name; bob's
    store holds one turn of an Ana among his notes, and alice's turns, which row-level security
    alone keeps from him, do not count for his."""
    service, _ = await rls_alone(external, monkeypatch)
    alice, bob = principal("alice"), principal("bob")
    for i, (speaker, said) in enumerate([("Ana", "Hey Tom!"), ("Tom", "Hi Ana."), ("Ana", "I'm single these days."),
                                         ("Tom", "The bakery opened."), ("Ana", "Cool!"), ("Tom", "Take care!")]):
        await service.write(alice, f"{speaker}: {said}", kind="episode", occurred_at=day(f"2026-01-0{i + 1}"))
    await service.write(bob, "Ana: I moved to Porto.", kind="episode")
    for i in range(5):
        await service.write(bob, f"Build server {i} was patched on schedule.")
    question = "What is Ana's relationship status?"
    mine = await service.search(alice, question, explain=True)
    assert mine.reading is not None and mine.reading.names_left_out_of_vector == ["Ana"]
    assert (await service.search(bob, question, explain=True)).reading is None


async def test_another_conversations_turns_are_told_apart_under_row_level_security_alone_on_an_external_server(
        external, monkeypatch) -> None:
    """alice's two conversations: James's turns are another conversation's for a question about
    Maria, read through row-level security alone on a PostgreSQL with default settings; bob's
    turns of a Maria make none of alice's hers, nor does her conversations' vector list read them."""
    service, _ = await rls_alone(external, monkeypatch)
    alice, bob = principal("alice"), principal("bob")
    talks = [("2026-01-03", ["Maria: I just got back from my trip.", "John: Spain and England, right?"]),
             ("2026-01-20", ["James: I visited Italy and Turkey.", "Priya: Which country did you like best?"])]
    for when, turns in talks:
        for turn in turns:
            await service.write(alice, turn, kind="episode", occurred_at=day(when))
    await service.write(bob, "Maria: I visited Italy too.", kind="episode", occurred_at=day("2026-01-20"))
    hits = (await service.search(alice, "Which countries has Maria visited?", explain=True)).hits
    factors = {h.snippet: h.explain.get("conversation") for h in hits}
    assert factors["James: I visited Italy and Turkey."] == service.settings.other_conversation
    assert factors["John: Spain and England, right?"] is None
    assert "Maria: I visited Italy too." not in factors  # bob's, and no window of alice's reads it


class Explaining:
    """A connection whose every fetch is also explained (EXPLAIN ANALYZE, as JSON)."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn, self.plans = conn, []

    async def fetch(self, query: str, *args: Any) -> list[asyncpg.Record]:
        self.plans.append(json.loads(await self.conn.fetchval(f"EXPLAIN (ANALYZE, FORMAT JSON) {query}", *args)))
        return await self.conn.fetch(query, *args)


def rows_read_and_dropped(node: dict[str, Any]) -> int:
    return node.get("Rows Removed by Filter", 0) + sum(map(rows_read_and_dropped, node.get("Plans", [])))


async def seed_entities(database: Database, users: list[str], count: int) -> None:
    async with database.admin.acquire() as conn:
        await conn.execute(
            """INSERT INTO entities (user_id, agent_id, project_id, name, canonical, aliases)
               SELECT u, NULL, 'proj-x', 'Person' || i || ' Surname' || i, 'person' || i || ' surname' || i,
                      ARRAY['surname' || i || ' person' || i, 'p' || i || ' nick']
               FROM unnest($1::text[]) u, generate_series(1, $2) i""", users, count)
        await conn.execute("VACUUM ANALYZE entities")


async def test_names_resolve_among_thousands_of_entities_on_an_external_server(external) -> None:
    settings, database = external
    service = await MemoryService.open(database, settings)
    await seed_entities(database, ["alice", "bob"], 3000)
    p = principal()
    first = await service.write(p, "Greta Ibarra drives a Hyundai Ioniq.", about=["Greta Ibarra"], key="car",
                                occurred_at=day("2023-11-30"))
    second = await service.write(p, "Person1234 is leasing a Subaru now.", about=["Person1234"], key="vehicle")
    again = await service.write(p, "Greta is leasing a Subaru Outback now.", about=["Greta"], key="vehicle",
                                occurred_at=day("2025-10-07"))
    assert again.memory.replaced == [first.memory.id] and second.memory.replaced is None
    got = (await service.get(p, [second.memory.id])).memories[0]
    assert got.about == ["Person1234 Surname1234"]  # the seeded full name, by its first word
    hits = (await service.search(p, "What does Greta drive these days?")).hits
    assert [h.id for h in hits[:2]] == [again.memory.id, first.memory.id]
    async with database.admin.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM entities WHERE user_id = 'alice'") == 3000 + 4


async def test_the_entity_lookup_reads_the_names_index_not_every_entity_of_the_user(external) -> None:
    settings, database = external
    await lookup_reads_the_index(await MemoryService.open(database, settings), database)


async def test_on_the_embedded_server_the_entity_lookup_reads_the_names_index(service, database) -> None:
    await lookup_reads_the_index(service, database)  # rls.sql marks the lookup's functions there


async def lookup_reads_the_index(service: MemoryService, database: Database) -> None:
    await seed_entities(database, ["alice", "bob"], 3000)
    p = principal()
    # A lone first name (by the full names' first word), a full name and a name merged into another
    # (by alias): each form read through an index, nothing of the user's other entities filtered.
    names = [Name("Person1234", "person1234", "about"), Name("Greta Ibarra", "greta ibarra", "mentioned"),
             Name("P77 Nick", "p77 nick", "mentioned")]
    async with service.repo.transaction(p) as conn:
        writing = Explaining(conn)
        await graph.resolve(writing, p.user_id, p.agent_id, p.project_id, names[:1])
        asking = Explaining(conn)
        found = await graph_reads.entities_named(asking, p, names, keyed=False)
        by_id = {r["id"]: r["canonical"] for r in await conn.fetch(
            "SELECT id, canonical FROM entities WHERE id = ANY($1::uuid[])", found)}
    dropped = [rows_read_and_dropped(plan[0]["Plan"]) for plan in (writing.plans[0], asking.plans[0])]
    assert dropped == [0, 0]
    assert sorted(by_id.values()) == ["person1234 surname1234", "person77 surname77"]


async def test_a_batch_with_keys_on_an_external_server(external) -> None:
    settings, database = external
    service = await MemoryService.open(database, settings)
    p = principal()
    result = await service.write_many(p, [
        WriteItem(content="Kwame reports to Hana Dubois.", about=["Kwame Larsen"], key="manager",
                  occurred_at=day("2024-01-01")),
        WriteItem(content="Kwame's new manager is Diego.", about=["Kwame"], key="boss", occurred_at=day("2025-01-01"))])
    older, newer = (m.id for m in result.memories)
    assert (await service.get(p, [older])).memories[0].superseded_by == newer
    async with database.admin.acquire() as conn:
        assert await graph_checks.inconsistencies(conn) == {name: 0 for name in graph_checks.CHECKS}


async def test_keys_refile_and_order_a_subjects_values_on_an_external_server(external) -> None:
    """What the keys do past a plain replace, under row-level security through the application's
    role: a key naming the attribute a value was filed under by the lexicon's order alone refiles it
    ("based in" then "works from": an office), own words written before the attribute they plainly
    name join it ("rotation" then "on-call"), and a question gets the current value first."""
    settings, database = external
    service = await MemoryService.open(database, settings)
    p = principal()
    based = await service.write(p, "Heard today: Fenna Kuznetsov is based in Toronto.", about=["Fenna Kuznetsov"],
                                key="based in", occurred_at=day("2024-01-01"))
    moved = await service.write(p, "1:1 notes: Fenna is remote from Zurich now.", about=["Fenna Kuznetsov"],
                                key="works from", occurred_at=day("2025-01-01"))
    assert moved.memory.key == "office" and moved.memory.replaced == [based.memory.id]
    hits = (await service.search(p, "Where is Fenna Kuznetsov based?")).hits
    assert [h.id for h in hits[:2]] == [moved.memory.id, based.memory.id]
    rotation = await service.write(p, "Update - Eun-ji Abara handed the checkout pager over and joined streaming.",
                                   about=["Eun-ji Abara"], key="rotation", occurred_at=day("2025-01-01"))
    oncall = await service.write(p, "FYI: Eun-ji Abara added to checkout on-call.", about=["Eun-ji Abara"],
                                 key="on-call", occurred_at=day("2024-01-01"))
    got = {m.id: m for m in (await service.get(p, [rotation.memory.id, oncall.memory.id])).memories}
    assert got[rotation.memory.id].key == got[oncall.memory.id].key == "on-call"
    assert got[oncall.memory.id].superseded_by == rotation.memory.id
    async with database.admin.acquire() as conn:
        assert await graph_checks.inconsistencies(conn) == {name: 0 for name in graph_checks.CHECKS}


async def test_a_value_two_subjects_share_stays_one_of_theirs_under_row_level_security_alone_on_an_external_server(
        external, monkeypatch) -> None:
    """Whether a memory is still another subject's current value is read through row-level security
    alone: Rui moving on alone leaves "Ana and Rui moved to Porto." Ana's, and bob's later keyed home
    of his own Ana, whom alice's session cannot see, replaces nothing of alice's."""
    service, _ = await rls_alone(external, monkeypatch)
    alice, bob = principal("alice"), principal("bob")
    porto = await service.write(alice, "Ana and Rui moved to Porto.", about=["Ana", "Rui"], key="home city",
                                occurred_at=day("2024-06-10"))
    await service.write(bob, "Ana moved to Faro.", about=["Ana"], key="home city", occurred_at=day("2025-01-01"))
    lisbon = await service.write(alice, "Rui moved to Lisbon on his own.", about=["Rui"], key="home city",
                                 occurred_at=day("2025-02-10"))
    assert lisbon.memory.replaced is None
    (kept,) = (await service.get(alice, [porto.memory.id])).memories
    assert kept.superseded_by is None
    faro = await service.write(alice, "Ana moved to Faro.", about=["Ana"], key="home city",
                               occurred_at=day("2025-05-01"))
    assert faro.memory.replaced == [porto.memory.id]


async def test_a_value_dated_ahead_is_upcoming_under_row_level_security_alone_on_an_external_server(
        external, monkeypatch) -> None:
    """On a server of the user's own, through row-level security alone: a value dated ahead leaves
    the one before it current in the profile, first for a question about now, and not ranked below
    it by any search (the statement's successor join reads its date there too)."""
    service, _ = await rls_alone(external, monkeypatch)
    alice = principal("alice")
    now = datetime.now(UTC)
    leeds = await service.write(alice, "Priya Raman lives in Leeds.", about=["Priya Raman"], key="home city",
                                occurred_at=now - timedelta(days=300))
    berlin = await service.write(alice, "Priya Raman is moving to Berlin in March.", about=["Priya Raman"],
                                 key="home city", occurred_at=now + timedelta(days=90))
    (home,) = (await service.entities.profile(alice, "Priya Raman")).attributes
    assert [v.memory for v in home.current] == [leeds.memory.id]
    assert [v.memory for v in home.upcoming] == [berlin.memory.id]
    hits = (await service.search(alice, "Where does Priya live now?")).hits
    assert [h.id for h in hits[:2]] == [leeds.memory.id, berlin.memory.id]
    assert (await service.search(alice, "Leeds")).hits[0].id == leeds.memory.id


async def test_a_name_a_hop_and_a_date_said_in_the_text_under_row_level_security_alone_on_an_external_server(
        external, monkeypatch) -> None:
    """Through row-level security alone: a name keyed of its subject merges into it (bob's own Sara,
    in memories alice's session cannot see, is no reason to stay apart, and bob's entity is left as
    it was); "my wife" hops through the user's keyed wife; a keyed text's one date dates it."""
    service, _ = await rls_alone(external, monkeypatch)
    alice, bob = principal("alice"), principal("bob")
    await service.write(bob, "I had lunch with Sara from the office.")
    await service.write(alice, "My wife's name is Sara.", about=["my wife"], key="name", occurred_at=day("2024-03-01"))
    talkdesk = await service.write(alice, "My wife works at Talkdesk since May 2025.", about=["my wife"],
                                   key="employer")
    assert talkdesk.memory.occurred_at == day("2025-05-01")
    hits = (await service.search(alice, "Where does Sara work now?", explain=True)).hits
    assert hits[0].id == talkdesk.memory.id and hits[0].explain["fact"] == 1
    assert [e.name for e in (await service.entities.list(bob)).entities if e.name == "Sara"] == ["Sara"]
    await service.write(alice, "My sister is Ana Costa.", about=["me"], key="sister", occurred_at=day("2024-01-01"))
    braga = await service.write(alice, "Ana Costa moved to Braga.", about=["Ana Costa"], key="home city",
                                occurred_at=day("2025-01-01"))
    hits = (await service.search(alice, "Where does my sister live now?", explain=True)).hits
    assert hits[0].id == braga.memory.id and hits[0].explain["fact"] == 1


async def test_a_first_import_rebuilds_the_vector_index_on_an_external_server(external, tmp_path: Path) -> None:
    """The owner of a user's own database (no superuser, default settings) may drop the index, set the
    build's working memory for its transaction and build it again: a first load goes the fast way there too."""
    from mcp_memory.importers import import_paths
    from mcp_memory.repository.maintenance import MaintenanceRepository

    from .test_import_export import _index_oid, _notes

    settings, database = external
    service = await MemoryService.open(database, settings.model_copy(update={"import_index_after": 5}))
    before = await _index_oid(database, service)
    report = await import_paths(service, MaintenanceRepository(database.admin), principal(),
                                [_notes(tmp_path / "first", 12)], progress=False)
    after = await _index_oid(database, service)
    assert report.created == 12 and after is not None and after != before
    assert "Note 7:" in (await service.search(principal(), "build of service 7 cache", limit=3)).hits[0].snippet


async def test_an_export_moves_in_on_an_external_server(external, tmp_path: Path) -> None:
    """A user's own database, its owner no superuser: an export's batches copied into temporary tables,
    its vectors taken, its names read alongside."""
    import json

    from mcp_memory.backlog import Backlog
    from mcp_memory.importers import import_paths
    from mcp_memory.models import WriteItem
    from mcp_memory.repository.maintenance import MaintenanceRepository

    settings, database = external
    service = await MemoryService.open(database, settings)
    maintenance = MaintenanceRepository(database.admin)
    await service.write_many(principal(), [WriteItem(content=f"Greta Ibarra reviewed release {i} of billing.")
                                           for i in range(60)])
    header, *records = [json.loads(line) for line in
                        (await exported_with_vectors(service, database.admin, "alice")).splitlines()]
    records = [copied(r) for r in records]  # bob's copy: ids of its own
    dump = tmp_path / "export.jsonl"
    dump.write_text("".join(json.dumps(r) + "\n" for r in [header, *records]))

    async def moved():
        return await import_paths(service, maintenance, principal("bob"), [dump], progress=False)

    report, unread = await Backlog(database.admin, service.structure).alongside(moved)
    assert report.created == 60 and unread is None and "took the export's vectors for" in report.embedding[0]
    assert await database.admin.fetchval(
        "SELECT count(DISTINCT memory_id) FROM memory_entities WHERE user_id = 'bob'") == 60
    assert await database.admin.fetchval("SELECT count(*) FROM graph_backlog") == 0


async def test_a_users_scope_in_a_big_index_is_sized_by_the_planner_on_an_external_server(external) -> None:
    """The row estimates a search's narrowing reads (the table's, and a scope's under row-level
    security) as the application role on a server with default settings: each user's 40 memories
    are walked to in the store as it is, and sorted in one taken to hold a million."""
    from mcp_memory.models import WriteItem
    from mcp_memory.retrieval.narrowing import narrowing

    settings, database = external
    service = await MemoryService.open(database, settings)
    alice, bob = principal(), principal("bob")
    for who in (alice, bob):
        await service.write_many(who, [WriteItem(content=f"{who.user_id} note {i} on the rollout") for i in range(40)])
    await database.admin.execute("ANALYZE memories")
    assert service.vectors is not None
    model = service.vectors.model
    for who in (alice, bob):
        async with service.repo.reading(who) as conn:
            rows = await service.repo.index_rows(conn)
            assert rows == 80  # the table's, whoever asks
            assert not (await narrowing(conn, who, None, model, index_rows=rows, candidates=100)).exact  # small: walked
            assert (await narrowing(conn, who, None, model, index_rows=1_000_000, candidates=100,
                                  remembered=service.repo.counted)).exact

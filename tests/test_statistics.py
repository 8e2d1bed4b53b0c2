"""Planner statistics follow bursts of writes on a PostgreSQL with default autovacuum settings
(the test server is one: only the embedded server started by `serve` is tuned)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import anyio
from mcp import Client

from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.models import MemoryFilter, Principal, WriteItem
from mcp_memory.repository import scope_vectors
from mcp_memory.repository.maintenance import MaintenanceRepository
from mcp_memory.retrieval.common_words import too_common, word_rows
from mcp_memory.retrieval.narrowing import EXACT_BELOW, crossing, exact_below, narrowing
from mcp_memory.retrieval.query import parse_query
from mcp_memory.retrieval.search import SearchStatement, build_search, plan
from mcp_memory.server import build_server
from mcp_memory.service import MemoryService

from .conftest import meeting_notes, principal


async def analyze_count(database: Database) -> int:
    async with database.admin.acquire() as conn:
        return await conn.fetchval(
            "SELECT analyze_count + autoanalyze_count FROM pg_stat_user_tables WHERE relname = 'memories'")


async def planner_rows(database: Database) -> float:
    return await MaintenanceRepository(database.admin).planner_rows()


async def eventually(check, seconds: float = 10) -> None:
    with anyio.fail_after(seconds):
        while True:
            if await check():
                return
            await anyio.sleep(0.05)


async def test_a_burst_of_writes_is_analyzed_in_the_background(service: MemoryService, database: Database,
                                                              alice: Principal) -> None:
    stats = service.statistics
    assert stats is not None
    stats.min_writes = 40
    async with anyio.create_task_group() as tg:
        tg.start_soon(stats.run_forever)
        async def analyzed_at_start() -> bool:  # the fresh table was never analyzed
            return stats.analyzed > 0

        await eventually(analyzed_at_start)
        before = await analyze_count(database)
        for i in range(39):
            await service.write(alice, f"burst memory number {i} about topic {i % 7}")
        await anyio.sleep(0.3)
        assert await analyze_count(database) == before  # below the threshold: nothing yet
        await service.write(alice, "the fortieth write")
        async def analyzed_again() -> bool:
            return await analyze_count(database) > before

        await eventually(analyzed_again)  # autovacuum with default settings would take a minute
        assert await planner_rows(database) >= 40
        assert stats.pending == 0 and stats.threshold == 40  # a tenth of 40 rows is less than the minimum
        tg.cancel_scope.cancel()


async def test_a_database_away_as_the_server_starts_leaves_the_statistics_running(service: MemoryService,
                                                                                  database: Database) -> None:
    """Its first read failing (PostgreSQL stopped right after start-up) once ended the server's
    task group: every later HTTP call got 401 as if its key were wrong, and never 503."""
    stats = service.statistics
    assert stats is not None
    calls = 0

    async def away() -> float:
        nonlocal calls
        calls += 1
        raise ConnectionRefusedError("the database is away")

    stats._planner_rows = away
    before = await analyze_count(database)
    async with anyio.create_task_group() as tg:
        tg.start_soon(stats.run_forever)

        async def analyzed() -> bool:  # not knowing the estimate, it analyzes as for a fresh store
            return await analyze_count(database) > before

        await eventually(analyzed)
        assert calls == 1 and stats.rows >= 0
        tg.cancel_scope.cancel()


def plan_shape(node: dict[str, Any]) -> set[str]:
    """Which indexes the plan reads and how it joins: what a stale plan gets wrong."""
    shape = {node["Index Name"]} if "Index Name" in node else set()
    if node["Node Type"] in ("Nested Loop", "Hash Join", "Merge Join", "Seq Scan"):
        shape.add(f'{node["Node Type"]}:{node.get("Relation Name", "")}')
    for child in node.get("Plans", []):
        shape |= plan_shape(child)
    return shape


async def test_a_search_right_after_a_burst_is_planned_as_after_analyze(service: MemoryService, database: Database,
                                                                        alice: Principal) -> None:
    """Without the keeper, a fresh table's first burst stays unanalyzed until autovacuum comes
    round (a minute with default settings; never here: it is off for this table) and the plan
    assumes a scope of a row or two."""
    async with database.admin.acquire() as conn:
        await conn.execute("ALTER TABLE memories SET (autovacuum_enabled = off)")
    stats = service.statistics
    assert stats is not None
    topics = ["deploys", "the billing service", "on-call", "the staging database", "code review", "the roadmap"]
    items = [WriteItem(content=f"Note {i}: the team discussed {topics[i % 6]} and agreed on step {i % 17}")
             for i in range(600)]
    async with anyio.create_task_group() as tg:
        tg.start_soon(stats.run_forever)
        await service.write_many(alice, items[:300])
        await service.write_many(alice, items[300:])

        async def caught_up() -> bool:
            return stats.pending == 0 and await planner_rows(database) >= 600

        await eventually(caught_up, 30)
        tg.cancel_scope.cancel()
    parsed = parse_query("what did the team agree about the staging database")
    vector = await service.vectors.query(parsed.text)
    statement = build_search(alice, parsed, None, limit=10, settings=service.settings, vector=vector,
                             model=service.vectors.model, dimension=service.vectors.dimension)
    kept = plan_shape(await plan(service.repo, alice, statement))
    async with database.admin.acquire() as conn:
        await conn.execute("ANALYZE memories")
    analyzed = plan_shape(await plan(service.repo, alice, statement))
    assert kept == analyzed


async def test_a_short_query_reads_the_trigram_index(service: MemoryService, database: Database,
                                                     alice: Principal) -> None:
    """pg_trgm declares word_similarity as cheap as an addition; rls.sql gives it its real cost,
    or a one-word search computes it on every memory of the scope (44 ms instead of 14 ms at 1,000
    conversation turns) instead of reading the trigram index."""
    topics = ["deploys", "the billing service", "on-call", "the staging database", "code review", "the roadmap"]
    items = [WriteItem(content=f"Note {i}: the team discussed {topics[i % 6]} at length and agreed on step {i % 17}, "
                               f"after going through the open questions one by one with everyone who owns a part")
             for i in range(800)]
    await service.write_many(alice, items[:400])
    await service.write_many(alice, items[400:])
    async with database.admin.acquire() as conn:
        await conn.execute("ANALYZE memories")
    parsed = parse_query("Kubernets")  # a typo: full text finds nothing, the trigram list rescues it
    vector = await service.vectors.query(parsed.text)
    statement = build_search(alice, parsed, None, limit=10, settings=service.settings, vector=vector,
                             model=service.vectors.model, dimension=service.vectors.dimension)
    shape = plan_shape(await plan(service.repo, alice, statement))
    assert "memories_content_trgm" in shape, shape


async def test_a_narrow_filter_sorts_its_few_memories_instead_of_walking_the_index(
        service: MemoryService, database: Database, alice: Principal) -> None:
    """Past a filter that leaves few memories, walking the HNSW graph skips most of what it finds
    (100,000 memories, last 30 days: p95 54 ms, sorted 31 ms); the planner's estimate of how
    many pass chooses the exact sort, and a search that filters nothing never asks."""
    items = [WriteItem(content=f"Note {i}: the team discussed step {i % 17} of the rollout",
                       tags=["rare"] if i % 50 == 0 else []) for i in range(400)]
    await service.write_many(alice, items)
    async with database.admin.acquire() as conn:
        await conn.execute("ANALYZE memories")
    parsed = parse_query("what did the team discuss about the rollout")
    vector = await service.vectors.query(parsed.text)

    def built(f: MemoryFilter | None, exact: bool = False) -> SearchStatement:
        statement = build_search(alice, parsed, f, limit=10, settings=service.settings, vector=vector,
                                 model=service.vectors.model, dimension=service.vectors.dimension, exact=exact)
        assert statement is not None
        # What the planner prefers at this size, off: only the index orders by distance unsorted.
        return replace(statement, gucs={**statement.gucs, "enable_seqscan": "off", "enable_bitmapscan": "off",
                                        "enable_sort": "off"})

    def walks_the_graph(shape: set[str]) -> bool:
        return any(name.startswith("memories_hnsw") for name in shape)


    narrow = built(MemoryFilter(tags=["rare"]))
    assert narrow.walks_graph and not built(MemoryFilter(tags=["rare"]), exact=True).walks_graph
    async with service.repo.reading(alice, **narrow.gucs) as conn:
        rows = await service.repo.index_rows(conn)
        assert 350 < rows < 450  # the statistics' count, read once a minute
        model = service.vectors.model
        assert (await narrowing(conn, alice, MemoryFilter(tags=["rare"]), model, index_rows=rows, candidates=100)).exact
        # Filtering nothing in a small index, the whole of it alice's: the walk.
        assert not (await narrowing(conn, alice, None, model, index_rows=rows, candidates=100)).exact
        # In a big one (a team's store), a scope that is a small part of it is sorted, a big one walked:
        # 400 of a million is well under the crossing there (~19,000).
        assert (await narrowing(conn, alice, None, model, index_rows=1_000_000, candidates=100)).exact
        assert exact_below(1_000_000, 100) > 18_000 and exact_below(100_000, 100) == EXACT_BELOW
        assert not (await narrowing(conn, alice, None, model, index_rows=400, candidates=100)).exact  # all of it
        assert crossing(20_000, 100) < 3_000  # a quarter of a small store's index: walked
        # The scope's estimate is asked once a minute (MemoryStore.counted), not by every search.
        asked = []

        async def remembered(key, count):
            async def counting() -> float:
                asked.append(key)
                return await count()
            return await service.repo.counted(key, counting)
        for _ in range(3):
            assert (await narrowing(conn, alice, None, model, index_rows=1_000_000, candidates=100,
                                  remembered=remembered)).exact
        assert len(asked) == 1
    assert walks_the_graph(plan_shape(await plan(service.repo, alice, narrow)))
    assert not walks_the_graph(plan_shape(await plan(service.repo, alice, built(MemoryFilter(tags=["rare"]),
                                                                                exact=True))))
    hits = (await service.search(alice, "what did the team discuss about the rollout",
                                 MemoryFilter(tags=["rare"]), limit=20)).hits
    assert len(hits) == 8 and all("rare" in h.tags for h in hits)


async def test_a_users_full_text_list_reads_their_own_entries_in_a_store_many_share(
        service: MemoryService, database: Database, alice: Principal) -> None:
    """memories_fts holds every user's words, and a user's list kept theirs after reading all the
    matches (at a million memories over 100 users, ~60 ms of a search); memories_user_kind_fts
    (sql/user_text_index.sql) has the user and the kind inside it."""
    await service.write_many(alice, [WriteItem(content=f"Note {i}: we moved the staging database to new disks")
                                     for i in range(10)])
    async with database.admin.acquire() as conn:
        assert {r[0] for r in await conn.fetch("SELECT indexname FROM pg_indexes WHERE tablename = 'memories'")} \
            >= {"memories_fts", "memories_user_kind_fts"}
        # every user's notes alike: one in three about the database
        await conn.execute(
            """INSERT INTO memories (user_id, agent_id, project_id, kind, content, content_hash)
               SELECT CASE WHEN g % 100 = 0 THEN 'alice' ELSE 'user-' || (g % 100) END, 'agent-a', 'proj-x',
                      CASE WHEN (g / 300) % 5 = 0 THEN 'decision' ELSE 'note' END,
                      CASE WHEN (g / 100) % 3 = 0 THEN 'Note ' || g || ': the staging database moved to rack '
                                                        || (g % 17)
                           ELSE 'Lunch ' || g || ': soup of the day was lentil number ' || (g % 17) END,
                      md5(g::text)
               FROM generate_series(1, 60000) g""")
        # as autovacuum leaves a table that grew: GIN's own statistics are VACUUM's, not ANALYZE's
        await conn.execute("VACUUM ANALYZE memories")
    parsed = parse_query("staging")
    vector = await service.vectors.query(parsed.text)
    statement = build_search(alice, parsed, None, limit=10, settings=service.settings, vector=vector,
                             model=service.vectors.model, dimension=service.vectors.dimension)
    shape = plan_shape(await plan(service.repo, alice, statement))
    assert "memories_user_kind_fts" in shape and "memories_fts" not in shape, shape
    # and with a kind, the user's entries of that kind alone
    decisions = build_search(alice, parsed, MemoryFilter(kinds=["decision"]), limit=10, settings=service.settings,
                             vector=vector, model=service.vectors.model, dimension=service.vectors.dimension)
    shape = plan_shape(await plan(service.repo, alice, decisions))
    assert "memories_user_kind_fts" in shape and "memories_fts" not in shape, shape
    hits = (await service.search(alice, "staging", limit=10)).hits
    async with database.admin.acquire() as conn:
        hers = {r[0] for r in await conn.fetch("SELECT id FROM memories WHERE user_id = 'alice'")}
    assert len(hits) == 10 and all(h.id in hers and "staging" in h.snippet for h in hits)


async def test_a_users_tag_filter_reads_their_own_entries_in_a_store_many_share(
        service: MemoryService, database: Database, alice: Principal) -> None:
    """memories_tags holds every user's tags, and a user's tagged search ANDed the tag's entries of
    every user with the user's in each list (ten million memories over 1,000 users: 273 ms p50);
    memories_user_tags (sql/user_text_index.sql) has the user inside it."""
    async with database.admin.acquire() as conn:
        # a dozen users' notes alike, alice's one in twelve of them, a tag on a quarter of each user's
        await conn.execute(
            """INSERT INTO memories (user_id, agent_id, project_id, kind, content, content_hash, tags)
               SELECT CASE WHEN g % 12 = 0 THEN 'alice' ELSE 'user-' || (g % 12) END, 'agent-a', 'proj-x', 'note',
                      'Note ' || g || ': the staging database moved to rack ' || (g % 17), md5(g::text),
                      ARRAY['t' || ((g / 12) % 4)]
               FROM generate_series(1, 60000) g""")
        await conn.execute("VACUUM ANALYZE memories")
    parsed = parse_query("staging database")
    tagged = MemoryFilter(tags=["t1"])
    statement = build_search(alice, parsed, tagged, limit=10, settings=service.settings,
                             vector=await service.vectors.query(parsed.text), model=service.vectors.model,
                             dimension=service.vectors.dimension)
    shape = plan_shape(await plan(service.repo, alice, statement))
    assert "memories_user_tags" in shape and "memories_tags" not in shape, shape
    hits = (await service.search(alice, "staging database", tagged, limit=10)).hits
    async with database.admin.acquire() as conn:
        hers = {r[0] for r in await conn.fetch("SELECT id FROM memories WHERE user_id = 'alice' AND 't1' = ANY(tags)")}
    assert len(hits) == 10 and all(h.id in hers for h in hits)


def scans(node: dict[str, Any]) -> set[tuple[str, str]]:
    """Each scan of the plan with the index it reads ("" for none)."""
    found = {(node["Node Type"], node.get("Index Name", ""))} if "Scan" in node["Node Type"] else set()
    for child in node.get("Plans", []):
        found |= scans(child)
    return found


async def test_a_users_sort_in_a_store_many_share_reads_their_vectors_together(
        service: MemoryService, database: Database, alice: Principal) -> None:
    """Where a scope is a small part of a big index its memories are sorted by distance
    (retrieval/narrowing.py), and in a store many users share a user's rows lie one to a page:
    10,139 pages for a user's 10,419 of a million. The model's scope index (repository/scope_vectors.py)
    keeps each scope's vectors together, and the sort reads it alone, to the same rows in the same order."""
    await service.write_many(alice, [WriteItem(content=f"Note {i}: the rollout of service {i % 23} hit stage {i % 7}",
                                               kind="decision" if i % 4 == 0 else "note") for i in range(300)])
    async with database.admin.acquire() as conn:
        # ninety-nine other users' rows written between hers: a block of each user's, then three of
        # hers moved after it (an update lands past the full pages), as a store written over time has them
        await conn.execute(
            """DO $$ BEGIN FOR g IN 1..99 LOOP
                   INSERT INTO memories (user_id, agent_id, project_id, kind, content, content_hash, embedding,
                                         embedding_model)
                   SELECT 'user-' || g, m.agent_id, m.project_id, m.kind, m.content || ' ' || g,
                          md5(m.id::text || g), m.embedding, m.embedding_model
                   FROM memories m WHERE m.user_id = 'alice';
                   UPDATE memories SET user_id = user_id WHERE id IN (
                       SELECT id FROM memories WHERE user_id = 'alice' ORDER BY id LIMIT 3 OFFSET (g - 1) * 3);
               END LOOP; END $$""")
        await conn.execute("VACUUM ANALYZE memories")  # as autovacuum leaves it: the pages marked visible
    parsed = parse_query("where did the rollout of the service go")
    vector = await service.vectors.query(parsed.text)
    statement = build_search(alice, parsed, None, limit=10, settings=service.settings, vector=vector,
                             model=service.vectors.model, dimension=service.vectors.dimension, exact=True)
    index = scope_vectors.name(service.vectors.model, service.vectors.dimension)
    assert ("Index Only Scan", index) in scans(await plan(service.repo, alice, statement))
    async with service.repo.reading(alice, **statement.gucs) as conn:
        together = [r["id"] for r in await conn.fetch(statement.sql, *statement.args)]
    async with service.repo.reading(alice, **statement.gucs, enable_indexonlyscan="off") as conn:
        assert ("Index Only Scan", index) not in scans(json.loads(
            await conn.fetchval(f"EXPLAIN (FORMAT JSON) {statement.sql}", *statement.args))[0]["Plan"])
        scattered = [r["id"] for r in await conn.fetch(statement.sql, *statement.args)]
    assert len(together) == 10 and together == scattered


async def test_identifiers_too_long_for_the_scope_index_leave_it_and_lose_nothing(
        service: MemoryService, database: Database) -> None:
    """A btree entry holds 2,704 bytes: a row whose identifiers take more than IDS_BYTES together
    (128 characters each are allowed, four bytes a character) stays out of the scope index, so its
    write never fails on it, and its user's sort reads the table, to the same memories."""
    wide = Principal(user_id="\U0001d49c" * 128, project_id="\U0001d4ab" * 128, agent_id="\U0001d4b6" * 128,
                     actor="test:wide")
    written = [await service.write(wide, f"Note {i}: the rollout of service {i} reached stage {i % 3}")
               for i in range(5)]
    parsed = parse_query("where did the rollout of the service go")
    statement = build_search(wide, parsed, None, limit=10, settings=service.settings,
                             vector=await service.vectors.query(parsed.text), model=service.vectors.model,
                             dimension=service.vectors.dimension, exact=True)
    assert not any(name == scope_vectors.name(service.vectors.model, service.vectors.dimension)
                   for _, name in scans(await plan(service.repo, wide, statement)))
    async with service.repo.reading(wide, **statement.gucs) as conn:
        assert {r["id"] for r in await conn.fetch(statement.sql, *statement.args)} == {w.memory.id for w in written}
    async with database.admin.acquire() as conn:
        held = await conn.fetchval(
            "SELECT count(*) FROM memories WHERE deleted_at IS NULL AND embedding_model = $1 AND "
            + scope_vectors.ids_within(""), service.vectors.model)
        assert held == 0 and await conn.fetchval("SELECT count(*) FROM memories") == 5


async def test_a_word_in_most_of_the_scope_leaves_the_any_word_list_to_the_rare_ones(
        service: MemoryService, database: Database, alice: Principal, settings: Settings) -> None:
    """Full text lists at most `fulltext_scan` memories holding any of a question's words, the first
    in the table's order: a word hundreds of them hold filled it before a rare word's memory was
    reached, and its whole bitmap was read (at a million memories, 28 of a 70 ms search). A word the
    planner expects in more than `fulltext_common_rows` of the scope is listed by only together
    with the others, in a store one user holds: the statistics are the table's, and what a user's
    search leaves out must not tell of another user's memories."""
    tuned = {"fulltext_scan": 100, "fulltext_common_rows": 150, "weight_vector": 0.0, "weight_trigram": 0.0}
    service.settings = service.settings.model_copy(update=tuned)
    await meeting_notes(database)
    await service.write(alice, "Kestrel is the name of the staging cluster.")

    async def analyzed_rows() -> float:
        async with database.admin.acquire() as conn:
            await conn.execute("ANALYZE memories")
        return await MaintenanceRepository(database.admin).planner_rows()
    rows = await analyzed_rows()

    owners_asked = []

    async def common(p: Principal, cutoff: int = 150, text: str = "kestrel meeting") -> list[str]:
        asked = parse_query(text)

        async def alone() -> bool:
            owners_asked.append(p.user_id)
            return await MaintenanceRepository(database.admin).others_hold_at_most(p.user_id, 15)
        async with service.repo.reading(p) as conn:
            return too_common(await word_rows(conn, p, asked.text, asked.lexicon, "'english'", index_rows=rows,
                                              cutoff=cutoff, alone=alone), cutoff)
    assert await common(alice) == ["meeting"]
    owners_asked.clear()
    assert await common(alice, cutoff=500) == []  # the store holds fewer than that
    assert await common(alice, cutoff=0) == []
    assert owners_asked == []  # and the owner's pool is not asked who else holds memories
    # every word past it: the rarest is still listed by, or the list would hold nothing
    assert len(await common(alice, text="weekly meeting notes")) == 2
    found = await service.search(alice, "kestrel meeting", limit=5, explain=True)
    assert found.hits and found.hits[0].snippet.startswith("Kestrel")
    assert found.reading is not None and found.reading.words_left_out == ["meeting"]  # explain says so
    async with Client(build_server(settings.model_copy(update=tuned)), mode="legacy") as client:  # as a client reads it
        result = await client.call_tool("memory_search", {"query": "kestrel meeting", "explain": True})
        assert not result.is_error and result.structured_content["reading"]["words_left_out"] == ["meeting"]
    # words that are no lexeme, several, or hostile: estimated and left out like any other
    hostile = "'; DROP TABLE memories; -- kestrel e-mail C++ 😀 very meeting \\ %_ ' || pg_sleep(5) ||"
    assert (await service.search(alice, hostile, limit=5)).hits[0].snippet.startswith("Kestrel")
    # every word listed by: the meetings' first hundred are read, and the cluster's memory by its own
    # word (tests/test_fulltext_sample.py)
    service.settings = service.settings.model_copy(update={"fulltext_common_rows": 0})
    found = await service.search(alice, "kestrel meeting", limit=5, explain=True)
    assert found.hits[0].snippet.startswith("Kestrel")
    assert found.reading is None  # nothing left out: nothing to say
    # bob's memories in the store, more than a tenth of the cut-off: nothing is left out for either of
    # them any more (which words are would tell alice of his)
    service.settings = service.settings.model_copy(update=tuned)
    bob = principal("bob")
    await service.write_many(bob, [WriteItem(content=f"Meeting {i} with the vendor") for i in range(20)])
    rows = await analyzed_rows()
    maintenance = MaintenanceRepository(database.admin)
    assert await maintenance.others_hold_at_most("alice", 20) and not await maintenance.others_hold_at_most("alice", 19)
    assert await common(alice) == [] and await common(bob) == []
    service.repo._counted.clear()  # what the service asked a minute ago
    found = await service.search(alice, "kestrel meeting", limit=5, explain=True)
    assert found.reading is None
    async with database.admin.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM memories") == 421


async def test_a_filter_that_leaves_few_memories_is_read_before_the_words_are_matched(
        service: MemoryService, database: Database, alice: Principal) -> None:
    """A word thousands of memories share costs its whole index entry, ANDed with a filter that
    leaves a handful ("Terraform" in the last 30 days of one user of a million over 100: the trigram
    bitmap 76 ms, full text's two 15 ms each). Where few pass (narrowing.FENCE_BELOW, a FENCE_SHARE of
    the store) the word lists read those first and match them one by one (the match above the fence, where no index of
    the word can serve it), and rank exactly what they ranked before."""
    items = [WriteItem(content=f"{'Terraform' if i % 3 == 0 else 'Pulumi'} plan {i}: the module for region {i % 9} "
                               "changed", tags=["infra"] if i % 40 == 0 else []) for i in range(1200)]
    for start in range(0, len(items), 400):
        await service.write_many(alice, items[start:start + 400])
    async with database.admin.acquire() as conn:
        await conn.execute("ANALYZE memories")
    model = service.vectors.model
    infra = MemoryFilter(tags=["infra"])
    async with service.repo.reading(alice) as conn:
        rows = await service.repo.index_rows(conn)
        # 30 of a million: read first; of this store's 1,200, the word's own entries are small
        assert (await narrowing(conn, alice, infra, model, index_rows=1_000_000, candidates=100)).fenced
        assert not (await narrowing(conn, alice, infra, model, index_rows=rows, candidates=100)).fenced
        assert not (await narrowing(conn, alice, MemoryFilter(kinds=["note"]), model, index_rows=10_000_000,
                                    candidates=100)).fenced  # all 1,200 pass
    parsed = parse_query("Terraform")
    vector = await service.vectors.query(parsed.text)
    settings = service.settings.model_copy(update={"search_candidates": 100})

    def built(fenced: bool) -> SearchStatement:
        statement = build_search(alice, parsed, infra, limit=10, settings=settings, vector=vector, model=model,
                                 dimension=service.vectors.dimension, fenced=fenced)
        assert statement is not None
        return statement

    def scans_matching(node: dict[str, Any], op: str) -> int:
        """How many scans of the memories table test `op` (a word list's match) in a plan."""
        found = int(node.get("Relation Name") == "memories" and any(
            op in str(node.get(k, "")) for k in ("Filter", "Index Cond", "Recheck Cond")))
        return found + sum(scans_matching(child, op) for child in node.get("Plans", []))
    for op in ("<%", "@@"):  # trigram, full text
        assert scans_matching(await plan(service.repo, alice, built(False)), op)
        assert not scans_matching(await plan(service.repo, alice, built(True)), op)  # above the fence
    ranked = []
    for fenced in (False, True):
        statement = built(fenced)
        async with service.repo.reading(alice, **statement.gucs) as conn:
            ranked.append([(r["id"], round(r["score"], 6)) for r in await conn.fetch(statement.sql, *statement.args)])
    assert ranked[0] == ranked[1] and len(ranked[0]) == 10
    hits = (await service.search(alice, "Terraform", infra, limit=50)).hits
    assert len(hits) == 30 and all("infra" in h.tags for h in hits)

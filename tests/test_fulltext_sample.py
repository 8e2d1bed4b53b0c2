"""Which memories full text ranks where a question's words are held by more than `fulltext_scan`:
those holding its rarest words, not the first the table holds (retrieval/fulltext.py)."""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

import pytest

from mcp_memory.db import Database
from mcp_memory.models import MemoryFilter, Principal, WriteItem
from mcp_memory.repository.maintenance import MaintenanceRepository
from mcp_memory.retrieval.common_words import MOST_WORDS, word_rows
from mcp_memory.retrieval.narrowing import entries_per_row, narrowing
from mcp_memory.retrieval.query import parse_query
from mcp_memory.retrieval.search import SearchStatement, build_search
from mcp_memory.service import MemoryService

from .conftest import meeting_notes, principal

# Full text alone ranks, every word listed by (a store many users share leaves none out), and
# 100 memories at most: the 400 meetings hold "meeting" and "budget" four times over.
TUNED = {"fulltext_scan": 100, "fulltext_common_rows": 0, "weight_vector": 0.0, "weight_trigram": 0.0}


async def meetings_then(service: MemoryService, database: Database, alice: Principal, *later: str) -> None:
    """400 meeting notes first in the table's order, then `later` written as a user would."""
    service.settings = service.settings.model_copy(update=TUNED)
    await meeting_notes(database)
    await service.write_many(alice, [WriteItem(content=text) for text in later])


async def test_the_rarest_words_memories_are_ranked_not_the_tables_first(
        service: MemoryService, database: Database, alice: Principal) -> None:
    """A memory written after hundreds holding a question's common word was past the first 100 the
    scan met: full text never ranked it, whatever its rare word weighed."""
    await meetings_then(service, database, alice, "Kestrel is the name of the staging cluster.")
    found = await service.search(alice, "kestrel meeting", limit=5, explain=True)
    assert found.hits[0].snippet.startswith("Kestrel")
    assert found.hits[0].explain is not None and found.hits[0].explain["fulltext"] == 1
    # the rest of the list is the common word's memories, as many as the list holds
    found = await service.search(alice, "kestrel meeting", limit=50)
    assert len(found.hits) == 50 and all("meeting" in h.snippet for h in found.hits[1:])
    # two words as common: what the list has room for after the rare word's is the first the table
    # holds, as one scan had it (the words cannot tell them apart), not whichever ids sort first
    await service.write_many(alice, [WriteItem(content=f"Standup {i}: the deploy went fine") for i in range(150)])
    hits = (await service.search(alice, "kestrel meeting standup", limit=100)).hits
    assert hits[0].snippet.startswith("Kestrel") and not any("Standup" in h.snippet for h in hits)
    # another user's memory holding the rare word is never read for alice, nor hers for bob
    bob = principal("bob")
    await service.write(bob, "Kestrel was renamed Osprey for bob's team.")
    hits = (await service.search(alice, "kestrel meeting", limit=10)).hits
    assert [h.snippet for h in hits if "Kestrel" in h.snippet] == ["Kestrel is the name of the staging cluster."]
    assert [h.snippet for h in (await service.search(bob, "kestrel meeting", limit=10)).hits] \
        == ["Kestrel was renamed Osprey for bob's team."]


async def test_phrases_negations_and_filters_keep_their_meaning(
        service: MemoryService, database: Database, alice: Principal) -> None:
    await meetings_then(service, database, alice, "Kestrel is the name of the staging cluster.",
                        "The budget for Kestrel was approved.")
    # a phrase is read as one: every memory saying it (24 of the 400, most past the first hundred
    # holding its words), and none only holding its words
    hits = (await service.search(alice, '"budget line 3" kestrel', limit=40)).hits
    assert len([h for h in hits if "budget line 3" in h.snippet]) == 24
    assert all("budget line 3" in h.snippet or "Kestrel" in h.snippet for h in hits)
    assert {h.snippet for h in hits if "Kestrel" in h.snippet} == {
        "Kestrel is the name of the staging cluster.", "The budget for Kestrel was approved."}
    # an excluded word: none of its memories, however its other words are read
    hits = (await service.search(alice, "kestrel meeting -budget", limit=20)).hits
    assert hits[0].snippet.startswith("Kestrel is") and not any("budget" in h.snippet for h in hits)
    # a filter: only memories passing it
    hits = (await service.search(alice, "kestrel meeting", MemoryFilter(kinds=["note"]), limit=20)).hits
    assert hits and all(h.kind == "note" for h in hits)


async def test_a_long_text_as_a_query_is_read_as_one(service: MemoryService, alice: Principal) -> None:
    """Each word read apart costs a scan of its own: a pasted paragraph keeps the one scan."""
    def statement(text: str) -> str:
        built = build_search(alice, parse_query(text), None, limit=10, settings=service.settings)
        assert built is not None
        return built.sql
    few = " ".join(f"word{i}" for i in range(MOST_WORDS))
    assert "hits AS MATERIALIZED" in statement(few)
    assert "hits AS MATERIALIZED" not in statement(few + " more")
    # stop words are no scan
    assert "hits AS MATERIALIZED" in statement(few + " the of and")


async def test_ranked_by_ts_rank_alone_a_words_other_forms_still_match(
        service: MemoryService, alice: Principal) -> None:
    """`fulltext_idf` off: the forms of a question's words are still read ("grow" finds "grew")."""
    service.settings = service.settings.model_copy(update={**TUNED, "fulltext_idf": False})
    await service.write(alice, "Zainab grew up on a farm outside Bergamo.")
    hits = (await service.search(alice, "Where did Zainab grow up?", limit=5)).hits
    assert hits and hits[0].snippet.startswith("Zainab grew up")


async def test_a_rare_word_past_a_wide_filter_is_read_by_its_own_index_entries(
        service: MemoryService, database: Database, alice: Principal, monkeypatch: pytest.MonkeyPatch) -> None:
    """A word held by few memories, under a filter many pass, was read by combining its index
    entries with the filter's, which reads the filter's entries however rare the word (the last 30
    days at a million memories: 2.6-5.6 ms a word). Where the planner expects the word in few enough
    of the memories passing (a tenth; a hundredth for a kind: narrowing.ENTRIES_PER_ROW), its own
    entries are read and the filter checked on each row: the list ranks what it ranked, nothing
    failing the filter or of another user."""
    service.settings = service.settings.model_copy(update={"fulltext_common_rows": 150})
    await meeting_notes(database)
    await service.write_many(alice, [WriteItem(content="Kestrel is the name of the staging cluster.", tags=["ops"]),
                                     WriteItem(content="Kestrel was retired in May.")])
    await service.write(principal("bob"), "Kestrel is bob's cluster, in his ops notes.", tags=["ops"])
    async with database.admin.acquire() as conn:
        # Half the notes are tagged, and all have vectors (the filter's estimate counts those).
        await conn.execute("""UPDATE memories n SET embedding = k.embedding, embedding_model = k.embedding_model,
                                  tags = CASE WHEN n.content ~ '[02468]$' THEN ARRAY['ops'] ELSE n.tags END
                              FROM memories k WHERE k.content LIKE 'Kestrel is the%' AND n.embedding IS NULL""")
        await conn.execute("ANALYZE memories")
    ops = MemoryFilter(tags=["ops"])
    parsed = parse_query("kestrel meeting")
    model = service.vectors.model

    async def alone() -> bool:
        return await MaintenanceRepository(database.admin).others_hold_at_most(alice.user_id, 15)
    async with service.repo.reading(alice) as conn:
        rows = await service.repo.index_rows(conn)
        narrowed = await narrowing(conn, alice, ops, model, index_rows=rows, candidates=100)
        counts = await word_rows(conn, alice, parsed.matched, parsed.lexicon, "'english'", index_rows=rows,
                                 cutoff=150, alone=alone)
        unfiltered = await narrowing(conn, alice, None, model, index_rows=rows, candidates=100)
    # ~200 pass: a word in at most ~20 is read by its rows (a tag's entries are a bitmap); where a kind
    # alone narrows, read inside the word's own entries, in at most ~2
    assert narrowed.by_rows_below is not None and 15 < narrowed.by_rows_below < 26 and counts["meeting"] > 300
    assert narrowed.by_rows(counts) == ["kestrel"]
    assert entries_per_row(MemoryFilter(kinds=["note"])) == 10 * entries_per_row(ops)
    assert entries_per_row(MemoryFilter(kinds=["note"], tags=["ops"])) == entries_per_row(ops)
    assert unfiltered.by_rows(counts) == [] and replace(narrowed, fenced=True).by_rows(counts) == []
    vector = await service.vectors.query(parsed.text)

    def built(by_rows: list[str]) -> SearchStatement:
        statement = build_search(alice, parsed, ops, limit=10, settings=service.settings, vector=vector,
                                 model=model, dimension=service.vectors.dimension, by_rows=by_rows)
        assert statement is not None
        return statement

    indexed, by_rows = built([]), built(["kestrel"])
    # the rare word's scan past the fence (its own entries), the common word's as it was
    fence = "OFFSET 0) m WHERE"
    assert by_rows.sql.count(fence) == 1 and fence not in indexed.sql
    ranked = []
    for statement in (indexed, by_rows):
        async with service.repo.reading(alice, **statement.gucs) as conn:
            ranked.append([(r["id"], r["tags"], round(r["score"], 6)) for r in await conn.fetch(statement.sql,
                                                                                                *statement.args)])
    assert all(tags == ["ops"] for _, tags, _ in ranked[0])
    assert ranked[0] == ranked[1] and len(ranked[0]) == 10
    read_by_rows = []

    def spied(*args: Any, **kwargs: Any) -> SearchStatement | None:
        read_by_rows.append(list(kwargs.get("by_rows", ())))
        return build_search(*args, **kwargs)
    monkeypatch.setattr(sys.modules["mcp_memory.retrieval.search"], "build_search", spied)
    hits = (await service.search(alice, "kestrel meeting", ops, limit=5)).hits
    assert read_by_rows[-1] == ["kestrel"]
    assert hits[0].snippet == "Kestrel is the name of the staging cluster."
    assert all(h.tags == ["ops"] and "bob" not in h.snippet for h in hits)

"""Which memories full text ranks where a question's words are held by more than `fulltext_scan`:
those holding its rarest words, not the first the table holds (retrieval/fulltext.py)."""

from __future__ import annotations

from mcp_memory.db import Database
from mcp_memory.models import MemoryFilter, Principal, WriteItem
from mcp_memory.retrieval.common_words import MOST_WORDS
from mcp_memory.retrieval.query import parse_query
from mcp_memory.retrieval.search import build_search
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

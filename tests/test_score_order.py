"""The score a search returns is the one its list is ordered by: after the Python stage moves a
newer version, an on-topic memory or a successor up (retrieval/reorder.py), no hit below shows a
higher score than one above it, and `explain.sql_score` keeps what the SQL stage gave it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

from mcp_memory.models import Principal, ScopeInfo, SearchHit, memory_uri
from mcp_memory.retrieval.reorder import placed_scores
from mcp_memory.service import MemoryService

QUESTIONS = (
    "Where does Odalys Pellegrini live these days?",  # present: her versions newest first
    "Where does Odalys Pellegrini live?",
    "Where did Odalys Pellegrini live before?",  # past: no re-ordering of versions
    "What does the build run on now?",  # a successor above what it superseded
    "build",
)


def _ordered(hits: list[SearchHit]) -> bool:
    return all(a.score >= b.score for a, b in zip(hits, hits[1:], strict=False))


async def test_every_list_is_ordered_by_the_score_it_returns(service: MemoryService, alice: Principal) -> None:
    now = datetime.now(UTC)
    for days, text in ((900, "Odalys Pellegrini settled down in Quebec City."),
                       (400, "After Quebec City, Odalys Pellegrini ended up in Leipzig."),
                       (30, "Odalys Pellegrini left Leipzig behind for Berlin."),
                       (200, "Odalys Pellegrini owns a Nissan Leaf."),
                       (100, "Odalys Pellegrini is reading a novel set in Lisbon.")):
        await service.write(alice, text, occurred_at=now - timedelta(days=days))
    # The superseded memory says the query's words; its successor says none of them.
    old = (await service.write(alice, "The build runs on Jenkins now, the build is slow",
                               occurred_at=now - timedelta(days=10))).memory
    await service.write(alice, "CI moved to GitHub Actions", supersedes=[old.id])
    moved = 0
    for question in QUESTIONS:
        for explain in (False, True):
            hits = (await service.search(alice, question, explain=explain, limit=10)).hits
            assert hits, question
            assert _ordered(hits), (question, [(h.snippet, h.score) for h in hits])
            if explain:
                moved += sum(h.explain["sql_score"] != h.score for h in hits)
                # The scores given out are the SQL stage's own, only placed in the final order.
                assert sorted(h.score for h in hits) == sorted(round(h.explain["sql_score"], 6) for h in hits)
    # The stage after SQL did move something, or this test could not fail.
    assert moved > 0


def _hit(score: float, i: int) -> SearchHit:
    memory_id = uuid4()
    return SearchHit(id=memory_id, uri=memory_uri(memory_id), title=None, snippet=f"m{i}", truncated=False,
                     kind="fact", tags=[], scope=ScopeInfo.of(None, None), occurred_at=datetime.now(UTC),
                     age="now", score=score, superseded_by=None, explain={"fused": score})


def test_placed_scores_give_each_place_its_score_and_keep_the_sql_one() -> None:
    hits = [_hit(s, i) for i, s in enumerate((0.52, 0.80, 0.0, 0.61))]
    placed = placed_scores(hits)
    assert [h.snippet for h in placed] == ["m0", "m1", "m2", "m3"]  # the order is untouched
    assert [h.score for h in placed] == [0.80, 0.61, 0.52, 0.0]
    assert [h.explain["sql_score"] for h in placed] == [0.52, 0.80, 0.0, 0.61]

"""Scores that follow the order (issue 30 item 6): the score a hit shows is that of the place it holds."""

from __future__ import annotations

from mcp_memory.models import Principal
from mcp_memory.service import MemoryService


async def test_the_listed_score_is_the_one_the_list_is_ordered_by(service: MemoryService, alice: Principal) -> None:
    """A superseded memory the query's words match better scored above its successor, and
    showed it below the successor: 1.0 under -0.0."""
    old = (await service.write(alice, "The nightly build runs on Jenkins in the basement rack")).memory
    new = (await service.write(alice, "CI moved to GitHub Actions", supersedes=[old.id])).memory
    hits = (await service.search(alice, "nightly build Jenkins basement rack", explain=True)).hits
    order = [h.id for h in hits]
    assert order.index(new.id) < order.index(old.id)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True), [(h.snippet, h.score) for h in hits]
    # The case this is about: the SQL stage scored the superseded memory higher, and explain keeps it.
    moved = next(h for h in hits if h.id == old.id)
    assert moved.explain["sql_score"] > next(h for h in hits if h.id == new.id).explain["sql_score"]


async def test_versions_put_newest_first_carry_the_scores_of_their_places(service: MemoryService,
                                                                          alice: Principal) -> None:
    """Without explain too: every list a search returns is in the order of its scores."""
    for text in ("Orla Novak lives over in Antwerp.", "Orla Novak just moved to Ghent!",
                 "Orla Novak's place is in Dundee, near the river.", "Orla Novak drives a Peugeot 208."):
        await service.write(alice, text)
    for query in ("Where does Orla Novak live these days?", "Orla Novak", "Where did Orla Novak live before?"):
        scores = [h.score for h in (await service.search(alice, query)).hits]
        assert scores == sorted(scores, reverse=True), (query, scores)

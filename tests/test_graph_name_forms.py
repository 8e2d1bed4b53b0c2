"""A subject a writer names in another form than its texts do ("feeds-api" for the "Feeds API"):
comparing two of its facts, its name is no value they share."""

from __future__ import annotations

from datetime import UTC, datetime

from mcp_memory.graph.names import name_words
from mcp_memory.retrieval.versions import masked_pair

from .conftest import principal


def day(d: str) -> datetime:
    return datetime.fromisoformat(d).replace(tzinfo=UTC)


def test_a_name_joined_by_hyphens_or_underscores_is_its_words_apart_too() -> None:
    assert name_words("feeds-api") == {"feeds-api", "feeds", "api"}
    assert name_words("coupons_pipeline") == {"coupons_pipeline", "coupons", "pipeline"}
    assert name_words("Eun-ji Abara") == {"eun-ji", "eun", "ji", "abara"}
    assert name_words("x__y") == {"x__y", "x", "y"}  # never an empty word, which would mask every text
    new, old, _ = masked_pair("Feeds API traffic is served out of us-east-1.",
                              "Feeds API is released under BSD-3-Clause.", ["feeds-api"])
    assert "Feeds" not in new + old and "API" not in new + old
    new, old, _ = masked_pair("Eun-ji off auth pager, now edge network.", "Eun-ji Abara carries the auth pager.",
                              ["Eun-ji Abara"])
    assert "Eun-ji" not in new + old and "Abara" not in old


async def test_a_subject_named_as_a_slug_is_its_name_in_the_texts(service) -> None:
    """An agent names a service "feeds-api", its texts "Feeds API". Unmasked, the name read as a
    value both texts share, so a newer fact about its traffic "named" the licence beside a new
    value and went first as the licence's newer value."""
    p = principal()
    licence = await service.write(p, "Feeds API is released under BSD-3-Clause.", about=["feeds-api"],
                                  key="licence", occurred_at=day("2024-03-01"))
    await service.write(p, "Feeds API traffic is served out of us-east-1.", about=["feeds-api"],
                        key="serves traffic from", occurred_at=day("2024-09-01"))
    hits = (await service.search(p, "Which licence covers the feeds API?", explain=True)).hits
    assert hits[0].id == licence.memory.id
    assert (hits[0].explain or {}).get("fact") == 1.0
    # Named the same way, a text that does name the old value beside a new one is still its newer value.
    old = await service.write(p, "Teodor Kral owns the geo-pipeline.", about=["geo-pipeline"], key="owner",
                              occurred_at=day("2024-05-25"))
    handed = await service.write(p, "Geo pipeline ownership handed from Teodor Kral to Yaw Boateng.",
                                 about=["geo-pipeline"], key="go-to person", occurred_at=day("2024-08-17"))
    hits = (await service.search(p, "Who owns the geo pipeline now?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [handed.memory.id, old.memory.id]

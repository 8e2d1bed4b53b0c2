"""A subject a writer names in another form than its texts do ("feeds-api" for the "Feeds API"):
comparing two of its facts, its name is no value they share."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mcp_memory.graph.name_forms import name_words
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


async def test_a_thing_named_as_a_slug_in_lower_case_is_found_in_a_question_and_a_text(service) -> None:
    """A coding agent keys "billing-service" and later writes of it in passing. A question naming
    the slug ("Who owns billing-service now?") looked up runs of two words and more, never the one
    slug, so the graph knew nothing of it: no keyed order, and the handover nobody keyed stayed
    below the old owner. A text naming it in lower case is one of its memories where it is known;
    a hyphenated word nobody named ("on-call") makes no entity, and an owner after an opening word
    ("Upgraded billing-service's database") is no verb making that word a name."""
    p = principal()
    for text, key, when in (("The billing-service runs on PostgreSQL 15.", "database", "2025-01-10"),
                            ("billing-service deploys to Fly.io.", "deploy target", "2025-01-11"),
                            ("billing-service uses Stripe for payments.", None, "2025-02-01"),
                            ("billing-service moved off Fly.io; it is hosted on Render now.", "hosting", "2025-07-01")):
        await service.write(p, text, about=["billing-service"] if key else None, key=key, occurred_at=day(when))
    priya = (await service.write(p, "The on-call owner for billing-service is Priya Raman.", about=["billing-service"],
                                 key="owner", occurred_at=day("2025-01-12"))).memory.id
    upgraded = (await service.write(p, "Upgraded billing-service's database to PostgreSQL 17 today.",
                                    occurred_at=day("2025-06-01"))).memory.id
    handed = (await service.write(p, "Handed billing-service ownership over to Diego Alves.",
                                  occurred_at=day("2025-08-01"))).memory.id
    got = (await service.get(p, [upgraded, handed])).memories
    # "Upgraded" opens an agent's note on its verb, the subject unsaid, as "Handed" does.
    assert [(m.about, m.mentions) for m in got] == [(None, ["PostgreSQL", "billing-service"]),
                                                    (None, ["Diego Alves", "billing-service"])]
    names = {e.name for e in (await service.entities.list(p)).entities}
    assert "Upgraded" not in names and "on-call" not in names and "billing-service" in names
    hits = (await service.search(p, "Who owns billing-service now?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [handed, priya]
    assert hits[0].explain["newer_than_fact"] is True and hits[1].explain["fact"] == 1
    hits = (await service.search(p, "What database does billing-service use now?", explain=True)).hits
    assert hits[0].id == upgraded and hits[0].explain["newer_than_fact"] is True
    # Placed again by the graph's stage, each hit still shows the score the statement gave it.
    live = [h for h in hits if h.superseded_by is None]
    assert live and all(h.explain["sql_score"] == pytest.approx(
        h.explain["fused"] * h.explain["recency"] * h.explain["subject"] * h.explain["period"], rel=1e-3) for h in live)


def test_a_question_of_many_slugs_looks_up_a_bounded_few() -> None:
    """A hostile question of thousands of slugs looks up no more than keyed.MAX_PHRASES of its runs of
    words and as many of its slugs."""
    from mcp_memory.retrieval.keyed import MAX_PHRASES, question_names
    from mcp_memory.retrieval.query import parse_query

    names = question_names(parse_query("Who owns " + " ".join(f"svc-{i}" for i in range(3000)) + "?"))
    assert 0 < len(names) <= 2 * MAX_PHRASES

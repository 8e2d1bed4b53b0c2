"""The subject factor on a real database: a memory that speaks of everyone a question names gains
over one that only shares its other words; one that merely addresses them ("Thanks, Mel!") does
not gain."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mcp_memory.config import Settings
from mcp_memory.models import Principal
from mcp_memory.service import MemoryService

QUESTION = "What did Melanie paint recently?"


async def _factors(service: MemoryService, alice: Principal, texts: list[str]) -> dict[str, float]:
    start = datetime.now(UTC) - timedelta(days=3)
    for i, text in enumerate(texts):
        await service.write(alice, text, kind="note", occurred_at=start + timedelta(hours=i))
    hits = (await service.search(alice, QUESTION, limit=20, explain=True)).hits
    return {h.snippet: h.explain["subject"] for h in hits}


@pytest.mark.parametrize(("text", "about"), [
    ("Melanie: I painted a lake at dawn last week.", True),
    ("Caroline: Anna, Melanie and I painted the fence.", True),
    ("Caroline: I met Melanie, who paints sunsets.", True),
    ("Caroline: Melanie paints on Sundays. Thanks, Melanie!", True),
    ("Caroline: Thanks, Melanie! I painted this for my mum.", False),
    ("Caroline: Hey Melanie, I painted the shed blue.", False),
    ("Caroline: hi Melanie I painted it again", False),
    ("Caroline: What do you paint these days, Melanie?", False),
    ("Caroline: Wow, Melanie, I painted that too.", False),
])
async def test_a_memory_that_only_addresses_someone_is_not_about_them(
        service: MemoryService, alice: Principal, settings: Settings, text: str, about: bool) -> None:
    factors = await _factors(service, alice, [text, "Jon painted a boat."])
    assert factors[text] == pytest.approx(settings.subject_boost if about else 1.0)
    assert factors["Jon painted a boat."] == 1.0

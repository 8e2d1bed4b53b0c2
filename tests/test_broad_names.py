"""A speaker whose turns are much of their conversations is left out of the question's vector; a person of
a few turns, a question of a name alone and a question naming nobody known search as before (and
one whom notes rather than turns are about: tests/test_focus.py's Ines Moreau)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.models import Principal
from mcp_memory.repository import MemoryRepository
from mcp_memory.retrieval.broad_names import without_names
from mcp_memory.service import MemoryService

from .counting_embedder import counting_service

# Two people talking: half the turns are Ana's ("Tom: Hi Ana" only mentions her).
TURNS = [
    "Ana: Hey Tom! Long time no talk.", "Tom: Hi Ana, how have you been?",
    "Ana: Cool! What did it look like?", "Tom: It was a blue bowl with stripes.",
    "Ana: Haha, love that!", "Tom: I went hiking near the lake on Sunday.",
    "Ana: I'm single these days and not looking to date anyone.", "Tom: The new bakery on Elm Street opened.",
    "Ana: Wow, Tom, so great!", "Tom: My brother adopted a puppy last month.",
    "Ana: Thanks, Tom! See you soon.", "Tom: Take care!",
]
QUESTION = "What is Ana's relationship status?"


async def _talk(service: MemoryService, p: Principal) -> list[Any]:
    start = datetime.now(UTC) - timedelta(days=3)
    return [(await service.write(p, t, kind="episode", occurred_at=start + timedelta(minutes=i))).memory
            for i, t in enumerate(TURNS)]


def _fresh(database: Database, service: MemoryService, settings: Settings, **changes: Any) -> MemoryService:
    """A service with its own repository (its own minute of remembered counts)."""
    return MemoryService(MemoryRepository(database.pool), settings.model_copy(update=changes), service.vectors)


async def _ranks(service: MemoryService, p: Principal, question: str) -> tuple[list[str] | None, dict[Any, Any]]:
    result = await service.search(p, question, limit=12, explain=True)
    left_out = result.reading.names_left_out_of_vector if result.reading is not None else None
    return left_out, {h.id: h.explain["vector"] for h in result.hits}


async def test_a_speakers_name_is_left_out_of_the_vector(database: Database, service: MemoryService,
                                                        settings: Settings, alice: Principal) -> None:
    await _talk(service, alice)
    left_out, ranks = await _ranks(_fresh(database, service, settings), alice, QUESTION)
    assert left_out == ["Ana"]
    # The vector list is the one of the question said without her: each hit's place in it alike.
    masked = without_names(QUESTION, ["Ana"])
    assert masked == "What is someone relationship status?"
    assert without_names("Ana's?", ["Ana"]) is None and without_names("Ana Lima", ["Ana", "Lima"]) is None
    unnamed_left_out, unnamed = await _ranks(_fresh(database, service, settings), alice, masked)
    assert unnamed_left_out is None
    assert {i: r for i, r in ranks.items() if r is not None} == {i: r for i, r in unnamed.items() if r is not None}
    # Off, the name stays: the vector ranks differ (her chit-chat was closer with her name in it).
    off_left_out, off = await _ranks(_fresh(database, service, settings, vector_name_share=1.0), alice, QUESTION)
    assert off_left_out is None and off != ranks


async def test_the_share_is_of_the_live_memories_the_session_sees(database: Database, service: MemoryService,
                                                                  settings: Settings, alice: Principal) -> None:
    turns = await _talk(service, alice)
    # Six of twelve are her turns: at a share of one half she is left out, above it not.
    assert (await _ranks(_fresh(database, service, settings, vector_name_share=0.5), alice, QUESTION))[0] == ["Ana"]
    assert (await _ranks(_fresh(database, service, settings, vector_name_share=0.51), alice, QUESTION))[0] is None
    # One of her turns forgotten: five of eleven, under a half.
    preview = await service.forget_preview(alice, ids=[turns[4].id])
    await service.forget_execute(alice, preview.token)
    assert (await _ranks(_fresh(database, service, settings, vector_name_share=0.45), alice, QUESTION))[0] == ["Ana"]
    assert (await _ranks(_fresh(database, service, settings, vector_name_share=0.46), alice, QUESTION))[0] is None


async def test_a_person_of_a_few_turns_keeps_the_vector_as_it_was(
        database: Database, service: MemoryService, settings: Settings, alice: Principal) -> None:
    await _talk(service, alice)
    for i in range(20):  # everyone else's notes: Ana's turns are 6 of 32, under the default's share
        await service.write(alice, f"Note {i}: the build server number {i} was patched on schedule.")
    on = await _ranks(_fresh(database, service, settings), alice, QUESTION)
    off = await _ranks(_fresh(database, service, settings, vector_name_share=1.0), alice, QUESTION)
    assert on[0] is None and on == off
    # A question naming nobody known is searched as before too.
    nobody = "What is Zed's relationship status?"
    assert await _ranks(_fresh(database, service, settings), alice, nobody) == \
        await _ranks(_fresh(database, service, settings, vector_name_share=1.0), alice, nobody)


async def test_a_speakers_name_alone_keeps_its_vector(database: Database, service: MemoryService,
                                                      settings: Settings, alice: Principal) -> None:
    await _talk(service, alice)
    assert await _ranks(_fresh(database, service, settings), alice, "Ana?") == \
        await _ranks(_fresh(database, service, settings, vector_name_share=1.0), alice, "Ana?")


async def test_a_speakers_next_question_is_embedded_once(database: Database, service: MemoryService,
                                                         settings: Settings, alice: Principal) -> None:
    """The first question naming her is embedded as said, then without her; the service remembers
    she was left out, and her next question is embedded without her alone."""
    await _talk(service, alice)
    fresh, counting = counting_service(database, service, settings)
    await fresh.search(alice, QUESTION)
    assert counting.asked == [QUESTION, "What is someone relationship status?"]
    counting.asked.clear()
    await fresh.search(alice, "Is Ana dating anyone?")
    assert counting.asked == ["Is someone dating anyone?"]
    # A forget preview matches the question as said, and leaves the service's memory of her as it was.
    counting.asked.clear()
    await fresh.forget_preview(alice, query="Did Ana like the bowl?")
    await fresh.search(alice, "Does Ana bake?")
    assert counting.asked == ["Did Ana like the bowl?", "Does someone bake?"]


async def test_the_share_is_of_the_conversations_the_speaker_takes_part_in(
        database: Database, service: MemoryService, settings: Settings, alice: Principal) -> None:
    """A store of many conversations holds her six turns among her conversation's twelve, as a store
    of that conversation alone does: she is left out, though she is a seventh of the scope."""
    await _talk(service, alice)
    later = datetime.now(UTC) - timedelta(days=1)
    for i in range(30):  # another conversation, two days after hers
        speaker = ("Bob", "Cleo")[i % 2]
        await service.write(alice, f"{speaker}: the garden needs watering, round {i}.", kind="episode",
                            occurred_at=later + timedelta(minutes=i))
    assert (await _ranks(_fresh(database, service, settings), alice, QUESTION))[0] == ["Ana"]
    # Turns said while she talked (in her scope, within the reply gap of hers) are around her: six
    # of forty-two then, under the share.
    during = datetime.now(UTC) - timedelta(days=3)
    for i in range(30):
        await service.write(alice, f"Dee: the printer jammed again, take {i}.", kind="episode",
                            occurred_at=during + timedelta(minutes=i % 12))
    assert (await _ranks(_fresh(database, service, settings), alice, QUESTION))[0] is None


def test_a_share_of_nothing_is_refused_naming_the_setting() -> None:
    with pytest.raises(ValidationError, match="vector_name_share"):
        Settings(vector_name_share=0)

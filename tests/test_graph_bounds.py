"""What one memory's text may add to the graph: a pasted or hostile list of thousands of capitalised
names makes at most `graph_max_names` entities and mentions (the writer's `about` and the subject
always kept, then the text's names in order), while the memory itself is stored whole and found by
any of its words; a writer's `about` of a thousand names is refused, naming the argument."""

from __future__ import annotations

import itertools
import string

import pytest

from mcp_memory.errors import InvalidInput
from mcp_memory.graph.names import _CLAUSE_START, opens_clause, read_names
from mcp_memory.models import WriteItem
from mcp_memory.service import MemoryService

from .conftest import principal
from .test_server import call, call_error, connect

# 5,000 distinct capitalised names in 30,000 characters (a write takes at most 32,000).
PASTED_NAMES = ["Q" + "".join(t) for t in itertools.islice(itertools.product(string.ascii_lowercase, repeat=3), 5000)]
GUEST_LIST = "Guest list for the Harrow gala dinner: " + ", ".join(PASTED_NAMES) + "."


async def graph_rows(database, user: str, memory_id=None) -> tuple[int, int]:
    """(entities of `user`, mentions of `user`'s memory `memory_id` or of all its memories)."""
    async with database.admin.acquire() as conn:
        entities = await conn.fetchval("SELECT count(*) FROM entities WHERE user_id = $1", user)
        mentions = await conn.fetchval("SELECT count(*) FROM memory_entities WHERE user_id = $1 "
                                       "AND ($2::uuid IS NULL OR memory_id = $2)", user, memory_id)
    return entities, mentions


def test_the_list_names_hundreds_of_things_by_rules() -> None:
    """What the bound is for: the rules alone read hundreds of names off the list."""
    assert len(GUEST_LIST) <= 32_000
    assert len(read_names(GUEST_LIST, "note")) > 300


def test_whether_a_name_opens_a_clause_is_read_off_the_characters_before_it_alone() -> None:
    """`opens_clause` looks only at the non-word characters right before a name (a text of many
    names paid for its whole length once per name); it must say what the clause pattern says of
    the whole text before the name, at every position of texts of every mix of the characters the
    pattern reads, a combining accent and an underscore among them."""
    alphabet = "aZ_9 .!?:;-\n\t,'\u00e9\u0301"
    for length in range(5):
        for chars in itertools.product(alphabet, repeat=length):
            text = "".join(chars)
            for start in range(len(text) + 1):
                assert opens_clause(text, start) == (_CLAUSE_START.search(text[:start]) is not None), (text, start)
    assert opens_clause("Met them. Greta said hi", 10) and not opens_clause("Met them and Greta", 13)


async def test_a_pasted_list_of_thousands_of_names_adds_at_most_the_bound_and_is_stored_whole(
        settings, database) -> None:
    assert settings.graph_max_names == 24
    async with connect(settings) as client:
        given = await call(client, "memory_write", {"content": GUEST_LIST, "about": ["Harrow Gala"],
                                                    "tags": ["events"]})
        memory = given["memory"]["id"]
        # The writer's name and the text's first 23: "Guest" and "Qaaa" (after the colon) open a
        # clause, sentence case that names nothing known, so they take room and make nothing; the
        # text's "Harrow" is the writer's "Harrow Gala" (the one full name it begins), merged into it.
        assert await graph_rows(database, "alice", memory) == (22, 21)
        got = (await call(client, "memory_get", {"ids": [memory]}))["memories"][0]
        assert got["content"] == GUEST_LIST  # the memory is whole: only the graph is bounded
        assert got["about"] == ["Harrow Gala"] and got["mentions"] == PASTED_NAMES[1:21]
        # Names past the bound are still found by the text, the last of the list too.
        for query in ("guest list for the Harrow gala dinner", PASTED_NAMES[-1], PASTED_NAMES[2500]):
            hits = (await call(client, "memory_search", {"query": query}))["hits"]
            assert memory in [h["id"] for h in hits], query
        # Without `about` the text's own subject is kept: one more entity, no more names.
        plain = await call(client, "memory_write", {"content": "Seating for the Marlowe dinner: "
                                                               + ", ".join(reversed(PASTED_NAMES)) + "."})
        again = (await call(client, "memory_get", {"ids": [plain["memory"]["id"]]}))["memories"][0]
        assert again["about"] == ["Marlowe"]
        _, mentions = await graph_rows(database, "alice", plain["memory"]["id"])
        entities, _ = await graph_rows(database, "alice")
        assert mentions == 22 and entities == 22 + 22


async def test_without_the_bound_the_same_list_makes_hundreds_of_entities(database, settings) -> None:
    """The control: it is the setting that keeps the graph small, not the rules."""
    loose = await MemoryService.open(database, settings.model_copy(update={"graph_max_names": 1000}))
    written = await loose.write(principal("mallory"), GUEST_LIST, about=["Harrow Gala"])
    entities, mentions = await graph_rows(database, "mallory", written.memory.id)
    assert entities > 300 and mentions > 300


async def test_a_batch_is_bounded_item_by_item(service, database) -> None:
    result = await service.write_many(principal(), [WriteItem(content=GUEST_LIST, about=["Harrow Gala"]),
                                                    WriteItem(content="Greta Ibarra lives in Oslo.",
                                                              about=["Greta"], key="home city")])
    first, second = (m.id for m in result.memories)
    assert (await graph_rows(database, "alice", first))[1] == 21  # as memory_write: 24 names, 2 unsure, 1 merged
    got = (await service.get(principal(), [second])).memories[0]
    assert got.about == ["Greta Ibarra"] and got.mentions == ["Oslo"] and got.key == "home city"


async def test_the_bound_keeps_the_writers_names_and_the_subject_then_the_texts_names_in_order(
        database, settings) -> None:
    p = principal()
    tight = await MemoryService.open(database, settings.model_copy(update={"graph_max_names": 4}))
    party = "At the dinner were Ana Ruiz, Bruno Diaz, Carla Moss, Dmitri Volkov and Esme Park."
    given = await tight.write(p, party, about=["Harrow Gala", "Kwame Larsen"])
    got = (await tight.get(p, [given.memory.id])).memories[0]
    assert got.about == ["Harrow Gala", "Kwame Larsen"] and got.mentions == ["Ana Ruiz", "Bruno Diaz"]
    # No `about`: the text's subject, then its next names.
    own = await tight.write(p, party.replace("At the dinner were", "at lunch were"), scope="agent")
    got = (await tight.get(p, [own.memory.id])).memories[0]
    assert got.about == ["Ana Ruiz"] and got.mentions == ["Bruno Diaz", "Carla Moss", "Dmitri Volkov"]
    # The writer's names are kept whatever the bound; a key still finds its subject.
    one = await MemoryService.open(database, settings.model_copy(update={"graph_max_names": 1}))
    keyed = await one.write(p, "Ana Ruiz, Bruno Diaz and Carla Moss moved to Lisbon.",
                            about=["Ana Ruiz", "Bruno Diaz", "Carla Moss"], key="home city", scope="user")
    got = (await one.get(p, [keyed.memory.id])).memories[0]
    assert got.about == ["Ana Ruiz", "Bruno Diaz", "Carla Moss"] and got.mentions is None
    assert got.key == "home city"


async def test_a_normal_text_is_unaffected(service) -> None:
    p = principal()
    text = "Ana Ruiz met Bruno Diaz, Carla Moss, Dmitri Volkov and Esme Park in Lisbon."
    written = await service.write(p, text)
    got = (await service.get(p, [written.memory.id])).memories[0]
    assert got.about == ["Ana Ruiz"]
    assert got.mentions == ["Bruno Diaz", "Carla Moss", "Dmitri Volkov", "Esme Park", "Lisbon"]


async def test_an_about_of_a_thousand_names_is_refused_naming_the_argument(settings, service, database) -> None:
    crowd = [f"Person {i}" for i in range(1000)]
    async with connect(settings) as client:
        error = await call_error(client, "memory_write", {"content": "A very crowded note.", "about": crowd})
        assert "about" in error and "10" in error
        error = await call_error(client, "memory_write_many", {"items": [
            {"content": "fine"}, {"content": "A very crowded note.", "about": crowd}]})
        assert "about" in error and "items" in error
    with pytest.raises(InvalidInput, match=r"about has 1000 names; at most 10"):
        await service.write(principal(), "A very crowded note.", about=crowd)
    with pytest.raises(InvalidInput, match=r"items\[1\]: about has 1000 names"):
        await service.write_many(principal(), [WriteItem(content="fine"),
                                               WriteItem.model_construct(content="A very crowded note.",
                                                                         about=crowd)])
    async with database.admin.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM memories") == 0
        assert await conn.fetchval("SELECT count(*) FROM entities") == 0


async def test_an_update_to_the_list_is_bounded_too(service, database) -> None:
    p = principal()
    written = await service.write(p, "The Harrow gala guest list is still to come.")
    await service.update(p, written.memory.id, content=GUEST_LIST)
    assert (await graph_rows(database, "alice", written.memory.id))[1] <= 24

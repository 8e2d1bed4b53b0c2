"""The subject factor on a real database: a memory that speaks of everyone a question names gains
over one that only shares its other words; one that merely addresses them ("Thanks, Mel!") does
not gain; one the graph files about someone else, naming none of them, loses as much."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mcp_memory.config import Settings
from mcp_memory.models import Principal
from mcp_memory.retrieval import search
from mcp_memory.retrieval.query import full_names_of, parse_query
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
    # Jon's own note loses the factor where the graph knows a Melanie ("Melanie: I painted ..." is
    # filed about the user who says "I").
    known = not text.startswith("Melanie:")
    assert factors["Jon painted a boat."] == pytest.approx(1 / settings.subject_boost if known else 1.0, abs=1e-4)


@pytest.mark.parametrize(("text", "about"), [
    ("Benedikt Pereira owns the Puffin roadmap.", True),
    ("From standup: Benedikt picked up Osprey.", True),  # the first name alone, among colleagues
    ("Heard today: Benedikt's new manager is Helena Sousa.", True),
    ("Benedikt Nascimento picked up Osprey.", False),  # another Benedikt
    ("Zofia Benedikt picked up Osprey.", False),  # a surname
    ("Pereira Logistics picked up Osprey.", False),  # the surname alone is no one in particular
])
async def test_a_person_named_in_full_may_be_called_by_the_first_name(
        service: MemoryService, alice: Principal, settings: Settings, text: str, about: bool) -> None:
    await service.write(alice, text, kind="note", occurred_at=datetime.now(UTC) - timedelta(days=1))
    await service.write(alice, "Jon picked up Osprey.", kind="note", occurred_at=datetime.now(UTC))
    hits = (await service.search(alice, "Which project did Benedikt Pereira pick up?", limit=20, explain=True)).hits
    factors = {h.snippet: h.explain["subject"] for h in hits}
    assert factors[text] == pytest.approx(settings.subject_boost if about else 1.0)
    # Only a Benedikt Pereira known to the graph takes Jon's down: "Benedikt" alone is no one in particular.
    known = text.startswith("Benedikt Pereira")
    assert factors["Jon picked up Osprey."] == pytest.approx(1 / settings.subject_boost if known else 1.0, abs=1e-4)


def test_full_names_are_the_names_written_together() -> None:
    assert full_names_of("What's Benedikt Pereira's project right now?") == (("Benedikt", "Pereira"),)
    assert full_names_of("Did Ana Lima meet Jon at Acme Labs?") == (("Ana", "Lima"), ("Acme", "Labs"))
    assert full_names_of("What did Mel tell Jon?") == ()
    assert full_names_of("Where does Ana's Bob live?") == ()  # a possessive ends a name


async def test_a_first_name_alone_weighs_as_much_in_full_text_as_the_full_name(
        service: MemoryService, alice: Principal, settings: Settings) -> None:
    """Full text alone (no query vector): the surname's word is matched by the first name too."""
    texts = ["Benedikt Pereira sent the quarterly Osprey report.",
             "From standup: Benedikt sent the quarterly Osprey report.",
             "Benedikt Nascimento sent the quarterly Osprey report.", "Jon read a report."]
    for text in texts:
        await service.write(alice, text, kind="note")
    hits = await search(service.repo, alice, parse_query("which quarterly report did Benedikt Pereira send"), None,
                        limit=10, settings=settings, explain=True)
    fused = {h.snippet: h.explain["fused"] for h in hits}
    assert fused[texts[1]] == pytest.approx(fused[texts[0]], rel=0.01)  # ts_rank, the tie-break, still differs
    assert fused[texts[2]] < fused[texts[0]]  # another Benedikt
    assert fused[texts[3]] < fused[texts[0]]


async def test_in_a_store_about_many_people_the_named_ones_answer_before_anothers_closer_words(
        service: MemoryService, alice: Principal) -> None:
    """A store holds many people's conversations: a question naming one of them wants theirs, not
    another's that shares more of its words ("I have visited many countries"). Hers scores 1.27
    times less by the words alone, and the subject factor puts it first (it fails at 1.25)."""
    now = datetime.now(UTC)
    hers = "Nadia: Spain and Portugal last summer, both countries were great."
    await service.write(alice, hers, kind="episode", occurred_at=now - timedelta(days=2))
    await service.write(alice, "Tomasz: I have visited many countries, Italy and Turkey too.", kind="episode",
                        occurred_at=now - timedelta(days=2, hours=1))
    n = 0
    for who in ("Tomasz", "Ines", "Kofi", "Mei", "Arjun", "Nadia"):
        for said in ("the weather at the lake was lovely", "we cooked dinner with my sister",
                     "the new job starts on Monday", "we watched a film about the ocean",
                     "I fixed the bike's brakes", "the garden needs water", "the museum trip with the kids was fun",
                     "I started learning the piano", "our dog chewed a shoe", "work has been busy with meetings",
                     "the train was late again", "we painted the kitchen green"):
            n += 1
            await service.write(alice, f"{who}: {said}.", kind="episode", occurred_at=now - timedelta(days=3, hours=n))
    hits = (await service.search(alice, "Which countries has Nadia visited?", limit=5)).hits
    assert hits[0].snippet == hers


async def test_a_note_the_graph_files_about_someone_else_goes_below_the_named_ones(
        service: MemoryService, alice: Principal, settings: Settings) -> None:
    """A team lead's notes on two colleagues: "Which office is Kenji in?" shares "office" with
    Dana's notes and no word with Kenji's move, and Dana's came first and second. A note about
    someone else loses what the named one's gain; one naming Kenji too keeps the gain, one about
    no one keeps its score, and a conversation's turn is left to the conversation's factor."""
    start = datetime.now(UTC) - timedelta(days=200)
    notes = ["Dana Okafor is based in the Lagos office.",
             "Dana moved to London this summer, working from the London office now.",
             "Kenji Sato started as our new SRE; he sits in Tokyo.",
             "Kenji is on the database on-call rotation.",
             "Kenji Sato relocated to Singapore.",
             "Dana and Kenji share the office plants rota.",
             "The office closes early on Fridays."]
    for i, text in enumerate(notes):
        await service.write(alice, text, kind="note", occurred_at=start + timedelta(days=20 * i))
    turn = "Dana: the Lagos office has the best coffee."
    await service.write(alice, turn, kind="episode", occurred_at=start)
    hits = (await service.search(alice, "Which office is Kenji in?", limit=20, explain=True)).hits
    factors = {h.snippet: h.explain["subject"] for h in hits}
    assert factors[notes[0]] == factors[notes[1]] == pytest.approx(1 / settings.subject_boost, abs=1e-4)
    assert factors[notes[4]] == factors[notes[5]] == pytest.approx(settings.subject_boost)
    assert factors[notes[6]] == factors[turn] == 1.0
    kenji = {notes[2], notes[3], notes[4], notes[5]}
    assert {h.snippet for h in hits[:4]} == kenji
    # Naming nobody the store knows, a question ranks as before: nothing is taken down.
    hits = (await service.search(alice, "Which office has the best coffee?", limit=20, explain=True)).hits
    assert {h.explain["subject"] for h in hits} == {1.0}

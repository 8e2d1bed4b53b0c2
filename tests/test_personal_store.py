"""A personal store, as a user's assistant keeps it: the user's facts beside the news of the people
in their life and of the things they work on. A note about someone the store introduced as one of
the user's people ("My brother Oskar Lindgren lives in Nantes.", "My manager is Tom Hale.") is
theirs, never an answer about the user, though it names no role and no word for them ("Oskar just
settled in Lisbon."); a note naming the user's editor, not the word, states it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

from mcp_memory.lexicon.english import ENGLISH
from mcp_memory.lexicon.portuguese import PORTUGUESE
from mcp_memory.models import Principal
from mcp_memory.repository.graph_reads import subjects_named
from mcp_memory.retrieval.whose import about_their_people
from mcp_memory.service import MemoryService

from .conftest import principal


async def _write_dated(service: MemoryService, p: Principal, texts: list[tuple[str, int]], **kw: object) -> list:
    now = datetime.now(UTC)
    return [(await service.write(p, text, occurred_at=now - timedelta(days=days), **kw)).memory
            for text, days in texts]


async def test_whom_the_user_reports_to_now_among_notes_about_their_people(service: MemoryService,
                                                                           alice: Principal) -> None:
    """The newest note chained to "My manager is Tom Hale." was the billing service's, since every
    note not naming a role counted as the user's: Clara's move, Tom's habits, the service's host."""
    await _write_dated(service, alice, [
        ("My sister Clara lives in Porto.", 280), ("Clara works as a nurse at Hospital São João.", 279),
        ("My manager is Tom Hale.", 276), ("Tom Hale prefers updates on Slack, not email.", 272),
        ("Clara moved to Lisbon last week.", 240), ("Starting Monday I report to Priya Nair instead of Tom.", 220),
        ("I'm allergic to penicillin.", 218), ("Clara got a new job at CUF Descobertas as head nurse.", 200),
        ("Our team moved the billing service from Heroku to Fly.io.", 187),
        ("Priya wants the Q3 roadmap draft by July 10.", 175),
        ("I also became allergic to shellfish, apparently.", 159),
        ("Clara and her husband Rui adopted a dog named Bolt.", 118),
        ("The billing service now runs on AWS ECS; Fly.io was too flaky.", 97)])
    found = await service.search(alice, "Who is my manager?")
    assert found.hits[0].snippet == "Starting Monday I report to Priya Nair instead of Tom."


async def test_a_brothers_move_does_not_say_where_the_user_works(service: MemoryService, alice: Principal) -> None:
    """"Oskar just settled in Lisbon." is his news: the store named him the user's brother."""
    await _write_dated(service, alice, [
        ("User is on the payroll of Tessellate.", 500), ("My brother Oskar Lindgren lives in Nantes.", 400),
        ("We host the reporting pipeline on a Hetzner box.", 300), ("User plays rowing twice a week.", 250),
        ("User accepted an offer from Halcyon Air.", 120), ("I prefer meetings after 10.", 60),
        ("Oskar just settled in Lisbon.", 30)])
    found = await service.search(alice, "Where am I working these days?")
    assert found.hits[0].snippet == "User accepted an offer from Halcyon Air."


async def test_a_note_about_them_that_speaks_of_the_user_stays_the_users(service: MemoryService,
                                                                         alice: Principal) -> None:
    await _write_dated(service, alice, [
        ("My brother Oskar Lindgren lives in Nantes.", 400), ("I live in Porto.", 300),
        ("Oskar helped me move to Lisbon.", 20)])
    found = await service.search(alice, "Where do I live now?")
    assert found.hits[0].snippet == "Oskar helped me move to Lisbon."


def test_someone_in_the_users_life_by_how_a_note_names_them() -> None:
    """Named beside a role of the user's, or said to be one; the name must be the entity's."""
    oskar, tom, lisbon, ana = uuid4(), uuid4(), uuid4(), uuid4()
    rows = [{"memory_id": oskar, "entity_id": 1, "name": "Oskar Lindgren",
             "contents": ["My brother Oskar Lindgren lives in Nantes.", "Oskar just settled in Lisbon."]},
            {"memory_id": tom, "entity_id": 2, "name": "Tom Hale", "contents": ["My manager is Tom Hale."]},
            # Named beside the role, but not the entity asked about.
            {"memory_id": lisbon, "entity_id": 3, "name": "Lisbon", "contents": ["My sister Clara moved to Lisbon."]},
            {"memory_id": ana, "entity_id": 4, "name": "Ana Lima", "contents": ["Ana Lima leads billing."]}]
    assert about_their_people(rows, ENGLISH) == {oskar, tom}
    pt = [{"memory_id": ana, "entity_id": 5, "name": "Ana", "contents": ["A minha irmã Ana mudou-se para Lisboa."]}]
    assert about_their_people(pt, PORTUGUESE) == {ana}


async def test_how_they_were_introduced_is_read_only_where_the_session_sees_it(service: MemoryService) -> None:
    """A key confined to another agent reads nothing of what an agent's own notes say of someone."""
    a, b = principal(agent="agent-a"), principal(agent="agent-b")
    await service.write(a, "My brother Oskar Lindgren lives in Nantes.", scope="agent")
    news = (await service.write(a, "Oskar just settled in Lisbon.", scope="agent")).memory
    async with service.repo.reading(a) as conn:
        assert [r["contents"] for r in await subjects_named(conn, a, [news.id], 5)] == [
            ["My brother Oskar Lindgren lives in Nantes.", "Oskar just settled in Lisbon."]]
    async with service.repo.reading(b) as conn:
        assert await subjects_named(conn, b, [news.id], 5) == []


async def test_the_editor_a_note_switched_to_without_saying_editor(service: MemoryService, alice: Principal) -> None:
    """"Switched to Helix last week." names the editor, not the word: it is the newest version."""
    await _write_dated(service, alice, [
        ("I'm a backend engineer at Korvex, mostly Go.", 300), ("I use Neovim with LazyVim.", 250),
        ("My teammate Ana Ruiz owns the payments service.", 280), ("Ana prefers PRs under 300 lines.", 270),
        ("Switched to Helix last week; Neovim config was too fragile.", 150), ("Prod is on AWS ECS now.", 40)])
    found = await service.search(alice, "Which editor do I use?")
    assert found.hits[0].snippet == "Switched to Helix last week; Neovim config was too fragile."


async def test_who_the_users_doctor_and_dentist_are_after_switching(service: MemoryService, alice: Principal) -> None:
    """A doctor, a dentist, a therapist: one at a time, and naming them is the user's own fact, as a
    manager's is; told long ago, where recency no longer tells the notes apart. "Who is my
    dentist?" put "My dentist is Dr. Brandt in Neubau." above the switch ("dentist" was no role at
    all, "doctor" one of the user's people, whose own news a note is)."""
    await _write_dated(service, alice, [
        ("My sister Lena lives in Vienna.", 700), ("I'm allergic to penicillin.", 685),
        ("My doctor is Dr. Weber on Kaiserstrasse.", 670), ("My dentist is Dr. Brandt in Neubau.", 669),
        ("I started at Google in the Zurich office.", 620),
        ("Switched doctors: now seeing Dr. Aydin near the office.", 520),
        ("Changed dentists, Dr. Koller from now on.", 519), ("My partner Sam started learning Portuguese.", 460)])
    for question, newest in (("Who is my doctor?", "Switched doctors: now seeing Dr. Aydin near the office."),
                             ("Who is my dentist?", "Changed dentists, Dr. Koller from now on.")):
        found = await service.search(alice, question)
        assert found.hits[0].snippet == newest, question


async def test_a_note_about_their_people_goes_below_the_users_own_where_nothing_is_compared(
        service: MemoryService, alice: Principal) -> None:
    """Where fewer than two of the user's notes say the asked attribute, the focus compares nothing
    and the statement's order stands: the brother's and the sister's jobs shared "job" with the
    question and came first. A note about someone in the user's life, by its words or by whom the
    graph files it about, goes after the user's own."""
    await _write_dated(service, alice, [
        ("My sister Lena lives in Vienna.", 400), ("Lena got a new job at Siemens.", 300),
        ("I work at Fernwood these days.", 200), ("My brother's job is in Graz now.", 100),
        ("My sister gave me a bike.", 50)])
    found = await service.search(alice, "Where is my job?", explain=True)
    assert found.hits[0].snippet == "I work at Fernwood these days.", [h.snippet for h in found.hits]
    factors = {h.snippet: h.explain["subject"] for h in found.hits}
    assert factors["Lena got a new job at Siemens."] < 1 and factors["My brother's job is in Graz now."] < 1
    # Speaking of the user past the possessive naming the sister, the note is the user's news too.
    assert factors["I work at Fernwood these days."] == factors["My sister gave me a bike."] == 1


async def test_a_note_opening_on_she_or_he_is_not_the_users(service: MemoryService, alice: Principal) -> None:
    """"She moved to Graz in June." after a note on the user's sister counted as the user's own (it
    names no one) and answered "Where do I live?"; "He started a new job at Siemens." answered
    "Where do I work?"."""
    await _write_dated(service, alice, [
        ("I live in Porto.", 700), ("My sister Lena lives in Vienna.", 690), ("I work at Farfetch.", 650),
        ("She moved to Graz in June.", 500), ("He started a new job at Siemens.", 480)])
    for question, mine in (("Where do I live?", "I live in Porto."), ("Where do I work?", "I work at Farfetch.")):
        found = await service.search(alice, question)
        assert found.hits[0].snippet == mine, (question, [h.snippet for h in found.hits])


async def test_a_new_role_at_a_company_is_where_the_user_works(service: MemoryService, alice: Principal) -> None:
    """"a new role at Talkdesk" says the employer as "work at" does: with one note stating it in the
    lexicon's words the user's notes were not compared, and the older employer came first."""
    await _write_dated(service, alice, [
        ("I live in Porto.", 700), ("I work at Farfetch.", 650), ("My sister Lena lives in Vienna.", 640),
        ("I moved to Lisbon for a new role at Talkdesk.", 400)])
    found = await service.search(alice, "Where do I work?")
    assert found.hits[0].snippet == "I moved to Lisbon for a new role at Talkdesk."


async def test_where_someone_works_stated_once_beside_where_they_moved(service: MemoryService,
                                                                        alice: Principal) -> None:
    """One of Lena's notes states an employer, the others where she lives: no two may be versions of
    it, so nothing was compared and the newest, "Lena moved to Graz.", came first by its words."""
    await _write_dated(service, alice, [("My sister Lena lives in Vienna.", 330), ("I work at Farfetch.", 320),
                                        ("Lena got a job at Siemens.", 280), ("Lena moved to Graz.", 200),
                                        ("I moved to Lisbon.", 150)])
    found = await service.search(alice, "Where does Lena work?", explain=True)
    assert found.hits[0].snippet == "Lena got a job at Siemens." and found.hits[0].explain["states_asked_attribute"]
    assert found.hits[1].explain["states_another_attribute"]
    # Of the user, a note stating nothing in the lexicon's words may be a version: none is chosen.
    await _write_dated(service, alice, [("I'm in Porto these days.", 100)])
    found = await service.search(alice, "Where do I live?", explain=True)
    assert "states_another_attribute" not in {h.snippet: h.explain for h in found.hits}["I'm in Porto these days."]


async def test_a_practice_moved_to_another_day_is_its_new_time(service: MemoryService, alice: Principal) -> None:
    """"Leo's practice moved to Sundays at 9." stated a home city by "moved to", so each of Leo's notes
    stated another attribute and the move was no answer: Saturdays came first."""
    await _write_dated(service, alice, [("Our son Leo is allergic to peanuts.", 300),
                                        ("Leo's football practice is on Saturdays at 10.", 260),
                                        ("Leo's practice moved to Sundays at 9.", 120)])
    found = await service.search(alice, "When is Leo's football practice?")
    assert found.hits[0].snippet == "Leo's practice moved to Sundays at 9."


async def test_who_insures_the_car_and_who_supplies_energy_after_switching(service: MemoryService,
                                                                           alice: Principal) -> None:
    """A household's providers change as a job does. "Who insures the car?" asked the car as much as
    the insurer, so "car" named no subject and nothing was compared: Admiral came first; "Who is our
    car insurer?" put "The car is a 2019 Skoda Octavia." first (it stated the car); an energy
    supplier was no attribute at all."""
    await _write_dated(service, alice, [
        ("Car insurance is with Admiral, renews in June.", 400), ("Home insurance is with Aviva.", 390),
        ("Our energy supplier is Octopus.", 380), ("Car insurance moved to Direct Line this year.", 60),
        ("Switched energy to EDF on a fixed tariff.", 50), ("The car is a 2019 Skoda Octavia.", 40)])
    for question, newest in (("Who insures the car?", "Car insurance moved to Direct Line this year."),
                             ("Who insures the car now?", "Car insurance moved to Direct Line this year."),
                             ("Who is our car insurer?", "Car insurance moved to Direct Line this year."),
                             ("Who is our energy supplier?", "Switched energy to EDF on a fixed tariff."),
                             ("What car do we drive?", "The car is a 2019 Skoda Octavia.")):
        found = await service.search(alice, question)
        assert found.hits[0].snippet == newest, question

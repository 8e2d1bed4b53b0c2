"""A keyed value and a newer memory nobody keyed (retrieval/keyed.py `newer_unsaid`): a writer who
passes `key` on some writes and not on others must not leave the older keyed value first. The newer
plain memory goes first where it answers the question, names a new value and says the same kind of
thing; one its writer said is about the subject with no key, one about something else or stating
another attribute the subject holds keyed values of, an episode, an older one, and a question about
the past keep the keyed order."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

from mcp_memory.retrieval import answering

from .conftest import principal
from .test_related_versions import embedder_down


def day(d: str) -> datetime:
    return datetime.fromisoformat(d).replace(tzinfo=UTC)


async def keyed_oslo(service, p) -> UUID:
    return (await service.write(p, "Greta Ibarra lives in Oslo.", about=["Greta Ibarra"], key="home city",
                                occurred_at=day("2024-01-10"))).memory.id


async def test_a_newer_plain_memory_that_answers_goes_before_the_keyed_value(service) -> None:
    p = principal()
    oslo = await keyed_oslo(service, p)
    bergen = (await service.write(p, "Greta Ibarra moved to Bergen.", occurred_at=day("2025-05-01"))).memory.id
    # Newer still, and about her, but no kind of home: it stays where the text puts it.
    thriller = (await service.write(p, "Greta Ibarra is reading a thriller set in Iceland.",
                                    occurred_at=day("2025-09-01"))).memory.id
    hits = (await service.search(p, "Where does Greta Ibarra live now?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [bergen, oslo]
    assert hits[0].explain["newer_than_fact"] is True and "fact" not in hits[0].explain
    assert hits[1].explain["fact"] == 1 and "newer_than_fact" not in hits[1].explain
    assert "newer_than_fact" not in next(h for h in hits if h.id == thriller).explain
    assert hits[0].score >= hits[1].score
    # What is stored is untouched: the keyed value is still the profile's current one.
    profile = await service.entities.profile(p, "Greta Ibarra")
    assert next(a for a in profile.attributes if a.attribute == "home city").current[0].memory == oslo


async def test_of_what_the_text_counts_as_answers_only_what_says_the_same_kind_of_thing_goes_first(
        service, monkeypatch) -> None:
    """Among a crowded subject's notes the text's stage may count them all as answers (its chain
    found no cut); a note naming a value but far from the keyed one with the subject masked
    ("laughed at my terrible pun during dinner at Noma", .22 against the 0.30 of
    `graph_doubt_floor`) is none, however new."""
    monkeypatch.setattr(answering, "answers_of", lambda rows, closeness, margin: answering.Answers(
        {r["id"] for r in rows if r["id"] in closeness}))
    p = principal()
    oslo = await keyed_oslo(service, p)
    bergen = (await service.write(p, "Greta Ibarra is now in Bergen.", occurred_at=day("2025-02-01"))).memory.id
    pun = (await service.write(p, "Greta Ibarra laughed at my terrible pun during dinner at Noma.",
                               occurred_at=day("2025-03-01"))).memory.id
    hits = (await service.search(p, "Where does Greta Ibarra live now?", explain=True)).hits
    assert [h.id for h in hits[:3]] == [bergen, oslo, pun]
    assert hits[0].explain["newer_than_fact"] is True and "newer_than_fact" not in hits[2].explain


async def test_a_newer_memory_stating_the_asked_attribute_alone_in_the_lexicons_words_goes_first(
        service, monkeypatch) -> None:
    """"drives" states a car and nothing else: "Greta Ibarra drives a Mini Cooper." goes before the
    keyed value however far the two sentences' shapes are apart (masked, .18 from "replaced the Kia
    Niro with a Renault Zoe", below the 0.30 of `graph_doubt_floor`). Words stating two attributes
    ("moved to" a home city, "team" a team) prove neither: that note keeps the text's place."""
    monkeypatch.setattr(answering, "answers_of", lambda rows, closeness, margin: answering.Answers(
        {r["id"] for r in rows if r["id"] in closeness}))
    p = principal()
    zoe = (await service.write(p, "Greta Ibarra replaced the Kia Niro with a Renault Zoe.", about=["Greta Ibarra"],
                               key="car", occurred_at=day("2024-10-31"))).memory.id
    mini = (await service.write(p, "Greta Ibarra drives a Mini Cooper.", occurred_at=day("2024-11-10"))).memory.id
    hits = (await service.search(p, "Which car does Greta Ibarra have these days?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [mini, zoe] and hits[0].explain["newer_than_fact"] is True
    lisbon = (await service.write(p, "Greta Ibarra's new address is in Lisbon.", about=["Greta Ibarra"],
                                  key="home city", occurred_at=day("2025-02-17"))).memory.id
    team = (await service.write(p, "Greta Ibarra moved to Ruth Okonkwo's team.",
                                occurred_at=day("2025-05-01"))).memory.id
    hits = (await service.search(p, "Which city does Greta Ibarra live in these days?", explain=True)).hits
    assert hits[0].id == lisbon and hits[0].explain["fact"] == 1
    assert "newer_than_fact" not in next(h for h in hits if h.id == team).explain


async def test_a_newer_memory_stating_another_attribute_in_the_lexicons_words_is_not_its_value(service) -> None:
    """"moved to" states a home city, which she holds a keyed value of: counted among the answers to
    whom she is dating (the text's chain of her notes; masked, "moved to Bergen" is as close to "is
    dating Tomas" as the doubt floor), it is her home city's, not her partner's."""
    p = principal()
    await keyed_oslo(service, p)
    tomas = (await service.write(p, "Greta Ibarra is dating Tomas.", about=["Greta Ibarra"], key="partner",
                                 occurred_at=day("2024-01-10"))).memory.id
    for month, text in enumerate(("Greta Ibarra laughed at my terrible pun during dinner.",
                                  "Greta Ibarra lent me a tent for the camping trip.",
                                  "Greta Ibarra is organising a surprise party for a colleague.",
                                  "Greta Ibarra adopted a beagle.", "Greta Ibarra moved to Bergen."), start=1):
        await service.write(p, text, occurred_at=day(f"2025-0{month}-01"))
    hits = (await service.search(p, "Who is Greta Ibarra dating these days?", explain=True)).hits
    assert hits[0].id == tomas and hits[0].explain["fact"] == 1


async def test_a_memory_its_writer_said_is_about_her_with_no_key_is_no_value(service) -> None:
    """The writer named whom it is about and gave no key: by its word it states no attribute."""
    p = principal()
    oslo = await keyed_oslo(service, p)
    await service.write(p, "Greta Ibarra moved to Bergen.", about=["Greta Ibarra"], occurred_at=day("2025-05-01"))
    hits = (await service.search(p, "Where does Greta Ibarra live now?", explain=True)).hits
    assert hits[0].id == oslo and hits[0].explain["fact"] == 1


async def test_an_older_plain_memory_a_turn_and_a_question_about_the_past_keep_the_keyed_order(service) -> None:
    p = principal()
    oslo = await keyed_oslo(service, p)
    # Written before the keyed value: an earlier one, whatever it says.
    older = (await service.write(p, "Greta Ibarra moved to Bergen.", occurred_at=day("2023-05-01"))).memory.id
    hits = (await service.search(p, "Where does Greta Ibarra live now?")).hits
    assert hits[0].id == oslo
    # A conversation's turn is what was said at its moment, no value.
    await service.write(p, "Greta Ibarra: I moved to Tromsø last week!", kind="episode",
                        occurred_at=day("2025-05-01"))
    assert (await service.search(p, "Where does Greta Ibarra live now?")).hits[0].id == oslo
    past = [h.id for h in (await service.search(p, "Where did Greta Ibarra live before?")).hits]
    assert older in past and oslo in past


async def test_without_an_embedder_the_keyed_order_stands(service) -> None:
    """Whether the newer memory says the same kind of thing is a model's reading; with the embedder
    not answering the graph's order is kept, not guessed."""
    p = principal()
    oslo = await keyed_oslo(service, p)
    await service.write(p, "Greta Ibarra moved to Bergen.", occurred_at=day("2025-05-01"))
    embedder_down(service)
    hits = (await service.search(p, "Where does Greta Ibarra live now?")).hits
    assert hits[0].id == oslo


async def test_the_users_new_manager_named_with_where_they_lead_goes_before_the_keyed_one(service) -> None:
    """"The user's new manager at Sword Health is Inês Carvalho." states the user's own manager,
    the role placed before the word naming them: the note is the user's, as "My boss is Ahmed
    Saleh." is (graph/about_user.py), so asked about now it goes before the keyed Tomás Reis. Read
    as a note about the manager, the text's stage took it for nobody's and the old value stayed
    first."""
    p = principal()
    tomas = (await service.write(p, "My manager is Tomás Reis.", about=["me"], key="manager",
                                 occurred_at=day("2025-03-02"))).memory.id
    await service.write(p, "I work at Feedzai as a data engineer.", about=["me"], key="employer",
                        occurred_at=day("2025-03-02"))
    await service.write(p, "I started a new job at Sword Health.", about=["me"], key="employer",
                        occurred_at=day("2025-10-01"))
    ines = (await service.write(p, "The user's new manager at Sword Health is Inês Carvalho.",
                                occurred_at=day("2025-10-03"))).memory.id
    hits = (await service.search(p, "Who is my boss now?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [ines, tomas]
    assert hits[0].explain["newer_than_fact"] is True


async def test_a_team_named_without_its_classifier_is_still_the_teams(service) -> None:
    """"Payments standup moved to 10:30 …" is the Payments team's, as names resolve ("Payments" is
    the Payments team). The text's stage narrowed the team's memories to those holding the
    question's run "Payments team", so the note was nobody's and the old keyed time stayed first."""
    p = principal()
    nine = (await service.write(p, "The Payments team's standup is at 9:15.", about=["Payments team"],
                                key="standup time", occurred_at=day("2025-01-10"))).memory.id
    ten = (await service.write(p, "Payments standup moved to 10:30 from next week.",
                               occurred_at=day("2025-06-10"))).memory.id
    await service.write(p, "The Payments team chats in #payments-dev.", about=["Payments team"], key="channel",
                        occurred_at=day("2025-01-10"))
    oskar = (await service.write(p, "Payments lead is Oskar Berg.", about=["Payments team"], key="team lead",
                                 occurred_at=day("2025-01-10"))).memory.id
    mei = (await service.write(p, "Oskar Berg handed the Payments lead role to Mei Tanaka.",
                               occurred_at=day("2025-07-01"))).memory.id
    hits = (await service.search(p, "When is the Payments team's standup now?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [ten, nine] and hits[0].explain["newer_than_fact"] is True
    hits = (await service.search(p, "Who leads the Payments team now?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [mei, oskar]


async def test_a_question_with_no_time_word_about_an_attribute_keyed_in_own_words_is_about_now(service) -> None:
    """"Who is Acme's CEO?" asks, with no time word, an attribute Acme holds one value of at a time
    under a key the lexicon does not know ("ceo"): it is about now, as "Which team is Ottilie on?"
    is, so the newer plain "Marcus Obi replaced Dana Whitfield as Acme's chief executive." goes
    before the keyed Dana. The text's stage read it as about any time, and the keyed value stood
    first. Asked in the past, the keyed order stands."""
    p = principal()
    dana = (await service.write(p, "Acme's CEO is Dana Whitfield.", about=["Acme"], key="ceo",
                                occurred_at=day("2024-01-10"))).memory.id
    await service.write(p, "Acme moved its headquarters to Austin.", about=["Acme"], occurred_at=day("2024-06-10"))
    marcus = (await service.write(p, "Marcus Obi replaced Dana Whitfield as Acme's chief executive.",
                                  occurred_at=day("2025-02-10"))).memory.id
    hits = (await service.search(p, "Who is Acme's CEO?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [marcus, dana] and hits[0].explain["newer_than_fact"] is True
    hits = (await service.search(p, "Who was Acme's CEO?", explain=True)).hits
    assert hits[0].id == dana and hits[0].explain["fact"] == 1


async def test_a_question_with_no_time_word_about_the_users_keyed_attribute_is_about_now(service) -> None:
    """"Which car do I have?" of the user, whose car is keyed: the keyed value says the attribute has
    values, so the text's stage compares the user's notes as a named subject's, without first
    wanting two that state a car in the lexicon's words (`versions_said`, which keeps a new user's
    first facts, one of each, from being read as versions), and the newer "User drives a Mini
    Cooper." goes first."""
    p = principal()
    zoe = (await service.write(p, "User replaced the Kia Niro with a Renault Zoe.", about=["me"], key="vehicle",
                               occurred_at=day("2024-10-31"))).memory.id
    await service.write(p, "User commutes in a Kia Niro.", occurred_at=day("2024-08-10"))
    await service.write(p, "I'm an engineer at Korvex.", occurred_at=day("2024-08-17"))
    mini = (await service.write(p, "User drives a Mini Cooper.", occurred_at=day("2024-11-10"))).memory.id
    hits = (await service.search(p, "Which car do I have?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [mini, zoe] and hits[0].explain["newer_than_fact"] is True


async def test_a_capitalised_key_in_the_question_is_the_attribute_not_a_second_subject(service) -> None:
    """"Who is Acme's CEO now?" names Acme and asks its "ceo": read as a second name, "CEO" had the
    subject factor and the text's stage want every answer to say it, so "Marcus Obi replaced Dana
    Whitfield as Acme's chief executive." was no memory of Acme's and the old keyed CEO stayed first."""
    p = principal()
    dana = (await service.write(p, "Acme Corp's CEO is Dana Whitfield.", about=["Acme Corp"], key="ceo",
                                occurred_at=day("2024-03-01"))).memory.id
    await service.write(p, "Acme Corp is headquartered in Denver.", about=["Acme Corp"], key="headquarters",
                        occurred_at=day("2024-03-01"))
    marcus = (await service.write(p, "Marcus Obi replaced Dana Whitfield as Acme's chief executive.",
                                  occurred_at=day("2025-02-01"))).memory.id
    await service.write(p, "Acme moved its HQ to Austin.", about=["Acme Corp"], key="hq city",
                        occurred_at=day("2025-04-01"))
    hits = (await service.search(p, "Who is Acme's CEO now?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [marcus, dana]
    assert hits[0].explain["subject"] == hits[1].explain["subject"] > 1

"""The graph room through the service on a real database: names become entities (one per thing per
namespace), a writer's `about` and `key` become a keyed fact, and a newer value of a one-at-a-time
attribute replaces the older by construction, with its history; many-valued attributes accumulate;
a fact dated before the live one does not replace it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest
from mcp.shared.exceptions import MCPError

from mcp_memory.errors import InvalidInput, NotFound
from mcp_memory.graph.keys import cued_by, in_lexicon, key_of, kind_of, qualifier_in
from mcp_memory.graph.names import names_in
from mcp_memory.graph.questions import asked, asked_of_any
from mcp_memory.lexicon.english import ENGLISH
from mcp_memory.lexicon.portuguese import PORTUGUESE
from mcp_memory.models import MemoryFilter, WriteItem

from .conftest import principal


def day(d: str) -> datetime:
    return datetime.fromisoformat(d).replace(tzinfo=UTC)


async def entities(service, p) -> list[tuple[str, str]]:
    async with service.repo.transaction(p) as conn:
        rows = await conn.fetch("SELECT name, canonical FROM entities ORDER BY canonical")
    return [(r["name"], r["canonical"]) for r in rows]


async def count(service, p) -> tuple[int, int, int]:
    async with service.repo.transaction(p) as conn:
        return tuple(await conn.fetchrow("SELECT (SELECT count(*) FROM memories), (SELECT count(*) FROM entities), "
                                         "(SELECT count(*) FROM memory_facts)"))


@pytest.mark.parametrize(("text", "about", "mentioned"), [
    # A verb after a sentence's capitalised opening word makes it the subject, not the name after it.
    ("Alice lives in Oslo, Norway.", "Alice", {"Oslo", "Norway"}),
    ("Diego took over as Kwame's manager.", "Diego", {"Kwame"}),
    ("Priya prefers tea over coffee.", "Priya", set()),
    # Without one, the opening word may be only sentence case: no subject of its own.
    ("Escalations for the webhooks pipeline go to Priti Shah.", None, {"Priti Shah"}),
    ("Lunch with Greta on Friday.", "Greta", set()),
    ("Sprint goals: ship Atlas.", "Atlas", set()),
    # "Everything" is no one, and the note is the user's.
    ("Everything runs on my laptop.", "the user", set()),
    # A name with the user's person beside it is the subject, however short; the user is mentioned.
    ("Lena, the user's sister, lives in Berlin.", "Lena", {"the user", "Berlin"}),
    ("Priya Raman, the user's friend, lives in Lisbon.", "Priya Raman", {"the user", "Lisbon"}),
    ("However, my sister moved.", "the user", set()),  # no comma after the person: no apposition
    # Named right after the role the note opens on, the person is that name, a leader too; a name
    # between commas there is apposed, not spoken to.
    ("My wife Sara works at Feedzai.", "Sara", {"Feedzai"}),
    ("My manager, Tom Hale, approved the budget.", "Tom Hale", set()),
    ("My boss Ahmed Saleh moved to Lisbon.", "Ahmed Saleh", {"Lisbon"}),
    ("The user's brother Theo plays chess.", "Theo", set()),
    ("My doctor Dr. Smith said to rest.", "Smith", set()),  # a title is no one's name
    # Named by a word saying who they are, a leader is the user's own fact; a wife's name is hers.
    ("My boss is Ahmed Saleh.", "the user", {"Ahmed Saleh"}),
    ("My wife's name is Sara.", None, {"Sara"}),
    # A team the user was in once is the subject, whom no name names; the user's own team is the user's.
    ("My old team deploys to Cloud Run.", None, {"Cloud Run"}),
    ("My team deploys to Cloud Run.", "the user", {"Cloud Run"}),
    ("My ex-wife lives in Berlin.", None, {"Berlin"}),
    # Family said as a name is a name: the subject, and not the user (test_focus.py).
    ("Mom lives in Porto now.", "Mom", {"Porto"}),
    ("Ana (my sister) moved to Porto.", "Ana", {"the user", "Porto"}),
    # A word that only opens the sentence (a time word, a conjunction, a preposition) is no part of
    # the name after it: "Yesterday Ana Lima" was an entity of its own, and the note not hers.
    ("Yesterday Ana Lima moved to Berlin.", "Ana Lima", {"Berlin"}),
    ("Since March Ana Lima lives in Braga.", "Ana Lima", {"Braga"}),
    ("So Tom Hale moved to Porto.", "Tom Hale", {"Porto"}),
    # A name right after a preposition opening the sentence is its object, not its subject.
    ("After Quebec City, Odalys Pellegrini ended up in Leipzig.", "Odalys Pellegrini", {"Quebec City", "Leipzig"}),
    ("At Acme Corp, Ana Lima leads billing.", "Ana Lima", {"Acme Corp"}),
    # An adverb between the name and its verb: "Oskar just settled" was no verb, and Lisbon the subject.
    ("Oskar just settled in Lisbon.", "Oskar", {"Lisbon"}),
    ("Rui still works at Feedzai.", "Rui", {"Feedzai"}),
    # An agent's note opening on an adverb or a verb in the past leaves its subject unsaid: "Just" and
    # "Booked" were entities the notes were about.
    ("Just landed in Lisbon.", None, {"Lisbon"}),
    ("Really enjoyed the Porto trip.", None, {"Porto"}),
    ("Booked flights to Lisbon for the 12th.", None, {"Lisbon"}),
    ("Met Ana Lima at the conference.", None, {"Ana Lima"}),
    # An adverb before the subject is no part of it.
    ("Finally Ana Lima moved to Porto.", "Ana Lima", {"Porto"}),
    # A title's full stop ends no sentence: the name after it is surely one ("Weber" was a lone
    # capitalised word opening one, and no entity).
    ("My doctor is Dr. Weber on Kaiserstrasse.", "the user", {"Weber", "Kaiserstrasse"}),
    # A dot with a word in lower case or an acronym after it goes on with the name ("Fly.io" was
    # "Fly", "Socket.IO" "IO"); a capitalised word after it starts a sentence. A coding agent's
    # verbs in the past open notes too ("Bumped Node" was a name).
    ("Migrated the API from Heroku to Fly.io.", None, {"API", "Heroku", "Fly.io"}),
    ("Bumped Node.js to 20 on the build box.", None, {"Node.js"}),
    ("Replaced Socket.IO with server-sent events.", None, {"Socket.IO"}),
    ("Ana Lima landed in Lisbon.Then Rui Costa called.", "Ana Lima", {"Lisbon", "Rui Costa"}),
])
def test_a_verb_after_the_opening_word_makes_it_the_subject(text: str, about: str | None, mentioned: set[str]) -> None:
    names = names_in(text)
    assert [n.display for n in names if n.role == "about"] == ([about] if about else [])
    assert {n.display for n in names if n.role == "mentioned" and n.sure} == mentioned
    assert all(n.sure for n in names if n.role == "about")


@pytest.mark.parametrize(("text", "about"), [
    # Two names joined before one verb are both whom the note is about.
    ("Clara and her husband Rui adopted a dog named Bolt.", ["Clara", "Rui"]),
    ("Ana and Rui moved to Porto.", ["Ana", "Rui"]),
    ("Ana Lima & Rui Costa moved to Porto.", ["Ana Lima", "Rui Costa"]),
    # Not the user joined to a name (the user's note), nor words joined with no name and verb after.
    ("Ana and I moved to Porto.", ["the user"]),
    ("Lunch and learn on Friday.", []),
])
def test_names_joined_before_one_verb_are_both_its_subjects(text: str, about: list[str]) -> None:
    assert [n.display for n in names_in(text) if n.role == "about"] == about


def test_keys_in_other_words_are_one_attribute_and_others_never_merge() -> None:
    city = {key_of(k, ENGLISH).attribute for k in ("home city", "lives in", "where they live", "Their current city")}
    assert city == {"home city"}
    assert {key_of(k, ENGLISH).attribute for k in ("team", "belongs to", "member of", "their team")} == {"team"}
    # one phrase however its words are joined: run together, hyphenated or apart
    spellings = ("oncall rotation", "on call rotation", "on-call rotation", "on-call", "time-zone")
    assert [key_of(k, ENGLISH).attribute for k in spellings] == ["on-call"] * 4 + ["time zone"]
    # "language" is a program's, one at a time, unless the subject speaks languages: then one of many.
    language = key_of("language", ENGLISH)
    assert language.attribute == "language" and language.single
    spoken = language.within({"languages spoken"})
    assert spoken.attribute == "languages spoken" and not spoken.single
    # The text's cues choose ahead of the lexicon's order and of the subject's facts: what Keiko
    # speaks is no program's language, whatever else she holds; with no cue her facts decide.
    said = cued_by(language, "Keiko speaks Japanese and English.", ENGLISH)
    assert (said.attribute, said.single) == ("languages spoken", False)
    assert said.within({"language"}).attribute == "languages spoken"
    assert cued_by(language, "Keiko is learning Spanish.", ENGLISH) == language  # no cue: the lexicon's order
    assert cued_by(language, "Keiko is learning Spanish.", ENGLISH).within({"languages spoken"}).attribute \
        == "languages spoken"
    java = cued_by(language, "Heron is written in Java.", ENGLISH)
    assert (java.attribute, java.within({"languages spoken"}).attribute) == ("language", "language")
    # a word for what a value is, after an attribute's own words, makes the key that attribute's
    valued = ("office city", "team name", "car model", "laptop brand", "lives in city")
    assert [key_of(k, ENGLISH).attribute for k in valued] == ["office", "team", "car", "laptop", "home city"]
    assert key_of("work location", ENGLISH).attribute == "work locat"  # "work" holds only an employer's cue
    phone = key_of("phone", ENGLISH)
    assert cued_by(phone, "The user's phone is an iPhone 15.", ENGLISH).attribute == "phone"  # a handset
    assert cued_by(phone, "The user's phone is a Pixel 7.", ENGLISH).attribute == "phone"
    assert cued_by(phone, "Call Greta on her phone: 555 0134.", ENGLISH).attribute == "phone number"
    # "job" is where someone works or what they do there: the text's cues, then the subject's facts
    job = key_of("current job", ENGLISH)
    assert {job.attribute, *job.alternatives} == {"employer", "job title"}
    assert cued_by(job, "Eun-ji was promoted to Staff Engineer.", ENGLISH).attribute == "job title"
    assert cued_by(job, "Eun-ji joined a new company, Initech.", ENGLISH).attribute == "employer"
    assert job.within({"job title"}).attribute == "job title" and job.within({"employer"}).attribute == "employer"
    # "home" is where someone lives: a city, or an address where the text's cues or the subject's facts say so
    home = key_of("home", ENGLISH)
    assert {home.attribute, *home.alternatives} == {"home city", "home address"}
    assert cued_by(home, "Oona just moved to Tallinn!", ENGLISH).attribute == "home city"
    assert cued_by(home, "Oona's flat is at 12 Kalamaja Street.", ENGLISH).attribute == "home address"
    assert home.within({"home address"}).attribute == "home address"
    # "of choice" says nothing of which attribute ("sport of choice", "text editor of choice")
    assert key_of("sport of choice", ENGLISH).attribute == key_of("sport", ENGLISH).attribute == "sport"
    assert key_of("text editor of choice", ENGLISH).attribute == "editor"
    # the tools a coding agent hears about: a small model keyed one switch "note-taking", then
    # "note-taking app"; a notes app is a preference (extraction types the fact by it)
    assert key_of("note-taking", ENGLISH).attribute == key_of("note-taking app", ENGLISH).attribute == "notes app"
    assert kind_of("notes app", ENGLISH) == "preference"
    assert key_of("tests", ENGLISH).attribute == key_of("testing framework", ENGLISH).attribute == "test framework"
    assert key_of("release notes channel", ENGLISH).attribute == "channel"  # notes, not a notes app
    assert key_of("employer", ENGLISH).attribute != key_of("manager", ENGLISH).attribute
    # one attribute's phrase whole is that attribute, though without its fillers ("who", "it") its
    # word is another's too: "owns" is a project's ("owns the Osprey roadmap") and an owner's
    owner = key_of("who owns it", ENGLISH)
    assert (owner.attribute, owner.alternatives) == ("owner", ())
    assert {key_of("owns", ENGLISH).attribute} == {"project"}
    assert key_of("job title", ENGLISH).attribute != key_of("employer", ENGLISH).attribute
    assert key_of("hometown", ENGLISH).attribute != key_of("home city", ENGLISH).attribute
    assert not key_of("allergies", ENGLISH).single and key_of("employer", ENGLISH).single
    own = key_of("favourite colour", ENGLISH)
    assert own.attribute == key_of("favourite colours", ENGLISH).attribute and own.single
    assert not key_of("favourite colours", ENGLISH).single
    assert key_of("the their", ENGLISH) is None


def test_of_two_attributes_a_question_names_alike_the_one_after_a_determiner_is_what_it_asks_of() -> None:
    """"Who insures the car?" names the car and the insurer by one word each: the car is what the
    question asks of, and a tie read as both left no word to name the subject by (whose.py)."""
    assert asked_of_any("Who insures the car?", ENGLISH) == {"insurer"}
    assert asked_of_any("Who is our car insurer?", ENGLISH) == {"insurer"}
    assert asked_of_any("Who is someone car insurer?", ENGLISH) == {"insurer"}  # the user masked (focus.py)
    assert asked_of_any("Who manages the team now?", ENGLISH) == {"manager"}
    assert asked_of_any("What laptop does the team use?", ENGLISH) == {"laptop"}
    assert asked_of_any("When did Ana join the company?", ENGLISH) == {"start year"}
    # no determiner before either, or one before each in a language with no owner's word: both, as
    # before; one attribute alone is asked, a determiner or not
    assert asked_of_any("Which phone does Ana have?", ENGLISH) == {"phone", "phone number"}
    assert asked_of_any("Who is the insurer of the car?", ENGLISH) == {"car", "insurer"}
    assert asked_of_any("What is the car?", ENGLISH) == {"car"}
    # in Portuguese, where each follows an article, the one after an owner's word is what it asks of
    assert asked_of_any("Qual é a seguradora do carro?", PORTUGUESE) == {"insurer"}
    # "seguro" is also "safe", and "comida" no "com" ("with"): neither asks an insurer or a food
    assert asked_of_any("Onde é seguro estacionar?", PORTUGUESE) == frozenset()
    assert asked_of_any("Com quem está a Greta agora?", PORTUGUESE) == frozenset()


def test_a_question_asks_for_one_of_the_subjects_attributes() -> None:
    known = {"home city": ["lives in"], "employer": ["works at"], "car": ["vehicle"], "favourit colour": ["colour"]}
    assert asked("What does Greta drive these days?", ENGLISH, known) == "car"
    assert asked("Which town is Greta in at the moment?", ENGLISH, known) == "home city"
    assert asked("What colour does Greta like?", ENGLISH, known) == "favourit colour"
    assert asked("How is Greta doing?", ENGLISH, known) is None
    # where someone works is their employer; what they work on, or from, is a project or an office
    at_work = {**known, "project": ["working on"], "office": ["office"]}
    assert asked("Where does Greta work now?", ENGLISH, at_work) == "employer"
    assert asked("Where am I working these days?", ENGLISH, at_work) == "employer"
    assert asked("What does Greta work on?", ENGLISH, at_work) == "project"
    titled = {**at_work, "job title": ["role"]}
    for question in ("What does Greta do for a living?", "What is Greta's occupation?"):
        assert asked(question, ENGLISH, titled) == "job title", question
    assert asked("Where does Greta work from currently?", ENGLISH, at_work) == "office"
    # what the question's determiner governs is asked, ahead of a longer phrase elsewhere in it...
    at_desk = {"laptop": ["work laptop"], "project": ["works on"]}
    assert asked("Which machine does the user work on now?", ENGLISH, at_desk) == "laptop"
    assert asked("What does the user work on now?", ENGLISH, at_desk) == "project"
    # ...unless the question names an attribute sharing a phrase with it ("based in": a home
    # city's and an office's), whose values a writer's words may have filed under the other
    placed = {"office": ["site"], "home city": ["office city"]}
    assert asked("Which office is the Xenon team based in?", ENGLISH, placed) is None
    # What the determiner governs, named by a phrase of one of the lexicon's attributes the subject
    # holds none of, is no other of them that the rest of the question's words hold: "runs on" is a
    # deploy target's phrase, but a Postgres version is asked. A key in the writer's own words may
    # be the one asked, and one sharing a phrase with it may hold its values.
    service = {"database": ["database"], "deploy target": ["hosting"], "owner": ["owner"]}
    assert asked("Which Postgres version does billing-service run on now?", ENGLISH, service) is None
    assert asked("Which platform does billing-service run on now?", ENGLISH, service) == "deploy target"
    assert asked("What food is Greta allergic to?", ENGLISH, {"allergies": ["allergies"]}) == "allergies"
    assert asked("Which city is Greta based in?", ENGLISH, {"office": ["office"]}) == "office"
    shipped = {"ships with": ["ships with"]}
    assert asked("Which Postgres version does Heron ship with?", ENGLISH, shipped) == "ships with"


def test_rules_find_the_subject_first_and_the_user() -> None:
    names = names_in("Greta Ibarra told Tomasz Wolak about the Oslo office.")
    assert [(n.canonical, n.role) for n in names] == [
        ("greta ibarra", "about"), ("tomasz wolak", "mentioned"), ("oslo", "mentioned")]
    assert [(n.canonical, n.role) for n in names_in("I moved to Lisbon last spring.")] == [
        ("(user)", "about"), ("lisbon", "mentioned")]
    # A lone capitalised word opening a note is sentence case, not surely a name.
    opener = names_in("Heard today: Benedikt Pereira promoted.")
    assert opener[0].canonical == "heard" and not opener[0].sure
    assert ("benedikt pereira", "about") in [(n.canonical, n.role) for n in opener]
    # An agent's note opening on its verb leaves its subject unsaid: the verb is no name ("Prefers
    # Helix" was an entity with the editor as its attribute), and what follows is no subject ("Works
    # at Globex now." was Globex's). A name that only ends like a verb still opens on its person.
    for note, named in (("Prefers Helix as the editor.", ["helix"]), ("Works at Globex now.", ["globex"]),
                        ("Use pnpm, never Yarn.", ["yarn"]), ("Update: Moved Greta to the Oslo office.",
                                                             ["update", "greta", "oslo"])):
        assert [(n.canonical, n.role) for n in names_in(note)] == [(c, "mentioned") for c in named], note
    assert [(n.canonical, n.role) for n in names_in("Marcus Obi leads Payments.")][0] == ("marcus obi", "about")


async def test_a_keyed_note_with_its_subject_unsaid_is_refused_and_names_what_to_pass(service) -> None:
    """"Prefers Helix as the editor." keyed "editor" with no `about` was the editor of an entity named
    "Prefers Helix"; it names no one whose attribute it is, so the write says to pass `about`, and
    nothing is written. With `about` it is the user's."""
    p = principal()
    with pytest.raises(InvalidInput, match="needs whom it is about"):
        await service.write(p, "Prefers Helix as the editor.", key="editor")
    assert await entities(service, p) == []
    # A text naming something, not as its subject, does not say whose version it is either.
    with pytest.raises(InvalidInput, match="needs whom it is about, and the text does not say: pass about"):
        await service.write(p, "Bumped Node.js to 20.", key="version")
    mine = await service.write(p, "Prefers Helix as the editor.", about=["me"], key="editor")
    assert mine.memory.about == ["the user"] and mine.memory.key == "editor"


async def test_a_newer_value_of_the_same_key_replaces_the_older_by_itself(service) -> None:
    p = principal()
    old = await service.write(p, "Greta Ibarra lives in Oslo.", about=["Greta Ibarra"], key="home city",
                              occurred_at=day("2024-01-01"))
    note = await service.write(p, "Greta said the bakery is overrated.", about=["Greta"],
                               occurred_at=day("2024-06-01"))
    new = await service.write(p, "Greta moved to Lisbon.", about=["Greta"], key="where she lives",
                              occurred_at=day("2025-03-01"))
    assert new.memory.replaced == [old.memory.id] and new.memory.about == ["Greta"]
    assert new.memory.key == "home city"
    got = {m.id: m for m in (await service.get(p, [old.memory.id, note.memory.id])).memories}
    assert got[old.memory.id].superseded_by == new.memory.id
    assert got[note.memory.id].superseded_by is None  # same person, no key: untouched
    history = (await service.history(p, old.memory.id)).entries
    assert "same key (home city)" in history[-1].reason and history[-1].new == {"superseded_by": str(new.memory.id)}
    # One entity for Greta, by her full name and her first name alike.
    assert [c for _, c in await entities(service, p) if c.startswith("greta")] == ["greta ibarra"]


async def test_a_friends_new_job_keyed_with_no_about_is_the_friends_not_the_users(service) -> None:
    """"Lena, the user's friend, moved to Hamburg for a new job at SAP." with `key` and no `about`:
    the rules read Lena as its subject, so the fact is hers, and the user's employer stays."""
    p = principal()
    mine = await service.write(p, "I work at Brightwater Analytics.", about=["me"], key="employer",
                               occurred_at=day("2024-01-01"))
    hers = await service.write(p, "Lena, the user's friend, moved to Hamburg for a new job at SAP.",
                               key="employer", occurred_at=day("2025-01-01"))
    assert hers.memory.about == ["Lena"] and not hers.memory.replaced
    got = (await service.get(p, [mine.memory.id])).memories[0]
    assert got.superseded_by is None


async def test_a_wifes_new_job_said_with_her_name_after_her_role_is_hers_not_the_users(service) -> None:
    """"My wife Sara started at Talkdesk." keyed "employer" with no `about`: the name after the role
    is whom it is about, so the fact is Sara's, and the user's employer stays. Read as naming no one
    (the note led by the user's person), the keyed write was refused."""
    p = principal()
    mine = await service.write(p, "I work at Brightwater Analytics.", about=["me"], key="employer",
                               occurred_at=day("2024-01-01"))
    hers = await service.write(p, "My wife Sara started at Talkdesk.", key="employer", occurred_at=day("2025-01-01"))
    assert hers.memory.about == ["Sara"] and not hers.memory.replaced
    assert (await service.get(p, [mine.memory.id])).memories[0].superseded_by is None
    hits = (await service.search(p, "Where does Sara work now?", explain=True)).hits
    assert hits[0].id == hers.memory.id and hits[0].explain["fact"] == 1


async def test_an_earlier_dated_fact_does_not_replace_the_live_one(service) -> None:
    p = principal()
    live = await service.write(p, "Greta works at Ironbark Studios.", about=["Greta Ibarra"], key="employer",
                               occurred_at=day("2025-05-01"))
    late_news = await service.write(p, "Greta did contract work for Saltmarsh Bank.", about=["Greta Ibarra"],
                                    key="works for", occurred_at=day("2024-03-01"))
    assert late_news.memory.replaced is None and late_news.memory.superseded_by == live.memory.id
    assert (await service.get(p, [live.memory.id])).memories[0].superseded_by is None


async def test_many_valued_attributes_accumulate_and_other_keys_or_people_are_untouched(service) -> None:
    p = principal()
    a = await service.write(p, "Greta is allergic to penicillin.", about=["Greta"], key="allergies")
    b = await service.write(p, "Greta is allergic to peanuts.", about=["Greta"], key="allergic to")
    assert b.memory.replaced is None
    c = await service.write(p, "Tomasz lives in Oslo.", about=["Tomasz"], key="home city")
    d = await service.write(p, "Greta lives in Bergen.", about=["Greta"], key="home city")
    e = await service.write(p, "Greta's manager is Ana.", about=["Greta"], key="manager")
    assert d.memory.replaced is None and e.memory.replaced is None
    got = (await service.get(p, [a.memory.id, b.memory.id, c.memory.id, d.memory.id])).memories
    assert all(m.superseded_by is None for m in got)
    # what the decisions' guard reads back: whom each is about, and the attribute keyed of them
    stored = await service.repo.subjects(p, [a.memory.id, d.memory.id, e.memory.id])
    assert [set(stored[m.memory.id].keyed.values()) for m in (a, d, e)] == [{"allergies"}, {"home city"}, {"manager"}]
    assert stored[d.memory.id].keyed.keys() == stored[d.memory.id].said.keys()


async def test_me_is_the_user_and_a_key_with_no_subject_is_refused(service) -> None:
    p = principal()
    first = await service.write(p, "Editor: VS Code.", about=["me"], key="editor")
    second = await service.write(p, "I switched to Helix.", key="text editor")  # rules: the user
    assert second.memory.replaced == [first.memory.id] and second.memory.about == ["the user"]
    before = await count(service, p)
    with pytest.raises(InvalidInput, match="about"):
        await service.write(p, "the staging cluster is kestrel-7", key="name")
    with pytest.raises(InvalidInput, match=r"about\[0\]"):
        await service.write(p, "Greta likes tea.", about=[" "])
    with pytest.raises(InvalidInput, match="key"):
        await service.write(p, "Greta likes tea.", about=["Greta"], key="the")
    assert await count(service, p) == before


async def test_a_batch_resolves_in_order_and_a_bad_item_writes_nothing(service) -> None:
    p = principal()
    result = await service.write_many(p, [
        WriteItem(content="Kwame reports to Hana Dubois.", about=["Kwame Larsen"], key="manager",
                  occurred_at=day("2024-01-01")),
        WriteItem(content="Kwame's new manager is Diego.", about=["Kwame"], key="boss", occurred_at=day("2025-01-01")),
    ])
    first, second = (m.id for m in result.memories)
    assert (await service.get(p, [first])).memories[0].superseded_by == second
    with pytest.raises(InvalidInput, match=r"items\[1\]"):
        await service.write_many(p, [WriteItem(content="fine"), WriteItem(content="x y", key="home city")])


async def test_entities_are_per_namespace_and_rls_keeps_them_apart(service) -> None:
    alice, bob = principal("alice"), principal("bob")
    await service.write(alice, "Greta lives in Oslo.", about=["Greta"], key="home city")
    await service.write(bob, "Greta lives in Rome.", about=["Greta"], key="home city")
    assert [c for _, c in await entities(service, alice)] == ["greta", "oslo"]
    assert [c for _, c in await entities(service, bob)] == ["greta", "rome"]
    other_project = principal("alice", project="proj-y")
    later = await service.write(other_project, "Greta lives in Paris.", about=["Greta"], key="home city")
    assert later.memory.replaced is None  # another project's Greta is another entity


async def test_a_note_opening_on_a_time_word_is_about_the_person_named_after_it(service) -> None:
    p = principal("alice")
    await service.write(p, "Ana Lima lives in Rome.")
    moved = await service.write(p, "Yesterday Ana Lima moved to Berlin.")
    assert [c for _, c in await entities(service, p)] == ["ana lima", "berlin", "rome"]
    assert (await service.get(p, [moved.memory.id])).memories[0].about == ["Ana Lima"]


async def test_a_question_about_a_keyed_attribute_gets_the_current_value_first(service) -> None:
    p = principal()
    v1 = await service.write(p, "Greta Ibarra drives a Hyundai Ioniq.", about=["Greta Ibarra"], key="car",
                             occurred_at=day("2023-11-30"))
    v2 = await service.write(p, "Greta is leasing a Subaru Outback now.", about=["Greta"], key="vehicle",
                             occurred_at=day("2025-10-07"))
    for text in ("Greta Ibarra loves driving to the coast in her old car.", "Greta Ibarra drives to work on Fridays.",
                 "Greta Ibarra is reading a thriller set in Iceland."):
        await service.write(p, text, occurred_at=day("2025-12-01"))
    hits = (await service.search(p, "What does Greta Ibarra drive these days?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [v2.memory.id, v1.memory.id]
    assert hits[0].valid_until is None and hits[1].valid_until == day("2025-10-07")
    assert hits[0].explain["fact"] == 1 and hits[1].explain["fact"] == 2
    past = (await service.search(p, "What did Greta drive before?")).hits
    assert past[0].id == v1.memory.id


@pytest.mark.parametrize(("first", "then"), [("my wife", "my wife"), ("the user's wife", "the user's wife"),
                                             ("my wife", "the user's wife"), ("the user's wife", "our wife")])
async def test_a_question_about_someone_in_the_users_life_gets_their_value_not_the_users(service, first,
                                                                                         then) -> None:
    """"Where does my wife work now?" asks of her however the writer named her, not of the user,
    whose employer the graph also holds (keyed.py `question_names`, as whose.py reads it); named
    one way and then another she is one entity (names.py `their_forms`), the newer value replacing."""
    p = principal()
    mine = (await service.write(p, "User works at Brightwater.", about=["me"], key="employer",
                                occurred_at=day("2024-02-01"))).memory.id
    before = (await service.write(p, "My wife works at Plumtree Media.", about=[first], key="employer",
                                  occurred_at=day("2025-01-01"))).memory.id
    written = await service.write(p, "My wife moved to Saltmarsh Bank.", about=[then], key="employer",
                                  occurred_at=day("2025-06-01"))
    now = written.memory.id
    assert written.memory.replaced == [before]
    assert len([c for _, c in await entities(service, p) if c.endswith("wife")]) == 1
    for question in ("Where does my wife work now?", "What is my wife's employer?", "Who employs my wife?"):
        hits = (await service.search(p, question, explain=True)).hits
        assert [h.id for h in hits[:2]] == [now, before], question
        assert hits[0].explain["fact"] == 1 and "fact" not in next(h for h in hits if h.id == mine).explain
    assert (await service.search(p, "Where do I work now?")).hits[0].id == mine


async def test_a_question_naming_a_span_gets_the_values_that_held_in_it_first(service) -> None:
    p = principal()
    written = {}
    for name, text, about, key, when in (
            ("madrid", "Back then Priya lived in Madrid.", "Priya Nair", "lives in", "2024-03-01"),
            ("lisbon", "Priya Nair lives in Lisbon.", "Priya Nair", "home city", "2025-01-10"),
            ("porto", "Priya moved to Porto last month.", "Priya", "where she lives", "2025-06-01"),
            ("peanuts", "Priya Nair is allergic to peanuts.", "Priya Nair", "allergy", "2024-05-01"),
            ("shellfish", "Priya is also allergic to shellfish.", "Priya Nair", "allergies", "2025-07-01")):
        written[name] = (await service.write(p, text, about=[about], key=key, occurred_at=day(when))).memory.id
    madrid, lisbon, porto, peanuts, shellfish = written.values()

    async def first(question: str, n: int = 1) -> list:
        return [h.id for h in (await service.search(p, question)).hits[:n]]

    # The value that held in the span comes first, whenever it was written and whatever holds now.
    assert await first("Where did Priya live in 2024?") == [madrid]
    assert await first("Where did Priya Nair live in March 2024?") == [madrid]
    assert await first("Where was Priya living in February 2025?") == [lisbon]
    assert await first("Where did Priya live before 2025?") == [madrid]
    # Two held in 2025: the later first, then the one it replaced; the value of 2024 after them.
    hits = (await service.search(p, "Where did Priya live in 2025?")).hits
    assert [h.id for h in hits[:3]] == [porto, lisbon, madrid]
    assert hits[1].valid_until == day("2025-06-01")
    # Many values at a time: those already held in the span.
    assert await first("What was Priya allergic to in 2024?") == [peanuts]
    assert set(await first("What is Priya allergic to?", 2)) == {peanuts, shellfish}
    # Before or after one of the values: the one next to it that way.
    assert await first("Where did Priya live before Lisbon?") == [madrid]
    assert await first("Where did Priya live after Madrid?") == [lisbon]
    assert await first("Where did Priya live " + "before the move, before Lisbon " * 60) == [madrid]
    # Nothing before the first value the graph knows: the text orders, as for a span before it.
    before = (await service.search(p, "Where did Priya live before Madrid?", explain=True)).hits
    assert before and all("fact" not in (h.explain or {}) for h in before)
    # With no span the current value first, as before.
    assert await first("Where does Priya live now?") == [porto]
    # A span before every value the graph knows: it cannot say what held then, and the text orders.
    before = (await service.search(p, "Where did Priya live in 2023?", explain=True)).hits
    assert before and all("fact" not in (h.explain or {}) for h in before)


async def test_a_question_naming_no_known_entity_gets_exactly_the_hits_it_got_without_the_graph(service) -> None:
    p = principal()
    for text, about, key in (("Greta lives in Oslo.", ["Greta"], "home city"),
                             ("Tomasz Wolak lives in Kraków.", None, None),
                             ("The Oslo office moved to Bjørvika.", None, None)):
        await service.write(p, text, about=about, key=key)
    questions = ("Where does Ingrid Solberg live now?", "Which office moved?", "where is the office")
    with_graph = [(await service.search(p, q, explain=True)).hits for q in questions]
    async with service.repo.transaction(p) as conn:
        await conn.execute("DELETE FROM memory_facts; DELETE FROM memory_entities")
    without = [(await service.search(p, q, explain=True)).hits for q in questions]
    assert with_graph == without and all(with_graph)


async def test_a_question_naming_someone_lifts_the_memories_the_graph_says_are_theirs(service) -> None:
    """Whom a memory is about is read once, when it is written: a note whose text leaves the name out
    (the writer's `about`) or calls her by her first name alone is hers to a question naming her in
    full, and a note that only addresses her ("Thanks, Greta!") is not."""
    p = principal()
    await service.write(p, "Greta Ibarra joined the climbing gym.")
    unnamed = await service.write(p, "Moved to Lisbon in the spring, near the river.", about=["Greta Ibarra"])
    first = await service.write(p, "Greta said the new flat is close to the river.")
    addressed = await service.write(p, "Thanks, Greta! The river walk in Lisbon was lovely.")
    hits = {h.id: h for h in (await service.search(p, "Where does Greta Ibarra live by the river?", explain=True)).hits}
    boost = service.settings.subject_boost
    assert hits[unnamed.memory.id].explain["subject"] == boost  # by the writer's `about` alone
    assert hits[first.memory.id].explain["subject"] == boost
    assert hits[addressed.memory.id].explain["subject"] == 1
    async with service.repo.transaction(p) as conn:
        await conn.execute("DELETE FROM memory_facts; DELETE FROM memory_entities")
    text_only = {h.id: h for h in (await service.search(p, "Where does Greta Ibarra live by the river?",
                                                        explain=True)).hits}
    assert text_only[unnamed.memory.id].explain["subject"] == 1  # what the text alone could tell


async def test_a_first_name_alone_then_in_full_is_one_entity_unless_two_full_names_begin_with_it(
        service, database) -> None:
    from mcp_memory.repository.entity_edits import FIRST_NAME_MERGED
    from mcp_memory.repository.graph_checks import inconsistencies

    p = principal()
    lunch = await service.write(p, "I had lunch with Greta and we talked about Oslo.")
    full = await service.write(p, "Greta Ibarra moved to Oslo last spring.")
    assert (await service.get(p, [lunch.memory.id])).memories[0].mentions == ["Greta Ibarra", "Oslo"]
    async with service.repo.transaction(p) as conn:
        live = [r["canonical"] for r in await conn.fetch(
            "SELECT canonical FROM entities WHERE merged_into IS NULL ORDER BY canonical")]
        edit = await conn.fetchrow("SELECT kind, reason, actor FROM entity_edits")
    assert live == ["(user)", "greta ibarra", "oslo"]
    assert tuple(edit) == ("merge", FIRST_NAME_MERGED, "test:alice")  # the console's edit: a split undoes it
    hits = {h.id: h for h in (await service.search(p, "Who did Greta Ibarra have lunch with?", explain=True)).hits}
    assert hits[lunch.memory.id].explain["subject"] == service.settings.subject_boost
    assert full.memory.id in hits
    # Two full names begin with "Tomasz": a lone "Tomasz" could be either, and stays apart.
    await service.write(p, "Coffee with Tomasz on Friday.")
    await service.write(p, "Tomasz Wolak and Tomasz Nowak both joined the platform team.")
    assert {"tomasz", "tomasz wolak", "tomasz nowak"} <= {n for _, n in await entities(service, p)}
    async with database.admin.acquire() as conn:
        assert not any((await inconsistencies(conn)).values())


async def test_a_hyphenated_first_name_is_one_word_of_the_full_name(service) -> None:
    """"Eun-ji" is the first name of "Eun-ji Abara" though its canonical form has two words: the
    lone name written first is merged into the full one, a later value replaces the earlier by
    key, and a question by the first name alone finds the current value."""
    p = principal()
    old = await service.write(p, "Eun-ji has a ThinkPad X1 as her work laptop.", about=["Eun-ji"], key="work laptop",
                              occurred_at=day("2025-01-01"))
    new = await service.write(p, "Eun-ji Abara now uses a MacBook Air.", about=["Eun-ji Abara"], key="uses laptop",
                              occurred_at=day("2025-06-01"))
    assert new.memory.replaced == [old.memory.id]
    async with service.repo.transaction(p) as conn:
        live = {r["canonical"] for r in await conn.fetch("SELECT canonical FROM entities WHERE merged_into IS NULL")}
    assert "eun ji abara" in live and "eun ji" not in live
    hits = (await service.search(p, "Which laptop does Eun-ji use now?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [new.memory.id, old.memory.id]
    # The writer's first name for a full name the text holds: the full name.
    given = await service.write(p, "Jean-Luc Moreau moved to Lyon.", about=["Jean-Luc"], key="home city")
    assert given.memory.about == ["Jean-Luc Moreau"]


async def test_a_language_someone_learns_adds_to_those_they_speak_and_a_program_s_replaces(service) -> None:
    """A model keyed "Keiko is learning Spanish" `language`, the lexicon's programming language (one
    at a time), and it replaced "speaks Japanese and English": the subject's own facts decide."""
    p = principal()
    # Keyed "language" too, as the local model keyed both: "speaks" says which language it is.
    speaks = await service.write(p, "Keiko Tanaka speaks Japanese and English.", about=["Keiko Tanaka"],
                                 key="language", occurred_at=day("2025-01-01"))
    assert speaks.memory.key == "languages spoken"
    learns = await service.write(p, "Keiko Tanaka is learning Spanish.", about=["Keiko Tanaka"], key="language",
                                 occurred_at=day("2025-06-01"))
    assert learns.memory.replaced is None and learns.memory.key == "languages spoken"
    profile = await service.entities.profile(p, "Keiko Tanaka")
    values = next(a for a in profile.attributes if a.attribute == "languages spoken")
    assert {v.memory for v in values.current} == {learns.memory.id, speaks.memory.id}
    java = await service.write(p, "The billing API is written in Java.", about=["billing API"], key="language",
                               occurred_at=day("2025-01-01"))
    go = await service.write(p, "The billing API was rewritten in Go.", about=["billing API"], key="language",
                             occurred_at=day("2025-06-01"))
    assert go.memory.replaced == [java.memory.id]


async def test_two_values_one_batch_dated_the_same_moment_replace_neither(service) -> None:
    """A model read "My Pixel died, so I got an iPhone 15" as two facts of one turn, both keyed
    `phone`, dated the turn's moment and written in one batch, and the later written replaced the
    other: with no order in time neither replaces, and the profile and search both hold both as
    current. Written apart, a fact dated the same day as one before it replaces it (an agent dates
    by the day); undated, a batch's later item replaces the earlier, and only it is current."""
    p = principal()
    turn = day("2025-05-02")
    both = await service.write_many(p, [
        WriteItem(content="The user's phone is an iPhone 15.", about=["me"], key="phone", occurred_at=turn),
        WriteItem(content="The Pixel died.", about=["me"], key="phone", occurred_at=turn)])
    ids = [m.id for m in both.memories]
    assert [m.superseded_by for m in (await service.get(p, ids)).memories] == [None, None]

    async def current(who: str, attribute: str) -> set:
        profile = await service.entities.profile(p, who)
        return {v.memory for v in next(a for a in profile.attributes if a.attribute == attribute).current}

    assert await current("me", "phone") == set(ids)
    hits = (await service.search(p, "What phone does the user have?")).hits
    assert {h.id for h in hits[:2]} == set(ids) and all(h.valid_until is None for h in hits[:2])
    later = await service.write(p, "The user's phone is a Fairphone 5.", about=["me"], key="phone",
                                occurred_at=day("2025-09-01"))
    assert set(later.memory.replaced or []) == set(ids)

    paris = await service.write(p, "Greta Ibarra lives in Paris.", about=["Greta Ibarra"], key="home city",
                                occurred_at=day("2025-05-02"))
    berlin = await service.write(p, "Greta Ibarra moved to Berlin.", about=["Greta Ibarra"], key="home city",
                                 occurred_at=day("2025-05-02"))
    assert berlin.memory.replaced == [paris.memory.id]
    assert await current("Greta Ibarra", "home city") == {berlin.memory.id}

    undated = await service.write_many(p, [
        WriteItem(content="Tomás Herrera lives in Oslo.", about=["Tomás Herrera"], key="home city"),
        WriteItem(content="Tomás Herrera moved to Bergen.", about=["Tomás Herrera"], key="home city")])
    oslo, bergen = (await service.get(p, [m.id for m in undated.memories])).memories
    assert oslo.superseded_by == bergen.id and bergen.superseded_by is None
    assert await current("Tomás Herrera", "home city") == {bergen.id}
    hits = (await service.search(p, "Where does Tomás Herrera live now?")).hits
    assert hits[0].id == bergen.id and hits[0].valid_until is None


async def test_a_first_name_merge_this_session_could_not_make_leaves_the_write_whole(service, database) -> None:
    """A lone "Greta" of the user's own namespace, named too by a memory of project X, and then
    "Greta Ibarra" written by a session acting in project Y: the merge would move a mention of a
    project it does not act in, so it is not made (the savepoint's path), and the write stands
    whole, the two entities apart, the graph consistent."""
    from mcp_memory.repository.graph_checks import inconsistencies

    in_x, in_y = principal(project="proj-x"), principal(project="proj-y")
    # The same in a project this session acts in is merged: the path below is the refusal's.
    await service.write(in_y, "Coffee with Tomasz on Friday.", scope="user")
    await service.write(in_y, "The roadmap is due to Tomasz by Monday.", scope="agent_project")
    await service.write(in_y, "Tomasz Wolak moved to Gdansk.", scope="user")
    async with database.admin.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM entity_edits") == 1
    await service.write(in_x, "Lunch with Greta on Friday.", scope="user")
    await service.write(in_x, "The roadmap is due to Greta by Monday.", scope="agent_project")
    full = await service.write(in_y, "Greta Ibarra moved to Oslo last spring.", scope="user")
    got = (await service.get(in_y, [full.memory.id])).memories[0]
    assert got.content == "Greta Ibarra moved to Oslo last spring." and "Greta Ibarra" in (got.about or [])
    async with database.admin.acquire() as conn:
        live = {r["canonical"] for r in await conn.fetch("SELECT canonical FROM entities WHERE merged_into IS NULL")}
        assert {"greta", "greta ibarra"} <= live
        assert await conn.fetchval("SELECT count(*) FROM entity_edits") == 1
        assert not any((await inconsistencies(conn)).values())


async def test_get_shows_about_key_and_mentions_and_related_marks_the_replaced_value(service) -> None:
    p = principal()
    old = await service.write(p, "Kwame Larsen reports to Hana Dubois.", about=["Kwame Larsen"], key="manager")
    new = await service.write(p, "Diego Yilmaz took over as Kwame's manager.", about=["Kwame"], key="reports to")
    assert new.related[0].id == old.memory.id and new.related[0].same_key and new.related[0].earlier_version
    got = (await service.get(p, [new.memory.id])).memories[0]
    assert got.about == ["Kwame Larsen"] and got.key == "manager" and got.mentions == ["Diego Yilmaz"]
    assert got.edges is None


async def test_through_mcp_the_writer_passes_about_and_key_and_reads_the_profile(settings) -> None:
    from .test_server import call, call_error, connect

    async with connect(settings) as client:
        first = await call(client, "memory_write", {"content": "Odalys lives in Leipzig.",
                                                    "about": ["Odalys Pellegrini"], "key": "home city",
                                                    "occurred_at": "2024-08-10T00:00:00Z"})
        second = await call(client, "memory_write", {"content": "Odalys left Leipzig behind for Berlin.",
                                                     "about": ["Odalys"], "key": "where she lives",
                                                     "occurred_at": "2025-10-11T00:00:00Z"})
        await call(client, "memory_write", {"content": "Odalys is allergic to cats.", "about": ["Odalys"],
                                            "key": "allergies"})
        assert second["memory"]["replaced"] == [first["memory"]["id"]]
        assert second["related"][0]["same_key"] is True
        listed = json.loads((await client.read_resource("memory://entities")).contents[0].text)
        assert listed["entities"][0]["name"] == "Odalys Pellegrini" and listed["entities"][0]["memories"] == 3
        profile = json.loads((await client.read_resource("memory://entities/Odalys Pellegrini")).contents[0].text)
        city = next(a for a in profile["attributes"] if a["attribute"] == "home city")
        assert city["current"][0]["memory"] == second["memory"]["id"]
        assert city["earlier"][0]["memory"] == first["memory"]["id"]
        assert city["earlier"][0]["valid_until"].startswith("2025-10-11")
        assert {r["name"] for r in profile["related"]} == {"Leipzig", "Berlin"}
        with pytest.raises(MCPError, match="no entity"):
            await client.read_resource("memory://entities/Nobody Known")
        error = await call_error(client, "memory_write", {"content": "kestrel-7 is staging", "key": "name"})
        assert "needs whom it is about" in error


async def test_a_mutation_workload_leaves_no_inconsistent_link_and_validity_follows_live_facts(
        service, database) -> None:
    from datetime import timedelta

    from mcp_memory.repository.graph_checks import inconsistencies
    from mcp_memory.repository.maintenance import MaintenanceRepository

    p = principal()
    ids = []
    for i, city in enumerate(("Oslo", "Bergen", "Tromsø", "Lisbon")):
        w = await service.write(p, f"Greta Ibarra moved to {city} with Tomasz.", about=["Greta"], key="home city",
                                occurred_at=day(f"202{i}-01-01"))
        ids.append(w.memory.id)
    await service.write(p, "Greta Ibarra likes tea.", about=["Greta"])
    newest = ids[-1]

    async def current() -> UUID:
        profile = await service.entities.profile(p, "Greta Ibarra")
        return next(a for a in profile.attributes if a.attribute == "home city").current[0].memory

    assert await current() == newest
    await service.forget(p, [newest])
    assert await current() == ids[2]  # the earlier value holds again, nothing rewritten
    hits = (await service.search(p, "Where does Greta live now?")).hits
    assert hits[0].id == ids[2] and hits[0].superseded_by is None  # nor replaced by what was forgotten
    restored = (await service.restore(p, [newest])).restored[0]
    assert (restored.about, restored.key) == (["Greta Ibarra"], "home city")  # as memory_get shows it
    listed = {m.id: m for m in (await service.list(p)).memories}
    assert (listed[newest].about, listed[newest].key) == (["Greta Ibarra"], "home city")
    assert (await service.get_one(p, newest)).key == "home city"  # memory://memories/{id}
    assert (await service.search(p, "Where does Greta live now?")).hits[1].superseded_by == newest
    assert await current() == newest
    # A new text reads its names again; a new date moves the fact's validity with it.
    updated = (await service.update(p, ids[1], content="Greta Ibarra moved to Bergen with Wanjiru.")).memory
    got = (await service.get(p, [ids[1]])).memories[0]
    assert got.mentions == ["Bergen", "Wanjiru"] and got.key == "home city"
    assert (updated.about, updated.key, updated.mentions) == (got.about, got.key, got.mentions)
    await service.update(p, ids[0], occurred_at=day("2026-06-01"))
    assert await current() == ids[0]
    # Purged memories take their links with them.
    await service.forget(p, [ids[3]])
    maintenance = MaintenanceRepository(database.admin)
    report = await maintenance.purge(datetime.now(UTC) + timedelta(days=365), purge_after_days=30, history_days=180,
                                     idempotency_days=7, stale_after_days=None, dry_run=False)
    assert report.tombstones == 1
    async with database.admin.acquire() as conn:
        assert await inconsistencies(conn) == {name: 0 for name in await inconsistencies(conn)}
        assert await conn.fetchval("SELECT count(*) FROM memory_facts WHERE memory_id = $1", ids[3]) == 0
        # A broken link is found: the checks are not blind.
        await conn.execute("DELETE FROM memory_entities WHERE memory_id = $1", ids[0])
        assert (await inconsistencies(conn))["facts without their mention"] == 1
        await conn.execute("INSERT INTO entity_aliases (user_id, entity_id, alias, agent_id, project_id) "
                           "SELECT user_id, id, 'someone else', agent_id, project_id FROM entities LIMIT 1")
        assert (await inconsistencies(conn))["aliases out of step with their rows"] == 1


async def test_row_level_security_alone_keeps_the_graph_apart(service, monkeypatch, database) -> None:
    from mcp_memory.repository import sql

    alice, bob = principal("alice"), principal("bob")
    other_project = principal("alice", project="proj-y")
    await service.write(alice, "Greta Ibarra lives in Oslo.", about=["Greta Ibarra"], key="home city",
                        scope="project")
    monkeypatch.setattr(sql, "SCOPE_FILTER", False)
    for who in (bob, other_project):
        assert (await service.entities.list(who)).entities == []
        with pytest.raises(NotFound):
            await service.entities.profile(who, "Greta Ibarra")
        assert (await service.search(who, "Where does Greta Ibarra live?")).hits == []
    assert [e.name for e in (await service.entities.list(alice)).entities] == ["Greta Ibarra", "Oslo"]
    async with database.pool.acquire() as conn:  # the application role with no user set sees nothing
        for table in ("entities", "memory_entities", "memory_facts", "memory_edges"):
            assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 0


async def test_an_idempotency_key_names_the_about_and_key_too(service) -> None:
    from mcp_memory.errors import Conflict

    p = principal()
    first = await service.write(p, "Greta lives in Oslo.", about=["Greta"], key="home city", idempotency_key="k1")
    again = await service.write(p, "Greta lives in Oslo.", about=["Greta"], key="home city", idempotency_key="k1")
    assert again.status == "duplicate" and again.memory.id == first.memory.id
    with pytest.raises(Conflict, match="different request"):
        await service.write(p, "Greta lives in Oslo.", about=["Greta"], key="hometown", idempotency_key="k1")


async def test_words_that_name_two_attributes_follow_what_the_subject_already_has(service) -> None:
    p = principal()
    office = await service.write(p, "Fenna works from the Zurich office.", about=["Fenna"], key="office",
                                 occurred_at=day("2024-01-01"))
    moved = await service.write(p, "Fenna is based in Lisbon now.", about=["Fenna"], key="based in",
                                occurred_at=day("2025-01-01"))
    assert moved.memory.key == "office" and moved.memory.replaced == [office.memory.id]
    city = await service.write(p, "Tomasz is based in Oslo.", about=["Tomasz"], key="based in")
    assert city.memory.key == "home city"  # no office known for him: the first meaning
    hits = (await service.search(p, "Where is Fenna based these days?")).hits
    assert hits[0].id == moved.memory.id and hits[1].id == office.memory.id
    # "home" is a home city or a home address: a city on record, a newer one keyed "home" replaces it
    porto = await service.write(p, "Oona Lindqvist lives over in Porto.", about=["Oona Lindqvist"],
                                key="current city", occurred_at=day("2024-01-01"))
    tallinn = await service.write(p, "Oona Lindqvist just moved to Tallinn!", about=["Oona Lindqvist"], key="home",
                                  occurred_at=day("2025-01-01"))
    assert tallinn.memory.key == "home city" and tallinn.memory.replaced == [porto.memory.id]
    hits = (await service.search(p, "Where does Oona Lindqvist live?")).hits
    assert [h.id for h in hits[:2]] == [tallinn.memory.id, porto.memory.id]


async def test_a_thing_named_in_lower_case_and_other_word_orders_is_one_entity(service) -> None:
    p = principal()
    v1 = await service.write(p, "The coupons pipeline persists to Postgres.", about=["coupons-pipeline"],
                             key="database", occurred_at=day("2024-01-01"))
    v2 = await service.write(p, "The coupons pipeline moved to DynamoDB.", about=["the coupons pipeline"],
                             key="datastore", occurred_at=day("2025-01-01"))
    assert v2.memory.replaced == [v1.memory.id]
    await service.write(p, "Argon team is in Zurich.", about=["the Argon team"], key="office")
    moved = await service.write(p, "Team Argon moved to Basel.", about=["team Argon"], key="office")
    assert moved.memory.replaced
    hits = (await service.search(p, "Which datastore does the coupons pipeline use now?")).hits
    assert [h.id for h in hits[:2]] == [v2.memory.id, v1.memory.id]


async def test_rules_read_a_key_off_the_text_only_when_asked_and_replace_only_when_told(database, settings) -> None:
    from mcp_memory.service import MemoryService

    p = principal()
    for mode in ("off", "facts", "replace"):
        service = await MemoryService.open(database, settings.model_copy(update={"graph_rules_keys": mode}))
        who = principal(f"u-{mode}")
        old = await service.write(who, "Greta Ibarra drives a Hyundai Ioniq.", occurred_at=day("2023-11-30"))
        new = await service.write(who, "Greta Ibarra is leasing a Subaru Outback now.", occurred_at=day("2025-10-07"))
        await service.write(who, "Greta Ibarra is reading a thriller.", occurred_at=day("2025-12-01"))
        assert (new.memory.key == "car") is (mode != "off")
        assert (new.memory.replaced == [old.memory.id]) is (mode == "replace")
        hits = (await service.search(who, "What does Greta Ibarra drive these days?", explain=True)).hits
        if mode != "off":
            assert [h.id for h in hits[:2]] == [new.memory.id, old.memory.id] and hits[0].explain["fact"] == 1
    # Two attributes in one text, or none: no key.
    service = await MemoryService.open(database, settings.model_copy(update={"graph_rules_keys": "facts"}))
    both = await service.write(p, "Tomasz drives to the office in his new car.")
    assert both.memory.key is None


async def test_a_conversation_turn_is_about_its_speaker_and_an_agent_turn_about_no_user(service) -> None:
    p = principal()
    turn = await service.write(p, "Caroline: I went to a support group with Melanie.", kind="episode")
    got = (await service.get(p, [turn.memory.id])).memories[0]
    assert got.about == ["Caroline"] and got.mentions == ["Melanie"]
    mine = await service.write(p, "User: I moved to Lisbon.", kind="episode")
    assert (await service.get(p, [mine.memory.id])).memories[0].about == ["the user"]
    agent = await service.write(p, "Assistant: I will remember that Greta moved.", kind="episode")
    assert (await service.get(p, [agent.memory.id])).memories[0].about is None
    note = await service.write(p, "Caroline: a note about the quarterly plan.")  # not a turn: no speaker
    assert (await service.get(p, [note.memory.id])).memories[0].about is None


async def test_a_key_in_unknown_words_takes_the_attribute_its_text_restates_and_no_other(service) -> None:
    p = principal()
    old = await service.write(p, "The coupons pipeline persists to Postgres.", about=["coupons pipeline"],
                              key="database", occurred_at=day("2024-01-01"))
    await service.write(p, "The coupons pipeline is owned by Oskar Lund.", about=["coupons pipeline"], key="owner",
                        occurred_at=day("2024-02-01"))
    new = await service.write(p, "The coupons pipeline persists to DynamoDB now.", about=["coupons pipeline"],
                              key="writes its data to", occurred_at=day("2025-01-01"))
    assert new.memory.key == "database" and new.memory.replaced == [old.memory.id]
    other = await service.write(p, "The coupons pipeline has a green badge in the dashboard.",
                                about=["coupons pipeline"], key="badge colour")
    assert other.memory.key == "badg colour" and other.memory.replaced is None


async def test_a_many_valued_value_said_to_have_ended_is_replaced_and_the_others_stay(service) -> None:
    p = principal()
    peanuts = await service.write(p, "Greta is allergic to peanuts.", about=["Greta"], key="allergies",
                                  occurred_at=day("2023-01-01"))
    shellfish = await service.write(p, "Greta is allergic to shellfish.", about=["Greta"], key="allergy",
                                    occurred_at=day("2023-06-01"))
    more = await service.write(p, "Greta is allergic to penicillin as well.", about=["Greta"], key="allergies",
                               occurred_at=day("2024-01-01"))
    assert more.memory.replaced is None  # values accumulate
    over = await service.write(p, "Greta is no longer allergic to peanuts.", about=["Greta"], key="allergies",
                               occurred_at=day("2025-01-01"))
    assert over.memory.replaced == [peanuts.memory.id]
    assert over.related[0].id == peanuts.memory.id and over.related[0].same_key
    got = {m.id: m.superseded_by for m in (await service.get(p, [peanuts.memory.id, shellfish.memory.id,
                                                                 more.memory.id])).memories}
    assert got == {peanuts.memory.id: over.memory.id, shellfish.memory.id: None, more.memory.id: None}
    history = await service.history(p, peanuts.memory.id)
    assert any("said to have ended (allergies)" in (e.reason or "") for e in history.entries)
    # The profile: the ended value held until it was said to have ended (graph/validity.py).
    profile = await service.entities.profile(p, "Greta")
    allergies = next(a for a in profile.attributes if a.attribute == "allergies")
    assert {v.memory for v in allergies.current} == {over.memory.id, shellfish.memory.id, more.memory.id}
    assert [(v.memory, v.valid_until) for v in allergies.earlier] == [(peanuts.memory.id, day("2025-01-01"))]
    # Filed under another key, it ends nothing; its undo ends it again (repository/key_edits.py).
    fixed = await service.entities.fix_key(p, over.memory.id, "diet")
    assert (await service.get_one(p, peanuts.memory.id)).superseded_by is None
    await service.entities.undo(p, fixed.id)
    assert (await service.get_one(p, peanuts.memory.id)).superseded_by == over.memory.id
    # Its date moved before the allergy was stated: it ended nothing (as on a write), and holds again.
    await service.update(p, over.memory.id, occurred_at=day("2022-01-01"))
    assert (await service.get_one(p, peanuts.memory.id)).superseded_by is None
    profile = await service.entities.profile(p, "Greta")
    allergies = next(a for a in profile.attributes if a.attribute == "allergies")
    assert peanuts.memory.id in {v.memory for v in allergies.current} and not allergies.earlier


async def test_a_newer_value_filed_under_the_writers_own_words_goes_first_where_it_names_the_old_one(service) -> None:
    """A writer's words for an attribute that the lexicon does not know, on a text too unlike the
    current value's to be adopted when written, are still a newer value of it when the text names
    that value beside a new one: a question about now gets it first, the old value after it with
    the date it ended."""
    p = principal()
    teodor = await service.write(p, "Teodor Kral owns the geo pipeline.", about=["geo pipeline"], key="owner",
                                 occurred_at=day("2024-05-25"))
    handed = await service.write(p, "Geo pipeline ownership handed from Teodor Kral to Yaw Boateng.",
                                 about=["geo pipeline"], key="go-to person", occurred_at=day("2024-08-17"))
    assert handed.memory.key == "go-to person" and not handed.memory.replaced  # not adopted
    await service.write(p, "Prod for the geo pipeline sits in eu-central-1.", about=["geo pipeline"], key="region",
                        occurred_at=day("2025-02-01"))
    hits = (await service.search(p, "Who owns the geo pipeline now?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [handed.memory.id, teodor.memory.id]
    assert hits[0].valid_until is None and hits[1].valid_until == day("2024-08-17")
    assert (hits[0].explain or {}).get("fact") == 1.0
    # Own words that name no value of it prove nothing: the text's order, as before.
    await service.write(p, "Teodor Kral owns the maps pipeline.", about=["maps pipeline"], key="owner",
                        occurred_at=day("2024-05-25"))
    await service.write(p, "Yaw Boateng took the maps pipeline.", about=["maps pipeline"], key="go-to person",
                        occurred_at=day("2024-08-17"))
    hits = (await service.search(p, "Who owns the maps pipeline now?", explain=True)).hits
    assert all("fact" not in (h.explain or {}) for h in hits)


async def test_a_question_naming_no_attribute_asks_the_one_its_question_word_asks_for(service) -> None:
    """"Where does team Skua chat?" names neither the channel nor its words, but "where" asks for a
    place, and of the team's attributes only its channel is one: its current value first."""
    p = principal()
    old = await service.write(p, "Questions for team Skua -> #oncall.", about=["team Skua"], key="channel",
                              occurred_at=day("2024-03-09"))
    new = await service.write(p, "Team Skua moved chat from #oncall to #kestrel-ops.", about=["team Skua"],
                              key="Slack channel", occurred_at=day("2024-10-12"))
    await service.write(p, "Team Skua standup @ 9:30.", about=["team Skua"], key="standup time",
                        occurred_at=day("2025-06-01"))
    hits = (await service.search(p, "Where does team Skua chat at the moment?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [new.memory.id, old.memory.id]
    assert (hits[0].explain or {}).get("fact") == 1.0
    # About the past, a question word alone says too little: the text's order.
    hits = (await service.search(p, "Where did team Skua chat before?", explain=True)).hits
    assert all("fact" not in (h.explain or {}) for h in hits)


async def test_a_key_of_the_lexicon_takes_in_the_value_it_restates_under_the_writers_own_words(service) -> None:
    p = principal()
    old = await service.write(p, "The coupons pipeline persists to Postgres.", about=["coupons pipeline"],
                              key="writes its data to", occurred_at=day("2024-01-01"))
    owner = await service.write(p, "The coupons pipeline is owned by Oskar Lund.", about=["coupons pipeline"],
                                key="go-to person", occurred_at=day("2024-02-01"))
    assert old.memory.key == "write data to"
    new = await service.write(p, "The coupons pipeline persists to DynamoDB now.", about=["coupons pipeline"],
                              key="database", occurred_at=day("2025-01-01"))
    assert new.memory.key == "database" and new.memory.replaced == [old.memory.id]
    # The older value is filed under the attribute too, in its own words still: one history.
    got = {m.id: m.key for m in (await service.get(p, [old.memory.id, owner.memory.id])).memories}
    assert got == {old.memory.id: "database", owner.memory.id: "go-to person"}  # the owner not restated
    [profile] = [a for a in (await service.entities.profile(p, "coupons pipeline")).attributes
                 if a.attribute == "database"]
    assert [v.memory for v in profile.current + profile.earlier] == [new.memory.id, old.memory.id]
    # Two attributes of the lexicon are never taken for one, however close the texts.
    await service.write(p, "Greta works at Acme as a designer.", about=["Greta"], key="employer",
                        occurred_at=day("2024-01-01"))
    title = await service.write(p, "Greta is a senior designer at Acme now.", about=["Greta"], key="job title",
                                occurred_at=day("2025-01-01"))
    assert title.memory.key == "job title" and title.memory.replaced is None


async def test_own_words_for_one_attribute_twice_are_one_attribute_when_the_text_restates(service) -> None:
    p = principal()
    old = await service.write(p, "Team Wren's daily huddle is at 9:30.", about=["team Wren"], key="catch-up time",
                              occurred_at=day("2024-01-01"))
    new = await service.write(p, "Team Wren's daily huddle moved to 10:15.", about=["Wren"], key="catch-up slot",
                              occurred_at=day("2025-01-01"))
    assert new.memory.replaced == [old.memory.id] and new.memory.key == old.memory.key


async def test_words_a_writer_used_of_a_subject_for_an_attribute_mean_it_in_whatever_order_values_come(
        service, database, settings) -> None:
    """An import or a backfill brings values out of order: the earliest, keyed in the words the
    writer used when a later value was filed under the attribute, is that attribute's too."""
    p = principal()
    old = await service.write(p, "The coupons pipeline persists to Postgres.", about=["coupons pipeline"],
                              key="database", occurred_at=day("2024-06-01"))
    new = await service.write(p, "The coupons pipeline persists to DynamoDB now.", about=["coupons pipeline"],
                              key="writes its data to", occurred_at=day("2025-01-01"))
    assert new.memory.key == "database" and new.memory.replaced == [old.memory.id]
    first = await service.write(p, "Back in 2023 the coupons pipeline kept everything in a MySQL box under a desk.",
                                about=["coupons pipeline"],
                                key="writes its data to", occurred_at=day("2023-01-01"))
    assert first.memory.key == "database" and not first.memory.replaced  # dated before the live value
    [values] = [a for a in (await service.entities.profile(p, "coupons pipeline")).attributes
                if a.attribute == "database"]
    assert [v.memory for v in values.current] == [new.memory.id]
    assert [v.memory for v in values.earlier] == [old.memory.id, first.memory.id]
    hits = (await service.search(p, "Which database does the coupons pipeline use now?")).hits
    assert [h.id for h in hits[:3]] == [new.memory.id, old.memory.id, first.memory.id]
    # With no embedder the stored words still say it: nothing to compare, only the facts to read.
    from mcp_memory.service import MemoryService

    plain = await MemoryService.open(database, settings.model_copy(update={"embedding_provider": "none"}))
    assert plain.vectors.embedder is None
    later = await plain.write(p, "The coupons pipeline keeps its data in Spanner since March.",
                              about=["coupons pipeline"], key="writes its data to", occurred_at=day("2025-03-01"))
    assert later.memory.key == "database" and later.memory.replaced == [new.memory.id]
    # Words a writer used for two attributes of the subject mean neither.
    await service.write(p, "Team Wren's daily huddle is at 9:30.", about=["team Wren"], key="standup time",
                        occurred_at=day("2024-01-01"))
    await service.write(p, "Team Wren chats in #wren.", about=["team Wren"], key="channel",
                        occurred_at=day("2024-01-01"))
    async with database.admin.acquire() as conn:  # as if adopted there, each under the same words
        await conn.execute("UPDATE memory_facts SET key_words = 'where we meet' WHERE user_id = $1 "
                           "AND attribute IN ('standup time', 'channel')", p.user_id)
    both = await service.write(p, "Team Wren bought a plant.", about=["team Wren"], key="where we meet")
    assert both.memory.key not in ("standup time", "channel") and not both.memory.replaced
    # A session that cannot read those facts (another project's) follows no words filed there.
    elsewhere = principal(project="proj-y")
    apart = await service.write(elsewhere, "The coupons pipeline moved to CockroachDB.", about=["coupons pipeline"],
                                key="writes its data to", occurred_at=day("2025-06-01"))
    assert apart.memory.key != "database" and not apart.memory.replaced
    assert {h.id for h in (await service.search(elsewhere, "coupons pipeline")).hits} == {apart.memory.id}
    assert (await service.search(p, "Which database does the coupons pipeline use now?")).hits[0].id == later.memory.id


async def test_own_words_taken_in_by_an_attribute_take_in_the_facts_already_keyed_in_them(service) -> None:
    """Values come out of order: the newest, keyed in the writer's own words and unlike the
    attribute's other value, is filed under words of its own; an older one keyed in the same words
    restates that value and is taken in by its attribute, and the newest goes with it."""
    p = principal()
    polo = await service.write(p, "Greta Ibarra gave up curling and took up water polo.", about=["Greta Ibarra"],
                               key="exercise", occurred_at=day("2024-09-01"))
    padel = await service.write(p, "Greta Ibarra started padel in the spring.", about=["Greta Ibarra"],
                                key="how they stay active", occurred_at=day("2025-04-01"))
    assert padel.memory.key != polo.memory.key  # not taken for that value when written
    curling = await service.write(p, "Greta Ibarra gave up trail running and took up curling.",
                                  about=["Greta Ibarra"], key="how they stay active", occurred_at=day("2024-02-01"))
    assert curling.memory.key == polo.memory.key
    (filed,) = (await service.get(p, [padel.memory.id])).memories
    assert filed.key == polo.memory.key
    [values] = [a for a in (await service.entities.profile(p, "Greta Ibarra")).attributes if a.attribute == "sport"]
    assert [v.memory for v in values.current] == [padel.memory.id]
    assert [v.memory for v in values.earlier] == [polo.memory.id, curling.memory.id]
    hits = (await service.search(p, "What does Greta Ibarra do for exercise these days?")).hits
    assert [h.id for h in hits[:3]] == [padel.memory.id, polo.memory.id, curling.memory.id]


async def test_a_name_with_or_without_its_classifier_is_one_thing_unless_two_share_it(service) -> None:
    p = principal()
    first = await service.write(p, "Dotterel's standup is at 9:00.", about=["Dotterel"], key="standup time",
                                occurred_at=day("2024-01-01"))
    later = await service.write(p, "The Dotterel team moved standup to 9:45.", about=["the Dotterel team"],
                                key="standup time", occurred_at=day("2025-01-01"))
    assert later.memory.replaced == [first.memory.id]
    await service.write(p, "Team Heron meets on Mondays.", about=["team Heron"])
    await service.write(p, "Project Heron ships in May.", about=["project Heron"])
    before = len(await entities(service, p))
    await service.write(p, "Heron is on the second floor.", about=["Heron"])
    assert ("Heron", "heron") in await entities(service, p) and len(await entities(service, p)) == before + 1


async def test_the_profile_finds_an_entity_by_any_name_a_write_resolves_it_by(service) -> None:
    p = principal()
    await service.write(p, "Odalys Pellegrini moved to Berlin.", about=["Odalys Pellegrini"], key="home city")
    await service.write(p, "The Dotterel team stands up at 9.", about=["team Dotterel"], key="standup time")
    for ref, name in (("Odalys", "Odalys Pellegrini"), ("odalys pellegrini", "Odalys Pellegrini"),
                      ("Dotterel", "team Dotterel"), ("the Dotterel team", "team Dotterel")):
        assert (await service.entities.profile(p, ref)).entity.name == name, ref
    await service.write(p, "Odalys Ferreira joined the book club.")
    with pytest.raises(NotFound):  # two Odalys now: a lone first name is neither
        await service.entities.profile(p, "Odalys")


async def test_every_retention_sweep_checks_the_graph_and_says_what_is_wrong(service, database, settings,
                                                                             caplog) -> None:
    from mcp_memory.retention import sweep

    p = principal()
    fact = await service.write(p, "Greta lives in Oslo.", about=["Greta"], key="home city")
    await sweep(database.admin, settings)
    assert "graph consistency" not in caplog.text
    async with database.admin.acquire() as conn:
        await conn.execute("DELETE FROM memory_entities WHERE memory_id = $1", fact.memory.id)
    await sweep(database.admin, settings)
    assert "graph consistency: 1 facts without their mention" in caplog.text


async def test_a_newer_value_under_a_key_the_lexicon_does_not_know_leaves_the_order_to_the_text(service) -> None:
    p = principal()
    await service.write(p, "Quotes API keeps its state in Postgres 16.", about=["quotes API"], key="database",
                        occurred_at=day("2024-01-01"))
    newest = await service.write(p, "Quotes API state moved to MongoDB.", about=["quotes API"],
                                 key="storage engine", occurred_at=day("2025-01-01"))
    assert newest.memory.key == "storag engin"  # not restated closely enough to take "database"
    explained = (await service.search(p, "Which database is the quotes API on now?", explain=True)).hits
    assert all("fact" not in (h.explain or {}) for h in explained)


async def test_own_words_that_plainly_name_an_attribute_the_subject_holds_are_that_attribute(service) -> None:
    """"oncall area" is no phrase of the lexicon, but plainly the on-call rotation: where the subject
    holds one, a newer value keyed so is its newer value, however unlike the texts; where the
    subject holds none, the words stay the writer's own (the graph has nothing to file them with)."""
    p = principal()
    old = await service.write(p, "FYI: Eun-ji Abara added to checkout on-call.", about=["Eun-ji Abara"],
                              key="on-call", occurred_at=day("2024-01-01"))
    new = await service.write(p, "Eun-ji Abara swapped onto the streaming rotation.", about=["Eun-ji Abara"],
                              key="oncall area", occurred_at=day("2025-01-01"))
    assert new.memory.key == "on-call"
    hits = (await service.search(p, "What is Eun-ji Abara on call for?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [new.memory.id, old.memory.id]
    alone = await service.write(p, "Priya Mwangi covers the storage pager.", about=["Priya Mwangi"], key="oncall area")
    assert alone.memory.key == "oncal area"


async def test_words_loosely_close_to_one_attribute_alone_name_it(service) -> None:
    """"npm client" is only .53 close to the package manager's phrases, but no other attribute's come
    near (.26): it names the package manager, and the newer value keyed so replaces the one keyed in
    the lexicon's words (workbench, writer passing keys: newest first .942 -> .983)."""
    p = principal()
    old = await service.write(p, "The user's projects use deno.", about=["the user"], key="package manager",
                              occurred_at=day("2024-01-01"))
    new = await service.write(p, "We install dependencies with npm.", about=["the user"], key="npm client",
                              occurred_at=day("2025-01-01"))
    assert new.memory.key == "package manager"
    hits = (await service.search(p, "Which package manager do we use now?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [new.memory.id, old.memory.id]


async def test_a_newer_fact_whose_own_words_plainly_name_another_attribute_the_subject_holds_is_no_doubt(
        service) -> None:
    """"mobile device" is no word of the lexicon, but plainly the phone: where the subject holds a
    phone, a newer fact keyed so is another value of it, not a newer car, and the car's values
    keep their order. Where the subject holds no phone, the graph cannot tell, and the text decides."""
    p = principal()

    async def car_and_phone(name: str, with_phone: bool) -> tuple[str, str]:
        await service.write(p, f"{name} gets around in a Citroen Berlingo.", about=[name], key="vehicle",
                            occurred_at=day("2023-01-01"))
        newer = await service.write(p, f"{name} traded in the Citroen Berlingo for a Peugeot 208.", about=[name],
                                    key="drives", occurred_at=day("2024-01-01"))
        if with_phone:
            await service.write(p, f"{name} uses an iPhone 15.", about=[name], key="phone",
                                occurred_at=day("2024-03-01"))
        doubt = await service.write(p, f"{name} switched to a Sony Xperia 10.", about=[name], key="mobile device",
                                    occurred_at=day("2025-01-01"))
        assert doubt.memory.key == "mobil devic"  # the writer's own words, not the lexicon's
        return str(newer.memory.id), f"What car does {name} have now?"

    peugeot, question = await car_and_phone("Wilhelmina Ibarra", with_phone=True)
    hits = (await service.search(p, question, explain=True)).hits
    assert str(hits[0].id) == peugeot and (hits[0].explain or {}).get("fact") == 1.0
    _, question = await car_and_phone("Soren Moreau", with_phone=False)
    assert all("fact" not in (h.explain or {}) for h in (await service.search(p, question, explain=True)).hits)


def test_a_key_is_read_by_a_cue_only_where_the_cue_holds_its_head_word() -> None:
    assert key_of("carries the pager for", ENGLISH).attribute == "on-call"
    assert key_of("the company they work for", ENGLISH).attribute == "employer"
    assert key_of("works on time", ENGLISH).attribute != "project"  # a time zone, whose head is "time"


async def test_a_value_dated_ahead_is_upcoming_and_what_holds_until_it_begins_is_current(service) -> None:
    """"Priya Raman is moving to Berlin in March." dated then: until March she lives in Leeds. The
    profile called Berlin current and Leeds earlier, and a question about now got Berlin first."""
    p = principal()
    now = datetime.now(UTC)
    leeds = await service.write(p, "Priya Raman lives in Leeds.", about=["Priya Raman"], key="home city",
                                occurred_at=now - timedelta(days=300))
    berlin = await service.write(p, "Priya Raman is moving to Berlin in March.", about=["Priya Raman"],
                                 key="home city", occurred_at=now + timedelta(days=90))
    (home,) = (await service.entities.profile(p, "Priya Raman")).attributes
    assert [v.memory for v in home.current] == [leeds.memory.id] and home.current[0].valid_until is not None
    assert [v.memory for v in home.upcoming] == [berlin.memory.id] and home.earlier == []
    hits = (await service.search(p, "Where does Priya live now?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [leeds.memory.id, berlin.memory.id]
    assert [h.explain["fact"] for h in hits[:2]] == [1, 2]
    later = MemoryFilter(as_of=now + timedelta(days=120))
    hits = (await service.search(p, "Where does Priya live now?", later, explain=True)).hits
    assert [h.id for h in hits[:2]] == [berlin.memory.id, leeds.memory.id]
    # Any search: the value it will replace is not yet ranked below it.
    assert (await service.search(p, "Leeds")).hits[0].id == leeds.memory.id


async def test_a_keyed_write_with_no_date_is_dated_by_the_one_date_its_text_names(service) -> None:
    """An agent writes "Priya Raman moved to Berlin in March 2026." keyed and passes no
    `occurred_at`, after "lives in Munich" dated September 2026: Berlin came first, so Munich stays
    current (written now and read as now, Berlin replaced Munich). A date ahead is upcoming; a text
    naming no date, several dates or a span's end only, a write with no key, and a writer's own
    `occurred_at` keep the time they had."""
    p = principal()
    now = datetime.now(UTC)
    munich = await service.write(p, "Priya Raman lives in Munich.", about=["Priya Raman"], key="home city",
                                 occurred_at=now - timedelta(days=90))
    berlin = await service.write(p, "Priya Raman moved to Berlin in March 2026.", about=["Priya Raman"],
                                 key="home city")
    assert berlin.memory.occurred_at == day("2026-03-01") and not berlin.memory.replaced
    (home,) = (await service.entities.profile(p, "Priya Raman")).attributes
    assert [v.memory for v in home.current] == [munich.memory.id]
    assert [v.memory for v in home.earlier] == [berlin.memory.id]
    hits = (await service.search(p, "Where does Priya Raman live now?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [munich.memory.id, berlin.memory.id]
    ahead = now.year + 2
    leeds = await service.write(p, f"Priya Raman is moving to Leeds on 3 May {ahead}.", about=["Priya Raman"],
                                key="home city")
    assert leeds.memory.occurred_at == day(f"{ahead}-05-03")
    (home,) = (await service.entities.profile(p, "Priya Raman")).attributes
    assert [v.memory for v in home.upcoming] == [leeds.memory.id]
    assert [v.memory for v in home.current] == [munich.memory.id]
    # The date is the value of a time (a standup's) or of a key in the writer's own words (a launch
    # moved from March to February, dated by its text, would have stayed behind the March one).
    for text, extra in (("Priya Raman works at Initech since May 2019 and left Hooli in 2018.", {"key": "employer"}),
                        ("Priya Raman has been at Initech before 2020.", {"key": "employer"}),
                        ("Priya Raman visited Porto in 2021.", {}),
                        ("Priya Raman's team is Atlas since 2022.", {"key": "team", "occurred_at": now}),
                        (f"Priya Raman's launch is on 12 March {ahead}.", {"key": "launch date"}),
                        (f"Priya Raman's standup moved to 9:30 on 3 March {ahead}.", {"key": "standup time"})):
        written = (await service.write(p, text, about=["Priya Raman"], **extra)).memory
        assert abs(written.occurred_at - now) < timedelta(minutes=5), text
    # Many at once, the same.
    [item] = (await service.write_many(p, [WriteItem(content="Greta Ibarra joined Acme in 2021.",
                                                     about=["Greta Ibarra"], key="employer")])).memories
    assert (await service.get(p, [item.id])).memories[0].occurred_at == day("2021-01-01")
    # Said from now: "two weeks ago" is before a value written a week ago, which stays current.
    week = await service.write(p, "Greta Ibarra lives in Oslo.", about=["Greta Ibarra"], key="home city",
                               occurred_at=now - timedelta(days=7))
    moved = await service.write(p, "Greta Ibarra moved to Bergen two weeks ago.", about=["Greta Ibarra"],
                                key="home city")
    today = datetime(now.year, now.month, now.day, tzinfo=UTC)
    assert moved.memory.occurred_at == today - timedelta(days=14) and not moved.memory.replaced
    home = next(a for a in (await service.entities.profile(p, "Greta Ibarra")).attributes if a.attribute == "home city")
    assert [v.memory for v in home.current] == [week.memory.id]


async def test_a_value_two_subjects_share_is_replaced_only_once_neither_holds_it(service) -> None:
    """"Ana and Rui moved to Porto." keyed home city about both: when Rui moves on alone it is still
    Ana's home, so it is replaced by nothing (it was marked replaced by Rui's Lisbon, and a search
    for "Porto" put Lisbon above it); when Ana moves too, it is. A date moved among Rui's values
    (fact_order.py) leaves it to Ana as well."""
    p = principal()
    braga = await service.write(p, "Ana and Rui live in Braga.", about=["Ana", "Rui"], key="home city",
                                occurred_at=day("2024-01-10"))
    porto = await service.write(p, "Ana and Rui moved to Porto.", about=["Ana", "Rui"], key="home city",
                                occurred_at=day("2024-06-10"))
    lisbon = await service.write(p, "Rui moved to Lisbon on his own.", about=["Rui"], key="home city",
                                 occurred_at=day("2025-02-10"))
    assert porto.memory.replaced == [braga.memory.id] and lisbon.memory.replaced is None
    got = {m.id: m.superseded_by for m in (await service.get(p, [braga.memory.id, porto.memory.id])).memories}
    assert got == {braga.memory.id: porto.memory.id, porto.memory.id: None}
    for who, current in (("Ana", porto), ("Rui", lisbon)):
        profile = await service.entities.profile(p, who)
        assert next(a for a in profile.attributes if a.attribute == "home city").current[0].memory == current.memory.id
    assert (await service.search(p, "Porto")).hits[0].id == porto.memory.id
    hits = (await service.search(p, "Where does Rui live now?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [lisbon.memory.id, porto.memory.id] and hits[1].valid_until is not None
    await service.update(p, lisbon.memory.id, occurred_at=day("2025-03-01"))
    (kept,) = (await service.get(p, [porto.memory.id])).memories
    assert kept.superseded_by is None
    faro = await service.write(p, "Ana moved to Faro.", about=["Ana"], key="home city", occurred_at=day("2025-05-01"))
    assert faro.memory.replaced == [porto.memory.id]


async def test_a_question_that_chains_two_things_reaches_the_entity_one_hop_away(service) -> None:
    """"Where does Kwame's manager live?": Kwame's current manager is a memory naming Diego Yilmaz,
    and Diego's home city is what is asked: it comes first, then the manager it went through."""
    p = principal()
    old = await service.write(p, "Kwame Larsen reports to Hana Dubois.", about=["Kwame Larsen"], key="manager",
                              occurred_at=day("2024-01-10"))
    new = await service.write(p, "Diego Yilmaz took over as Kwame's manager.", about=["Kwame"], key="reports to",
                              occurred_at=day("2025-06-01"))
    porto = await service.write(p, "Diego Yilmaz lives in Porto.", about=["Diego Yilmaz"], key="home city")
    await service.write(p, "Hana Dubois lives in Lyon.", about=["Hana Dubois"], key="home city")
    await service.write(p, "Kwame Larsen lives in Oslo.", about=["Kwame Larsen"], key="home city")
    await service.write(p, "Kwame Larsen likes long walks by the fjord.")
    hits = (await service.search(p, "Where does Kwame's manager live these days?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [porto.memory.id, new.memory.id]
    assert hits[0].explain["fact"] == 1
    assert old.memory.id in [h.id for h in hits]
    # No possessive: Kwame's own home city, as before.
    plain = (await service.search(p, "Where does Kwame live these days?")).hits
    assert plain[0].snippet == "Kwame Larsen lives in Oslo."


async def test_a_question_about_the_users_own_manager_hops_to_them(service) -> None:
    """"Where does my manager live now?" chains the user's manager and where they live, as
    "Kwame's manager" does: the user's word for their own ("my", "our", "the user's") owns what
    follows it. Read only after a name's "'s", it reached nobody, and the manager fact came first."""
    p = principal()
    boss = await service.write(p, "My manager is Inês Carvalho.", about=["me"], key="manager",
                               occurred_at=day("2025-03-02"))
    braga = await service.write(p, "Inês Carvalho lives in Braga.", about=["Inês Carvalho"], key="home city",
                                occurred_at=day("2025-03-05"))
    coimbra = await service.write(p, "Inês moved to Coimbra in September.", about=["Inês"], key="lives in",
                                  occurred_at=day("2025-09-05"))
    await service.write(p, "Tomás Reis lives in Faro.", about=["Tomás Reis"], key="home city")
    rui = await service.write(p, "Inês Carvalho's partner is Rui.", about=["Inês Carvalho"], key="partner")
    for question in ("Where does my manager live now?", "Where does the user's boss live?"):
        hits = (await service.search(p, question, explain=True)).hits
        assert [h.id for h in hits[:3]] == [coimbra.memory.id, braga.memory.id, boss.memory.id], question
        assert hits[1].valid_until is not None
    hits = (await service.search(p, "Who is my manager's partner?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [rui.memory.id, boss.memory.id]


async def test_a_question_about_a_person_in_the_users_life_hops_through_the_users_key_for_them(service) -> None:
    """"Where does my wife work now?" where the user's wife is keyed ("My wife is Sara Lopes.", about
    me, key "wife") reaches Sara's employer, as "my manager" reaches the manager: the question asks
    of the wife, so the user's facts were never read, and her old employer's note came first. Those
    facts serve the hop alone: with no fact saying who she is, the user's own employer is no answer."""
    p = principal()
    mine = await service.write(p, "I work at Brightwater Analytics.", about=["me"], key="employer",
                               occurred_at=day("2025-02-01"))
    feedzai = await service.write(p, "My wife works at Feedzai.", occurred_at=day("2024-05-01"))
    hits = (await service.search(p, "Where does my wife work now?", explain=True)).hits
    assert hits[0].id == feedzai.memory.id and "fact" not in hits[0].explain
    assert mine.memory.id not in [h.id for h in hits if h.explain.get("fact")]
    wife = await service.write(p, "My wife is Sara Lopes.", about=["me"], key="wife", occurred_at=day("2024-03-01"))
    await service.write(p, "Sara Lopes works at Feedzai.", about=["Sara Lopes"], key="employer",
                        occurred_at=day("2024-05-01"))
    talkdesk = await service.write(p, "Sara Lopes started a new job at Talkdesk.", about=["Sara Lopes"],
                                   key="employer", occurred_at=day("2025-05-01"))
    hits = (await service.search(p, "Where does my wife work now?", explain=True)).hits
    assert hits[0].id == talkdesk.memory.id and hits[0].explain["fact"] == 1
    assert wife.memory.id in [h.id for h in hits[:3]] and mine.memory.id not in [h.id for h in hits[:3]]


async def test_a_name_keyed_of_its_subject_is_theirs(service, database) -> None:
    """"My wife's name is Sara." about "my wife" keyed "name": Sara is the wife, so "Where does
    Sara work now?" reaches the employer keyed of "my wife" (it found only the note naming Sara).
    The name's entity is merged into hers, recorded as a person's merge is, and a split undoes it.
    A name other memories hold too may be someone else's: it stays apart."""
    p = principal()
    wife = await service.write(p, "My wife's name is Sara.", about=["my wife"], key="name",
                               occurred_at=day("2024-03-01"))
    await service.write(p, "My wife works at Feedzai.", about=["my wife"], key="employer",
                        occurred_at=day("2024-05-01"))
    talkdesk = await service.write(p, "My wife started a new job at Talkdesk.", about=["my wife"], key="employer",
                                   occurred_at=day("2025-05-01"))
    from mcp_memory.repository.entity_edits import NAME_GIVEN
    from mcp_memory.repository.graph_checks import inconsistencies

    hits = (await service.search(p, "Where does Sara work now?", explain=True)).hits
    assert hits[0].id == talkdesk.memory.id and hits[0].explain["fact"] == 1
    async with service.repo.transaction(p) as conn:
        edit = await conn.fetchrow("SELECT kind, reason FROM entity_edits")
        sara = await conn.fetchval("SELECT id FROM entities WHERE canonical = 'sara'")
    assert tuple(edit) == ("merge", NAME_GIVEN)
    await service.entities.split(p, sara)
    hits = (await service.search(p, "Where does Sara work now?", explain=True)).hits
    assert hits[0].id == wife.memory.id and "fact" not in hits[0].explain
    # "Tom" of the office is named elsewhere: a name keyed of "my brother" leaves him be.
    tom = await service.write(p, "I had lunch with Tom from the office.", occurred_at=day("2024-01-01"))
    await service.write(p, "My brother's nickname is Tom.", about=["my brother"], key="nickname")
    await service.write(p, "My brother lives in Faro.", about=["my brother"], key="home city")
    hits = (await service.search(p, "Where does Tom live now?", explain=True)).hits
    assert "fact" not in hits[0].explain and tom.memory.id in [h.id for h in hits[:3]]
    async with database.admin.acquire() as conn:
        assert not any((await inconsistencies(conn)).values())


def test_a_hop_reads_only_the_first_possessives_of_a_question() -> None:
    """A hostile question of thousands of possessives costs no more than a few (hop.MAX_POSSESSIVES)."""
    from mcp_memory.retrieval.hop import MAX_POSSESSIVES, relation_asked

    facts = [{"attribute": "manager", "key_words": "manager"}]
    near = "Where does " + "Ana's cat's " * ((MAX_POSSESSIVES - 1) // 2) + "Kwame's manager live?"
    assert relation_asked(near, ENGLISH, facts) is not None
    far = "a's " * 5000 + "Kwame's manager"
    assert relation_asked(far, ENGLISH, facts) is None
    # The user's own, in each of the lexicon's words for it.
    led = [{"attribute": "team lead", "key_words": "team lead"}]
    for question in ("Where does our team lead live now?", "Where does the user's team lead live now?",
                     "Where does my team lead live now?"):
        assert relation_asked(question, ENGLISH, led) == ("team lead", "Where does  live now?"), question


async def test_a_device_is_a_laptop_or_a_phone_so_a_new_phone_leaves_the_laptop(service) -> None:
    """A model keyed "The user codes on a ThinkPad X1." `device`, which the lexicon filed as a
    phone: a later phone would have replaced the laptop. A word for two attributes names neither."""
    p = principal()
    laptop = await service.write(p, "The user codes on a ThinkPad X1.", about=["me"], key="device",
                                 occurred_at=day("2025-03-01"))
    phone = await service.write(p, "The user's phone is an iPhone 15.", about=["me"], key="phone",
                                occurred_at=day("2025-06-01"))
    assert not phone.memory.replaced
    assert key_of("device", ENGLISH).attribute not in {"phone", "phone number", "laptop"}
    (still,) = (await service.get(p, [laptop.memory.id])).memories
    assert still.superseded_by is None


BATCH = [  # names again and again, a lone first name before and after the full one, two Johns, keys
    ("Greta said the Oslo office is cold.", None, None), ("Greta Ibarra moved to Oslo last spring.", None, None),
    ("I had lunch with Greta and Bob.", None, None), ("Bob Marsh runs the Falcon team.", None, None),
    ("John Smith joined Falcon.", None, None), ("John Doe joined Heron.", None, None),
    ("John fixed the build.", None, None), ("Greta Ibarra lives in Bergen now.", ["Greta Ibarra"], "home city"),
    ("Bob said Greta is on call.", None, None), ("Greta Ibarra lives in Lisbon.", ["Greta Ibarra"], "home city"),
    ("Falcon ships on Fridays; Bob agrees.", None, None), ("Tell Greta about Heron.", None, None),
    ("Pia fixed the build.", None, None), ("Pia Novak joined Heron.", None, None), ("Pia fixed the tests.", None, None),
]


async def graph_rows(service, p) -> list[tuple]:
    async with service.repo.transaction(p) as conn:
        rows = await conn.fetch(
            """SELECT m.content, e.canonical, me.role, me.source, m.superseded_by IS NOT NULL AS replaced
               FROM memories m JOIN memory_entities me ON me.user_id = m.user_id AND me.memory_id = m.id
               JOIN entities e ON e.user_id = me.user_id AND e.id = me.entity_id ORDER BY 1, 2, 3""")
        live = await conn.fetch("SELECT canonical, merged_into IS NULL AS live FROM entities ORDER BY 1, 2")
    return [tuple(r) for r in rows] + [tuple(r) for r in live]


async def test_a_batch_records_the_graph_as_the_same_writes_one_by_one(service, database) -> None:
    """write_many inserts a batch's mentions together, before a merge or a keyed fact reads them: the
    entities, merges, mentions and replaced facts are those of the same memories written one at a time."""
    from mcp_memory.repository.graph_checks import inconsistencies

    one, many = principal("one"), principal("many")
    for text, about, key in BATCH:
        await service.write(one, text, kind="fact", about=about, key=key)
    await service.write_many(many, [WriteItem(content=text, kind="fact", about=about, key=key)
                                    for text, about, key in BATCH])
    assert await graph_rows(service, many) == await graph_rows(service, one)
    assert ("greta", False) in await graph_rows(service, many)  # the lone Greta merged into Greta Ibarra
    async with database.admin.acquire() as conn:
        assert not any((await inconsistencies(conn)).values())


@pytest.mark.parametrize("order", ["in order", "out of order"])
async def test_a_value_filed_by_the_lexicons_order_alone_joins_the_attribute_a_later_key_names(service,
                                                                                            order: str) -> None:
    """"based in" and "location" are a home city's words and an office's; with nothing else to go
    on a fact so keyed goes to the lexicon's first, a home city. A key that names the office alone
    says which the subject's was, whichever was written first: the values are one office's, and
    the newest is current. A home city in words of its own ("lives in") stays where it is, and so
    does a number keyed "phone" when a handset's model comes: values of another kind."""
    p = principal()
    based = ("Heard today: Fenna Kuznetsov is based in Toronto.", "based in", day("2024-01-01"))
    moved = ("1:1 notes: Fenna is remote from Zurich now.", "works from", day("2025-01-01"))
    writes = [based, moved] if order == "in order" else [moved, based]
    written = {w[1]: await service.write(p, w[0], about=["Fenna Kuznetsov"], key=w[1], occurred_at=w[2])
               for w in writes}
    old, new = written["based in"].memory.id, written["works from"].memory.id
    got = {m.id: m for m in (await service.get(p, [old, new])).memories}
    assert got[old].superseded_by == new and got[new].superseded_by is None
    hits = (await service.search(p, "Where is Fenna Kuznetsov based?", explain=True)).hits
    assert hits[0].id == new
    home = await service.write(p, "Greta Ibarra lives in Porto.", about=["Greta Ibarra"], key="lives in",
                               occurred_at=day("2024-01-01"))
    number = await service.write(p, "Call Greta Ibarra on her phone: 555 0134.", about=["Greta Ibarra"],
                                 key="phone", occurred_at=day("2024-01-01"))
    await service.write(p, "Greta Ibarra works from the Lisbon office now.", about=["Greta Ibarra"],
                        key="works from", occurred_at=day("2025-01-01"))
    await service.write(p, "Greta Ibarra's mobile phone is a Pixel 8.", about=["Greta Ibarra"],
                        key="mobile phone", occurred_at=day("2025-01-01"))
    kept = (await service.get(p, [home.memory.id, number.memory.id])).memories
    assert [(m.key, m.superseded_by) for m in kept] == [("home city", None), ("phone number", None)]
    # a handset its brand names, keyed "phone", is no number a later phone number replaces
    pixel = await service.write(p, "The user's phone is a Pixel 7.", about=["me"], key="phone",
                                occurred_at=day("2024-01-01"))
    await service.write(p, "The user's phone number is 555 0199.", about=["me"], key="phone number",
                        occurred_at=day("2025-01-01"))
    (kept_pixel,) = (await service.get(p, [pixel.memory.id])).memories
    assert (kept_pixel.key, kept_pixel.superseded_by) == ("phone", None)
    # and written after the number, what its text says outweighs what the subject holds
    number = await service.write(p, "Ines Alvarez's phone number is 555 0134.", about=["Ines Alvarez"],
                                 key="phone number", occurred_at=day("2024-01-01"))
    handset = await service.write(p, "Ines's phone is a Pixel 8.", about=["Ines Alvarez"], key="phone",
                                  occurred_at=day("2025-01-01"))
    (kept_number,) = (await service.get(p, [number.memory.id])).memories
    assert (handset.memory.key, kept_number.superseded_by) == ("phone", None)


async def test_a_word_the_stemmer_shares_with_another_attributes_cue_names_no_attribute(service) -> None:
    """"dating" is a partner's word and Snowball cuts it to "date": every key ending on "date" was
    the subject's partner, one at a time, so a release's date replaced a contract's renewal date.
    A word the stemmer cuts to another of another meaning is kept whole (`Lexicon.whole_words`)."""
    for words in ("release date", "renewal date", "launch date", "nightly build", "UI design", "commute train"):
        assert not in_lexicon(key_of(words, ENGLISH).attribute, ENGLISH), words
    assert {key_of(k, ENGLISH).attribute for k in ("dating", "who they are dating", "seeing")} == {"partner"}
    assert key_of("office building", ENGLISH).attribute == "office"
    assert key_of("training", ENGLISH).attribute == "sport"
    p = principal()
    release = await service.write(p, "Project Heron ships on 2026-03-02.", about=["Heron"], key="release date",
                                  occurred_at=day("2025-01-01"))
    renewal = await service.write(p, "Heron's support contract renews on 2026-06-30.", about=["Heron"],
                                  key="renewal date", occurred_at=day("2025-02-01"))
    got = (await service.get(p, [release.memory.id, renewal.memory.id])).memories
    assert [(m.key, m.superseded_by) for m in got] == [("releas date", None), ("renew date", None)]


async def written_apart(service, p, about: str, pairs: list[tuple[str, str, str, str]]) -> None:
    """Each pair (text, key, a later text, its key) written about `about`: the later replaces
    nothing, and the two are filed under two attributes."""
    for first, first_key, second, second_key in pairs:
        a = await service.write(p, first, about=[about], key=first_key, occurred_at=day("2024-01-01"))
        b = await service.write(p, second, about=[about], key=second_key, occurred_at=day("2024-02-01"))
        (kept,) = (await service.get(p, [a.memory.id])).memories
        assert kept.superseded_by is None and not b.memory.replaced, (first_key, second_key)
        assert a.memory.key != b.memory.key


async def written_over(service, p, about: str, pairs: list[tuple[str, str, str, str]]) -> None:
    """Each pair (text, key, a later text, its key) written about `about`: the later replaces the
    earlier."""
    for first, first_key, second, second_key in pairs:
        a = await service.write(p, first, about=[about], key=first_key, occurred_at=day("2024-01-01"))
        b = await service.write(p, second, about=[about], key=second_key, occurred_at=day("2024-02-01"))
        assert b.memory.replaced == [a.memory.id], (first_key, second_key)


async def test_two_things_qualifying_one_head_word_are_two_attributes(service) -> None:
    """The lexicon names "node version" and "python version" by their head word alone: one version,
    so Heron's Python replaced its Node. Where the subject holds a value under the same head
    qualified otherwise, and each text names its own qualifier and not the other's, the new key is
    an attribute of its own, and a question asks the one it names. Words alike for one attribute,
    whose texts do not name them, stay one attribute and replace."""
    p = principal()
    pairs = [("Heron runs on Node 20.", "node version", "Heron's ML worker uses Python 3.12.", "python version"),
             ("Heron keeps its secrets in Vault.", "secret store", "Heron's build artifacts go to S3.",
              "artifact store"),
             ("Heron support questions go to #heron-help.", "support channel", "Heron alerts post to #heron-alerts.",
              "alerts channel"),
             ("Heron's staging region is eu-west-1.", "staging region", "Heron's production region is us-east-1.",
              "production region"),
             ("Heron's tech lead is Ana Souza.", "tech lead", "Heron's product lead is Bo Chen.", "product lead")]
    await written_apart(service, p, "Heron", pairs)
    # a whole phrase of the lexicon is qualified by its own words: "home address" is no billing address
    await written_apart(service, p, "Greta Ibarra", [
        ("Greta's home address is 5 Elm Street.", "home address", "Greta's billing address is 1 Main Street.",
         "billing address"),
        ("Greta's phone number is 555 0134.", "phone number", "Greta's work number is 555 0199.", "work number")])
    newer = await service.write(p, "Heron's ML worker moved to Python 3.13.", about=["Heron"], key="python version",
                                occurred_at=day("2025-01-01"))
    assert newer.memory.key == "python version" and len(newer.memory.replaced) == 1
    hits = (await service.search(p, "Which Node version does Heron run?")).hits
    assert hits[0].snippet == "Heron runs on Node 20."
    hits = (await service.search(p, "Which Python version does Heron use now?")).hits
    assert hits[0].id == newer.memory.id
    hosted = await service.write(p, "Infra note - Osprey hosted in eu-north-1.", about=["Osprey"], key="hosting region",
                                 occurred_at=day("2024-01-01"))
    moved = await service.write(p, "Cut-over done: Osprey now in us-west-2.", about=["Osprey"],
                                key="deployment region", occurred_at=day("2025-01-01"))
    assert moved.memory.key == "region" and moved.memory.replaced == [hosted.memory.id]
    # "default" says which value is in use, as "main" or "usual" do, not which kind: one shell
    login = await service.write(p, "User ditched zsh; elvish is the login shell now.", about=["me"],
                                key="login shell", occurred_at=day("2024-01-01"))
    default = await service.write(p, "Changed the default shell to fish today.", about=["me"],
                                  key="default shell", occurred_at=day("2025-01-01"))
    assert default.memory.replaced == [login.memory.id]


async def test_a_key_of_the_head_alone_is_qualified_by_its_text(service) -> None:
    """"laptop" of "The user's work laptop is a ThinkPad X1." was replaced by a gaming laptop keyed
    "gaming laptop": the first key named no qualifier, its text did. A plain word between a
    determiner or an owner and the head in a stored fact's text qualifies its key of the head
    alone, one by one and in a batch; a text qualifying nothing (or only by a filler, a verb, a
    name or an owner) still takes the newer value of one laptop, and two keys of the head alone are
    one attribute whatever their texts say beside it."""
    assert qualifier_in("The user's work laptop is a ThinkPad X1.", "laptop", ENGLISH) == {"work"}
    for text in ("The user's laptop is a MacBook Air.", "The user's new laptop is a Framework 13.",
                 "Uses a ThinkPad laptop.", "Sold the old laptop.", "Switched laptops from Dell to Apple."):
        assert qualifier_in(text, "laptop", ENGLISH) == frozenset(), text
    p = principal()
    work, gaming = ("The user's work laptop is a ThinkPad X1.", "laptop"), (
        "The user games on an ASUS ROG laptop.", "gaming laptop")
    await written_apart(service, p, "me", [(*work, *gaming)])
    batch = await service.write_many(p, [
        WriteItem(content=work[0], about=["Dana Reyes"], key=work[1], occurred_at=day("2024-01-01")),
        WriteItem(content=gaming[0].replace("The user", "Dana"), about=["Dana Reyes"], key=gaming[1],
                  occurred_at=day("2024-02-01"))])
    got = (await service.get(p, [m.id for m in batch.memories])).memories
    assert [m.superseded_by for m in got] == [None, None] and got[0].key != got[1].key
    await written_over(service, p, "Bo Chen", [("Bo Chen's laptop is a MacBook Air.", "laptop",
                                                "Bo Chen's work laptop is now a ThinkPad.", "work laptop")])
    # where neither key names a qualifier, the word beside the head is the value: one rotation
    await written_over(service, p, "Bjorn Pereira", [("Bjorn carries the database pager.", "pager",
                                                      "Bjorn carries the storage pager now.", "pager")])


async def test_a_systems_attributes_in_the_words_an_agent_keys_them(service) -> None:
    """"persists to", "point of contact", "daily meeting", "chats in": an agent's words for a
    service's database, owner, standup and channel were attributes of their own, so a newer value
    keyed in the lexicon's words stood beside the older one as current. Each is the lexicon's now,
    and the newer replaces."""
    p = principal()
    for subject, pair in [
            ("Tickets service", ("Tickets service persists to SQLite.", "persists to",
                                 "Tickets service moved its data to ClickHouse.", "database")),
            ("Geo service", ("Ping Rowan Pike for anything geo service.", "point of contact",
                             "New maintainer of the geo service is Aurelio Conti.", "owner")),
            ("Team Drift", ("Calendar: team Drift check-in, 10:15.", "daily meeting",
                            "Team Drift now huddles at 11:00.", "standup time")),
            ("Team Skua", ("Questions for team Skua -> #oncall.", "chats in",
                           "Team Skua moved to #incidents-live.", "slack channel"))]:
        await written_over(service, p, subject, [pair])


async def test_a_key_naming_a_person_in_someones_life_or_an_earlier_value_is_none_of_the_subjects(
        service) -> None:
    """"wife's employer" about the user is the wife's employer: keyed `employer` of the user, "The
    user's wife works at Globex." replaced the user's own employer, and "sister's manager" (own
    words plainly naming a manager) the user's manager; "previous employer", written after the
    current one, was the newest employer. Such a key is an attribute of its own words, taken into
    none of the subject's, whichever comes first; the same words again replace their own value."""
    assert {key_of(k, ENGLISH).attribute for k in ("wife's employer", "sister’s manager", "partner's car")} & {
        "employer", "manager", "car"} == set()
    assert key_of("user's boss", ENGLISH).attribute == "manager"  # the user's own
    assert {key_of(k, ENGLISH).attribute for k in ("previous employer", "former manager", "old team")} & {
        "employer", "manager", "team"} == set()
    assert key_of("new manager", ENGLISH).attribute == "manager"
    p = principal()
    await written_apart(service, p, "me", [
        ("The user works at Initech.", "employer", "The user's wife works at Globex.", "wife's employer"),
        ("The user's manager is Dana.", "manager", "The user's sister's manager is Omar.", "sister's manager")])
    await written_apart(service, p, "Greta Ibarra", [
        ("Greta Ibarra works at Saltmarsh Bank.", "employer", "Greta used to work at Ironbark Studios.",
         "previous employer")])
    again = await service.write(p, "The user's wife moved to Initrode.", about=["me"], key="wife's employer",
                                occurred_at=day("2025-01-01"))
    assert len(again.memory.replaced) == 1
    # nor does the subject's own attribute, coming later, take in someone else's value its words name
    school = await service.write(p, "The user's daughter goes to Park Lane Primary.", about=["me"],
                                 key="kid's school", occurred_at=day("2024-01-01"))
    await service.write(p, "The user studied at the University of Sheffield.", about=["me"], key="alma mater",
                        occurred_at=day("2024-02-01"))
    (kept,) = (await service.get(p, [school.memory.id])).memories
    assert (kept.key, kept.superseded_by) == ("kid school", None)


async def test_a_word_for_what_a_value_is_keys_that_attribute(service) -> None:
    """"office city" was a home city by its head word, so Fenna's office stood beside it and her
    home city was replaced by where her office is; "team name" was an attribute of its own. A word
    for what a value is after an attribute's words makes the key that attribute's."""
    p = principal()
    home = await service.write(p, "Fenna Kuznetsov lives in Delft.", about=["Fenna Kuznetsov"], key="home city",
                               occurred_at=day("2024-01-01"))
    office = await service.write(p, "Fenna works out of the Rotterdam office.", about=["Fenna Kuznetsov"],
                                 key="office", occurred_at=day("2024-02-01"))
    moved = await service.write(p, "Fenna's office is in Utrecht now.", about=["Fenna Kuznetsov"],
                                key="office city", occurred_at=day("2024-03-01"))
    team = await service.write(p, "Fenna is on the Payments team.", about=["Fenna Kuznetsov"], key="team name",
                               occurred_at=day("2024-01-01"))
    newer = await service.write(p, "Fenna joined Identity.", about=["Fenna Kuznetsov"], key="current team",
                                occurred_at=day("2024-04-01"))
    assert moved.memory.replaced == [office.memory.id] and newer.memory.replaced == [team.memory.id]
    (kept,) = (await service.get(p, [home.memory.id])).memories
    assert kept.superseded_by is None


async def test_a_companys_headquarters_is_its_office_in_any_of_the_words_for_it(service) -> None:
    """"headquarters" was an attribute of its own and "hq city" a home city by its head word, so a
    company's move to Austin stood beside its Denver headquarters, both current."""
    p = principal()
    denver = await service.write(p, "Acme Corp is headquartered in Denver.", about=["Acme Corp"], key="headquarters",
                                 occurred_at=day("2024-03-01"))
    austin = await service.write(p, "Acme moved its HQ to Austin.", about=["Acme Corp"], key="hq city",
                                 occurred_at=day("2025-04-01"))
    assert austin.memory.replaced == [denver.memory.id] and austin.memory.key == "office"
    hits = (await service.search(p, "Where is Acme headquartered?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [austin.memory.id, denver.memory.id]


async def test_a_drink_is_no_food_and_a_gym_no_sport(service) -> None:
    """Words of no attribute of the lexicon's went to the one the embedder found plainly named:
    "favourite drink" the favourite food, "gym" the sport, "internet provider" a hosting provider's
    deploy target, so the user's new drink replaced the food. Each is an attribute of the lexicon's
    now, and its own newer value still replaces."""
    p = principal()
    await written_apart(service, p, "me", [
        ("The user's favourite food is ramen.", "favourite food", "The user's favourite drink is a flat white.",
         "favourite drink"),
        ("The user plays squash on Tuesdays.", "sport", "The user's gym is PureGym Leeds.", "gym"),
        ("The user's internet provider is BT.", "internet provider", "The user's app deploys to Fly.io.",
         "deploy target")])
    newer = await service.write(p, "The user drinks oat lattes now.", about=["me"], key="drink of choice",
                                occurred_at=day("2025-01-01"))
    assert newer.memory.key == "favourite drink" and len(newer.memory.replaced) == 1


async def test_a_batch_keeps_two_things_qualifying_one_head_word_apart(service) -> None:
    """The same in a batch (`memory_write_many`, extraction's facts): against the subject's stored
    facts and the batch's items before it; the same thing's newer value still replaces."""
    p = principal()
    stored = await service.write(p, "Heron runs on Node 20.", about=["Heron"], key="node version",
                                 occurred_at=day("2024-01-01"))
    batch = await service.write_many(p, [
        WriteItem(content="Heron's ML worker uses Python 3.12.", about=["Heron"], key="python version",
                  occurred_at=day("2024-02-01")),
        WriteItem(content="Heron's staging region is eu-west-1.", about=["Heron"], key="staging region",
                  occurred_at=day("2024-02-01")),
        WriteItem(content="Heron's production region is us-east-1.", about=["Heron"], key="production region",
                  occurred_at=day("2024-03-01")),
        WriteItem(content="Heron moved to Node 22.", about=["Heron"], key="node version",
                  occurred_at=day("2024-04-01"))])
    python, staging, production, node = (m.id for m in batch.memories)
    got = {m.id: m for m in (await service.get(p, [stored.memory.id, python, staging, production, node])).memories}
    assert [got[i].superseded_by for i in (python, staging, production, node)] == [None] * 4
    assert got[stored.memory.id].superseded_by == node
    assert len({got[i].key for i in (python, staging, production, node)}) == 4


async def test_own_words_written_before_the_attribute_they_plainly_name_join_it(service) -> None:
    """"rotation" plainly names the on-call rotation (retrieval/key_meaning.py); written after the
    subject's first on-call value it is filed under it, and written before, it joins it when that
    value comes: an import or a backfill brings values in any order, and the newest is current."""
    p = principal()
    newer = await service.write(p, "Update - Eun-ji Abara handed the checkout pager over and joined streaming.",
                                about=["Eun-ji Abara"], key="rotation", occurred_at=day("2025-01-01"))
    assert newer.memory.key == "rotat"  # nothing yet to file the words with
    older = await service.write(p, "FYI: Eun-ji Abara added to checkout on-call.", about=["Eun-ji Abara"],
                                key="on-call", occurred_at=day("2024-01-01"))
    got = {m.id: m for m in (await service.get(p, [newer.memory.id, older.memory.id])).memories}
    assert got[newer.memory.id].key == "on-call" and got[newer.memory.id].superseded_by is None
    assert got[older.memory.id].superseded_by == newer.memory.id
    hits = (await service.search(p, "What is Eun-ji Abara on call for?", explain=True)).hits
    assert hits[0].id == newer.memory.id

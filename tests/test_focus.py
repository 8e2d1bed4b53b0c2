"""A present-tense question that names someone: their memories that answer it rank newest first,
judged with the names masked (retrieval/focus.py); other facts about them and stable facts stay."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import numpy as np
import pytest
from pgvector import Vector

from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.graph.about_user import (
    THIRD_PERSON_WITHIN,
    about_someone_else,
    named_persons_relation,
    person_asked_about,
    speaks_of_user,
    their_person,
    without_user,
)
from mcp_memory.graph.questions import asked_of_any
from mcp_memory.lexicon import Lexicon
from mcp_memory.lexicon.english import ENGLISH
from mcp_memory.lexicon.portuguese import PORTUGUESE
from mcp_memory.models import Principal, SearchResult
from mcp_memory.retrieval.alike import alike
from mcp_memory.retrieval.answering import Closeness, answering, answers_first, answers_of, sharing_values
from mcp_memory.retrieval.focus import (
    applies,
    chain,
    chain_start,
    naming_nothing,
    similarities,
    stating_another,
    unlabelled,
    versions_said,
)
from mcp_memory.retrieval.query import parse_query, phrases_of
from mcp_memory.retrieval.values import names_a_channel, names_its_value, value_kinds, value_runs, values_of
from mcp_memory.retrieval.whose import MASK, named_as, subject_positions, without_names
from mcp_memory.service import MemoryService

from .counting_embedder import counting_service


def test_a_present_question_without_a_year_or_one_in_no_tense_asking_what_changes() -> None:
    assert applies(parse_query("What town is Odalys Pellegrini in at the moment?"))
    assert applies(parse_query("what is the coupons pipeline persisting to these days?"))
    assert not applies(parse_query("Where did Odalys Pellegrini live before?"))  # the past
    assert not applies(parse_query("What did Mel paint in her latest project in July 2023?"))  # a year
    assert not applies(parse_query("Where did Odalys live before, and where does she live now?"))  # both
    # No time word: a question asking an attribute that holds one value at a time asks the present one.
    assert applies(parse_query("Where does Odalys Pellegrini live?"))
    assert applies(parse_query("Which team is Ottilie Jablonski on?"))
    assert not applies(parse_query("Where did Odalys Pellegrini grow up?"))  # held for good
    assert not applies(parse_query("When is Odalys Pellegrini's birthday?"))
    assert not applies(parse_query("What languages does Odalys Pellegrini speak?"))  # many at a time
    assert not applies(parse_query("What does Odalys Pellegrini think of the plan?"))  # no attribute
    assert not applies(parse_query("Where did Odalys Pellegrini live?"))  # past, with no time phrase
    assert not applies(parse_query("Which team was Ottilie Jablonski on?"))
    # Of the user too; what the user's memories must show first is `versions_said`'s `stated_only`.
    assert applies(parse_query("Which test framework do we write end-to-end tests in?"))
    assert applies(parse_query("Which test framework do we write end-to-end tests in now?"))
    assert applies(parse_query("Where does my sister live?"))
    assert applies(parse_query("Onde mora a Odalys?", PORTUGUESE))
    assert not applies(parse_query("Onde cresceu a Odalys?", PORTUGUESE))


def test_names_are_masked_as_whole_words_with_their_possessive() -> None:
    assert without_names("Ana's new flat is in Anaheim; Ana likes it.", ["Ana"]) == \
        "someone new flat is in Anaheim; someone likes it."
    assert without_names("Odalys Pellegrini owns a Nissan Leaf", ["Pellegrini", "Odalys"]) == \
        "someone someone owns a Nissan Leaf"


def test_a_question_naming_nobody_is_about_the_run_of_words_results_share() -> None:
    runs = phrases_of("What is the coupons pipeline persisting to?")
    assert "coupons pipeline" in runs and "the coupons" not in runs and "persisting to" not in runs
    assert runs.index("coupons pipeline persisting") < runs.index("coupons pipeline")  # longest first
    rows = [_row("Coupons pipeline keeps its state in Cassandra.", 300),
            _row("Coupons worker persists to MongoDB.", 20, about=1.0),
            _row("Finished porting the coupons pipeline to MongoDB.", 100, about=1.0),
            _row("Turn: the coupons pipeline came up again", 5, kind="episode")]
    for r in rows:
        r["content"] = r["name"]
    positions, unnamed = subject_positions(rows, parse_query("What is the coupons pipeline persisting to now?"))
    assert positions == [0, 2]  # both facts naming it; the episode aside; "coupons" alone is not it
    assert unnamed("Finished porting the Coupons Pipeline's jobs") == "Finished porting the someone jobs"
    # With names, the names decide (the memories the subject factor lifted).
    positions, unnamed = subject_positions(rows, parse_query("Where does Ana live now?"))
    assert positions == [0]


def test_a_question_naming_nobody_by_one_word_is_about_the_word_results_share() -> None:
    """No run of two words of the question is in two results: the content word the best of them
    holds and another shares is the subject, as a word (not inside "frontend-facing"), and a run is
    one only with nothing but white space between its words ("coupons, pipeline" is none)."""
    rows = _rows("The frontend is built with Next.js 13 and deployed on Vercel.",
                 "Frontend moved from Vercel to Netlify to cut costs.",
                 "The frontend-facing API is deployed on Fly.io.", "Node.js 22 is now the minimum.")
    positions, unnamed = subject_positions(rows, parse_query("Where is the frontend deployed now?"))
    assert positions == [0, 1]
    assert unnamed(rows[1]["content"]) == "someone moved from Vercel to Netlify to cut costs."
    # A word the best result does not hold is no subject, however many others share it.
    positions, _ = subject_positions(rows[2:] + rows[:2], parse_query("Where is the frontend deployed now?"))
    assert positions == []
    rows = _rows("The coupons pipeline's state lives in Cassandra.", "Rolled back the coupons, pipeline first.",
                 "Node.js 22 is now the minimum.")
    positions, unnamed = subject_positions(rows, parse_query("What is the coupons pipeline persisting to now?"))
    # One says "coupons pipeline", the other "coupons, pipeline": the later of the two words they share.
    assert positions == [0, 1]
    assert unnamed(rows[0]["content"]) == "The coupons someone state lives in Cassandra."


def test_a_capitalised_word_no_memory_shares_is_no_subject() -> None:
    """"DB" is capitalised but names nothing the results name: the run of words is the subject."""
    rows = [_row("Ledger pipeline schema lives in MySQL 8.", 300, about=1.0),
            _row("Prod for the ledger pipeline sits in eu-central-1.", 20, about=1.0),
            _row("Ledger pipeline storage migration to ClickHouse landed.", 100, about=1.0)]
    for r in rows:
        r["content"] = r["name"]
    positions, unnamed = subject_positions(rows, parse_query("Which DB is the ledger pipeline currently on?"))
    assert positions == [0, 1, 2]
    assert unnamed(rows[0]["content"]) == "someone schema lives in MySQL 8."


def test_a_capitalised_word_naming_a_kind_of_thing_narrows_to_the_run_that_holds_it() -> None:
    """"API" is in every API's memories: the subject is the longest run of the question's words
    holding it that two of them share ("coupons API"), and that run is what is masked."""
    rows = [_row("Prod for the coupons API sits in ca-central-1.", 300),
            _row("Thumbnails API still runs a test box in eu-central-1.", 20),
            _row("Coupons API failed over to eu-central-1 for good.", 100),
            _row("Yaw Boateng owns the exports API.", 10)]
    for r in rows:
        r["content"] = r["name"]
    positions, unnamed = subject_positions(rows, parse_query("Which region does the coupons API run in currently?"))
    assert positions == [0, 2]
    assert unnamed(rows[2]["content"]) == "someone failed over to eu-central-1 for good."
    # A name no longer run of the question's words carries stays the subject, masked alone.
    rows[2]["content"] = "Failed the API over to eu-central-1 for good."
    positions, unnamed = subject_positions(rows, parse_query("Which region does the coupons API run in currently?"))
    assert positions == [0, 1, 2, 3]
    assert unnamed(rows[3]["content"]) == "Yaw Boateng owns the exports someone."
    positions, _ = subject_positions(rows, parse_query("Where does Yaw Boateng work now?"))
    assert positions == [0, 1, 2, 3]  # every row here counts as naming him (about > 1); no run narrows


def test_a_name_and_its_classifier_narrow_nothing_but_what_a_name_owns_is_no_name() -> None:
    """"Payments team" is the Payments team as "Payments" is: the run narrows nothing, and is masked
    where it stands, the name alone elsewhere. "Benedikt Pereira's project" is something of his,
    the asked attribute: masking it would take what is asked out of the question."""
    rows = _rows("The Payments team's standup is at 9:15.", "Payments standup moved to 10:30 from next week.",
                 "Payments lead is Oskar Berg.", about=1.5)
    positions, unnamed = subject_positions(rows, parse_query("When is the Payments team's standup now?"))
    assert positions == [0, 1, 2]
    assert [unnamed(r["content"]) for r in rows[:2]] == ["The someone standup is at 9:15.",
                                                        "someone standup moved to 10:30 from next week."]
    rows = _rows("Benedikt Pereira owns the Puffin roadmap.", "From standup: Benedikt Pereira picked up Osprey.",
                 about=1.5)
    _, unnamed = subject_positions(rows, parse_query("What's Benedikt Pereira's project right now?"))
    assert unnamed("What's Benedikt Pereira's project right now?").endswith(" project right now?")


def test_values_a_memory_names() -> None:
    ignore = frozenset({"someone", "the", "a", "standup"})
    assert values_of("someone quit Brightwater Health and signed with Plumtree Media.", ignore) == \
        {"brightwater", "health", "plumtree", "media"}
    assert values_of("Team someone standup moved 9:45 -> 9:15.", ignore) == {"9:45", "9:15"}
    assert values_of("Moved the API off ca-central-1; it runs in MySQL 8.0. Tomorrow's plan: none",
                     ignore) == {"api", "ca-central-1", "mysql", "8.0"}  # sentence openers are no values
    assert values_of("someone's Standup is at nine.", ignore) == frozenset()  # the question's words are not
    # A channel is a value whatever its case; a "#" within a word or doubled marks none.
    assert values_of("someone archived #oncall; use #kestrel-ops.", ignore) == {"oncall", "kestrel-ops"}
    assert values_of("#oncall is muted; someone writes C# and a#b ##x.", ignore) == {"oncall", "c"}
    assert names_a_channel("someone archived #oncall.", ignore)
    assert not names_a_channel("someone writes C# and a#b ##x.", ignore)
    assert not names_a_channel("someone archived #oncall.", ignore | {"oncall"})  # the question's own


def test_the_kinds_of_value_a_memory_names() -> None:
    assert value_kinds("someone moved lunch to 9:45, 14 people came.") == {"number"}
    assert value_kinds("Prod sits in us-east-1; it passed at 2x, its 14th release.") == {"code"}
    assert value_kinds("maintainer: Yaw Boateng, on a Framework 13 with MySQL 8.0 and an iPhone 15.") == {"name"}
    assert value_kinds("2024 was good.") == {"number"}  # a sentence's first word is no name
    assert value_kinds("nothing here") == frozenset()
    assert value_kinds("someone talks in #triage.") == {"name"}


def test_a_value_the_old_memory_says_anywhere_is_no_new_one() -> None:
    """Only a value the old memory does not say at all is a new one: "Aurelio" opening a clause is
    no value of the old text, and was read as the new name beside the shared "Conti"."""
    ignore = frozenset({"someone"})
    assert names_its_value("someone left Orchid Telecom and joined Thistle & Co.", "someone works at Orchid Telecom.",
                           ignore)
    assert not names_its_value("New maintainer of the reviews API is Aurelio Conti.",
                               "Oskar Lund rotated off the billing API; Aurelio Conti took it.", ignore)
    assert not names_its_value("The reporting worker emits metrics to Prometheus.",
                               "The ledger API emits metrics to Prometheus.", ignore)  # the same value alone


def test_a_value_both_say_is_one_name_in_both() -> None:
    """A word two names share is no shared value: a surname of two people, "Data" of a team and a
    title. Read as one, the new note "named the old value beside a new one" and the guard applied
    it without asking (crm under the adversary: 18 -> 12 wrong replaces applied)."""
    ignore = frozenset({"someone"})
    assert value_runs("someone quit Brightwater Health and signed with Plumtree Media.", ignore) == \
        {("brightwater", "health"), ("plumtree", "media")}
    assert value_runs("Team someone standup moved 9:45 -> 9:15.", ignore) == {("9:45",), ("9:15",)}
    assert not names_its_value("someone inherited Oisin Esposito from Helena Sousa.",
                               "someone is Zoltan Esposito's skip-level manager.", ignore)
    assert not names_its_value("someone moved from Data Scientist to Senior Engineer.",
                               "someone is on the Data Infra team.", ignore)
    assert names_its_value("someone quit Plumtree Media for Saltmarsh Bank.", "someone works at Plumtree Media.",
                           ignore)
    # One name holding the other is one value: "Yasmin" opening a clause is no value of the old note.
    assert names_its_value("someone left Yasmin Haddad's team for Gustavo Lima's.",
                           "someone's manager: Yasmin Haddad.", ignore)


def test_a_memory_naming_an_answers_value_answers_too() -> None:
    """An update that names the value it replaces is a version, however it is worded; values join
    transitively, and memories naming other values stay out."""
    ids = [uuid4() for _ in range(4)]
    payroll, quit_it, quit_next, other = ids
    closeness = {payroll: Closeness(0.5, 0, 1.0, frozenset({"lanternfish", "games"})),
                 other: Closeness(0.3, 1, 0.4, frozenset({"marco", "bellini"})),
                 quit_it: Closeness(0.2, 2, 0.2, frozenset({"lanternfish", "games", "brightwater", "health"})),
                 quit_next: Closeness(0.1, 3, 0.1, frozenset({"brightwater", "health", "plumtree", "media"}))}
    assert sharing_values({payroll}, closeness) == {payroll, quit_it, quit_next}
    assert sharing_values({other}, closeness) == {other}
    # Naming an answer's value alone is saying something else of it: "read a book about Lisbon".
    book = uuid4()
    assert sharing_values({payroll}, {**closeness, book: Closeness(0.1, 4, 0.1, frozenset({"lanternfish"}))}) == \
        {payroll, quit_it, quit_next}
    # The chain alone ends after the first drop (1.0 -> .4 -> .2 -> .1: the drop to .2 is the largest).
    assert answering(closeness, margin=0.15) == {payroll, other, quit_it, quit_next}
    closeness[quit_it] = Closeness(0.2, 2, 0.2, frozenset({"korvex"}))
    assert answering(closeness, margin=0.15) == {payroll, other}


def test_a_memory_its_stored_vector_says_is_one_fact_with_an_answer_answers_too() -> None:
    """Three versions worded alike ("The search pipeline's rate limit is 50 / 200 / 500 per second"):
    the chain's one drop cuts the third off, but the versions rule's groups (stored vectors within
    the model's conflict cosine) hold all three, so all three answer; a memory in no group, or in
    another, does not."""
    first, second, third, other, elsewhere = (uuid4() for _ in range(5))
    closeness = {first: Closeness(0.81, 0, 1.0, alike=0), second: Closeness(0.80, 1, 0.94, alike=0),
                 third: Closeness(0.79, 2, 0.93, alike=0), other: Closeness(0.4, 3, 0.2),
                 elsewhere: Closeness(0.3, 4, 0.1, alike=1)}
    assert answering({k: closeness[k] for k in (first, second, third)}, margin=0.15) == {first, second, third}
    assert answering(closeness, margin=0.15) == {first, second, third}
    closeness = {k: replace(c, alike=None) for k, c in closeness.items()}
    assert answering({k: closeness[k] for k in (first, second, third)}, margin=0.15) == {first, second}


def test_versions_are_possible_only_where_two_memories_do_not_state_other_attributes() -> None:
    """A licence stated once among facts stating other attributes has no versions to put newest
    first; a memory stating no attribute in the lexicon's words may be one ("transferred to ...")."""
    question = "Which licence covers someone?"
    facts = ["someone is released under a proprietary licence.", "someone schema lives in Cassandra.",
             "Aurelio Conti holds the pager for someone."]
    assert not versions_said(question, facts, ENGLISH)
    assert versions_said(question, [*facts, "someone switched to GPL-3.0 last spring."], ENGLISH)
    assert versions_said(question, [*facts, "someone is licensed under MIT now."], ENGLISH)


def test_alike_groups_non_episodes_by_their_stored_vectors() -> None:
    def row(vector: list[float] | None, kind: str = "fact") -> dict:
        return {"embedding": None if vector is None else Vector(vector), "kind": kind}

    rows = [row([1, 0, 0]), row([0.99, 0.141, 0]), row([0, 1, 0]), row([1, 0, 0], "episode"), row(None),
            row([0.98, 0.199, 0])]
    assert alike(rows, 0.95) == [[0, 1, 5]]
    assert alike(rows, 1.0) == []  # the rule off
    assert alike(rows + [row([1, 0])], 0.95) == [[0, 1, 5]]  # another model's width compares with nothing


def test_a_question_about_the_user_and_who_else_a_memory_is_about() -> None:
    for question in ("What car do I drive now?", "Where does the user live these days?", "what's my editor now",
                     "Where do we deploy at the moment?", "Who is User's boss currently?"):
        assert speaks_of_user(question), question
    for question in ("Where does Ana live now?", "Which US city hosts the summit now?", "Which username is taken?"):
        assert not speaks_of_user(question), question
    for other in ("My neighbour just bought a Renault Zoe.", "User's sister lives in Porto.",
                  "The user's old classmate runs Quillstone.", "The client hosts on Heroku.",
                  "Our designer moved to Eastern time.", "My friends invited me to watch rowing.",
                  "A colleague keeps recommending Neovim.",
                  # A name with the user's person beside it, as a small model writes what it extracts.
                  "Priya Raman, the user's friend, lives in Lisbon.", "Ana, my best friend, moved to Porto.",
                  "O'Brien, my friend, moved to Cork.",
                  # A leader of the user's doing anything but being named.
                  "My manager works Brazil time hours.", "The user's manager is pushing Granite.",
                  "User's team lead uses Neovim.", "my boss is based in Berlin",
                  # A name, then that person as "her" / "his", the user not spoken of.
                  "Priya is selling her ThinkPad T14.", "Ines Moreau moved to Lisbon with her wife.",
                  # The third person opening the note: whoever it is, not the user.
                  "She moved to Graz in June.", "He started a new job at Siemens.",
                  # A group the user was in once.
                  "My old team deploys to Cloud Run.", "Our former squad still uses Jira.",
                  "The user's previous project runs on Heroku.", "My ex-team moved to Go.",
                  # A person of the user's past, by a prefix joined to the role or on their own.
                  "My ex-wife lives in Berlin.", "The user's ex-girlfriend drives a Tesla.",
                  "My step-father lives in Leeds.", "My ex lives in Porto.",
                  # Plural possessives, an unaccented fiancé, and family said as a name.
                  "My kids' school is in Leeds.", "My parents' house is in Porto.", "My fiance moved to Lisbon.",
                  "Mom lives in Porto now.", "Grandpa's car is a Volvo.",
                  # Someone else's person, and a name with the user's person beside it in brackets.
                  "Her husband works at Google.", "His best friend lives in Oslo.",
                  "His manager works Brazil time hours.", "Ana (my sister) moved to Porto.",
                  # A leader placed, then something else said of them.
                  "My boss at Sword wants the report by Friday.", "My boss at Acme is from Greece."):
        assert about_someone_else(other), other
    # Hostile or long text: a third person is looked for only near the opening name.
    assert not about_someone_else("Priya " + "sells " * THIRD_PERSON_WITHIN + "her laptop.")
    for own in ("My car is a Fiat Panda.", "User's team lead is Leonie Marchetti.", "My boss is Ahmed Saleh.",
                "My manager changed to Ruth Okonkwo.", "My manager is now Signe Dahl.", "My manager: Ahmed Saleh.",
                "The user's new manager at Sword Health is Inês Carvalho.", "My lead on the new team is Signe Dahl.",
                "The user's boss is the CTO.", "My manager and I moved to Berlin.",
                "Priya keeps telling me to try her dotfiles.", "Production runs on Heroku.",
                "My wife and I moved to Berlin.", "The user moved to Lisbon.", "I'm an engineer at Korvex.",
                "The team moved to Kotlin.", "Engineers at Korvex use Go.", "Lisbon, our new home, is sunny.",
                "Berlin, my favourite city, is cold.", "Tobias Wren, my manager, approved the plan.",
                "My team deploys to Fly.io.", "My old laptop was a ThinkPad.", "My old team and I moved to Go.",
                "My e-bike is a Cowboy 4.", "My ex and I sold the flat.", "My exam is on Friday.",
                "Mom and I moved to Porto.", "Dad, I moved to Porto.", "Momentum is key.",
                "His wife and I met in Porto.", "He and I went to Porto.", "Shell scripts live in bin/.",
                "Herbs grow on the balcony."):
        assert not about_someone_else(own), own
    # Someone in a named person's life: a name with an apostrophe is a name too.
    for note, relation in (("Kenji Chaudhry's brother lives in Cork.", "brother"),
                           ("Declan O'Brien's brother lives in Cork.", "brother"),
                           ("FYI: Siobhan O'Neill's mentor prefers IntelliJ.", "mentor")):
        assert named_persons_relation(note) == relation, note
    assert without_user("I quit my job; the user's new employer is Korvex. User is happy.", "someone") == \
        "someone quit someone job; someone new employer is Korvex. someone is happy."


def test_the_user_is_the_subject_when_a_question_speaks_of_them() -> None:
    """Every memory about the user, not those about people in their life, and not episodes."""
    rows = [_row("I drive a Kia Niro.", 600, about=1.0), _row("My neighbour just bought a Renault Zoe.", 10, about=1.0),
            _row("User works at Quillstone.", 20, about=1.0), _row("Got my new Mini Cooper.", 100, about=1.0),
            _row("Turn: I said the car is great", 5, kind="episode")]
    for r in rows:
        r["content"] = r["name"]
    positions, unnamed = subject_positions(rows, parse_query("What car do I drive these days?"))
    assert positions == [0, 2, 3]
    assert unnamed("Got my new Mini Cooper.") == "Got someone new Mini Cooper."
    # A name the memories share still comes first.
    rows[2]["about"] = 1.25
    assert subject_positions(rows, parse_query("Where does Quillstone sit now?"))[0] == [2]


def test_a_question_about_someone_in_the_users_life_is_about_them() -> None:
    assert person_asked_about("Where does my sister live now?") == "sister"
    assert person_asked_about("Which car does the user's wife want these days?") == "wife"
    assert person_asked_about("Where do my parents live at the moment?") == "parent"
    assert person_asked_about("Who is my manager these days?") is None  # the user's own fact
    assert person_asked_about("What car do I drive now?") is None
    sister = their_person("sister")
    assert sister.sub("someone", "User's sister lives in Porto; my older sister's flat is in Oslo.") == \
        "someone lives in Porto; someone flat is in Oslo."
    # An ex-wife is another person than a wife, and a question about either is about her alone.
    assert person_asked_about("Where does my ex-wife live now?") == "ex-wife"
    assert not their_person("wife").search("My ex-wife lives in Berlin.")
    assert their_person("ex-wife").search("My ex-wife lives in Berlin.")
    assert not their_person("ex-wife").search("My wife lives in Lisbon.")
    rows = [_row("I live in Berlin.", 5, about=1.0), _row("User's sister lives in Porto.", 600, about=1.0),
            _row("My sister moved to Oslo last month.", 100, about=1.0),
            _row("My brother lives in Rome.", 50, about=1.0)]
    for r in rows:
        r["content"] = r["name"]
    positions, unnamed = subject_positions(rows, parse_query("Where does my sister live these days?"))
    assert positions == [1, 2]  # hers: not the user's city, not the brother's
    assert unnamed(rows[2]["content"]) == "someone moved to Oslo last month."


def _row(name: str, days_ago: int, about: float = 1.25, kind: str = "fact") -> dict:
    return {"id": uuid4(), "name": name, "about": about, "kind": kind,
            "occurred_at": datetime(2026, 1, 1, tzinfo=UTC) - timedelta(days=days_ago)}


def _closeness(rows: list[dict], question: list[float], links: list[float]) -> dict:
    """Closeness for rows already in the order they joined the chain."""
    return {r["id"]: Closeness(q, step, link)
            for step, (r, q, link) in enumerate(zip(rows, question, links, strict=True))}


@pytest.mark.parametrize("lexicon, question, texts", [
    (ENGLISH, "Where does someone live now?",
     ["someone lives in Bristol.", "someone works at Brightwater Analytics.", "someone editor is Zed."]),
    (PORTUGUESE, "Onde mora someone agora?",
     ["someone mora em Lisboa.", "someone trabalha na Sonae.", "O editor de someone é o Vim."]),
])
def test_a_subjects_facts_one_version_each_by_the_words_of_what_each_states(
        lexicon: Lexicon, question: str, texts: list[str]) -> None:
    """Each memory states an attribute in the lexicon's words, no two the same: those stating
    another than the question asks are off the chain. In any language the lexicon holds."""
    assert stating_another(question, texts, lexicon) == {1, 2}
    # One memory stating nothing in those words may be a version of any of them ("trying Helix
    # for good now"); two stating one attribute are versions; a question asking none: the chain.
    assert stating_another(question, [*texts, "someone is trying something new for good now."], lexicon) == set()
    assert stating_another(question, [*texts, texts[0].replace("Bristol", "Leeds").replace("Lisboa", "Porto")],
                            lexicon) == set()
    assert stating_another("What about someone?", texts, lexicon) == set()


def test_answers_first_newest_first() -> None:
    oslo = _row("oslo (old)", 300)
    lisbon = _row("lisbon (new)", 30)
    car = _row("car (newest, other fact)", 1)
    other = _row("someone else", 5, about=1.0)
    rows = [car, oslo, other, lisbon]
    # Oslo is closest to the question, Lisbon joins it at .55, the car only at .20: the versions go
    # first, newest first; the rest in order.
    closeness = _closeness([oslo, lisbon, car], [0.45, 0.30, 0.35], [1.0, 0.55, 0.20])
    assert answers_of(rows, closeness, margin=0.15).found == {oslo["id"], lisbon["id"]}
    assert [r["name"] for r in answers_first(rows, answers_of(rows, closeness, margin=0.15).found)] == \
        ["lisbon (new)", "oslo (old)", "car (newest, other fact)", "someone else"]
    assert answers_of(rows, {}, 0.15).found == set()
    assert answers_of(rows, {car["id"]: Closeness(0.9, 0, 1.0)}, 0.15).found == set()  # nothing to order
    assert answers_first(rows, set()) == rows


def test_versions_are_chained_and_end_where_the_link_drops_most() -> None:
    """Each version need only resemble another version: "after Oslo someone ended up in Hobart"
    is far from "someone settled down in Cork" but close to "after Ghent someone ended up in Oslo"."""
    cork, ghent, oslo, hobart, car, born = range(6)
    cosines = np.eye(6)
    for a, b, c in [(cork, ghent, 0.55), (ghent, oslo, 0.60), (oslo, hobart, 0.80), (cork, hobart, 0.30),
                    (cork, car, 0.20), (hobart, car, 0.22), (oslo, born, 0.15), (car, born, 0.25)]:
        cosines[a, b] = cosines[b, a] = c
    order, links = chain(cosines, start=ghent)
    assert order == [ghent, oslo, hobart, cork, car, born]
    assert links == pytest.approx([1.0, 0.60, 0.80, 0.55, 0.22, 0.25])  # born joins through the car
    ids = [uuid4() for _ in range(6)]
    closeness = {ids[i]: Closeness(0.3, step, links[step]) for step, i in enumerate(order)}
    assert answering(closeness, margin=0.15) == {ids[i] for i in (cork, ghent, oslo, hobart)}


def test_another_facts_close_versions_end_the_chain_where_they_join_it() -> None:
    """Two versions of a partner, then two pet notes close to each other but joined to the partner's
    only weakly: the chain's link falls most after the pets (.73 to .35), and they were answers,
    the newer pet note first. Each joins the start's cluster at the weakest link on its way (.41),
    so the chain ends after the partner's versions. A second wording of the asked fact, joined as
    weakly but as close to the question as the cluster's least, still answers."""
    dating, together, lizard, pigs, padel, pun = (uuid4() for _ in range(6))
    closeness = {dating: Closeness(0.54, 0, 1.0), together: Closeness(0.34, 1, 0.48),
                 lizard: Closeness(0.22, 2, 0.41), pigs: Closeness(0.19, 3, 0.73),
                 padel: Closeness(0.29, 4, 0.35), pun: Closeness(0.26, 5, 0.34)}
    assert answering(closeness, margin=0.15) == {dating, together}
    lead, lead_before, under, under_before, car = (uuid4() for _ in range(5))
    closeness = {lead: Closeness(0.50, 0, 1.0), lead_before: Closeness(0.45, 1, 0.80),
                 under: Closeness(0.47, 2, 0.40), under_before: Closeness(0.46, 3, 0.85),
                 car: Closeness(0.20, 4, 0.30), pun: Closeness(0.15, 5, 0.28)}
    assert answering(closeness, margin=0.15) == {lead, lead_before, under, under_before}
    closeness[under] = replace(closeness[under], question=0.30)  # another fact's, worded apart
    assert answering(closeness, margin=0.15) == {lead, lead_before, under_before}


def test_the_chain_starts_from_a_memory_stating_the_asked_attribute_when_the_closest_does_not() -> None:
    """The closest memory states another attribute in the lexicon's words, or none and shares no
    word with the question: the chain starts from the closest of those stating the asked one. A
    closest stating the asked attribute, or none but sharing a word of the question, keeps its
    place, as it does where no memory states the asked one or the question asks none by those words."""
    question = "Who does someone report to currently?"
    office, manager, unrelated, other_manager, sharing = ("someone left the Singapore office for Nairobi.",
                                                          "Manager change for someone: Yasmin Haddad.",
                                                          "Helena Sousa looks after someone.",
                                                          "someone's manager: Lars Petersen.",
                                                          "someone's weekly report goes to Helena Sousa.")
    closeness = np.array([0.6, 0.4, 0.3, 0.5])
    assert chain_start(closeness, [office, manager, unrelated, other_manager], question, ENGLISH) == 3
    assert chain_start(closeness[:3], [office, manager, unrelated], question, ENGLISH) == 1
    assert chain_start(np.array([0.6, 0.4]), [unrelated, manager], question, ENGLISH) == 1
    assert chain_start(np.array([0.6, 0.4]), [sharing, manager], question, ENGLISH) == 0
    assert chain_start(np.array([0.6, 0.4]), [manager, office], question, ENGLISH) == 0
    assert chain_start(np.array([0.6, 0.4]), [office, unrelated], question, ENGLISH) == 0
    assert chain_start(closeness[:3], [office, manager, unrelated], "What about someone these days?", ENGLISH) == 0


def test_with_one_other_memory_the_question_decides() -> None:
    city, car = uuid4(), uuid4()
    assert answering({city: Closeness(0.45, 0, 1.0), car: Closeness(0.20, 1, 0.3)}, margin=0.15) == {city}
    assert answering({city: Closeness(0.45, 0, 1.0), car: Closeness(0.35, 1, 0.3)}, margin=0.15) == {city, car}


def test_a_memory_stating_the_asked_attribute_answers_past_the_chains_cut() -> None:
    """A version worded unlike the others links to them no closer than the subject's other facts
    do, and the cut leaves it out; stating the asked attribute in the lexicon's words, it answers."""
    first, second, car, took_over = (uuid4() for _ in range(4))
    closeness = {first: Closeness(0.5, 0, 1.0), second: Closeness(0.45, 1, 0.8),
                 car: Closeness(0.3, 2, 0.35), took_over: Closeness(0.3, 3, 0.3)}
    assert answering(closeness, margin=0.15) == {first, second}
    closeness[took_over] = Closeness(0.3, 3, 0.3, frozenset({"signe", "dahl", "oslo"}), says_asked=True)
    assert answering(closeness, margin=0.15) == {first, second, took_over}
    # What it names brings in nothing more: a newer note on the new manager's city is no version.
    trip = uuid4()
    closeness[trip] = Closeness(0.2, 4, 0.25, frozenset({"oslo"}))
    assert answering(closeness, margin=0.15) == {first, second, took_over}
    # With one other memory, far from the question, the margin would leave it out; its words do not.
    assert answering({first: closeness[first], took_over: Closeness(0.2, 1, 0.3)}, margin=0.15) == {first}
    assert answering({first: closeness[first], took_over: closeness[took_over]}, margin=0.15) == {first, took_over}


NOTES = ["Dieter Vogel inherited someone from Lars Petersen.", "someone off streaming pager, now database.",
         "someone covers streaming pages.", "someone's manager left the company.", "someone sits at desk 4B.",
         "someone switched to a Sony Xperia 10."]


@pytest.mark.parametrize("lexicon, question, texts, nameless", [
    (ENGLISH, "Who is someone's manager?", NOTES, {1, 2, 4, 5}),
    (ENGLISH, "Which office is someone in?", NOTES, {1, 2, 3}),
    (PORTUGUESE, "Que carro conduz someone?",
     ["someone comprou um Renault Zoe.", "someone começou a correr.", "someone vende o velho de novo.",
      "someone mudou de carro.", "someone tem 2 gatos."], {1, 2}),
])
def test_a_memory_naming_no_value_states_none_of_an_attribute_valued_by_names(
        lexicon: Lexicon, question: str, texts: list[str], nameless: set[int]) -> None:
    """A manager is a person, an office a place and a car a make: a memory naming no value (no
    capitalised word within a sentence, no number) and not stating the attribute in the lexicon's
    words states no value of it; the attribute's words ("manager", "carro") state it. A person's
    name holds no digit ("desk 4B", "Sony Xperia 10" name no manager); a place's may."""
    attributes = asked_of_any(question, lexicon)
    assert naming_nothing(attributes, texts, frozenset({MASK}), lexicon) == nameless
    # An attribute whose values are no names (a sport: "padel"; allergies), or none asked: none.
    assert naming_nothing(frozenset({"sport"}) if lexicon is ENGLISH else frozenset({"allergies"}), texts,
                          frozenset({MASK}), lexicon) == set()
    assert naming_nothing(frozenset(), texts, frozenset({MASK}), lexicon) == set()


def test_a_question_asking_no_attribute_asks_what_its_question_word_asks_for() -> None:
    """"Who do I answer to at the moment?" names no attribute: "who" asks a person, so memories
    naming none answer nothing; "where" a place; "when" a time, which the rule leaves alone."""
    assert naming_nothing(frozenset(), NOTES, frozenset({MASK}), ENGLISH, "person") == {1, 2, 3, 4, 5}
    assert naming_nothing(frozenset(), NOTES, frozenset({MASK}), ENGLISH, "place") == {1, 2, 3}
    assert naming_nothing(frozenset(), NOTES, frozenset({MASK}), ENGLISH, "time") == set()
    assert naming_nothing(frozenset(), NOTES, frozenset({MASK}), ENGLISH) == set()


def test_a_number_or_a_time_alone_names_no_place() -> None:
    """A channel, an office, a region are places: a note naming only a time ("standup @ 9:30")
    names none of them; one naming a channel does, in any case ("#oncall")."""
    texts = ["Team someone standup @ 9:30.", "Team someone hangs out in #triage.",
             "Team someone opened #oncall as the new home.", "Team someone check-in, 10:15 -> 10:30.",
             "Prod for someone runs in eu-central-1."]
    assert naming_nothing(asked_of_any("What's someone's current channel?", ENGLISH), texts, frozenset({MASK}),
                          ENGLISH) == {0, 3}
    assert naming_nothing(frozenset(), texts, frozenset({MASK}), ENGLISH, "place") == {0, 3}
    assert naming_nothing(frozenset(), texts, frozenset({MASK}), ENGLISH, "time") == set()


async def test_the_users_newest_note_naming_no_one_does_not_say_whom_they_answer_to(
        service: MemoryService, alice: Principal) -> None:
    """The user's newest note ("I prefer meetings after 10.") came first for "Who do I answer to at
    the moment?": the question names no attribute, and its "who" asks a person."""
    await write_dated(service, alice, [
        ("User trains at a yoga club.", 562), ("I do rowing on weekends.", 445), ("I'm hooked on cycling.", 380),
        ("I switched from cycling to judo.", 65), ("My friends invited me to watch swimming.", 31),
        ("I report to Leonie Marchetti.", 514), ("My manager changed to Ruth Okonkwo.", 275),
        ("The user's intern works for Marco Bellini.", 242), ("User is on the payroll of Tessellate.", 635),
        ("I started a new job at Juniper Freight.", 604), ("My brother got a job at Plumtree Media.", 530),
        ("I grew up in Tromso.", 819), ("I prefer meetings after 10.", 28),
        ("Remind me to renew the passport.", 86)])
    found = await service.search(alice, "Who do I answer to at the moment?", explain=True)
    assert found.hits[0].snippet == "My manager changed to Ruth Okonkwo."


def test_a_memory_naming_no_value_of_a_named_attribute_answers_nothing_unless_nothing_else_does() -> None:
    """The chain took in a newer note naming nothing by its shape: it answers nothing, unless every
    answer names nothing."""
    inherited, pager, office = uuid4(), uuid4(), uuid4()
    closeness = {inherited: Closeness(0.31, 1, 0.5, frozenset({"dieter", "vogel"})),
                 pager: Closeness(0.30, 0, 1.0, nameless=True), office: Closeness(0.2, 2, 0.1, frozenset({"toronto"}))}
    assert answering(closeness, margin=0.15) == {inherited}
    closeness[inherited] = replace(closeness[inherited], nameless=True)
    assert answering(closeness, margin=0.15) == {inherited, pager}


def test_episodes_are_not_versions() -> None:
    """A conversation's turns all name the speaker; a later turn does not replace an earlier one."""
    rows = [_row("turn 1", 300, kind="episode"), _row("fact", 200), _row("turn 2", 10, kind="episode"),
            _row("other fact", 100, about=1.0)]
    for r in rows:
        r["content"] = r["name"]
    assert subject_positions(rows, parse_query("Where does Ana live now?"))[0] == [1]


def _rows(*texts: str, about: float = 1.25) -> list[dict]:
    rows = [_row(text, 10 * i, about=about) for i, text in enumerate(texts)]
    for r in rows:
        r["content"] = r["name"]
    return rows


def test_the_asked_attributes_words_name_no_subject() -> None:
    """"Postgres" is capitalised, but in "Which Postgres version ..." it says what is asked, as
    "rate limit" does: the subject is the run of words the pipeline's memories share, however its
    possessive is written."""
    rows = _rows("The scheduling pipeline uses Postgres 14.", "Postgres version of the scheduling worker: 16.",
                 "Postgres version used by the scheduling pipeline: 11.", "The ledger pipeline uses Postgres 15.")
    question = parse_query("Which Postgres version does the scheduling pipeline use?")
    positions, unnamed = subject_positions(rows, question)
    assert positions == [0, 2]
    assert unnamed(rows[0]["content"]) == "The someone uses Postgres 14."
    rows = _rows("The invoicing pipeline's rate limit is 100 per second.",
                 "Rate limit of the invoicing pipeline: 200 requests per second.",
                 "Rate limit of the pricing pipeline: 500 requests per second.", about=1.0)
    positions, _ = subject_positions(rows, parse_query("What is the invoicing pipeline's rate limit?"))
    assert positions == [0, 1]
    # A classifier beside a name is how the subject is called, though "team" names an attribute too.
    rows = _rows("Team Plover chatter happens in #kestrel-ops.", "Team Plover relocated its channel to #triage.")
    positions, unnamed = subject_positions(rows, parse_query("Where does team Plover chat at the moment?"))
    assert positions == [0, 1] and unnamed(rows[1]["content"]) == "someone relocated its channel to #triage."


def test_a_memory_stating_the_asked_attribute_of_another_is_not_the_subjects() -> None:
    """"Priya Fischer's manager is Aisha Esposito." names Aisha, but opens on who manages Priya;
    "Aisha Esposito's sister has a manager ..." is about her sister. "Omar Okafor has been Aisha
    Esposito's manager" is hers, and so is one naming another's manager after her."""
    rows = _rows("Aisha Esposito's manager is Felix Andersen.", "Priya Fischer's manager is Aisha Esposito.",
                 "Aisha Esposito's sister has a manager called Chen Novak.",
                 "Omar Okafor has been Aisha Esposito's manager since the reorg.",
                 "Aisha Esposito now reports to Omar Kim, who was Priya's manager.",
                 "Aisha Esposito reports to Amara Yilmaz.")
    positions, _ = subject_positions(rows, parse_query("Who manages Aisha Esposito?"))
    assert positions == [0, 3, 4, 5]
    # Asked of her sister, the sister's memory is the one.
    positions, _ = subject_positions(rows, parse_query("Who is Aisha Esposito's sister's manager?"))
    assert positions == [2]
    # A relation that is the asked attribute is hers: "partner".
    rows = _rows("Aisha Esposito's partner is Leo Park.", "Aisha Esposito is dating Tom Baker.")
    positions, _ = subject_positions(rows, parse_query("Who is Aisha Esposito's partner?"))
    assert positions == [0, 1]
    # Every memory naming her someone else's: no subject, not the run of words that brings them back.
    rows = _rows("Priya Fischer's manager is Aisha Esposito.", "Omar Kim's manager is Aisha Esposito.")
    assert subject_positions(rows, parse_query("Who manages Aisha Esposito?"))[0] == []


def test_a_hostile_text_costs_what_its_length_does() -> None:
    """Reading whose a memory is stops where the graph stops reading names."""
    roster = "\n".join(f"Name{i} Person's" for i in range(20000)) + " manager is Aisha Esposito."
    rows = _rows(roster, "Aisha Esposito reports to Amara Yilmaz.", "Aisha Esposito's manager is Tom Baker.")
    started = time.perf_counter()
    positions, _ = subject_positions(rows, parse_query("Who manages Aisha Esposito?"))
    assert time.perf_counter() - started < 1.0  # quadratic, it took minutes
    assert positions[-2:] == [1, 2]


# A colleague's notes in a work register (text, days ago); the last is the newest of her four offices.
MIRELA = [
    ("FYI: Mirela Sandu owns the Condor roadmap.", 520), ("Mirela Sandu moved off Condor onto Wren.", 430),
    ("From standup: Mirela Sandu now staffed on Osprey.", 120),
    ("Mirela Sandu reviewed my PR within an hour.", 205), ("Mirela Sandu flagged a flaky test in CI.", 400),
    ("Mirela Sandu brought cake for the team's anniversary.", 330),
    ("Mirela Sandu's manager: Helena Sousa.", 460),
    ("1:1 notes: Re-org: Lars Petersen takes over Mirela Sandu.", 390),
    ("Heard today: Manager change for Mirela Sandu: Ngozi Adeyemi.", 250),
    ("Mirela Sandu joined Mobile Platform squad.", 750),
    ("From standup: Mirela Sandu now sits with the Identity folks.", 437),
    ("1:1 notes: Mirela Sandu now sits with the Billing folks.", 169),
    ("Mirela Sandu rotated out of Billing into Developer Experience.", 123),
    ("Heard today: Mirela Sandu develops on a Framework 13.", 730),
    ("Heard today: Mirela Sandu upgraded to a ThinkPad T14.", 104),
    ("Mirela Sandu speaks Romanian natively.", 770), ("Mirela Sandu studied at Trinity College Dublin.", 790),
    ("Mirela Sandu is based in Amsterdam.", 407), ("Mirela is remote from Toronto now.", 248),
    ("1:1 notes: Mirela Sandu relocated to the Austin office.", 127),
    ("FYI: Mirela Sandu moved desks to Warsaw.", 85),
]


DAGNY = [  # a colleague's notes in a work register, written that many days ago
    ("Update - Dagny Halvorsen works out of the Sao Paulo office.", 894),
    ("Update - Dagny is remote from Austin now.", 583),
    ("1:1 notes: Dagny Halvorsen left the Austin office for Warsaw.", 492),
    ("Dagny Halvorsen flagged a flaky test in CI.", 218),
    ("Dagny Halvorsen presented the quarterly metrics; slides were dense.", 162),
    ("Dagny Halvorsen carries the storage pager.", 479),
    ("From standup: Dagny Halvorsen handed storage pager over and joined streaming.", 96),
    ("FYI: Dagny Halvorsen is on the Search Relevance team.", 845),
    ("1:1 notes: Dagny Halvorsen now sits with the Developer Experience folks.", 292),
    ("From standup: Dagny Halvorsen transferred to Mobile Platform.", 148),
    ("Heard today: Helena Sousa is Dagny Halvorsen's skip-level and direct manager.", 561),
    ("Update - Dagny Halvorsen now reports to Lars Petersen.", 118),
    ("Dagny Halvorsen speaks Romanian natively.", 807),
]


async def write_dated(service: MemoryService, p: Principal, texts: list[tuple[str, int]]) -> list:
    """Each text written as a memory that happened that many days ago; the memories in order."""
    now = datetime.now(UTC)
    return [(await service.write(p, text, occurred_at=now - timedelta(days=days))).memory for text, days in texts]


async def newest_first_only_with_the_rule(service: MemoryService, p: Principal, texts: list[tuple[str, int]],
                                          question: str) -> tuple[SearchResult, SearchResult]:
    """Writes `texts` (text, days ago), the last the newest version of the fact `question` asks
    about: it ranks first, and not with the present-tense rule off. Both results, explained."""
    *_, newest = await write_dated(service, p, texts)
    found = await service.search(p, question, explain=True)
    assert found.hits[0].id == newest.id, [(h.snippet, h.explain.get("on_topic")) for h in found.hits]
    service.settings = service.settings.model_copy(update={"present_focus": False})
    before = await service.search(p, question, explain=True)
    assert before.hits[0].id != newest.id  # what the subject hid: fails without the rule
    return found, before


async def test_the_newest_version_of_the_asked_fact_first(service: MemoryService, alice: Principal) -> None:
    """Versions phrased differently, another fact about her newer than all of them, a stable fact,
    and other people's memories sharing her words or her answer: the newest city comes first, then the
    older ones."""
    found, before = await newest_first_only_with_the_rule(service, alice, [
        ("Ines Moreau lives in Oslo.", 700), ("Ines Moreau moved to Lisbon last month.", 420),
        ("Ines Moreau drives a Tesla.", 20), ("Ines Moreau was born on 4 May 1991.", 900),
        ("Katarina Mbeki visited Porto last spring.", 60), ("Katarina Mbeki lives in Berlin these days.", 30),
        ("Ines Moreau relocated to Porto.", 120)], "Where does Ines Moreau live these days?")
    assert found.hits[0].explain["on_topic"] > 0
    assert [h.snippet for h in found.hits[1:3]] == ["Ines Moreau moved to Lisbon last month.",
                                                    "Ines Moreau lives in Oslo."]
    # explain names what the focus put first, and nothing else.
    assert [h.explain.get("answers_now", False) for h in found.hits[:5]] == [True, True, True, False, False]
    assert not any(h.explain.get("answers_now") for h in before.hits)
    # The birthday and the car are other facts about her: after the versions, not among them.
    assert {h.snippet for h in found.hits[3:5]} == {"Ines Moreau drives a Tesla.",
                                                    "Ines Moreau was born on 4 May 1991."}
    assert "on_topic" not in before.hits[0].explain


async def test_a_question_with_no_time_word_gets_the_newest_version_first(service: MemoryService,
                                                                         alice: Principal) -> None:
    """"Who does Ines Moreau work for?" asks where she works now, as surely as with "now"; "Where did
    she grow up?" asks a value held for good, and her newer memories are no versions of it."""
    await newest_first_only_with_the_rule(service, alice, [
        ("Ines Moreau works at Brightwater Health.", 700), ("Ines Moreau drives a Tesla.", 20),
        ("Ines Moreau grew up in Lyon.", 900), ("Ines Moreau joined Plumtree Media as an engineer.", 420),
        ("Katarina Mbeki works at Globex.", 30), ("Ines Moreau signed with Globex as a data engineer.", 120)],
        "Who does Ines Moreau work for?")
    service.settings = service.settings.model_copy(update={"present_focus": True})
    await write_dated(service, alice, [("Ines Moreau moved to Lisbon.", 100), ("Ines Moreau lives in Oslo.", 10)])
    found = await service.search(alice, "Where did Ines Moreau grow up?", explain=True)
    assert found.hits[0].snippet == "Ines Moreau grew up in Lyon."
    assert "on_topic" not in found.hits[0].explain


async def test_a_version_worded_unlike_the_others_answers_by_the_attribute_it_states(service: MemoryService,
                                                                                   alice: Principal) -> None:
    """"Signe Dahl took over as Thandiwe Thorsen's line manager." is worded unlike her earlier
    managers' notes, and the chain's cut left it out, an older manager first; "line manager" states
    the asked attribute in the lexicon's words, so it answers, and it is the newest."""
    found, _ = await newest_first_only_with_the_rule(service, alice, [
        ("Marco Bellini supervises Thandiwe Thorsen's work.", 520),
        ("Thandiwe Thorsen now works for Kasper Holm instead of Marco Bellini.", 250),
        ("Wendell Iwasaki is in charge of the book club these days.", 100),
        ("Ugo Hoffmann reports to Ahmed Saleh as well.", 60), ("Thandiwe Thorsen codes in VS Code.", 10),
        ("Signe Dahl took over as Thandiwe Thorsen's line manager.", 190)],
        "Who supervises Thandiwe Thorsen at the moment?")
    assert found.hits[0].explain.get("on_topic") is not None  # the focus ordered it
    assert found.hits[0].explain.get("states_asked_attribute")  # by its words ("line manager")


async def test_the_answer_past_a_colleagues_first_ten_memories(service: MemoryService, alice: Principal) -> None:
    """A colleague with twenty notes in a work register: the newest office ("moved desks to
    Warsaw") shares no word with the question, and ranks past the first ten of her memories,
    where the focus did not look."""
    await newest_first_only_with_the_rule(service, alice, MIRELA, "Which office is Mirela Sandu in?")


async def test_a_newer_note_naming_no_one_does_not_answer_whom_she_reports_to(service: MemoryService,
                                                                               alice: Principal) -> None:
    """Her newer note on her pager came first for "Who does she report to?": the chain took it in
    by its shape. A manager is a person, and a note naming no value states none."""
    await write_dated(service, alice, DAGNY)
    found = await service.search(alice, "Who does Dagny Halvorsen report to currently?", limit=20, explain=True)
    assert found.hits[0].snippet == "Update - Dagny Halvorsen now reports to Lars Petersen."
    nameless = [h for h in found.hits if h.explain.get("names_no_value")]
    assert {h.snippet for h in nameless} == {
        "From standup: Dagny Halvorsen handed storage pager over and joined streaming.",
        "Dagny Halvorsen carries the storage pager.",
        "Dagny Halvorsen presented the quarterly metrics; slides were dense."}
    assert not any(h.explain.get("answers_now") for h in nameless)


async def test_a_pet_kept_at_home_does_not_say_where_she_lives(service: MemoryService, alice: Principal) -> None:
    """"Ines Baptiste keeps a grey tabby at home." stated a home in the lexicon's words, and so
    answered where she lives past the chain's cut, ahead of her newer address: "at home" is an
    idiom (the lexicon's `idioms`), no statement of a city."""
    await write_dated(service, alice, [
        ("Ines Baptiste keeps a grey tabby at home.", 518),
        ("Ines Baptiste adopted a pair of guinea pigs from the shelter.", 196),
        ("Ines Baptiste is organising a surprise party for a colleague.", 351),
        ("Ines Baptiste plays table tennis twice a week.", 245),
        ("Ines Baptiste started trail running in the spring.", 114),
        ("Ines Baptiste takes all the photos on a Nokia G42.", 602),
        ("Ines Baptiste finally replaced the a Nokia G42 with a Fairphone 5.", 389),
        ("Ines Baptiste's place is in Kaunas, near the river.", 1025),
        ("Big news: Ines Baptiste relocated from Kaunas to Montpellier.", 755),
        ("Ines Baptiste found an apartment in Ljubljana and left Montpellier.", 738),
        ("Ines Baptiste's new address is in Aarhus.", 657),
        ("Ines Baptiste broke up with Linnea; now seeing Kwame.", 267),
        ("Ines Baptiste's birthday is on 19 June.", 879)])
    found = await service.search(alice, "What city does Ines Baptiste live in?", limit=20, explain=True)
    assert found.hits[0].snippet == "Ines Baptiste's new address is in Aarhus."
    tabby = next(h for h in found.hits if "tabby" in h.snippet)
    assert not tabby.explain.get("states_asked_attribute") and not tabby.explain.get("answers_now")


async def test_a_subjects_notes_are_not_one_fact_by_the_name_they_share(service: MemoryService) -> None:
    """With no time word the versions rule's groups answer too. By their stored vectors a
    colleague's short notes are alike by his name: his office, the language he speaks and where
    he studied in one group, which an answer among them brought in whole. Compared with the name
    masked, as the chain compares them, the language is in none (a value both name still links two:
    "Zurich" of his office and of his school)."""
    texts = ["Tomasz Lindgren is based in Amsterdam.", "Heard today: Tomasz Lindgren relocated to the Zurich office.",
             "Tomasz Lindgren speaks Hungarian natively.", "Tomasz Lindgren studied at ETH Zurich.",
             "Tomasz Lindgren develops on a ThinkPad T14.", "Tomasz Lindgren is on project Kingfisher."]
    stored = await service.vectors.embedder.embed_documents(texts)
    rows = [{"id": uuid4(), "content": text, "kind": "fact", "about": 1.25, "embedding": Vector(vector)}
            for text, vector in zip(texts, stored, strict=True)]
    conflict = service.vectors.embedder.spec.conflict_similarity
    assert [0, 1, 2, 3] in alike(rows, conflict)  # the premise: by the stored vectors, one group
    closeness = await similarities(rows, parse_query("Where is Tomasz Lindgren based?"), service.vectors, conflict)
    group = [closeness[r["id"]].alike for r in rows]
    assert len(closeness) == len(texts)
    assert group[2] is None, group  # the language he speaks is no office
    assert group[0] is None or group[0] != group[3], group  # nor where he studied, by the name


async def test_versions_worded_alike_stay_newest_first_under_the_focus(service: MemoryService,
                                                                     alice: Principal) -> None:
    """Three versions worded alike: the chain's one cut among three leaves the newest out, but the
    versions rule's groups (stored vectors) hold all three, so the focus keeps the newest first."""
    *_, newest = await write_dated(service, alice, [
        ("The search pipeline's rate limit is 50 per second.", 300),
        ("The search pipeline's rate limit is 200 per second.", 200),
        ("Rate limit of the pricing pipeline: 500 requests per second.", 150),
        ("The search pipeline's rate limit is 500 per second.", 100)])
    found = await service.search(alice, "What rate limit does the search pipeline have?", explain=True)
    assert found.hits[0].id == newest.id, [(h.snippet, h.explain.get("on_topic")) for h in found.hits]
    assert found.hits[0].explain.get("on_topic") is not None  # the focus ordered it


async def test_a_new_users_first_facts_each_answer_what_they_state(service: MemoryService, alice: Principal) -> None:
    """A new user's first facts, one each of three attributes, no two alike by their words: each
    question gets the fact stating what it asks, whichever is newer. The chain alone takes the
    closest and the next for versions of one fact (with three memories there is one drop to cut
    at), and put the employer first for "Where does the user live now?". A fact with a second
    version keeps its versions together, newest first."""
    await write_dated(service, alice, [("The user lives in Bristol.", 300),
                                       ("The user works at Brightwater Analytics.", 290),
                                       ("The user's editor is Zed.", 280)])
    for question, answer in [("Where does the user live now?", "Bristol"),
                             ("Who does the user work for now?", "Brightwater Analytics"),
                             ("Which editor does the user use these days?", "Zed")]:
        found = await service.search(alice, question, explain=True)
        assert answer in found.hits[0].snippet, (question, [h.snippet for h in found.hits])
        assert [h.explain.get("states_another_attribute", False) for h in found.hits] == [False, True, True]
    await write_dated(service, alice, [("The user relocated to Leeds.", 20)])
    found = await service.search(alice, "Where does the user live now?")
    assert [h.snippet for h in found.hits[:2]] == ["The user relocated to Leeds.", "The user lives in Bristol."]


async def test_a_subject_written_in_lower_case(service: MemoryService, alice: Principal) -> None:
    """No capitalised name: the run of words the results share ("billing worker") is the subject."""
    found, _ = await newest_first_only_with_the_rule(service, alice, [
        ("The billing worker keeps its state in Cassandra.", 600),
        ("Billing worker traffic is served out of eu-north-1.", 10),
        ("The search worker keeps its state in MySQL 8.", 30),
        ("Finished porting the billing worker to MongoDB.", 200)],
        "What is the billing worker persisting to these days?")
    assert found.hits[1].snippet == "The billing worker keeps its state in Cassandra."


async def test_the_newest_version_of_a_fact_about_the_user(service: MemoryService, alice: Principal) -> None:
    """An agent's notes about its user, phrased three ways, beside the user's other facts and a
    newer car that is the neighbour's: the user's newest car comes first."""
    found, _ = await newest_first_only_with_the_rule(service, alice, [
        ("I drive a Kia Niro.", 600), ("The user owns a Tesla Model 3.", 300),
        ("User works at Quillstone.", 20), ("User is allergic to cats.", 900),
        ("My neighbour just bought a Renault Zoe.", 10), ("Got my new Mini Cooper from the dealer.", 100)],
        "What car do I drive these days?")
    assert "on_topic" not in next(h for h in found.hits if "neighbour" in h.snippet).explain


async def test_a_question_of_the_users_own_with_no_time_word_gets_the_newest_version(service: MemoryService,
                                                                                    alice: Principal) -> None:
    """"Who is my manager?" asks who it is now as surely as with "now": two of the user's notes state
    the manager, and the newer one comes first, above the older that names the question's words."""
    found, _ = await newest_first_only_with_the_rule(service, alice, [
        ("My manager is Dana Whitfield.", 330), ("I drive a 2016 Honda Civic.", 300),
        ("Alex Moreno works at Stripe as a backend engineer.", 250), ("I had a long call about the roadmap.", 200),
        ("Dana left the company; my new manager is Omar Haddad.", 170)],
        "Who is my manager?")
    assert found.hits[1].snippet == "My manager is Dana Whitfield."


async def test_a_question_of_the_users_own_with_no_time_word_about_a_fact_stated_once(
        service: MemoryService, alice: Principal) -> None:
    """A new user's first facts, each stated once, and a note stating nothing: with no time word,
    one note stating the asked attribute is no versions, and the closest answers, however old."""
    await write_dated(service, alice, [("I live in Halifax.", 300), ("I had a long call about the roadmap.", 290),
                                       ("My car is a Skoda Octavia.", 200),
                                       ("User is on the payroll of Brightwater Health.", 100)])
    for question, answer in [("Where is home for me?", "Halifax"), ("What car do I drive?", "Skoda")]:
        found = await service.search(alice, question, explain=True)
        assert answer in found.hits[0].snippet, (question, [h.snippet for h in found.hits])
        assert not any("answers_now" in h.explain for h in found.hits)


async def test_a_version_naming_only_its_value_states_the_attribute_by_the_value(service: MemoryService,
                                                                              alice: Principal) -> None:
    """"Lockfiles come from bun now." names no package manager but the one it uses: the lexicon's
    value words (npm, pnpm, bun) say what it states, which the embedder could not tell from the
    user's newer shell and office."""
    found, _ = await newest_first_only_with_the_rule(service, alice, [
        ("Our services install dependencies with npm.", 500), ("Switched every repo over to pnpm.", 200),
        ("User's default shell is zsh.", 20), ("The user works from the Lisbon office.", 10),
        ("Lockfiles come from bun now.", 40)],
        "Which package manager am I using these days?")
    assert found.hits[0].explain.get("states_asked_attribute")


def test_a_question_asking_an_attribute_of_the_user_matches_no_word_for_the_user() -> None:
    assert parse_query("Who does the user work for now?").matched == "Who does work for?"
    assert parse_query("Which company employs the user currently?").matched == "Which company employs?"
    # "user" names a thing, the user's person is someone else, or no attribute is asked: all kept.
    for question in ("Where is the user table defined?", "Where does my sister live now?",
                     "What did the user say about the migration?"):
        parsed = parse_query(question)
        assert parsed.words is None and parsed.matched == parsed.text


async def test_the_word_user_lists_no_memory_for_a_question_about_the_users_attribute(
        service: MemoryService, alice: Principal) -> None:
    """Notes about the user written "User ..." matched "user" in full text, whatever they state, and
    lifted every such note over "I started a new job at ...": only the asked words list them now."""
    await write_dated(service, alice, [("User works at Corvid Security.", 300), ("User dropped Emacs for Kate.", 200),
                                       ("The user table has a unique index on email.", 150),
                                       ("I started a new job at Brightwater Health.", 20)])
    found = await service.search(alice, "Who does the user work for now?", explain=True)
    fulltext = {h.snippet: h.explain["fulltext"] for h in found.hits}
    assert fulltext["User works at Corvid Security."] is not None
    assert fulltext["User dropped Emacs for Kate."] is None
    table = await service.search(alice, "Where is the user table defined?", explain=True)
    assert table.hits[0].snippet.startswith("The user table") and table.hits[0].explain["fulltext"] == 1


async def test_what_the_users_manager_does_is_the_managers(service: MemoryService, alice: Principal) -> None:
    """"My manager works India Standard Time hours." is the manager's time zone, not a newer one of
    the user's; "My manager changed to Ruth Okonkwo." is still the user's own fact."""
    found, _ = await newest_first_only_with_the_rule(service, alice, [
        ("User's working hours are Brazil time.", 400), ("My manager changed to Ruth Okonkwo.", 150),
        ("My manager works India Standard Time hours.", 5), ("The user switched to Pacific time.", 30)],
        "What time zone does the user work in now?")
    assert "on_topic" not in next(h for h in found.hits if "India" in h.snippet).explain
    assert "on_topic" in next(h for h in found.hits if "Ruth" in h.snippet).explain  # compared as the user's


@pytest.mark.parametrize(("texts", "other", "question"), [
    # An ex-wife's home, not a newer one of the user's.
    ([("I live in Leeds.", 600), ("User works at Quillstone.", 300), ("The user moved to Bristol.", 60)],
     "My ex-wife lives in Berlin.", "Where do I live these days?"),
    # Where a group the user was in once deploys, not a newer deploy target of the user's.
    ([("We deploy to AWS Lambda.", 400), ("My editor is Helix.", 200), ("The app is hosted on a Hetzner box.", 60)],
     "My old team deploys to Cloud Run.", "Where do we deploy at the moment?"),
    # Priya's laptop, though nothing says who Priya is to the user.
    ([("User's work laptop is a MacBook Pro M3.", 500), ("The user works from the Lisbon office.", 300),
      ("The user develops on a Dell XPS 15 now.", 60)],
     "Priya is selling her ThinkPad T14.", "What laptop is the user on at the moment?"),
], ids=["ex-wife", "old team", "her"])
async def test_someone_elses_newer_note_is_no_version_of_the_users(service: MemoryService, alice: Principal,
                                                                   texts: list[tuple[str, int]], other: str,
                                                                   question: str) -> None:
    """Another person's note, written after all but the user's newest version (5 days ago), is not
    compared as the user's: the user's newest comes first, and only with the rule."""
    *older, newest = texts
    found, _ = await newest_first_only_with_the_rule(service, alice, [*older, (other, 5), newest], question)
    assert "on_topic" not in next(h for h in found.hits if h.snippet == other).explain


async def test_a_friend_named_beside_the_user_is_not_the_user(service: MemoryService, alice: Principal) -> None:
    """"Priya Raman, the user's friend, lives in Lisbon." is Priya's home, not a newer one of the
    user's: the user's own newest city comes first, the friends' after it."""
    found, _ = await newest_first_only_with_the_rule(service, alice, [
        ("I live in Leeds.", 600), ("User is allergic to cats.", 900), ("User works at Quillstone.", 20),
        ("Priya Raman, the user's friend, lives in Lisbon.", 10), ("Ana, my best friend, moved to Porto.", 5),
        ("The user moved to Bristol last spring.", 300)], "Where do I live these days?")
    assert found.hits[1].snippet == "I live in Leeds."
    assert all("on_topic" not in h.explain for h in found.hits if "friend" in h.snippet)


async def test_the_newest_version_of_a_fact_about_someone_in_the_users_life(service: MemoryService,
                                                                          alice: Principal) -> None:
    """"My sister" is the subject, not the user: the sister's newest city first, not the user's own."""
    found, _ = await newest_first_only_with_the_rule(service, alice, [
        ("User's sister lives in Porto.", 600), ("I live in Berlin.", 5), ("My brother lives in Rome.", 50),
        ("My sister moved to Oslo last month.", 100)], "Where does my sister live these days?")
    assert found.hits[1].snippet == "User's sister lives in Porto."


async def test_the_users_person_is_also_the_name_a_note_gives_them(service: MemoryService, alice: Principal) -> None:
    """"My wife Sara works at Feedzai." says who the user's wife is: "Sara started at Talkdesk."
    answers "Where does my wife work now?", newest first, with nobody passing keys. Before, only
    the note saying "my wife" was hers, and with one of them nothing was compared."""
    found, _ = await newest_first_only_with_the_rule(service, alice, [
        ("My wife Sara works at Feedzai.", 400), ("I live in Lisbon.", 380), ("My brother Rui works at Sonae.", 300),
        ("Sara loves hiking in Sintra.", 50), ("I drive a Renault Zoe.", 20), ("Sara started at Talkdesk.", 100)],
        "Where does my wife work now?")
    assert found.hits[1].snippet == "My wife Sara works at Feedzai."


@pytest.mark.parametrize("says", ["My wife is Sara.", "My wife's name is Sara.", "My wife is called Sara."])
async def test_the_users_person_is_also_the_name_a_note_says_they_are(service: MemoryService, alice: Principal,
                                                                     says: str) -> None:
    """"My wife is Sara." is the user's own fact, and says the wife's name: Sara's notes are hers."""
    await newest_first_only_with_the_rule(service, alice, [
        (says, 500), ("Sara works at Feedzai.", 400), ("I live in Lisbon.", 380),
        ("Sara loves hiking in Sintra.", 50), ("I drive a Renault Zoe.", 20), ("Sara started at Talkdesk.", 100)],
        "Where does my wife work now?")


def test_the_name_a_note_gives_the_users_person_beside_the_role() -> None:
    """The name right beside the role, before or after it: her first name too, not her last (her
    brother may share it), and not a name beside another of the user's people."""
    wife = their_person("wife", ENGLISH)
    assert named_as(wife, ["My wife Sara Lopes works at Feedzai."], ENGLISH) == ["Sara Lopes", "Sara"]
    assert named_as(wife, ["Sara, my wife, works at Feedzai."], ENGLISH) == ["Sara"]
    assert named_as(wife, ["Rui, my brother, met my wife at work.", "My brother Rui met my wife."], ENGLISH) == []
    # A note saying who she is: the user's own fact, whose name is hers.
    assert named_as(wife, ["My wife is Sara Lopes."], ENGLISH) == ["Sara Lopes", "Sara"]
    assert named_as(wife, ["Sara is my wife.", "My brother is Rui.", "My wife is happy."], ENGLISH) == ["Sara"]
    # Her name said as hers: not what else of hers a note says.
    assert named_as(wife, ["My wife's name is Sara Lopes."], ENGLISH) == ["Sara Lopes", "Sara"]
    assert named_as(wife, ["My wife's job is Nursing.", "My wife's name is hard to spell."], ENGLISH) == []
    sister = their_person("irmã", PORTUGUESE)
    assert named_as(sister, ["A minha irmã Ana mudou-se para o Porto."], PORTUGUESE) == ["Ana"]
    assert named_as(sister, ["A Ana é a minha irmã."], PORTUGUESE) == ["Ana"]
    assert named_as(sister, ["A minha irmã chama-se Ana."], PORTUGUESE) == ["Ana"]


async def test_a_kind_of_thing_named_is_narrowed_to_the_asked_one(service: MemoryService, alice: Principal) -> None:
    """"API" names every API: the coupons API's newest region comes first, not another API's newer
    memory about the same region, and the older region follows."""
    found, _ = await newest_first_only_with_the_rule(service, alice, [
        ("Prod for the coupons API sits in ca-central-1.", 600),
        ("Thumbnails API still runs a test box in eu-central-1.", 10),
        ("Escalations for the coupons API go to Priti Shah.", 5),
        ("Yaw Boateng owns the exports API.", 3),
        ("Coupons API failed over to eu-central-1 for good.", 100)],
        "Which region does the coupons API run in currently?")
    assert found.hits[1].snippet == "Prod for the coupons API sits in ca-central-1."


async def test_an_update_naming_the_value_it_replaces_is_a_version(service: MemoryService, alice: Principal) -> None:
    """"standup moved 9:45 -> 9:15" is worded unlike "syncs daily at 9:45", but names the time the
    version before it named: it is the newest version, above the older times and the team's newer
    facts of other kinds (without the shared value the chain left it out and it ranked third)."""
    *_, newest = await write_dated(service, alice, [
        ("Team Kiln syncs daily at 10:30.", 400), ("Team Kiln syncs daily at 9:45.", 250),
        ("Team Kiln talks in #triage.", 20), ("Team Kiln owns the billing service.", 30),
        ("Team Kiln standup moved 9:45 -> 9:15.", 100)])
    found = await service.search(alice, "When is the morning meeting for team Kiln at present?", explain=True)
    assert [h.snippet for h in found.hits[:3]] == ["Team Kiln standup moved 9:45 -> 9:15.",
                                                   "Team Kiln syncs daily at 9:45.", "Team Kiln syncs daily at 10:30."]
    assert found.hits[0].id == newest.id


@pytest.mark.parametrize("question, notes", [
    ("Where does team Jackdaw chat at the moment?",
     [("Team Jackdaw talks in #deploys.", 720), ("Team Jackdaw archived #deploys; use #oncall.", 540),
      ("Team Jackdaw archived #oncall; use #kestrel-ops.", 460), ("Team Jackdaw standup @ 15:30.", 240),
      ("#triage is currently muted by most people.", 280)]),
    ("What's team Dunlin's current channel?",
     [("Questions for team Dunlin -> #incidents-live.", 720), ("Questions for team Dunlin -> #kestrel-ops.", 480),
      ("Team Dunlin opened #platform-help as the new home.", 280), ("Calendar: team Dunlin check-in, 10:15.", 180),
      ("Team Upland posts release notes in #oncall these days.", 270)]),
])
async def test_the_newest_channel_first_above_a_newer_time(service: MemoryService, alice: Principal,
                                                           question: str, notes: list[tuple[str, int]]) -> None:
    """A team's channels were no values ("#oncall" is in lower case), so its versions named none and
    the team's newer standup time, the only note naming a value, answered where it chats."""
    written = await write_dated(service, alice, notes)
    found = await service.search(alice, question, explain=True)
    assert found.hits[0].id == written[2].id


async def test_a_closest_memory_stating_another_attribute_does_not_start_the_answers(
        service: MemoryService, alice: Principal) -> None:
    """A colleague's move is closer to "Who does she report to currently?" than her new manager
    once her name is masked, and the chain from it gathered her offices: the manager named in the
    lexicon's words starts the chain, and the newest manager comes first (before, her newest
    office did)."""
    await write_dated(service, alice, [
        ("Update - Helena Sousa is Anouk Mwangi's skip-level and direct manager.", 300),
        ("Anouk Mwangi writes most of the Puffin code.", 700),
        ("From standup: Anouk Mwangi moved off Puffin onto Albatross.", 140),
        ("From standup: Anouk Mwangi badges into Zurich most days.", 800),
        ("Anouk Mwangi relocated to the Singapore office.", 620),
        ("1:1 notes: Anouk Mwangi left the Singapore office for Nairobi.", 580),
        ("Heard today: Congrats to Anouk Mwangi: new title SRE.", 140),
        ("Manager change for Anouk Mwangi: Yasmin Haddad.", 10)])
    found = await service.search(alice, "Who does Anouk Mwangi report to currently?")
    assert found.hits[0].snippet == "Manager change for Anouk Mwangi: Yasmin Haddad.", [h.snippet for h in found.hits]


async def test_the_first_hits_are_the_same_whatever_the_limit(service: MemoryService, alice: Principal) -> None:
    """A caller asking for 1, 3 or 5 hits gets the first of what a caller asking for 10 gets: the
    stages after the SQL one (the newest version first) see at least a window's worth of hits."""
    await write_dated(service, alice, [
        ("Ines Moreau lives in Oslo.", 700), ("Ines Moreau moved to Lisbon last month.", 420),
        ("Ines Moreau drives a Tesla.", 20), ("Ines Moreau was born on 4 May 1991.", 900),
        ("Katarina Mbeki visited Porto last spring.", 60), ("Katarina Mbeki lives in Berlin these days.", 30),
        ("Ines Moreau relocated to Porto.", 120)])
    question = "Where does Ines Moreau live these days?"
    ten = [h.id for h in (await service.search(alice, question, limit=10)).hits]
    for limit in range(1, 10):
        assert [h.id for h in (await service.search(alice, question, limit=limit)).hits] == ten[:limit], limit


def test_a_label_saying_how_a_note_came_is_no_part_of_what_it_states() -> None:
    """"Heard today:", "From standup:", "1:1 notes:" open notes of every kind; a label naming what
    is stated stays."""
    for text, left in [("Heard today: someone carries the streaming pager.", "someone carries the streaming pager."),
                       ("From standup: someone picked up Osprey.", "someone picked up Osprey."),
                       ("1:1 notes: someone is remote from Singapore now.", "someone is remote from Singapore now."),
                       ("Update - someone moved to Lisbon.", "someone moved to Lisbon."),
                       ("someone manager: Lars Petersen.", "someone manager: Lars Petersen."),
                       ("Rescheduled: team Drift sync is 10:00.", "Rescheduled: team Drift sync is 10:00."),
                       ("Update - ", "Update - ")]:  # a label alone is all there is to compare
        assert unlabelled(text, ENGLISH) == left


async def test_a_label_saying_how_a_note_came_does_not_join_it_to_others(service: MemoryService,
                                                                          alice: Principal) -> None:
    """A colleague's notes, some opened "Heard today:", "Update -" or "FYI:": the label put the newest
    manager apart from the one before, and her promotion to a manager's title answered who she
    reports to now. Without the label the two managers chain and the newer comes first."""
    await write_dated(service, alice, [
        ("Heard today: Gwendolyn Kuznetsov works out of the Zurich office.", 677),
        ("Gwendolyn Kuznetsov relocated to the Toronto office.", 313),
        ("Gwendolyn Kuznetsov presented the quarterly metrics; slides were dense.", 113),
        ("Gwendolyn Kuznetsov suggested we cut scope on the migration.", 24),
        ("Gwendolyn Kuznetsov - Product Designer.", 703),
        ("Gwendolyn Kuznetsov promoted to Engineering Manager.", 146),
        ("Gwendolyn Kuznetsov reports to Rohan Mehta.", 260),
        ("Update - Gwendolyn Kuznetsov now reports to Helena Sousa.", 40),
        ("Gwendolyn Kuznetsov writes most of the Heron code.", 391),
        ("Gwendolyn Kuznetsov was pulled onto Wren after Heron shipped.", 157),
        ("Heard today: Gwendolyn Kuznetsov upgraded to a MacBook Air 15.", 333),
        ("FYI: Gwendolyn Kuznetsov's MacBook Air 15 died; loaner Framework 13 for now.", 206)])
    found = await service.search(alice, "Who does Gwendolyn Kuznetsov report to currently?")
    assert "Helena Sousa" in found.hits[0].snippet, [h.snippet for h in found.hits]


async def test_a_new_question_about_the_present_is_embedded_with_its_subject_masked_in_one_call(
        database: Database, service: MemoryService, settings: Settings, alice: Principal) -> None:
    """The focus compares the subject's memories with the question without its subject, a text no
    search asked before: where the question alone tells the subject (the user, a person's full name,
    someone in the user's life) it is embedded in the search's own call for the question, and the
    focus finds it in the query cache, with or without a time word, of the user too. A name of one
    word may be narrowed by the results: it is not embedded beside."""
    counted, embedder = counting_service(database, service, settings)
    older, newer, *_ = await write_dated(counted, alice, [("My laptop is a ThinkPad X1 Carbon.", 300),
                                                          ("I switched to a Framework 13.", 20),
                                                          ("Odalys Pellegrini lives in Leipzig.", 200),
                                                          ("Odalys Pellegrini moved to Berlin.", 10),
                                                          ("My sister lives in Porto.", 150),
                                                          ("My sister moved to Lisbon.", 5)])
    asked = {"What laptop am I on now?": ("What laptop am I on?", f"What laptop am {MASK} on now?"),
             "Where does Odalys Pellegrini live now?": ("Where does Odalys Pellegrini live?",
                                                       f"Where does {MASK} {MASK} live now?"),
             "Which city is Odalys Pellegrini based in?": ("Which city is Odalys Pellegrini based in?",
                                                          f"Which city is {MASK} {MASK} based in?"),
             "Where does my sister live now?": ("Where does my sister live?", f"Where does {MASK} live now?")}
    for question, call in asked.items():
        embedder.query_calls.clear()
        found = await counted.search(alice, question, explain=True)
        assert embedder.query_calls == [list(call)], question
        assert "on_topic" in found.hits[0].explain, question
    assert found.hits[0].snippet == "My sister moved to Lisbon."
    embedder.query_calls.clear()
    found = await counted.search(alice, "What laptop am I on these days?")
    assert found.hits[0].id == newer.id != older.id
    assert embedder.query_calls == [[f"What laptop am {MASK} on these days?"]]  # the question's own vector cached
    embedder.query_calls.clear()
    await counted.search(alice, "Which laptop do I have?")
    assert embedder.query_calls == [["Which laptop do I have?", f"Which laptop do {MASK} have?"]]
    # A name of one word may be a kind of thing the results narrow ("the coupons API"): they decide.
    await write_dated(counted, alice, [("The coupons API runs in eu-west-1.", 90),
                                       ("The coupons API moved to us-east-2.", 3)])
    embedder.query_calls.clear()
    found = await counted.search(alice, "Which region does the coupons API run in currently?", explain=True)
    assert embedder.query_calls[0] == ["Which region does the coupons API run in?"]
    assert "on_topic" in found.hits[0].explain  # compared, by a text embedded on its own


async def test_the_words_decide_before_a_masked_question_is_embedded(database: Database, service: MemoryService,
                                                                    settings: Settings, alice: Principal) -> None:
    """A question with no time word whose subject's memories each state another attribute than it
    asks has no versions to order: no model run for the question with its subject masked (a text no
    search asked before). With a memory that may be a version, the masked question is embedded."""
    counted, embedder = counting_service(database, service, settings)
    await write_dated(service, alice, [("The consent worker is released under a proprietary licence.", 300),
                                       ("The consent worker schema lives in Cassandra.", 200),
                                       ("Aurelio Conti holds the pager for the consent worker.", 100)])
    question = "Which licence covers the consent worker?"
    assert applies(parse_query(question))
    found = await counted.search(alice, question, explain=True)
    assert found.hits and "on_topic" not in found.hits[0].explain
    assert not [text for text in embedder.asked if MASK in text]
    await write_dated(service, alice, [("The consent worker switched to GPL-3.0 last spring.", 50)])
    await counted.search(alice, question)
    assert [text for text in embedder.asked if MASK in text]

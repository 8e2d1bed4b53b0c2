"""A language is data: a second lexicon (Portuguese) is read by the same code as English, its keys,
time words, dates and words for the user recognised where English's are not, and through the real
service a keyed write in Portuguese replaces the older value and a Portuguese question gets the
current value first (docs/languages.md)."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from importlib import resources

import pytest
from pydantic import ValidationError

from mcp_memory.config import Settings
from mcp_memory.graph.about_user import about_someone_else, person_asked_about, speaks_of_user
from mcp_memory.graph.keys import key_of, qualified
from mcp_memory.graph.names import names_in, writer_names
from mcp_memory.graph.questions import asked, asked_for
from mcp_memory.lexicon import Lexicon, available, named
from mcp_memory.lexicon.english import ENGLISH
from mcp_memory.lexicon.portuguese import PORTUGUESE
from mcp_memory.models import MemoryFilter
from mcp_memory.retrieval.query import parse_query
from mcp_memory.retrieval.statement import build_search
from mcp_memory.service import MemoryService

from .conftest import principal


def day(d: str) -> datetime:
    return datetime.fromisoformat(d).replace(tzinfo=UTC)


def test_a_language_is_a_module_and_the_setting_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    assert {"english", "portuguese"} <= set(available())
    assert named("english") is ENGLISH and named("portuguese") is PORTUGUESE
    with pytest.raises(ValueError, match="portuguese"):
        named("klingon")
    monkeypatch.setenv("MCP_MEMORY_LANGUAGE", "portuguese")
    assert Settings().language == "portuguese"
    with pytest.raises(ValidationError, match="MCP_MEMORY_LANGUAGE"):
        Settings(language="klingon")


def test_every_lexicon_fills_every_list_and_queries_the_stored_configuration() -> None:
    """The stored column's text search configuration is the one every lexicon queries with: a
    lexicon naming another would match no stored word (docs/languages.md)."""
    stored = set(re.findall(r"to_tsvector\('(\w+)'", "".join(
        p.read_text(encoding="utf-8") for p in resources.files("mcp_memory.sql").iterdir() if p.name.endswith(".sql"))))
    assert stored == {"english"}
    # Lists some language needs no words in: English's "us" (lower case only), "let's"; Portuguese's
    # "outubro de 2023".
    # A language says "Kwame's manager" one way or the other: English's ending, Portuguese's words;
    # and counts back from now, or names the unit before or after, on one side of the unit or both.
    optional = ("user_words_lower", "not_owners", "month_year_joiners", "head_last", "possessive_endings",
                "possessive_words", "ago_after", "ago_before", "last_before", "last_after", "next_before",
                "next_after", "clitics")
    lists = [f for f in Lexicon.__dataclass_fields__ if f not in ("language", "text_search", *optional)]
    for language in available():
        lexicon = named(language)
        assert lexicon.text_search in stored, language
        assert [f for f in lists if not getattr(lexicon, f)] == [], language
        assert all(p == p.lower() for p in (*lexicon.present, *lexicon.past, *lexicon.user_words, *lexicon.people))


def test_a_key_in_portuguese_is_one_attribute_and_others_never_merge() -> None:
    city = {key_of(k, PORTUGUESE).attribute for k in ("cidade onde mora", "mora em", "onde vive", "cidade atual")}
    assert city == {"home city"}
    assert key_of("empresa", PORTUGUESE).attribute == "employer" != key_of("cargo", PORTUGUESE).attribute
    assert key_of("cidade natal", PORTUGUESE).attribute == "hometown"
    # "casa" (a home) and "casado" (married) share Snowball's stem: the partner's word is kept whole
    assert key_of("casada com", PORTUGUESE).attribute == "partner" != key_of("casa de praia", PORTUGUESE).attribute
    # an earlier value's words: no current attribute of the subject's
    assert key_of("empresa anterior", PORTUGUESE).attribute != "employer" == key_of("empresa", PORTUGUESE).attribute
    # "padrão" says which value is in use, as "principal" does, not which kind: no qualifier
    plain = qualified("editor principal", PORTUGUESE)
    assert qualified("editor padrão", PORTUGUESE) == ("editor", frozenset()) == plain
    assert qualified("editor de código", PORTUGUESE) == ("editor", frozenset({"códig"}))
    assert not key_of("alergias", PORTUGUESE).single
    assert [key_of(k, PORTUGUESE).attribute for k in ("nome da equipa", "modelo do carro")] == ["team", "car"]
    assert key_of("cor favorita", PORTUGUESE).attribute == key_of("cores favoritas", PORTUGUESE).attribute
    # Read as English the same words are attributes of their own.
    assert {key_of(k, ENGLISH).attribute for k in ("cidade onde mora", "mora em")} & {"home city"} == set()
    known = {"home city": ["mora em"], "car": ["carro"], "employer": ["empresa"]}
    assert asked("Que carro conduz a Greta hoje em dia?", PORTUGUESE, known) == "car"
    assert asked("Onde mora a Greta agora?", PORTUGUESE, known) == "home city"
    assert asked("Como está a Greta?", PORTUGUESE, known) is None
    # the determiner's noun first, in either language ("trabalha em" is the employer's phrase)
    at_work = {**known, "employer": ["trabalha em"]}
    assert asked("Qual carro usa a Greta quando trabalha em Lisboa?", PORTUGUESE, at_work) == "car"


def test_a_question_word_asks_the_one_attribute_whose_values_it_asks_for_in_each_language() -> None:
    team = ["channel", "standup time", "where to ask question"]
    assert asked_for("Where does team Skua chat at the moment?", ENGLISH, team) == "channel"
    assert asked_for("When does team Skua meet these days?", ENGLISH, team) == "standup time"
    assert asked_for("Where's team Skua chatting now?", ENGLISH, team) == "channel"
    assert asked_for("What does team Skua do?", ENGLISH, team) is None  # no question word of a kind
    assert asked_for("Where is the API hosted?", ENGLISH, ["region", "deploy target"]) is None  # two places
    assert asked_for("Who runs the API?", ENGLISH, ["region", "point contact"]) is None  # own words: no kind
    person = ["home city", "birthday", "partner"]
    assert asked_for("Onde está a Greta agora?", PORTUGUESE, person) == "home city"
    assert asked_for("Com quem está a Greta agora?", PORTUGUESE, person) == "partner"
    assert asked_for("Who is Greta with now?", PORTUGUESE, person) is None  # English words read as Portuguese


@pytest.mark.parametrize(("question", "tense", "text"), [
    ("Onde mora a Greta agora?", "present", "Onde mora a Greta?"),
    ("Que carro conduz a Greta hoje em dia?", "present", "Que carro conduz a Greta?"),
    ("Onde morava a Greta antes?", "past", "Onde morava a Greta?"),
    ("Para quem trabalhava o Tomás anteriormente?", "past", "Para quem trabalhava o Tomás?"),
])
def test_a_questions_time_words_are_recognised(question: str, tense: str, text: str) -> None:
    parsed = parse_query(question, PORTUGUESE)
    assert parsed.tense == tense and parsed.text == text
    assert parse_query(question).tense is None  # English does not know them


def test_a_verb_after_the_opening_name_is_read_in_the_language() -> None:
    """"A Greta mora em Lisboa": Portuguese's verb makes Greta the subject; read as English, whose
    lexicon knows no "mora", the opening word is unsure and the city is taken instead."""
    def about(text: str, lexicon: Lexicon) -> list[str]:
        return [n.display for n in names_in(text, lexicon) if n.role == "about"]
    assert about("A Greta mora em Lisboa.", PORTUGUESE) == ["Greta"]
    assert about("Greta mudou-se para o Porto.", PORTUGUESE) == ["Greta"]
    assert about("Greta já mora no Porto.", PORTUGUESE) == ["Greta"]  # an adverb before the verb
    assert about("A Greta e o Rui mudaram-se para o Porto.", PORTUGUESE) == ["Greta", "Rui"]  # joined
    assert about("A Greta mora em Lisboa.", ENGLISH) == ["Lisboa"]
    # A note opening on its verb leaves its subject unsaid, in the language's verbs.
    assert about("Trabalha na Globex agora.", PORTUGUESE) == [] and about("Works at Globex now.", ENGLISH) == []
    assert about("Trabalha na Globex agora.", ENGLISH) == ["Globex"]


def test_dates_and_names_are_read_in_the_language() -> None:
    parsed = parse_query("O que fez a Greta em outubro de 2023?", PORTUGUESE)
    assert parsed.period is not None and parsed.period.start == day("2023-10-01")
    assert parsed.period.end == day("2023-11-01") and parsed.text == "O que fez a Greta?"
    assert parse_query("Onde trabalhava a Greta antes de 2019?", PORTUGUESE).period.end == day("2019-01-01")
    assert parse_query("O que aconteceu no dia 13 de outubro de 2023?", PORTUGUESE).period.start == day("2023-10-13")
    assert parse_query("Quem ligou durante março?", PORTUGUESE).period.month == 3
    # "Onde", "Quem" open a question and name no one, in Portuguese.
    assert parse_query("Onde mora a Greta?", PORTUGUESE).subject == ("Greta",)
    assert parse_query("Onde mora a Greta?").subject == ("Onde", "Greta")
    # A word opening a sentence only as one does is no part of the name after it, in Portuguese.
    assert [n.display for n in names_in("Ontem Ana Lima mudou-se para o Porto.", PORTUGUESE)
            if n.role == "about"] == ["Ana Lima"]
    assert [n.display for n in names_in("Também Ana Lima mora em Braga.", PORTUGUESE)
            if n.role == "about"] == ["Ana Lima"]
    assert [n.display for n in names_in("Em Nova Iorque, a Ana Lima conheceu o Rui.", PORTUGUESE)
            if n.role == "about"] == ["Ana Lima"]


def test_the_user_words_are_recognised() -> None:
    assert speaks_of_user("Eu conduzo um Kia Niro.", PORTUGUESE) and not speaks_of_user("Eu conduzo um Kia Niro.")
    assert speaks_of_user("O usuário mudou-se para Lisboa.", PORTUGUESE)
    assert about_someone_else("A minha irmã mora no Porto.", PORTUGUESE)
    assert not about_someone_else("A minha irmã e eu fomos a Lisboa.", PORTUGUESE)
    # A leader of the user's is the subject of what they do, not of being named.
    assert about_someone_else("O meu chefe mora em Lisboa.", PORTUGUESE)
    assert not about_someone_else("O meu chefe é o Ahmed.", PORTUGUESE)
    # Named right after the role, the person is that name: "A minha irmã Ana" is Ana.
    assert [n.display for n in names_in("A minha irmã Ana mudou-se para o Porto.", PORTUGUESE)
            if n.role == "about"] == ["Ana"]
    assert [n.display for n in names_in("O meu chefe Rui Costa mudou-se para Lisboa.", PORTUGUESE)
            if n.role == "about"] == ["Rui Costa"]
    assert about_someone_else("A minha antiga equipa usa Jira.", PORTUGUESE)
    assert about_someone_else("A nossa equipa antiga faz deploy no Heroku.", PORTUGUESE)
    assert not about_someone_else("A nossa equipa faz deploy no Heroku.", PORTUGUESE)
    assert about_someone_else("A minha ex-mulher mora em Berlim.", PORTUGUESE)
    assert about_someone_else("O meu ex mora em Berlim.", PORTUGUESE)
    assert about_someone_else("Mãe mora no Porto.", PORTUGUESE)
    assert not about_someone_else("Mãe e eu fomos ao Porto.", PORTUGUESE)
    assert about_someone_else("A Maria vendeu o portátil dela.", PORTUGUESE)
    assert not about_someone_else("A Maria vendeu o portátil.", PORTUGUESE)
    assert person_asked_about("Onde mora a minha irmã agora?", PORTUGUESE) == "irmã"
    assert names_in("Eu mudei-me para Lisboa.", PORTUGUESE)[0].user
    assert not names_in("Eu mudei-me para Lisboa.")[0].user
    assert [n.user for n in writer_names(["eu"], PORTUGUESE.user_names)] == [True]


def test_the_statement_reads_the_text_search_configuration_and_greetings_of_the_lexicon() -> None:
    other = replace(PORTUGUESE, text_search="simple")
    parsed = parse_query("Obrigado Greta, onde mora a Greta agora? -Porto", other)
    statement = build_search(principal(), parsed, MemoryFilter(), limit=5, settings=Settings(subject_boost=2))
    assert "'simple'" in statement.sql and "'english'" not in statement.sql
    assert any("[Oo]brigado" in a for a in statement.args if isinstance(a, str))
    english = build_search(principal(), parse_query("Thanks Greta, where does Greta live now?"), MemoryFilter(),
                           limit=5, settings=Settings(subject_boost=2))
    assert "'english'" in english.sql and not any("[Oo]brigado" in a for a in english.args if isinstance(a, str))


@pytest.fixture
async def portuguese(database, settings: Settings) -> MemoryService:
    return await MemoryService.open(database, settings.model_copy(update={"language": "portuguese"}))


async def _greta(service: MemoryService, user: str):
    p = principal(user)
    old = await service.write(p, "A Greta mora em Lisboa.", about=["Greta"], key="cidade onde mora",
                              occurred_at=day("2024-01-01"))
    new = await service.write(p, "A Greta mudou-se para o Porto.", about=["Greta"], key="mora em",
                              occurred_at=day("2025-03-01"))
    for text in ("A Greta mora perto de um parque e passeia ao domingo.", "A Greta lê um romance sobre Lisboa."):
        await service.write(p, text, occurred_at=day("2025-12-01"))
    return p, old.memory, new.memory


async def test_a_keyed_write_in_portuguese_replaces_the_older_value_and_a_question_gets_it_first(
        portuguese: MemoryService) -> None:
    assert portuguese.lexicon is PORTUGUESE
    p, old, new = await _greta(portuguese, "alice")
    assert new.replaced == [old.id] and new.key == "home city"
    assert (await portuguese.get(p, [old.id])).memories[0].superseded_by == new.id
    now = await portuguese.search(p, "Onde mora a Greta agora?", explain=True)
    assert [h.id for h in now.hits[:2]] == [new.id, old.id]
    assert now.hits[0].explain["fact"] == 1 and now.hits[1].valid_until == day("2025-03-01")
    assert now.intent is not None and now.intent.tense == "present"
    before = await portuguese.search(p, "Onde morava a Greta antes?")
    assert before.hits[0].id == old.id


async def test_a_move_said_with_a_reflexive_verb_is_where_she_lives_now(portuguese: MemoryService) -> None:
    """Nobody passing keys: "mudou-se para o Porto" states her home by its verb."""
    p = principal("alice")
    now = datetime.now(UTC)
    for text, days in [("A Greta Costa mora em Lisboa.", 400), ("A Greta Costa conduz um Renault Zoe.", 300),
                       ("A Greta Costa trabalha na Sonae.", 250), ("A Greta Costa mudou-se para o Porto.", 100),
                       ("A Greta Costa começou a correr.", 20)]:
        await portuguese.write(p, text, occurred_at=now - timedelta(days=days))
    found = await portuguese.search(p, "Onde mora a Greta Costa agora?", explain=True)
    assert [h.snippet for h in found.hits[:2]] == ["A Greta Costa mudou-se para o Porto.",
                                                   "A Greta Costa mora em Lisboa."]
    assert found.hits[0].explain.get("states_asked_attribute")


@pytest.mark.parametrize(("text", "about", "mentioned"), [
    # Opening on a verb in the first person, or an adverb, the note leaves its subject unsaid.
    ("Comprei bilhetes para Lisboa.", [], ["Lisboa"]),
    ("Já cheguei a Lisboa.", [], ["Lisboa"]),
    ("Atualizei o Node.js para a versão 22.", [], ["Node.js"]),
    # An adverb before an article and the subject is no part of it.
    ("Finalmente a Ana mudou-se para o Porto.", ["Ana"], ["Porto"]),
    # A title's full stop ends no sentence.
    ("Mudei de dentista: agora é a Dra. Koller.", [], ["Koller"]),
])
def test_an_opening_verb_or_adverb_in_portuguese_is_no_name(text: str, about: list[str], mentioned: list[str]) -> None:
    names = names_in(text, PORTUGUESE)
    assert [n.display for n in names if n.role == "about"] == about
    assert [n.display for n in names if n.role == "mentioned" and n.sure][:len(mentioned)] == mentioned


async def test_the_users_dentist_after_switching_in_portuguese(portuguese: MemoryService) -> None:
    """As in English (test_personal_store.py): naming the user's dentist is the user's own fact, one
    at a time, and the switch is the answer."""
    p = principal("alice")
    now = datetime.now(UTC)
    for text, days in [("A minha irmã Lena mora em Viena.", 330), ("O meu dentista é o Dr. Brandt.", 300),
                       ("Comecei a trabalhar na Sonae em Lisboa.", 250),
                       ("Mudei de dentista: agora é a Dra. Koller.", 150),
                       ("O meu parceiro Sam começou a aprender alemão.", 90)]:
        await portuguese.write(p, text, occurred_at=now - timedelta(days=days))
    found = await portuguese.search(p, "Quem é o meu dentista?")
    assert found.hits[0].snippet == "Mudei de dentista: agora é a Dra. Koller."


async def test_where_someone_works_stated_once_in_portuguese(portuguese: MemoryService) -> None:
    """"arranjou emprego" states an employer as "got a job" does; the other notes of Lena's state where
    she lives, and the one stating the employer answers (test_personal_store.py)."""
    p = principal("alice")
    now = datetime.now(UTC)
    for text, days in [("A minha irmã Lena mora em Viena.", 330), ("A Lena arranjou emprego na Siemens.", 280),
                       ("A Lena mudou-se para Graz.", 200)]:
        await portuguese.write(p, text, occurred_at=now - timedelta(days=days))
    found = await portuguese.search(p, "Onde trabalha a Lena?")
    assert found.hits[0].snippet == "A Lena arranjou emprego na Siemens."


async def test_a_question_that_chains_two_things_hops_in_portuguese(portuguese: MemoryService) -> None:
    """"Onde mora o gerente do Kwame?": the possessive is the lexicon's words ("do"), not English's
    "'s"; the hop reaches the manager's home city as it does in English (test_graph.py)."""
    p = principal()
    await portuguese.write(p, "O Kwame responde à Hana Dubois.", about=["Kwame"], key="gerente",
                           occurred_at=day("2024-01-10"))
    new = await portuguese.write(p, "O Diego Yilmaz é o novo chefe do Kwame.", about=["Kwame"], key="chefe",
                                 occurred_at=day("2025-06-01"))
    porto = await portuguese.write(p, "O Diego Yilmaz mora no Porto.", about=["Diego Yilmaz"], key="cidade")
    await portuguese.write(p, "A Hana Dubois mora em Lyon.", about=["Hana Dubois"], key="cidade")
    await portuguese.write(p, "O Kwame mora em Oslo.", about=["Kwame"], key="cidade")
    hits = (await portuguese.search(p, "Onde mora o gerente do Kwame agora?", explain=True)).hits
    assert [h.id for h in hits[:2]] == [porto.memory.id, new.memory.id], [h.snippet for h in hits]
    plain = (await portuguese.search(p, "Onde mora o Kwame agora?")).hits
    assert plain[0].snippet == "O Kwame mora em Oslo."
    # The user's own, by the lexicon's `user_possessives` ("o meu gerente"), as "my manager" in English.
    mine = await portuguese.write(p, "O meu gerente é a Hana Dubois.", about=["eu"], key="gerente")
    hits = (await portuguese.search(p, "Onde mora o meu gerente agora?", explain=True)).hits
    assert [h.snippet for h in hits[:2]] == ["A Hana Dubois mora em Lyon.", mine.memory.content]


async def test_the_users_person_and_a_name_key_in_portuguese(portuguese: MemoryService) -> None:
    """"Onde trabalha a minha irmã agora?" hops through the user's keyed sister, and a memory keyed
    "nome" gives its subject the name it holds, in the lexicon's words as in English (test_graph.py)."""
    p = principal()
    await portuguese.write(p, "A minha irmã é a Ana Costa.", about=["eu"], key="irmã", occurred_at=day("2024-01-10"))
    await portuguese.write(p, "A Ana Costa trabalha na Feedzai.", about=["Ana Costa"], key="empregador",
                           occurred_at=day("2024-05-01"))
    talkdesk = await portuguese.write(p, "A Ana Costa mudou-se para a Talkdesk.", about=["Ana Costa"],
                                      key="empregador", occurred_at=day("2025-05-01"))
    hits = (await portuguese.search(p, "Onde trabalha a minha irmã agora?", explain=True)).hits
    assert hits[0].id == talkdesk.memory.id and hits[0].explain["fact"] == 1
    await portuguese.write(p, "O nome do meu irmão é Rui.", about=["o meu irmão"], key="nome",
                           occurred_at=day("2024-01-10"))
    faro = await portuguese.write(p, "O meu irmão mora em Faro.", about=["o meu irmão"], key="cidade",
                                  occurred_at=day("2024-02-10"))
    hits = (await portuguese.search(p, "Onde mora o Rui agora?", explain=True)).hits
    assert hits[0].id == faro.memory.id and hits[0].explain["fact"] == 1


async def test_the_same_words_read_as_english_are_two_attributes(service: MemoryService) -> None:
    """The contrast that shows the lexicon is what reads them: English files the two keys apart."""
    p, old, new = await _greta(service, "bob")
    assert new.replaced is None and new.key != old.key
    hits = (await service.search(p, "Onde mora a Greta agora?", explain=True)).hits
    assert all("fact" not in (h.explain or {}) for h in hits)


def test_an_attribute_says_the_kind_of_memory_stating_it_where_its_words_agree() -> None:
    from mcp_memory.decisions.extraction import KINDS
    from mcp_memory.graph.keys import kind_of

    for lexicon in (ENGLISH, PORTUGUESE):
        assert {a.kind for a in lexicon.attributes} <= {*KINDS, None}, lexicon.language
    assert kind_of("favorite editor", ENGLISH) == "preference"
    assert kind_of("works at", ENGLISH) == kind_of("job", ENGLISH) == "fact"  # employer or job title: both facts
    assert kind_of("language", ENGLISH) is None  # a program's (no one kind) or the languages someone speaks
    assert kind_of("hosting", ENGLISH) is None and kind_of("favourite colour", ENGLISH) is None
    assert kind_of("empregador", PORTUGUESE) == "fact"


@pytest.mark.parametrize(("lexicon", "idiom", "statement"), [
    (ENGLISH, "Greta keeps two budgies at home.", "Home for Greta is Berlin."),
    (ENGLISH, "Greta brought home a rescue greyhound.", "Greta lives at home in Porto."),
    (PORTUGUESE, "A Greta mudou de ideias sobre o jantar.", "A Greta mudou de casa."),
    (ENGLISH, "Greta's practice moved to Sundays at 9.", "Greta moved to Madrid in March."),
])
def test_an_idiom_holding_an_attributes_word_states_none(lexicon: Lexicon, idiom: str, statement: str) -> None:
    """"at home" and "mudou de ideias" hold a home's words and state no home; the same words
    outside the idiom ("Home for Greta", "mudou de casa") or beside a cue ("lives at home") do."""
    from mcp_memory.graph.keys import cued_in, key_in

    assert "home city" not in cued_in(idiom, lexicon)
    key = key_in(idiom, lexicon, ["Greta"])
    assert key is None or key.attribute != "home city"  # the budgies and the greyhound state her pets
    assert "home city" in cued_in(statement, lexicon)


@pytest.mark.parametrize(("lexicon", "text", "attribute"), [
    (ENGLISH, "Odile picked up a Tesla Model 3 second-hand.", "car"),
    (ENGLISH, "Odile brought home a Maine Coon last weekend.", "pets"),
    (ENGLISH, "Odile rehomed the bearded dragon and got a pair of guinea pigs.", "pets"),
    (ENGLISH, "Odile signed up for a water polo league.", "sport"),
    (ENGLISH, "Odile got engaged to Linnea.", "partner"),
    (ENGLISH, "Odile was reassigned to Ember.", "project"),  # as "assigned" is
    (ENGLISH, "Odile switched to Helix last week.", "editor"),
    (PORTUGUESE, "A Odile usa o Neovim.", "editor"),
    (PORTUGUESE, "A Odile comprou um Renault Zoe.", "car"),
    (PORTUGUESE, "A Odile adotou um coelho.", "pets"),
])
def test_a_note_naming_only_the_make_the_animal_or_the_sport_states_the_attribute(
        lexicon: Lexicon, text: str, attribute: str) -> None:
    """A note names the car, the animal, the sport or the editor, not the attribute; those names are its cues.
    A word as often something else is none: "squash merges", "running the migration", a VW Golf."""
    from mcp_memory.graph.keys import cued_in

    assert cued_in(text, lexicon) == {attribute}
    assert cued_in("I prefer squash merges.", ENGLISH) == frozenset()
    assert cued_in("Odile is running the migration.", ENGLISH) == frozenset()
    assert cued_in("Odile drives a VW Golf.", ENGLISH) == {"car"}


CAR_NOTES = [("Odile Brandt's birthday is on 30 September.", 1030), ("Odile Brandt has a job at Orchid Telecom.", 1022),
             ("Odile Brandt left Orchid Telecom and joined Thistle & Co.", 955),
             ("Odile Brandt is allergic to cats.", 939),
             ("Odile Brandt laughed at my terrible pun during dinner.", 799),
             ("Odile Brandt accepted an offer from Bramblecote.", 784),
             ("Odile Brandt gets around in a Citroen Berlingo.", 759), ("Odile Brandt and Yuki are a couple.", 717),
             ("Odile Brandt takes all the photos on a Nokia G42.", 660),
             ("Odile Brandt finally replaced the Nokia G42 with a Sony Xperia 10.", 632),
             ("Odile Brandt's first week at Ironbark Studios went well.", 614),
             ("Odile Brandt dropped the Sony Xperia 10 in a lake and bought a OnePlus 12.", 577),
             ("Odile Brandt said the new bakery on the corner is overrated.", 524),
             ("Odile Brandt has a corn snake that sleeps on the sofa.", 497),
             ("Odile Brandt is reading a thriller set in Iceland.", 493),
             ("Odile Brandt upgraded to a Fairphone 5.", 384),
             ("Odile Brandt picked up a Tesla Model 3 second-hand.", 381),
             ("Odile Brandt brought home a bearded dragon last weekend.", 285),
             ("Odile Brandt adopted a border collie from the shelter.", 275),
             ("Odile Brandt and Yuki split up, and Odile Brandt is with Theo now.", 233),
             ("Odile Brandt and Theo split up, and Odile Brandt is with Callum now.", 159)]


async def test_a_car_named_by_its_make_alone_answers_what_someone_drives(service: MemoryService) -> None:
    """"What is Odile Brandt driving at the moment?" got her newer partner first: her newest car
    ("picked up a Tesla Model 3 second-hand.") says "car" nowhere, and the chain took her notes in
    by their shape. The make states the car, so it answers wherever the chain was cut."""
    p = principal()
    now = datetime.now(UTC)
    for text, days in CAR_NOTES:
        await service.write(p, text, occurred_at=now - timedelta(days=days))
    found = await service.search(p, "What is Odile Brandt driving at the moment?", explain=True)
    assert found.hits[0].snippet == "Odile Brandt picked up a Tesla Model 3 second-hand."
    assert found.hits[0].explain.get("states_asked_attribute")


def test_a_verb_with_its_pronoun_after_a_hyphen_holds_the_verbs_cue() -> None:
    """Portuguese writes a reflexive verb's pronoun after it ("mudou-se", "mudei-me"): cut before
    the word is stemmed, "A Ana mudou-se para o Porto." states a home as "mudou para" does. A
    hyphenated word that ends on no pronoun ("guarda-chuva") keeps its ending, and English its
    possessive cut."""
    from mcp_memory.graph.keys import cued_in

    assert cued_in("A Ana mudou-se para o Porto.", PORTUGUESE) == {"home city"}
    assert cued_in("Eu mudei-me para Lisboa.", PORTUGUESE) == {"home city"}
    assert PORTUGUESE.stems("guarda-chuva mudou-se") == ("guarda-chuv", "mud")
    assert ENGLISH.stems("Kwame's manager") == ENGLISH.stems("Kwame manager")


def test_a_words_other_forms_are_the_lexicons_in_each_language() -> None:
    assert ENGLISH.other_forms(ENGLISH.words("Where did Zainab grow up?")) == ["grew", "grown"]
    # A verb so common it says little: "went" matched any outing ("Where did Ana go on holiday?").
    assert ENGLISH.other_forms(ENGLISH.words("When did Caroline go to the support group?")) == []
    assert ENGLISH.other_forms(["grow", "grew"]) == ["grown"]  # a form the query holds is no other
    assert ENGLISH.other_forms(ENGLISH.words("Where does Greta live now?")) == []
    # A participle asks for no other form: "written in" is a passive, and "wrote" matched other notes.
    assert ENGLISH.other_forms(ENGLISH.words("What language is the refunds service written in?")) == []
    assert "fomos" in PORTUGUESE.other_forms(PORTUGUESE.words("Onde é que a Greta costuma ir?"))
    assert ENGLISH.other_forms(["ir"]) == [] and PORTUGUESE.other_forms(["go"]) == []


def test_a_word_left_out_as_too_common_leaves_its_forms_out() -> None:
    parsed = parse_query("When did we drive to the coast?")
    args = build_search(principal(), parsed, MemoryFilter(), limit=5, settings=Settings()).args
    assert "drove or driven" in args
    args = build_search(principal(), parsed, MemoryFilter(), limit=5, settings=Settings(), common=["drive"]).args
    assert not any(isinstance(a, str) and "drove" in a for a in args)


async def test_full_text_matches_a_query_word_by_its_other_forms(database, settings: Settings) -> None:
    """Irregular verbs are no stem of each other: "drive" in a question matched no "drove" in a
    memory, and a note saying "coast" three times outranked the one saying "we drove to the coast"."""
    service = await MemoryService.open(database, settings.model_copy(update={"weight_vector": 0.0,
                                                                               "weight_trigram": 0.0}))
    p = principal("forms")
    drove = await service.write(p, "We drove to the coast on Saturday.", occurred_at=day("2025-05-01"))
    await service.write(p, "Coast walks: the coast path, coast cafes and coast maps.", occurred_at=day("2025-05-01"))
    hits = (await service.search(p, "When did we drive to the coast?", limit=5, explain=True)).hits
    assert hits[0].id == drove.memory.id
    assert hits[0].explain is not None and hits[0].explain["fulltext"] == 1

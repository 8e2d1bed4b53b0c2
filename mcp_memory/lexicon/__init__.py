"""A language's words as data: what the graph room, retrieval, decisions and capture read of a
language. One `Lexicon` per language, passed as a value; adding a language adds a module beside
english.py (its `LEXICON`) and changes no code (docs/languages.md). Imports nothing of the package:
every layer may read it.

What a lexicon cannot change is the grammar the rules are written for: names are runs of capitalised
words, a possessive is "'s", and the decisions guard's rules were found on English notes. Words
belong here; a rule that only holds for one language's sentences says so where it is written."""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import snowballstemmer

# A word: letters and digits, joined by an apostrophe or a hyphen ("user's", "on-call").
WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")

# How a word bounds the period a date names: "before" and "prior to" end it where the date begins,
# "until", "till" and "by" where the date ends; "after" starts it where the date ends, "since"
# where it begins.
Bound = Literal["before", "until", "after", "since"]
# What a question word asks for ("who": a person), and so which attributes' values answer it.
Answer = Literal["person", "place", "time"]
TimeUnit = Literal["day", "week", "month", "year"]


@dataclass(frozen=True)
class Attribute:
    """One attribute a memory may state of its subject (a home city, an employer).

    `phrases`: how a writer names it as a key ("home city", "lives in"); `cues`: words that point to
    it in a question or a statement ("live", "town"); `single`: it holds one value at a time (a
    newer value replaces the older), else values accumulate (allergies, languages); `settled`: once
    held, it is held for good (a hometown, a birthday), so a question in no tense asks for the one
    value, not the newest of several (retrieval/focus.py); `kind`: the kind
    of memory stating it is, whoever states it (where someone lives is a fact, their editor a
    preference: extraction.py corrects a model's type by it), None where it may be more than one (a
    project's database is a fact, or a decision); `answers`: what its values are, as a question
    word asks for them (`Lexicon.question_words`: a manager is a person, a home city a place, a
    standup time a time), None where no question word asks for it alone; `named`: its values are
    names, written with a capital (a car's make, a project's, a team's), as a person's and a place's
    are, so a memory naming none states no value of it (retrieval/focus.py `naming_nothing`);
    `numbered`: its values are numbers written right after the name of what holds them ("Postgres
    16", "Node.js 22": a version), so a memory naming its subject so states it (retrieval/focus.py)."""

    name: str
    phrases: tuple[str, ...]
    cues: tuple[str, ...] = ()
    single: bool = True
    kind: str | None = None
    settled: bool = False
    answers: Answer | None = None
    named: bool = False
    numbered: bool = False

    @property
    def valued_by_names(self) -> bool:
        """Whether its values are names: a person's, a place's, or `named`."""
        return self.named or self.answers in ("person", "place")


@dataclass(frozen=True, eq=False)  # one per language: compared (and cached) by identity
class Lexicon:
    """A language's words. Every word is lower case; a phrase matches as whole words, any white space
    between them. An empty list turns its rule off for the language (nothing is found by it)."""

    language: str  # Snowball's name for it ("english")
    # PostgreSQL's text search configuration for the queries full text runs. It must be the one
    # `memories.fts` is stored with ('english', sql/001_init.sql) for the words to match: until a
    # deployment can choose the column's, every lexicon names 'english' (docs/languages.md).
    text_search: str
    # Words in a key that name no attribute ("their", "current"): dropped before keys are compared.
    key_fillers: frozenset[str]
    # Words no question is about (stop words), for matching a question with a key.
    stop_words: frozenset[str]
    # How a writer names the user in `about` ("me", "the user").
    user_names: frozenset[str]
    attributes: tuple[Attribute, ...] = field(default=())
    # Words the stemmer cuts to another word of another meaning ("dating" to "date", "building" to
    # "build"): kept whole wherever words are stemmed, so a "release date" is no partner's and a
    # "nightly build" no office.
    whole_words: frozenset[str] = frozenset()
    # Phrases holding an attribute's word that state none ("keeps two budgies at home", "brought home
    # a greyhound": no home city): a text's cues are read without them (graph/phrasebook.py `cue_stems`).
    idioms: tuple[str, ...] = ()
    # Pronouns written after a verb with a hyphen (Portuguese "mudou-se", "mudei-me"): cut before a
    # word is stemmed, as a possessive ending is, so "mudou-se" holds the cue "mudou".
    clitics: tuple[str, ...] = ()
    # Words that make a key an earlier value's ("previous employer", "old team"): none the subject
    # holds now, so never its current attribute.
    past_qualifiers: frozenset[str] = frozenset()
    # Words for what a value is ("name", "city", "model"): after an attribute's words they make a key
    # that attribute's value ("office city" the office, "team name" the team, "car model" the car),
    # not a city or a name of its own.
    value_words: frozenset[str] = frozenset()
    # Words a memory uses to say a value no longer holds ("no longer allergic to ...").
    ended: tuple[str, ...] = ()
    # Question words -> what they ask for ("who": a person): a question that names none of a
    # subject's attributes asks the one whose values are of that kind (`Attribute.answers`).
    question_words: dict[str, Answer] = field(default_factory=dict)
    # Question words that ask for the thing the words after them name ("which", "what": "Which
    # machine does the user work on?" asks the laptop, not what they work on).
    question_determiners: frozenset[str] = frozenset()

    # --- names (graph/names.py) -------------------------------------------------------------
    # Words that may open a clause capitalised without naming anyone: articles, pronouns,
    # question words, auxiliaries, the names of days and months, and the prepositions, conjunctions
    # and time words a sentence opens on before a name ("Yesterday Ana Lima moved ...").
    not_names: frozenset[str] = frozenset()
    # Words a name opening a sentence is the object of, not its subject ("After Quebec City, Odalys
    # Pellegrini ended up in Leipzig.", "At Acme Corp, Ana leads billing.").
    prepositions: frozenset[str] = frozenset()
    # What makes a sentence's capitalised opening word its subject, sure to be a name, when it comes
    # next: a verb of these ("Alice is", "Diego took"), or a word ending so that is no other word
    # of the lexicon's ("Alice lives", "Bob moved"; not "Lunch with", "Escalations for").
    subject_verbs: frozenset[str] = frozenset()
    subject_verb_endings: tuple[str, ...] = ()
    # Words that may stand between a subject and its verb ("Oskar just settled in Lisbon", "Ana
    # finally moved"): read past when looking for the verb.
    verb_adverbs: frozenset[str] = frozenset()
    # Words joining two subjects of one verb ("Ana and Rui moved to Porto"): both are whom it is about.
    subject_joiners: tuple[str, ...] = ()
    # Verbs an agent's note opens on with its subject unsaid ("Prefers Helix", "Uses pnpm", "Use
    # Helix for editing"): never a name, and no name after them is the note's subject. No word that
    # is also a name ("Will", "Mark").
    opening_verbs: frozenset[str] = frozenset()
    # Keys that say what someone is called ("name", "nickname"): the one other name such a keyed
    # memory gives is its subject's (structure.py `names_subject`).
    name_keys: tuple[str, ...] = ()
    # Words that say what kind of thing a name is, with or without which it is the same thing ("team
    # Dotterel", "the Dotterel team", "Dotterel"; "project Atlas").
    classifiers: frozenset[str] = frozenset()

    # --- the user and the people in their life (graph/about_user.py) ------------------------
    # How a note or a question refers to the user: the first person (singular, and the plural of
    # the user's team) and the third person an agent writes in; any case.
    user_words: tuple[str, ...] = ()
    # How a transcript labels the agent's own turns ("Assistant: I'll note that"): its "I" is no one's.
    agent_labels: tuple[str, ...] = ()
    # Where a key's head word stands ("home city": city; "cidade onde mora": cidade).
    head_last: bool = True
    # Words for the user only in lower case: English "us" ("US" is a country).
    user_words_lower: tuple[str, ...] = ()
    # How a note says "the user's" before a person ("my", "our", "the user's").
    user_possessives: tuple[str, ...] = ()
    # Articles that may open a memory about a person in the user's life ("The client hosts on ...").
    articles: tuple[str, ...] = ()
    # After a person in the user's life, words that make the memory the user's too ("My wife and I ...").
    with_user: tuple[str, ...] = ()
    # People in the user's life ("sister", "client"): a memory whose subject is one of them speaks
    # of that person, not of the user. A role whose facts are the user's own ("manager", "team")
    # is not one.
    people: tuple[str, ...] = ()
    # Roles held by one person at a time whose naming is the user's own fact ("My boss is Ahmed
    # Saleh", "My manager changed to Ruth Okonkwo", "My dentist is Dr. Brandt") and who are the
    # subject of anything else said of them ("My manager works Brazil time hours"):
    # `naming_leaders`, then a name, say which.
    leaders: tuple[str, ...] = ()
    naming_leaders: tuple[str, ...] = ()
    # Words for a person other than the speaker ("her", "his"): a note opening on a name that speaks of
    # them so, and of the user not at all, is that person's ("Priya is selling her ThinkPad T14").
    third_persons: tuple[str, ...] = ()
    # Of those, the ones a sentence's subject takes ("she", "he"): a note opening on one is someone
    # else's, whoever it is ("She moved to Graz in June.").
    third_person_subjects: tuple[str, ...] = ()
    # Words for family said as a name, with no possessive ("Mom lives in Porto now", "Grandpa ..."):
    # a memory opening on one is that person's.
    kin_names: tuple[str, ...] = ()

    # --- one hop (retrieval/hop.py) --------------------------------------------------------------
    # How a question says a name holds a thing: endings after the name, the thing after them
    # ("Kwame's manager"), or words between the thing and the name after it (Portuguese "o gerente
    # do Kwame"). A language may use either or both.
    possessive_endings: tuple[str, ...] = ()
    possessive_words: tuple[str, ...] = ()

    # --- time (retrieval/query.py, retrieval/dates.py) ----------------------------------------
    # Phrases that say a question is about the present ("now", "these days") or the past ("used to").
    present: tuple[str, ...] = ()
    past: tuple[str, ...] = ()
    # Words that put a question in the past with no time phrase ("Where did she live?", "Which
    # team was he on?"): such a question is not taken to ask the newest value (retrieval/focus.py).
    past_auxiliaries: frozenset[str] = frozenset()
    # Month names -> 1..12: full names (a month alone, "during June", needs one) and abbreviations.
    months: dict[str, int] = field(default_factory=dict)
    month_abbreviations: dict[str, int] = field(default_factory=dict)
    # Words before a date that bound the period instead of naming it ("before 2019", "prior to").
    date_bounds: dict[str, Bound] = field(default_factory=dict)
    # Words that may lead a date and go with it ("in October 2023", "mid 2023").
    date_leads: tuple[str, ...] = ()
    # Words one of which must lead a month named alone ("in June", "last July").
    month_leads: tuple[str, ...] = ()
    # How an ordinal day ends ("13th"), and the words between day, month and year ("13 of
    # October", Portuguese "13 de outubro de 2023").
    day_suffixes: tuple[str, ...] = ()
    day_month_joiners: tuple[str, ...] = ()
    month_year_joiners: tuple[str, ...] = ()
    # What a keyed memory says it began with, read against the time it is written (retrieval/dates.py
    # `began_on`): a day by its distance from that day ("yesterday": -1; not "today", which says no
    # more than the time of writing and would put the day's first hour before a note of the
    # morning), a unit of time by its words ("weeks": week), a count in words ("a", "two"; digits
    # are every language's), the words counting units back from now after the count ("two weeks
    # ago") or before it ("há duas semanas"), and those naming the unit before this one or after
    # it, before the unit ("last month", "next year") or after it ("o mês passado", "o ano que vem").
    # Those words name a day of the week too (`weekdays`, Monday 0: "last Monday" the latest before
    # the day of writing, "next Friday" the first after it; "a segunda passada", "a sexta que vem").
    days_from_today: dict[str, int] = field(default_factory=dict)
    weekdays: dict[str, int] = field(default_factory=dict)
    time_units: dict[str, TimeUnit] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    ago_after: tuple[str, ...] = ()
    ago_before: tuple[str, ...] = ()
    last_before: tuple[str, ...] = ()
    last_after: tuple[str, ...] = ()
    next_before: tuple[str, ...] = ()
    next_after: tuple[str, ...] = ()

    # --- search (retrieval/statement.py) ------------------------------------------------------
    # Words that greet or thank the one named next ("Hey Mel,", "Thanks Mel!"): said to them, not of them.
    greetings: tuple[str, ...] = ()
    # A word as a question asks with it, then the forms a memory may say it in that the text
    # search's stemmer leaves apart, a group between bars: an irregular verb's base form, then its
    # past and participle ("grow grew grown": a question says "did she grow up", a memory "she grew
    # up"). Full text matches the question's word by those forms too. One way only: a question's
    # participle is mostly a passive ("What is the service written in?") that the answer says
    # without the verb, and "wrote" matched other notes. Forms that are common words of another
    # meaning ("rose", "ground") and verbs that say little ("go", "get") are better left out.
    word_forms: tuple[str, ...] = ()

    # --- the decisions guard's wording rules (decisions/wording.py) ---------------------------
    # Words opening a note capitalised without naming anyone, beyond `not_names` ("FYI", "Update");
    # a label of these alone says how a note came, not what it states (retrieval/focus.py).
    note_openers: frozenset[str] = frozenset()
    # Words before "'s" that make a contraction, owning nothing ("let's"), beyond `not_names`.
    not_owners: frozenset[str] = frozenset()
    # Numbers in words, which are values as digits are ("three weeks" / "four weeks").
    number_words: frozenset[str] = frozenset()
    # Words before a thing named in two words ("the reviews API", "our billing worker").
    determiners: tuple[str, ...] = ()
    # How a word ends when it may be a verb ("uses", "adopted", "running").
    verb_endings: tuple[str, ...] = ()

    # --- auto-recall (capture/recall.py) --------------------------------------------------------
    # Words of a prompt that say nothing about its subject (those of four letters or more count).
    prompt_stop_words: frozenset[str] = frozenset()

    @cached_property
    def _stemmer(self) -> snowballstemmer.stemmer:
        return snowballstemmer.stemmer(self.language)

    def words(self, text: str) -> list[str]:
        return self.tokens(text.lower())

    def tokens(self, text: str) -> list[str]:
        """`text`'s words as written (their case kept): a capitalised one may be a name or a value."""
        return WORD.findall(text)

    @cached_property
    def _forms(self) -> dict[str, tuple[str, ...]]:
        forms: dict[str, list[str]] = {}
        for group in self.word_forms:
            first, *others = group.split()
            forms.setdefault(first, []).extend(others)
        return {word: tuple(dict.fromkeys(others)) for word, others in forms.items()}

    def other_forms(self, words: Iterable[str]) -> list[str]:
        """The forms a memory may say `words` in (`word_forms`), none of them nor a stop word, in order."""
        given = list(dict.fromkeys(words))
        found = (form for word in given for form in self._forms.get(word, ()))
        return [form for form in dict.fromkeys(found) if form not in given and form not in self.stop_words]

    def stems(self, text: str, *, drop: frozenset[str] = frozenset()) -> tuple[str, ...]:
        """The stems of `text`'s words, those in `drop` left out, possessive endings and clitics cut."""
        words = [self._cut.sub("", w) for w in self.words(text)] if self._cut is not None else self.words(text)
        return tuple(w if w in self.whole_words else self._stemmer.stemWord(w) for w in words if w and w not in drop)

    @cached_property
    def _cut(self) -> re.Pattern[str] | None:
        """The endings `stems` cuts off a word: its possessive endings and clitics."""
        endings = (*self.possessive_endings, *self.clitics)
        return re.compile(f"(?:{'|'.join(map(re.escape, endings))})$") if endings else None


def phrases_pattern(phrases: tuple[str, ...] | frozenset[str]) -> str:
    """A regular expression alternative of `phrases`, longest first (so "right now" is taken whole
    before "now"), any white space between a phrase's words; "" for none."""
    return "|".join(r"\s+".join(map(re.escape, p.split())) for p in sorted(phrases, key=lambda p: (-len(p), p)))


def available() -> list[str]:
    """The languages there is a lexicon for: the modules beside this one."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def named(language: str) -> Lexicon:
    """The lexicon of `language` (its module's `LEXICON`); ValueError naming those there are."""
    if language not in available():
        raise ValueError(f"no lexicon for language '{language}'; there are: {', '.join(available())}")
    lexicon = importlib.import_module(f"{__name__}.{language}").LEXICON
    if not isinstance(lexicon, Lexicon):
        raise ValueError(f"mcp_memory/lexicon/{language}.py has no LEXICON")
    return lexicon

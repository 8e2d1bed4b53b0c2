"""Memories about the user an agent works for, who is never named: "I drive a Kia Niro", "User
moved to Lisbon", "The user's editor is Helix", "We deploy to Fly.io". A question that speaks of
the user ("What car do I drive now?", "Where does the user live these days?") is about all of
those at once, and not about the people in the user's life who share its words ("My neighbour
just bought a Renault Zoe", "User's sister lives in Porto").

The words are the lexicon's (`user_words`, `user_possessives`, `people`, ...); every function reads
the lexicon it is given, English by default. The shapes are English grammar: a possessive is
"'s", a plural adds "s" or "es"."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ..lexicon import Lexicon, phrases_pattern
from ..lexicon.english import ENGLISH

_B, _E = r"(?<![\w'-])", r"(?![\w'-])"
_NEVER = "(?!)"  # what a rule whose words a language leaves empty matches: nothing
# How much of a note is read for a third person after its opening name.
THIRD_PERSON_WITHIN = 300
# How many words may place a leader of the user's before the word naming them ("My boss at Sword
# Health is ..."): a role's place is a short phrase, and past it a clause says something else.
LEADER_PLACED_WITHIN = 4
_NAME = r"[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*"  # a run of capitalised words ("O'Brien" too, as graph/names.py reads one)


def _alternatives(words: tuple[str, ...]) -> str:
    return phrases_pattern(words) or _NEVER


def _role(roles: tuple[str, ...], possessive: bool = True, prefixed: bool = True) -> str:
    """One of `roles`, maybe after one word ("best", "older"), maybe with a prefix joined to it
    unless `prefixed` is false ("ex-wife", "step-father": group 1 holds it, another person than a
    wife), maybe plural, and possessive unless `possessive` is false; the role is group 1."""
    prefix = r"(?:[^\W\d_]+-)?" if prefixed else ""
    return (r"\s+(?:[\w-]+\s+)?(" + prefix + "(?:" + _alternatives(roles) + r"))(?:s|es)?"
            + ("(?:'s|')?" if possessive else "") + _E)


def _optional(words: tuple[str, ...]) -> str:
    """One of `words` and the space after it, maybe; "" for none."""
    return f"(?:(?:{phrases_pattern(words)})\\s+)?" if words else ""


@dataclass(frozen=True)
class _Patterns:
    user: re.Pattern[str]  # a word for the user, anywhere
    theirs: str  # the user's: how a note names someone in their life ("my", "our", "the user's")
    someone_else: re.Pattern[str]
    someone_named: re.Pattern[str]
    role_named: re.Pattern[str]
    named_third: re.Pattern[str]
    named_persons: re.Pattern[str]
    their_person: re.Pattern[str]
    named_persons_anywhere: re.Pattern[str]
    kin_named: re.Pattern[str]
    person_is: re.Pattern[str]


@functools.lru_cache(maxsize=8)
def _patterns(lexicon: Lexicon) -> _Patterns:
    """The lexicon's words as patterns, built once per lexicon."""
    words = [w for w in (phrases_pattern(lexicon.user_words_lower),) if w]
    if lexicon.user_words:
        words.append("(?i:" + phrases_pattern(lexicon.user_words) + ")")
    user = re.compile(_B + "(?:" + ("|".join(words) or _NEVER) + r")(?:'s)?" + _E)
    theirs = "(?:" + _alternatives(lexicon.user_possessives) + ")"
    role = _role(lexicon.people)
    # At the start of the memory: its subject. "My wife and I moved to Berlin" is the user's too.
    with_user = (r"(?!\s+(?:" + phrases_pattern(lexicon.with_user) + ")" + _E + ")") if lexicon.with_user else ""
    # The user's, as a note opens on it: "my", "the user's"; "o meu" (an article may come first).
    opening = _optional(lexicon.articles) + theirs
    someone_else = _NEVER
    if lexicon.user_possessives or lexicon.articles:
        someone_else = r"(?:" + "|".join(filter(None, (phrases_pattern(lexicon.user_possessives),
                                                         phrases_pattern(lexicon.articles)))) + ")" + role + with_user
    if lexicon.user_possessives and lexicon.leaders:
        # A leader of the user's is the subject too, unless what follows says who they are: a word
        # saying so, maybe after a few words placing the role ("at Sword Health", "on the new team"), then
        # (maybe after a present-tense word or an article) a name ("My boss is Ahmed Saleh", "My manager
        # has changed to Ruth Okonkwo", "The user's new manager at Sword Health is Inês Carvalho"), or a
        # label ("My manager:").
        placed = r"(?:[\w'-]+\s+){0," + str(LEADER_PLACED_WITHIN) + "}"
        named = (r"\s+" + placed + "(?:" + phrases_pattern(lexicon.naming_leaders) + r")\s+"
                 + _optional(lexicon.present + lexicon.articles) + r"(?-i:[A-Z])|" if lexicon.naming_leaders else "")
        someone_else += "|" + opening + _role(lexicon.leaders, possessive=False) + r"(?!" + named + r"\s*:)" + with_user
    if lexicon.user_possessives and lexicon.past_qualifiers and lexicon.classifiers:
        # A group the user was in once ("My old team deploys to Cloud Run", "a minha equipa antiga"):
        # what it does now is no fact of the user's.
        once = "(?:" + phrases_pattern(tuple(sorted(lexicon.past_qualifiers))) + ")"
        group = "(?:" + phrases_pattern(tuple(sorted(lexicon.classifiers))) + ")s?"
        someone_else += ("|" + opening + r"\s+(?:" + once + r"[\s-]+" + group + "|" + group + r"\s+" + once + ")" + _E
                         + with_user)
    if lexicon.third_persons:
        # Someone else's person ("Her husband works at Google", "His manager ..."): whoever "her" is, not the user.
        someone_else += ("|(?:" + phrases_pattern(lexicon.third_persons) + ")" + _role(lexicon.people + lexicon.leaders)
                         + with_user)
    if lexicon.third_person_subjects:
        # Or the third person themselves, the note's subject ("She moved to Graz in June.", "He started a
        # new job at Siemens."): whoever it is, not the user an agent writes of as "I" or "the user".
        someone_else += "|(?:" + phrases_pattern(lexicon.third_person_subjects) + ")" + _E + with_user
    someone_else = re.compile(r"(?i)^\W*(?:" + someone_else + ")")
    # Family said as a name ("Mom lives in Porto now"): no possessive, no article; not spoken to ("Dad,
    # I moved to Porto"). The name is the subject, as any name opening a note is (graph/names.py).
    kin_named = re.compile(r"(?i)^\W*(?:" + _alternatives(lexicon.kin_names) + r")(?:'s)?" + _E + r"(?!\s*,)"
                           + with_user if lexicon.kin_names else _NEVER)
    # Or a name the user's person stands beside, between commas or in brackets ("Priya Raman, the user's
    # friend, lives in Lisbon", "Ana (my sister) moved": how a small model writes the facts it extracts
    # about the people a user mentions; not "However, my sister moved").
    beside = "(?i:" + theirs + ")" + role
    someone_named = re.compile(r"^\W*(?P<name>" + _NAME + r")(?:,\s+" + beside + r"\s*,|\s*\(\s*" + beside + r"\s*\))\s"
                               if lexicon.user_possessives else _NEVER)
    # Or the name right after the role the note opens on ("My wife Sara works at Feedzai", "My manager,
    # Tom Hale, approved it", "A minha irmã Ana mudou-se"): the person is named, and the name is theirs.
    # Not a possessive's thing ("My wife's name is Sara") nor a label ("My manager: Tom Hale").
    role_named = re.compile(r"^\W*(?i:" + opening + _role(lexicon.people + lexicon.leaders, possessive=False)
                            + r")\s*,?\s+(?P<name>" + _NAME + r")(?=\s*[,;.!?(]|\s+[a-z]|\s*$)"
                            if lexicon.user_possessives else _NEVER)
    # Or a name, a word in lower case (its verb), and later a word for a third person ("Priya is selling
    # her ThinkPad T14"): hers, where the user is not spoken of (`about_someone_else`).
    named_third = re.compile(r"^\W*" + _NAME + r"\s+[a-z].*?" + _B + "(?i:" + phrases_pattern(lexicon.third_persons)
                             + ")" + _E if lexicon.third_persons else _NEVER)
    # At the start, after a note's label: someone in a named person's life is the subject ("Kenji
    # Chaudhry's brother has the phone number ...", "FYI: Omar Kim's mentor prefers IntelliJ").
    their_own = _NAME + "'s" + role  # someone in a named person's life, by the role after the name
    named_persons = re.compile(r"^\W*(?:.{1,30}?:\s+)?(?:the\s+)?" + their_own)
    # Anywhere in a question: "Where does my sister live now?".
    their_person = re.compile(r"(?i)" + _B + theirs + role)
    # Anywhere in a question: "Who is Omar Kim's mentor's manager?".
    named_persons_anywhere = re.compile(_B + their_own)
    # Or a note saying who the user's person is ("My wife is Sara.", "My wife's name is Sara.", "Sara is
    # my wife.", "A minha irmã é a Ana."): the user's own fact, whose name is that person's
    # (retrieval/whose.py `named_as`).
    person_is = re.compile(_NEVER)
    if lexicon.user_possessives and lexicon.naming_leaders:
        person = "(?i:" + opening + _role(lexicon.people + lexicon.leaders, possessive=False) + ")"
        leaders = r"(?i:" + phrases_pattern(lexicon.naming_leaders) + ")"
        naming = r"\s+" + leaders + r"\s+" + _optional(lexicon.articles)
        # Their name said as theirs: "My wife's name is Sara" (the lexicon's `name_keys`).
        owned = "" if not lexicon.name_keys else \
            r"|\s+(?i:" + phrases_pattern(lexicon.name_keys) + r")\s+" + leaders + r"\s+"
        owner = "(?i:" + opening + _role(lexicon.people + lexicon.leaders, possessive=bool(owned)) + ")"
        person_is = re.compile(r"^\W*(?:(?P<role>" + owner + ")(?:" + naming + owned + ")(?P<name>" + _NAME
                               + r")(?=\s*[,;.!?(]|\s*$)|(?i:" + _optional(lexicon.articles) + ")(?P<name2>" + _NAME
                               + ")" + naming + "(?P<role2>" + person
                               + "))")
    return _Patterns(user, theirs, someone_else, someone_named, role_named, named_third, named_persons, their_person,
                     named_persons_anywhere, kin_named, person_is)


def person_asked_about(question: str, lexicon: Lexicon = ENGLISH) -> str | None:
    """The role of the person in the user's life a question asks about ("Where does my sister
    live now?" -> "sister"), or None."""
    match = _patterns(lexicon).their_person.search(question)
    return match.group(1).lower() if match else None


def their_person(role: str, lexicon: Lexicon = ENGLISH) -> re.Pattern[str]:
    """That person as a memory names them: "User's sister", "my older sister's"."""
    return re.compile(r"(?i)" + _B + _patterns(lexicon).theirs + _role((role,), prefixed=False))


@functools.lru_cache(maxsize=8)
def anyone_of_theirs(lexicon: Lexicon = ENGLISH) -> re.Pattern[str]:
    """Any person in the user's life as a memory names them by their role, a leader too ("my
    brother", "the user's manager")."""
    if not lexicon.user_possessives:
        return re.compile(_NEVER)
    return re.compile(r"(?i)" + _B + "(?:" + _alternatives(lexicon.user_possessives) + ")"
                      + _role(lexicon.people + lexicon.leaders))


def named_persons_relation(text: str, lexicon: Lexicon = ENGLISH) -> str | None:
    """The role of the person a memory is about when that is someone in a named person's life
    ("Kenji Chaudhry's brother has the phone number ..." -> "brother"), or None ("Kenji
    Chaudhry's phone number is ..."; work roles such as "manager" are the named person's own
    facts, the lexicon's `people`)."""
    match = _patterns(lexicon).named_persons.search(text)
    return match.group(1).lower() if match else None


def named_persons_asked_about(question: str, lexicon: Lexicon = ENGLISH) -> str | None:
    """The role of someone in a named person's life a question asks about ("Who is Omar Kim's
    mentor's manager?" -> "mentor"), or None."""
    match = _patterns(lexicon).named_persons_anywhere.search(question)
    return match.group(1).lower() if match else None


def speaks_of_user(text: str, lexicon: Lexicon = ENGLISH) -> bool:
    return _patterns(lexicon).user.search(text) is not None


def speaks_of_user_again(text: str, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether `text` speaks of the user twice: past the possessive that names their person ("My
    sister gave me a bike.": the user's news too; "My sister lives in Porto.": hers alone)."""
    user = _patterns(lexicon).user
    first = user.search(text)
    return first is not None and user.search(text, first.end()) is not None


def asks_of_user_alone(question: str, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether `question` speaks of the user and of nobody in their life ("Which framework do we
    write end-to-end tests in?", not "Where does my sister live?")."""
    return speaks_of_user(question, lexicon) and person_asked_about(question, lexicon) is None


def about_someone_else(content: str, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether a memory's subject is a person in the user's life rather than the user: named by
    their role ("My sister lives in Porto", `led_by_their_person`) or by name with the role beside
    it ("Priya Raman, the user's friend, lives in Lisbon"), or by name and then as a third person, the
    user not spoken of ("Priya is selling her ThinkPad T14"), or as family says a name ("Mom lives in
    Porto now")."""
    if led_by_their_person(content, lexicon) or named_beside_their_person(content, lexicon) is not None:
        return True
    if _patterns(lexicon).kin_named.search(content) is not None:
        return True
    head = content[:THIRD_PERSON_WITHIN]
    return _patterns(lexicon).named_third.search(head) is not None and not speaks_of_user(head, lexicon)


def named_beside_their_person(content: str, lexicon: Lexicon = ENGLISH) -> tuple[int, bool] | None:
    """Where the name of the user's person a memory opens on starts, the name beside their role
    ("Lena, the user's sister, lives in Berlin": 0; "My wife Sara works at Feedzai": 8), and whether
    it comes right after the role the note opens on (then the note is theirs, not the user's, a
    leader's too: "My boss Ahmed Saleh moved to Lisbon"; "My boss is Ahmed Saleh" is the user's own).
    That name is its subject, however short; None where there is none."""
    patterns = _patterns(lexicon)
    if (found := patterns.someone_named.search(content)) is not None:
        return found.start("name"), False
    if (found := patterns.role_named.search(content)) is not None:
        return found.start("name"), True
    return None


def said_to_be(content: str, lexicon: Lexicon = ENGLISH) -> tuple[tuple[int, int], int] | None:
    """Where a note says who the user's person is ("My wife is Sara.", "Sara is my wife."): the span of
    the words naming the person by their role, and where the name starts; None where it says not."""
    if (found := _patterns(lexicon).person_is.search(content)) is None:
        return None
    role, name = ("role", "name") if found.group("role") is not None else ("role2", "name2")
    return found.span(role), found.start(name)


def led_by_their_person(content: str, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether a memory opens on a person in the user's life named by their role alone ("My sister
    lives in Porto"): the subject is that person, whom no name in it names."""
    return _patterns(lexicon).someone_else.search(content) is not None


def without_user(text: str, mask: str, lexicon: Lexicon = ENGLISH) -> str:
    """The words for the user replaced by `mask`, as names are (retrieval/focus.py): what is left
    is what is said."""
    return _patterns(lexicon).user.sub(mask, text)

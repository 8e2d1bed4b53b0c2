"""Memories about the user an agent works for, who is never named: "I drive a Kia Niro", "User
moved to Lisbon", "The user's editor is Helix", "We deploy to Fly.io". A question that speaks of
the user ("What car do I drive now?", "Where does the user live these days?") is about all of
those at once, and not about the people in the user's life who share its words ("My neighbour
just bought a Renault Zoe", "User's sister lives in Porto").

The two tables below are the only place these words live; add a language by adding its words."""

from __future__ import annotations

import re

# How a note or a question refers to the user: first person (singular and the plural of the
# user's team) and the third person an agent writes in. Whole words, any case, except "us"
# (lower case only: "US" is a country).
USER_WORDS = ("i", "i'm", "i've", "i'd", "i'll", "me", "my", "mine", "myself", "we", "we're", "we've", "our",
              "ours", "ourselves", "the user", "user")

# People in the user's life. A memory whose subject is one of them ("My brother got a job at
# Tessellate", "The client hosts on Heroku") speaks of that person, not of the user. Not here:
# "manager", "boss", "lead" ("My boss is Ahmed Saleh" is the user's own fact) and "team" (an
# agent's "the team" is the user's).
PEOPLE = (
    # family and home
    "friend", "best friend", "neighbour", "neighbor", "partner", "wife", "husband", "spouse", "fiancé", "fiancée",
    "girlfriend", "boyfriend", "son", "daughter", "kid", "child", "children", "baby", "mother", "mom", "mum",
    "father", "dad", "parent", "brother", "sister", "sibling", "twin", "cousin", "uncle", "aunt", "nephew", "niece",
    "grandmother", "grandma", "grandfather", "grandpa", "grandparent", "in-law", "family", "roommate", "flatmate",
    "housemate", "landlord", "landlady",
    # work and school
    "colleague", "coworker", "co-worker", "teammate", "classmate", "cofounder", "co-founder", "founder",
    "designer", "engineer", "developer", "intern", "contractor", "consultant", "client", "customer", "mentor",
    "mentee", "student", "teacher", "doctor", "therapist", "coach", "assistant", "direct report", "new hire",
    "recruiter", "investor", "vendor", "accountant", "lawyer",
)

_B, _E = r"(?<![\w'-])", r"(?![\w'-])"


def _alternatives(words: tuple[str, ...]) -> str:
    return "|".join(r"\s+".join(map(re.escape, w.split())) for w in sorted(words, key=len, reverse=True))


_USER = re.compile(_B + r"(?:us|(?i:" + _alternatives(USER_WORDS) + r"))(?:'s)?" + _E)
# The user's: how a note names someone in their life ("my", "our", "the user's", "User's").
_THEIRS = r"(?:my|our|(?:the\s+)?user's)"


def _role(roles: tuple[str, ...]) -> str:
    """One of `roles`, maybe after one word ("best", "older"), maybe plural or possessive; the role
    is group 1."""
    return r"\s+(?:[\w-]+\s+)?(" + _alternatives(roles) + r")(?:s|es)?(?:'s)?" + _E


_ROLE = _role(PEOPLE)
# At the start of the memory: its subject. "My wife and I moved to Berlin" is the user's too.
_SOMEONE_ELSE = re.compile(r"(?i)^\W*(?:" + _THEIRS + r"|the|a|an)" + _ROLE
                           + r"(?!\s+and\s+(?:i|me|we|the\s+user|user)" + _E + ")")
# At the start, after a note's label: someone in a named person's life is the subject ("Kenji
# Chaudhry's brother has the phone number ...", "FYI: Omar Kim's mentor prefers IntelliJ").
_NAMED_PERSONS = re.compile(r"^\W*(?:.{1,30}?:\s+)?(?:the\s+)?[A-Z][\w-]*(?:\s+[A-Z][\w-]*)*'s" + _ROLE)
# Anywhere in a question: "Where does my sister live now?".
_THEIR_PERSON = re.compile(r"(?i)" + _B + _THEIRS + _ROLE)


def person_asked_about(question: str) -> str | None:
    """The role of the person in the user's life a question asks about ("Where does my sister
    live now?" -> "sister"), or None."""
    match = _THEIR_PERSON.search(question)
    return match.group(1).lower() if match else None


def their_person(role: str) -> re.Pattern[str]:
    """That person as a memory names them: "User's sister", "my older sister's"."""
    return re.compile(r"(?i)" + _B + _THEIRS + _role((role,)))


def named_persons_relation(text: str) -> str | None:
    """The role of the person a memory is about when that is someone in a named person's life
    ("Kenji Chaudhry's brother has the phone number ..." -> "brother"), or None ("Kenji
    Chaudhry's phone number is ..."; work roles such as "manager" are the named person's own
    facts, PEOPLE)."""
    match = _NAMED_PERSONS.search(text)
    return match.group(1).lower() if match else None


def speaks_of_user(text: str) -> bool:
    return _USER.search(text) is not None


def about_someone_else(content: str) -> bool:
    """Whether a memory's subject is a person in the user's life rather than the user."""
    return _SOMEONE_ELSE.search(content) is not None


def without_user(text: str, mask: str) -> str:
    """The words for the user replaced by `mask`, as names are (retrieval/focus.py): what is left
    is what is said."""
    return _USER.sub(mask, text)

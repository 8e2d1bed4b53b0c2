"""Whom two stored memories are about, by what the graph recorded when each was written: the
entities it is about (the writer's `about`, the rules, a model's extraction, merged as the user or
the console merged them) and every entity it names. The readers that ask whether an older memory
is a version of a newer one (decisions/guard.py) ask this first; the text is read only where the
graph knows nothing of either memory.

What the text cannot see and this can: a subject the writer gave that the text leaves out ("Moved
to Berlin" about Greta Ibarra), a first name the graph joined to its full name, an alias a person
merged in the console ("Bob" into "Robert Smith")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal
from uuid import UUID

from ..lexicon import Lexicon
from ..lexicon.english import ENGLISH
from .keys import holds_one, in_lexicon


@dataclass(frozen=True)
class Subjects:
    """What the graph holds of one memory: the entities a writer or a model said it is about, those
    the rules read as its subject, and every entity it names (id -> name, "the user" for the user);
    `keyed`: the attribute its keyed facts state of each entity (id -> attribute), true `since`."""

    said: Mapping[UUID, str]
    read: Mapping[UUID, str]
    named: frozenset[UUID]
    keyed: Mapping[UUID, str] = field(default_factory=dict)
    since: datetime | None = None

    @property
    def about(self) -> Mapping[UUID, str]:
        return self.said or self.read


def described(name: str, lexicon: Lexicon = ENGLISH) -> bool:
    """Whether a name said about is a description of something of the user's ("the user's team",
    "my services", "the user's Pixel 7"), not a name: a small model says two such for one thing
    ("the user's services are written in Java", "the user's team is rewriting them in Kotlin"),
    so whom it describes is the text's reading. A person of theirs ("my sister", "the user's best
    friend", the lexicon's `people`) is no such thing: the text cannot tell her from her brother."""
    words = name.lower().split()
    for possessive in lexicon.user_possessives:
        lead = possessive.split()
        if words[:len(lead)] == lead and len(words) > len(lead):
            rest = " ".join(words[len(lead):])
            return not any(rest.endswith(tail) and (len(rest) == len(tail) or rest[-len(tail) - 1] == " ")
                           for person in lexicon.people for tail in (person, person + "s"))
    return False


def _names_said(subjects: Subjects | None) -> Subjects | None:
    """`subjects` without the descriptions among what was said (`described`)."""
    if subjects is None or not any(described(n) for n in subjects.said.values()):
        return subjects
    return replace(subjects, said={e: n for e, n in subjects.said.items() if not described(n)})


def compare(new: Subjects | None, old: Subjects | None) -> Literal["same", "other", "apart"] | None:
    """Whether `old` is about what `new` is about by the stored mentions, where a writer or a model
    said whom at least one of them is about: "same" when they share a subject, or the new memory
    names the old one's ("Diego Yilmaz took over as Kwame Larsen's manager" of "Kwame Larsen
    reports to Hana Dubois"; not the other way round: "Niklas Oduya's team lead is Ahmed Saleh" is
    no fact of Ahmed's); "other" when both were said and neither holds; "apart" when only one was
    said and neither holds. None when neither was said: the rules' subject is the text's own
    reading, which a sentence's capitalised opening word leaves unsure ("Alice lives in Oslo" reads
    as about Oslo), so the text's readers judge it. A description said about counts as nothing
    said (`described`)."""
    new, old = _names_said(new), _names_said(old)
    if new is None or old is None or not (new.said or old.said) or not new.about or not old.about:
        return None
    if new.about.keys() & old.about.keys() or old.about.keys() & new.named:
        return "same"
    return "other" if new.said and old.said else "apart"


def subject_names(new: Subjects | None, old: Subjects | None) -> list[str] | None:
    """The names of what two memories are about where `compare` finds them about the same subject:
    the only names a reader of their texts should take for the subject. A name both texts hold that
    neither is about is a value ("CI runs on Jenkins." / "The user dropped Jenkins; Falcon's CI is
    GitHub Actions now.", both about Falcon). None where the graph does not say."""
    if compare(new, old) != "same":
        return None
    new, old = _names_said(new), _names_said(old)
    assert new is not None and old is not None
    return sorted({*new.about.values(), *old.about.values()})


def other_attribute(new: Subjects | None, old: Subjects | None, lexicon: Lexicon = ENGLISH) -> str | None:
    """Why `old` states another attribute than `new` by their keyed facts: of one entity, two of the
    lexicon's attributes, which are never one ("Tomás works for Acme Robotics." keyed employer,
    "Greta Ibarra is Tomás's manager at Acme Robotics." keyed manager). A key in its own words
    (not the lexicon's) says too little to tell: a model keys one change "migration", another
    "switch". None where nothing says they differ."""
    if new is None or old is None:
        return None
    for entity in new.keyed.keys() & old.keyed.keys():
        mine, theirs = new.keyed[entity], old.keyed[entity]
        if mine != theirs and in_lexicon(mine, lexicon) and in_lexicon(theirs, lexicon):
            return f"it states {theirs}, the new memory {mine} (by their keys)"
    return None


def one_attribute(new: Subjects | None, old: Subjects | None, lexicon: Lexicon = ENGLISH) -> str | None:
    """The attribute holding one value at a time that both memories' keyed facts state of one
    subject, by their keys: of the same entity, or of a description of something of the user's
    (`described`), whose subject is the text's reading ("The user's tests use unittest." keyed
    `test framework` about "the user's tests", "The tests are switching to pytest." keyed
    `test framework` about "the user's team"). A key in its own words, or an attribute that holds
    many values (allergies), says nothing of a replace, nor do two facts true since the same moment
    (a model keyed both "The user's phone is an iPhone 15." and "The Pixel died." `phone`, from
    one turn). None where nothing says so."""
    if new is None or old is None or new.since is None or old.since is None or old.since >= new.since:
        return None

    def stated(s: Subjects) -> dict[str, set[UUID | None]]:
        out: dict[str, set[UUID | None]] = {}
        for entity, attribute in s.keyed.items():
            if in_lexicon(attribute, lexicon) and holds_one(attribute, lexicon):
                out.setdefault(attribute, set()).add(None if described(s.said.get(entity, "")) else entity)
        return out

    mine, theirs = stated(new), stated(old)
    for attribute in sorted(mine.keys() & theirs.keys()):
        if mine[attribute] & theirs[attribute] or None in mine[attribute] | theirs[attribute]:
            return attribute
    return None


def why_other(new: Subjects, old: Subjects) -> str:
    """What a refusal says of two memories `compare` found about others."""
    return f"about {', '.join(sorted(old.about.values()))}, not {', '.join(sorted(new.about.values()))} (by the graph)"

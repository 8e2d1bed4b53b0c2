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
from dataclasses import dataclass
from typing import Literal
from uuid import UUID


@dataclass(frozen=True)
class Subjects:
    """What the graph holds of one memory: the entities a writer or a model said it is about, those
    the rules read as its subject, and every entity it names (id -> name, "the user" for the user)."""

    said: Mapping[UUID, str]
    read: Mapping[UUID, str]
    named: frozenset[UUID]

    @property
    def about(self) -> Mapping[UUID, str]:
        return self.said or self.read


def compare(new: Subjects | None, old: Subjects | None) -> Literal["same", "other", "apart"] | None:
    """Whether `old` is about what `new` is about by the stored mentions, where a writer or a model
    said whom at least one of them is about: "same" when they share a subject, or the new memory
    names the old one's ("Diego Yilmaz took over as Kwame Larsen's manager" of "Kwame Larsen
    reports to Hana Dubois"; not the other way round: "Niklas Oduya's team lead is Ahmed Saleh" is
    no fact of Ahmed's); "other" when both were said and neither holds; "apart" when only one was
    said and neither holds. None when neither was said: the rules' subject is the text's own
    reading, which a sentence's capitalised opening word leaves unsure ("Alice lives in Oslo" reads
    as about Oslo), so the text's readers judge it."""
    if new is None or old is None or not (new.said or old.said) or not new.about or not old.about:
        return None
    if new.about.keys() & old.about.keys() or old.about.keys() & new.named:
        return "same"
    return "other" if new.said and old.said else "apart"


def why_other(new: Subjects, old: Subjects) -> str:
    """What a refusal says of two memories `compare` found about others."""
    return f"about {', '.join(sorted(old.about.values()))}, not {', '.join(sorted(new.about.values()))} (by the graph)"

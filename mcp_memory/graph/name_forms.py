"""How a name is compared and what else it may be called: its canonical form, its words in any
order, a full name's first name, and its other forms (with or without a word for what kind of thing
it is, by the user's possessives, without a dotted tail). A `Name` is what a text or a writer names;
graph/names.py reads them off texts."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from typing import Literal

from ..lexicon import Lexicon

POSSESSIVE = re.compile(r"['’]s$")
# What a name is replaced by where a text is read without whom it is about ("someone moved to Graz."):
# a subject, owning what follows it as a possessive does.
MASK = "someone"

_JOINERS = re.compile(r"(?<=\w)[-_](?=\w)")
_LEADING_ARTICLE = re.compile(r"^(?:the|a|an)\s+(?=\S)")


@functools.lru_cache(maxsize=65536)  # a store's names repeat
def canonical(name: str) -> str:
    """How a name is compared: its words in lower case, possessives cut, one space apart, a word
    joined by a hyphen or underscore as two ("coupons-pipeline" is "coupons pipeline") and a leading
    article dropped ("the coupons pipeline")."""
    words = _JOINERS.sub(" ", name.lower())
    return _LEADING_ARTICLE.sub("", " ".join(POSSESSIVE.sub("", w) for w in words.split()))


def name_words(name: str) -> frozenset[str]:
    """The words a name's holder may be called by in a text, lower case: each as written and, where
    a hyphen or underscore joins two, each apart too (`canonical`: a writer's "feeds-api" is the
    "Feeds API" of a text, and "Eun-ji" is still one word of "Eun-ji Abara")."""
    words = name.lower().split()
    return frozenset(words) | frozenset(part for w in words for part in _JOINERS.split(w) if part)


def first_name(display: str) -> str | None:
    """The canonical form of a full name's first word ("Eun-ji Abara": "eun ji"), or None for a
    name of one word. A hyphenated first name is one word of the name and two of its canonical
    form, so a first name is read off the words as written, not off the canonical form."""
    words = display.split()
    return canonical(words[0]) if len(words) > 1 else None


def begins(full: str, first: str) -> bool:
    """Whether the canonical name `full` is a longer name beginning with the canonical `first`."""
    return full.startswith(first + " ")


# Cached: a store's names repeat, and reading a batch's names compares each with every candidate's
# (an import of LoCoMo turns called it 85 times a memory).
@functools.lru_cache(maxsize=65536)
def word_set(canonical_name: str) -> str:
    """A canonical name's words in order of the alphabet: "team argon" and "argon team" are one
    thing, whichever way round the writer puts them."""
    return " ".join(sorted(set(canonical_name.split())))


Role = Literal["about", "mentioned"]


@dataclass(frozen=True)
class Name:
    """A thing a text names. `sure`: a name for certain; a lone capitalised word opening a clause
    may be only sentence case ("Heard today: ...", "Escalations for ..."), so it is taken only when it
    names an entity already known. `user`: the user the text speaks of."""

    display: str
    canonical: str
    role: Role
    sure: bool = True
    user: bool = False
    given: bool = False  # by the writer (or a model), not read off the text by rules
    # Other canonical names of the same thing: with or without a word saying what kind of thing it
    # is ("team dotterel" / "dotterel"; `classified`).
    forms: tuple[str, ...] = ()

    @property
    def lone(self) -> bool:
        """A name of one word as written ("Greta", "Eun-ji"): the first name of a full one, maybe."""
        return not self.user and len(self.display.split()) == 1


def dotted_head(canonical_name: str) -> str | None:
    """What a name of one word with a dot in it is called without its tail ("node.js": "node",
    "fly.io": "fly"), or None."""
    head, dot, _ = canonical_name.partition(".")
    return head if dot and head and " " not in canonical_name else None


@functools.lru_cache(maxsize=65536)
def forms_of(canonical_name: str, classifiers: frozenset[str]) -> tuple[str, ...]:
    """The other canonical names `canonical_name` may be known by: without its classifier words
    ("team dotterel": "dotterel"), or a bare name with each of them ("dotterel": "team dotterel",
    "project dotterel": which one is for the entities known to say), and a dotted name without its
    tail ("node.js": "node", `dotted_head`). A classifier alone names nothing."""
    words = canonical_name.split()
    core = [w for w in words if w not in classifiers]
    if not core:
        return ()
    if len(core) < len(words):
        return (" ".join(core),)
    head = dotted_head(canonical_name)
    return tuple(sorted(f"{k} {canonical_name}" for k in classifiers)) + ((head,) if head else ())


def classified(names: list[Name], lexicon: Lexicon) -> list[Name]:
    """`names`, each with its other forms by the lexicon's classifier words (`forms_of`) and, for
    someone in the user's life, by each of the user's possessives (`their_forms`)."""
    out = []
    for n in names:
        forms = () if n.user else forms_of(n.canonical, lexicon.classifiers) + their_forms(n.canonical, lexicon)
        out.append(n if forms == n.forms else replace(n, forms=forms))
    return out


def their_forms(canonical_name: str, lexicon: Lexicon) -> tuple[str, ...]:
    """The other canonical names of someone in the user's life named by their role: "my wife" is
    "the user's wife" ("user wife") and "our wife", so a writer naming her either way means one
    entity. Only one of the lexicon's `people` or `leaders` after the possessive (an adjective may
    come between: "my older sister"); "the user service" stays a thing of its own."""
    possessives, roles = _their_words(lexicon)
    first, _, rest = canonical_name.partition(" ")
    if first not in possessives or not rest or rest.split()[-1] not in roles:
        return ()
    return tuple(sorted(f"{p} {rest}" for p in possessives if p != first))


@functools.lru_cache(maxsize=8)
def _their_words(lexicon: Lexicon) -> tuple[frozenset[str], frozenset[str]]:
    """The user's possessives as canonical names begin ("user" of "the user's") and the last word of
    each of the lexicon's people and leaders."""
    return (frozenset(canonical(p) for p in lexicon.user_possessives),
            frozenset(canonical(r).split()[-1] for r in (*lexicon.people, *lexicon.leaders)))

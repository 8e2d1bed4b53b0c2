"""Whom a fact a model extracted is about, where the text says otherwise than the model: a small
model names the first person of a sentence ("Sven Olsen is Tomás's manager": Sven) or the thing a
fact speaks of ("Standup is scheduled for 10:00": about "standup"). What the model said is kept in
the fact's metadata (extraction.py)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..graph.keys import in_lexicon, key_of, phrase_of
from ..graph.name_forms import canonical
from ..graph.names import NAMES_WITHIN_CHARS, names_in, owned

if TYPE_CHECKING:
    from ..lexicon import Lexicon


def possessor(text: str, key: str, lexicon: Lexicon) -> str | None:
    """Whose `key` the fact's text states by a possessive, when exactly one: "Sven Olsen is Tomás's
    manager" states Tomás's manager, "The user's new manager will be Oscar Lindqvist" the user's.
    The local 1.5B model gave the first name of such a sentence as its about (Sven, or both), so
    the manager was filed as Sven's own and replaced nothing. A possessive is the lexicon's
    (`possessive_endings` after a run of capitalised words, graph/names.py `owned`; or one of
    `user_possessives` the lexicon also takes for the user), followed by the key or its
    attribute's name (fillers such as "new" between), when the lexicon knows the attribute. None:
    no such possessive, two owners, or a key in the model's own words ("Marcus Bell, the user's
    friend, leads the Falcon team" is no one-at-a-time "friend" of the user's that a second friend
    would replace)."""
    said = key_of(key, lexicon)
    if said is None or not in_lexicon(said.attribute, lexicon):
        return None  # own words ("friend"): whether it holds one value at a time is a guess; moving its subject is not

    said_as = {" ".join(key.lower().split()), said.attribute}

    def names_key(after: str) -> bool:
        """The words right after a possessive, fillers ("new", "current") skipped, are the key as
        the model said it or its attribute's name: "Tomás's new manager"; never a phrase that only
        holds a cue of it ("the user's friend lives in ..." is no home city of the user's)."""
        words = after.lower().split()
        while words and words[0] in lexicon.key_fillers:
            words.pop(0)
        rest = " ".join(words)
        return any(rest == k or rest.startswith(k) and not rest[len(k)].isalnum() for k in said_as)

    owners: set[str] = set()
    users = [u for u in lexicon.user_possessives if u in lexicon.user_names]
    if users:
        for m in re.finditer(r"(?<!\w)(" + "|".join(map(re.escape, users)) + r")\s+", text, re.IGNORECASE):
            if names_key(text[m.end():]):
                owners.add(m.group(1).lower())
    owners |= {name for name, after in owned(text[:NAMES_WITHIN_CHARS], lexicon) if names_key(text[after:])}
    return owners.pop() if len(owners) == 1 else None


def topic_about(about: list[str] | None, key: str | None, text: str, lexicon: Lexicon) -> tuple[str, str] | None:
    """(whom, key) for a fact whose one `about` is no one but an attribute of the lexicon, in a text
    whose subject is no one else: "Standup is scheduled for 10:00 this week." about "standup", keyed
    "schedule", is the user's standup time, a value that replaces the user's earlier one; about a
    thing called "standup" it replaced nothing and was an entity of its own. The user, as a fact of
    the user's session about no one else is theirs; the attribute's words become the key unless the
    model's key names another of the lexicon's attributes. Never an attribute whose values are
    people: "The manager approved the budget." is about that manager, no value of the user's. None
    otherwise."""
    if not about or len(about) != 1 or about[0].strip().lower() in lexicon.user_names:
        return None
    topic = phrase_of(about[0], lexicon)
    if topic is None or topic.answers == "person":
        return None
    # The topic opening a sentence reads as its subject ("Standup is ..."): no one else.
    if any(n.role == "about" and n.sure and not n.user and n.canonical != canonical(about[0])
           for n in names_in(text, lexicon)):
        return None
    said = key_of(key, lexicon) if key else None
    if said is not None and in_lexicon(said.attribute, lexicon) and said.attribute != topic.name:
        return None
    return min(lexicon.user_names), about[0]

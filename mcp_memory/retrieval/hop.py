"""One hop through the graph: a question that chains two things ("Where does Kwame's manager live
now?") asks an attribute (home city) of the entity that another entity's attribute holds (Kwame's
manager). The named entity's current value of the first attribute is a memory; of the entities that
memory names besides its subject, the one with a keyed fact of the second attribute is the hop, and
its values of it come first, the first attribute's chain after them (keyed.py places both). No
possessive naming a known attribute, or no such entity: no hop, and the search is as before."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg

from ..graph.keys import asked
from ..lexicon import Lexicon
from ..models import MemoryFilter, Principal
from ..repository.graph_reads import facts_of, mentioned_in
from .keyed import known_keys
from .query import ParsedQuery

# A name's possessive and the words after it: "Kwame's manager live", "Greta Ibarra's team lead".
_POSSESSIVE = re.compile(r"(\w[\w-]*)['’]s\s+((?:[\w-]+\s*){1,3})")
_WORD = re.compile(r"[\w-]+")
# The possessives of a question read for a hop: a question chains two or three things, and each
# possessive read costs up to three lookups of the lexicon (a hostile query of 5,000 "a's" took 1.7 s).
MAX_POSSESSIVES = 4


@dataclass(frozen=True)
class Hop:
    relation: str  # the named entity's attribute that holds the other entity ("manager")
    attribute: str  # what the question asks of that entity ("home city")
    facts: list[asyncpg.Record]  # the other entity's facts of `attribute`, newest valid first


def relation_asked(question: str, lexicon: Lexicon, facts: Sequence[asyncpg.Record]) -> tuple[str, str] | None:
    """The attribute a possessive in `question` names ("Kwame's manager": manager), read from as
    few of the words after it as name one, and the question without them ("Where does live now?");
    None when no possessive names an attribute of the named entities' facts."""
    known = known_keys(facts)
    for m in itertools.islice(_POSSESSIVE.finditer(question), MAX_POSSESSIVES):
        words = _WORD.findall(m.group(2))
        for n in range(1, len(words) + 1):
            attribute = asked(" ".join(words[:n]), lexicon, known)
            if attribute is not None:
                used = re.match(r"\s*" + r"\W+".join(map(re.escape, words[:n])), m.group(2))
                end = m.start(2) + (used.end() if used else len(m.group(2)))
                return attribute, question[:m.start()] + question[end:]
    return None


async def one_hop(conn: asyncpg.Connection, p: Principal, parsed: ParsedQuery, facts: Sequence[asyncpg.Record],
                  f: MemoryFilter | None) -> Hop | None:
    """The hop a question asks for, from the keyed facts of the entities it names (`facts`, newest
    valid first), read in the search's transaction; None when it chains nothing."""
    lexicon = parsed.lexicon
    found = relation_asked(parsed.asked, lexicon, facts)
    if found is None:
        return None
    relation, rest = found
    head = next((r for r in facts if r["attribute"] == relation), None)
    if head is None:
        return None
    subjects = {r["entity_id"] for r in facts}
    others = [e for e in await mentioned_in(conn, p, head["id"]) if e not in subjects]
    if not others:
        return None
    theirs = list(await facts_of(conn, p, others, f))
    by_entity: dict[object, list[asyncpg.Record]] = {}
    for row in theirs:
        by_entity.setdefault(row["entity_id"], []).append(row)
    hops = []
    for rows in by_entity.values():
        attribute = asked(rest, lexicon, known_keys(rows))
        if attribute is not None and attribute != relation:
            hops.append(Hop(relation, attribute, [r for r in rows if r["attribute"] == attribute]))
    return hops[0] if len(hops) == 1 else None

"""One hop through the graph: a question that chains two things ("Where does Kwame's manager live
now?") asks an attribute (home city) of the entity that another entity's attribute holds (Kwame's
manager). The named entity's current value of the first attribute is a memory; of the entities that
memory names besides its subject, the one with a keyed fact of the second attribute is the hop, and
its values of it come first, the first attribute's chain after them (keyed.py places both). No
possessive naming a known attribute, or no such entity: no hop, and the search is as before."""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import asyncpg

from ..graph.questions import asked
from ..lexicon import Lexicon, phrases_pattern
from ..models import MemoryFilter, Principal
from ..repository.graph_reads import facts_of, mentioned_in
from .keyed import known_keys
from .query import ParsedQuery

_WORD = re.compile(r"[\w-]+")
# The possessives of a question read for a hop: a question chains two or three things, and each
# possessive read costs up to three lookups of the lexicon (a hostile query of 5,000 "a's" took 1.7 s).
MAX_POSSESSIVES = 4


@dataclass(frozen=True)
class Hop:
    relation: str  # the named entity's attribute that holds the other entity ("manager")
    attribute: str  # what the question asks of that entity ("home city")
    facts: list[asyncpg.Record]  # the other entity's facts of `attribute`, newest valid first


@functools.cache
def _possessives(lexicon: Lexicon) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The lexicon's two shapes of a possessive, with up to three words of the thing held (group
    1): after a name's ending ("Kwame's manager live") or the user's word for their own ("my
    manager live"), or before the words leading to the name ("mora o gerente do Kwame"). A shape
    the language leaves empty matches nothing."""
    endings, words = phrases_pattern(lexicon.possessive_endings), phrases_pattern(lexicon.possessive_words)
    owners = "|".join(filter(None, (rf"[\w-]+(?:{endings})" if endings else "",
                                    rf"(?i:{phrases_pattern(lexicon.user_possessives)})" if lexicon.user_possessives
                                    else "")))
    after = rf"(?<![\w-])(?:{owners})\s+((?:[\w-]+\s*){{1,3}})" if owners else "(?!)"
    before = rf"(?<![\w-])((?:[\w-]+\s+){{1,3}}?)(?:{words})\s+[A-Z][\w-]*" if words else "(?!)"
    return re.compile(after), re.compile(before)


def _held(question: str, lexicon: Lexicon) -> Iterator[list[tuple[str, int, int]]]:
    """For each possessive of `question` in order (`_possessives`): the runs of words that may
    name the thing held, shortest first (the first words after a name's ending, the last before
    the words leading to a name), each with the span the possessive takes with it: the name and
    the run."""
    after, before = _possessives(lexicon)
    found = sorted(itertools.chain(after.finditer(question), before.finditer(question)), key=lambda m: m.start())
    for m in itertools.islice(found, MAX_POSSESSIVES):
        spans = [(m.start(1) + w.start(), m.start(1) + w.end()) for w in _WORD.finditer(m.group(1))]
        counts = range(1, len(spans) + 1)
        if m.re is after:
            yield [(question[spans[0][0]:spans[n - 1][1]], m.start(), spans[n - 1][1]) for n in counts]
        else:
            yield [(question[spans[-n][0]:spans[-1][1]], spans[-n][0], m.end()) for n in counts]


def relation_asked(question: str, lexicon: Lexicon, facts: Sequence[asyncpg.Record]) -> tuple[str, str] | None:
    """The attribute a possessive in `question` names ("Kwame's manager": manager; Portuguese "o
    gerente do Kwame": gerente), read from as few of the words beside the name as name one, and
    the question without the possessive ("Where does live now?"); None when no possessive names
    an attribute of the named entities' facts."""
    known = known_keys(facts)
    for runs in _held(question, lexicon):
        for run, start, end in runs:
            attribute = asked(run, lexicon, known)
            if attribute is not None:
                return attribute, question[:start] + question[end:]
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

"""Which of a subject's memories answer a question about the present (retrieval/focus.py measures
how each relates to the question and to the others; this module decides from that): the chain's
versions of what the closest says, the memories naming a value they pass on, those stating the asked
attribute in the lexicon's words; then the newest of them first."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple
from uuid import UUID

import asyncpg
import numpy as np

from .alike import linked


@dataclass(frozen=True)
class Closeness:
    """How a subject memory relates to a question about the present, names masked on both sides."""

    question: float  #: cosine with the question
    joined: int  #: when it joined the chain from the memory closest to the question (0: that one)
    link: float  #: cosine with the closest memory that joined before it (1 for the first, -1 for one `off`)
    values: frozenset[str] = frozenset()  #: the values it names (`values_of`) that the question does not
    off: bool = False  #: its words state another attribute than the one the question asks
    alike: int | None = None  #: the group of alike masked vectors among the subject's memories it is in
    says_asked: bool = False  #: its words state the attribute the question asks (the lexicon's cues and phrases)
    nameless: bool = False  #: it names no value of the asked attribute, whose values are names (`naming_nothing`)
    #: the attributes its words state (the lexicon's cues and phrases) where the question asks others, none of them
    states_other: frozenset[str] = frozenset()
    channel: bool = False  #: it names a channel ("#oncall")
    compared: bool = True  #: its cosines were measured (False: the words alone decided, focus.stated_alone)


class Answers(NamedTuple):
    found: set[UUID]  #: the memories that answer
    other_history: frozenset[UUID] = frozenset()  #: taken out of them as another attribute's history


def answering(closeness: dict[UUID, Closeness], margin: float) -> set[UUID]:
    """The subject's memories that answer the question (`judged`)."""
    return judged(closeness, margin).found


def judged(closeness: dict[UUID, Closeness], margin: float) -> Answers:
    """The subject's memories that answer the question: the one closest to it, and the versions
    of what it says. Versions of one fact resemble each other more than the subject's other facts
    do, however each is phrased, and more reliably than any of them resembles the question
    ("someone settled down in Quebec City", "after Quebec City someone ended up in Leipzig",
    "after Leipzig someone ended up in Berlin" against "someone owns a Nissan Leaf"). So they are
    chained from the closest by single linkage, and where the level at which each joins the
    closest's cluster drops most is where they end (`chain_answers`): no threshold to tune per
    model or per set. With one other memory there is no drop to find; it answers if its cosine
    with the question is within `margin` of the closest's. A memory stating
    another attribute than the question asks (`Closeness.off`, `stating_another`) answers nothing.

    A memory stating the asked attribute in the lexicon's words (`Closeness.says_asked`: "took over
    as Thandiwe's line manager" for "Who supervises Thandiwe?") answers wherever the chain was cut:
    a version worded unlike the others links to them no closer than the subject's other facts do,
    and the cut left it out (every dev set gained; docs/benchmarks.md, thirty-ninth stop).

    A memory naming nothing where the asked attribute's values are names (`Closeness.nameless`)
    answers nothing, unless nothing else answers: the chain takes in the subject's notes by their
    shape, and "someone off streaming pager, now database." answered "Who is someone's manager?".

    Another attribute's history the chain took in answers nothing either (`another_history`),
    unless nothing else answers."""
    joined = sorted((k for k in closeness if not closeness[k].off), key=lambda k: closeness[k].joined)
    if len(joined) == 1:
        chosen = set(joined)
    elif len(joined) == 2:
        first, other = (closeness[k].question for k in joined)
        chosen = set(joined) if other >= first - margin else {joined[0]}
    else:
        chosen = chain_answers(joined, closeness)
    # What it names brings in nothing more: a newer note naming the new manager's city is no version.
    found = sharing_values(chosen, closeness) | {k for k in joined if closeness[k].says_asked}
    found = {k for k in found if not closeness[k].nameless} or found
    other = another_history(found, joined[0], closeness)
    return Answers(found - other, frozenset(other)) if found - other else Answers(found)


def chain_answers(joined: Sequence[UUID], closeness: dict[UUID, Closeness]) -> set[UUID]:
    """Where a chain of three or more (`joined`, in the order they joined) ends. Each memory joins
    the start's cluster at the weakest link on its way from the start (single linkage: the running
    least of the links), and the chain ends where that level drops most. Cut where the link itself
    dropped most, another fact's versions, close to each other, came in with the answer: two pet
    notes linked at .73 to each other and at .41 to "someone met Kwame at a wedding and they're
    dating", after which the links fell to .35. Past the cluster, a memory before the link's own
    largest drop still answers when it is at least as close to the question as the cluster's least
    close: versions in two wordings ("someone's team lead is Signe Dahl.", "After the reorg
    someone sits under Marco Bellini.") link weakly to each other and tightly within each wording."""
    links = [closeness[k].link for k in joined[1:]]
    cluster = set(joined[:_largest_drop(list(itertools.accumulate(links, min))) + 2])
    least = min(closeness[k].question for k in cluster)
    return cluster | {k for k in joined[:_largest_drop(links) + 2] if closeness[k].question >= least}


def _largest_drop(links: Sequence[float]) -> int:
    """Where in `links` the next one falls furthest below it."""
    return int(np.argmax([a - b for a, b in itertools.pairwise(links)]))


def sharing_values(answers: set[UUID], closeness: dict[UUID, Closeness]) -> set[UUID]:
    """`answers` and every memory naming a value one of them names beside one none of them names, or
    in a group of alike masked vectors one of them is in (`Closeness.alike`), transitively. An update
    often names the value it replaces ("quit Brightwater Health and signed with Plumtree Media",
    "standup moved 9:45 -> 9:15") however far its wording is from the version before: it is a
    version too. One naming only values they name says something else of them ("Greta read a book
    about Lisbon." after "Greta lives in Lisbon."): no version (assistant newest@1 .658 -> .667, the
    other sets the same record by record). A value the question names decides nothing (life / ops /
    assistant newest first +.01 / +.02 / +.01, newest@1 unchanged / +.01 / +.01, dataset and
    workbench unchanged; without the narrowed subject above, ops newest@1 lost one: another API in
    the same region). Where one of them names a channel, every memory naming one is a version too:
    what a channel is said of is where someone talks, however far the words around it ("opened
    #oncall as the new home." after "hangs out in #triage.": ops newest first .910 -> .950, newest@1
    .900 -> .940, the other sets the same record by record)."""
    answers = set(answers)
    if any(closeness[k].channel for k in answers):
        answers |= {k for k, c in closeness.items() if c.channel and not c.off}
    named = set().union(*(closeness[k].values for k in answers))
    groups = {closeness[k].alike for k in answers} - {None}
    grown = True
    while grown:
        grown = False
        for k, c in closeness.items():
            if k not in answers and not c.off and (c.values & named and c.values - named or c.alike in groups):
                answers.add(k)
                named |= c.values
                groups |= {c.alike} - {None}
                grown = True
    return answers


def another_history(found: set[UUID], start: UUID, closeness: dict[UUID, Closeness]) -> set[UUID]:
    """Which of `found` belong to the history of another attribute than the question asks: two or
    more of the subject's memories joined by the values they pass on, one to the next (a phone
    replaced by a phone: "uses a Galaxy S23.", "replaced the Galaxy S23 with a Fairphone 5.",
    "replaced the Fairphone 5 with an iPhone 15."), each stating in the lexicon's words one same
    attribute the question does not ask (`Closeness.states_other`), none of them the chain's `start`
    nor as close to the question. The chain takes a subject's notes in by their shape, and the newest
    of a phone's history came first for "What pet does Jarek have these days?". The history is read
    from every memory judged, not only the answers: its first version may be past the chain's cut.
    One such memory alone stays: the words of one note are no proof ("now works for Kasper Holm" is
    a manager's version, "works for" an employer's words), and taken out alone they cost life, ops and
    workbench newest first (docs/benchmarks.md, seventy-third stop)."""
    top = closeness[start].question
    other: set[UUID] = set()
    for history in _by_values_passed_on(closeness):
        said = frozenset.intersection(*(closeness[k].states_other for k in history))
        if said and start not in history and max(closeness[k].question for k in history) < top:
            other |= history & found
    return other


def _by_values_passed_on(closeness: dict[UUID, Closeness]) -> list[set[UUID]]:
    """The judged memories in groups of two or more: two naming one value are in one group,
    transitively (`alike.linked`)."""
    keys = list(closeness)
    first_naming: dict[str, int] = {}
    pairs = [(i, first_naming.setdefault(value, i)) for i, k in enumerate(keys) for value in closeness[k].values]
    return [{keys[i] for i in group} for group in linked(len(keys), pairs)]


def answers_of(rows: Sequence[asyncpg.Record], closeness: dict[UUID, Closeness], margin: float) -> Answers:
    """The subject's memories among `rows` that answer the question (`judged`); none where fewer
    than two of them were judged."""
    among = {r["id"]: closeness[r["id"]] for r in rows if r["id"] in closeness}
    return judged(among, margin) if len(among) >= 2 else Answers(set())


def answers_first(rows: list[asyncpg.Record], answers: set[UUID]) -> list[asyncpg.Record]:
    """The subject's memories that answer the question (`answers_of`) go first, newest first, and
    everything else follows in its order (a memory that does not name the person asked about is no
    answer about them now: life newest@1 .54 -> .60, ops unchanged)."""
    newest_first = sorted((r for r in rows if r["id"] in answers), key=lambda r: r["occurred_at"], reverse=True)
    return newest_first + [r for r in rows if r["id"] not in answers]

"""The graph's part of a search: a question that names a known entity and asks one of its keyed
attributes ("What does Greta drive these days?") gets that attribute's current value first and its
earlier values right after it, each with the date it stopped being true; a question about the past
gets the earlier values first, one naming a span of time the values that held in it, and one asking
what came before or after a value ("before Lisbon") those values. A question that names no known
entity, or none of its attributes, keeps the hits the other stages gave, exactly."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from uuid import UUID

import asyncpg

from ..graph.about_user import about_someone_else, person_asked_about, speaks_of_user
from ..graph.keys import cued_in, in_lexicon
from ..graph.name_forms import Name, canonical, classified
from ..graph.names import USER, USER_NAME, entity_name, slugs
from ..graph.questions import asked, asked_for
from ..graph.validity import Held, at, held, held_within
from ..lexicon import Lexicon
from ..models import MemoryFilter, Principal, ScopeInfo, SearchHit, human_age, memory_uri
from ..repository.graph_reads import entities_by_name, facts_of
from .dates import value_bounds
from .focus import TextVectors, unlabelled
from .key_meaning import name_another
from .naming import Linked
from .query import ParsedQuery, word_runs
from .reorder import placed_scores
from .values import values_of
from .versions import masked_similarities, names_its_value_masked

# The runs of words of a question, and its slugs, looked up as names: a long question's are many, and few name anything.
MAX_PHRASES = 24


def question_names(parsed: ParsedQuery) -> list[Name]:
    """Whom a question names: each person in full, each other name alone, and the user it speaks of,
    or someone in the user's life it asks about ("Where does my sister live?": her, not the user)."""
    names = [Name(" ".join(run), canonical(" ".join(run)), "about") for run in parsed.full_names]
    in_full = {w for run in parsed.full_names for w in run}
    names += [Name(w, canonical(w), "about") for w in parsed.subject if w not in in_full]
    # Things are often named in lower case ("the coupons pipeline", "billing-service"): a run of words
    # the question holds, or a slug, is looked up as a name too, never created.
    seen = {n.canonical for n in names}
    lexicon = parsed.lexicon
    runs = word_runs(parsed.text, lexicon)[:MAX_PHRASES] + slugs(parsed.text, lexicon)[:MAX_PHRASES]
    unseen: dict[str, str] = {}
    for run in runs:
        unseen.setdefault(canonical(run), run)
    names += [Name(run, key, "about", sure=False) for key, run in unseen.items() if key not in seen]
    role = person_asked_about(parsed.asked, lexicon)
    if role is not None:
        # "Where does my wife work now?" asks of her, however a writer named her (names.py
        # `their_forms`: "my wife", "the user's wife"), not of the user (whose.py reads it so too).
        person = f"{lexicon.user_possessives[0]} {role}"
        names += [Name(person, canonical(person), "about", sure=False)] if canonical(person) not in seen else []
    elif speaks_of_user(parsed.asked, lexicon) and not about_someone_else(parsed.asked, lexicon):
        names.append(Name(USER_NAME, USER, "about", user=True))
    return classified(names, lexicon)


@dataclass(frozen=True)
class Named:
    """What the graph knows of the names a question holds, looked up once in the search's
    transaction: each word of its subject -> the entities it is (for the subject factor to read
    memories' stored mentions, statement.py; None when it names nothing known, and the statement is
    what the text alone gives), and the entities it names that have keyed facts."""

    linked: Linked | None
    keyed: list[UUID]
    # The user, where the question asks of a person in their life by role ("Where does my wife
    # work now?") and the user has keyed facts: read for a hop to that person (hop.py), never as
    # whom the question is about.
    owner: list[UUID] = field(default_factory=list)

    def within(self, subject: Sequence[str]) -> Named:
        """What is known of `subject`'s words alone (a question's subject less its attribute's words)."""
        if self.linked is None:
            return self
        kept = {w: ids for w, ids in self.linked.entities.items() if w in subject}
        return replace(self, linked=replace(self.linked, entities=kept) if kept else None)


def keys_out(parsed: ParsedQuery, facts: Sequence[asyncpg.Record]) -> ParsedQuery:
    """`parsed` less the capitalised words that are a key of the facts of whom it names ("CEO" of
    "Who is Acme's CEO now?" keyed "ceo", "DB" keyed "db"): the attribute asked, not a second
    subject, which the subject factor and the text's stage would want every answer to name too
    ("Marcus Obi replaced Dana Whitfield as Acme's chief executive" does not). A question left
    naming no one is as it was."""
    keys = {canonical(r[field]) for r in facts for field in ("key_words", "attribute")}
    kept = tuple(w for w in parsed.subject if canonical(w) not in keys)
    if not kept or len(kept) == len(parsed.subject):
        return parsed
    return replace(parsed, subject=kept, full_names=tuple(run for run in parsed.full_names if set(run) <= set(kept)))


async def named_in(conn: asyncpg.Connection, p: Principal, parsed: ParsedQuery) -> Named:
    names = question_names(parsed)
    # Asked of the user's person by role, the user's facts may say who that is (keyed "wife").
    owned = person_asked_about(parsed.asked, parsed.lexicon) is not None and not any(n.user for n in names)
    found = await entities_by_name(conn, p, [*names, Name(USER_NAME, USER, "about", user=True)] if owned else names)
    owner = [r["id"] for r in found.pop(USER, []) if r["keyed"]] if owned else []
    # A word of a name given in full is that person ("Pereira" in "Benedikt Pereira").
    runs = {w: canonical(" ".join(run)) for run in parsed.full_names for w in run}
    subject = {w: [r["id"] for r in found[runs.get(w, canonical(w))]] for w in parsed.subject
               if runs.get(w, canonical(w)) in found}
    keyed = list(dict.fromkeys(r["id"] for rows in found.values() for r in rows if r["keyed"]))
    return Named(Linked(p.user_id, subject) if subject else None, keyed, owner)


def asked_now(parsed: ParsedQuery, facts: Sequence[asyncpg.Record]) -> ParsedQuery:
    """`parsed`, marked `keyed_now` where it asks (with no time word) an attribute the named
    subjects' `facts` hold one value of at a time: under a key the lexicon does not know ("Who is
    Acme's CEO?" keyed "ceo") the text's stage then reads it as about now, as it reads a question
    asking one of the lexicon's such attributes, and of the user it compares the user's notes as a
    named subject's (focus.py `similarities`: the keyed value says the attribute has values), so
    a newer memory nobody keyed may go first."""
    if parsed.tense is not None or not facts:
        return parsed
    attribute = asked(parsed.asked, parsed.lexicon, known_keys(facts))
    chain = [r for r in facts if r["attribute"] == attribute]
    if attribute is None or not all(r["single"] for r in chain):
        return parsed
    return replace(parsed, keyed_now=True)


def known_keys(facts: Sequence[asyncpg.Record]) -> dict[str, list[str]]:
    """The attributes of `facts`, each with the words its keys were written in (for `asked`)."""
    known: dict[str, list[str]] = {}
    for row in facts:
        known.setdefault(row["attribute"], []).append(row["key_words"])
    return known


def _hit(row: asyncpg.Record, score: float, snippet_chars: int, explain: dict[str, float | None] | None,
         valid_until: datetime | None) -> SearchHit:
    content: str = row["content"]
    return SearchHit(id=row["id"], uri=memory_uri(row["id"]), title=row["title"], snippet=content[:snippet_chars],
                     truncated=len(content) > snippet_chars, kind=row["kind"], tags=list(row["tags"]),
                     scope=ScopeInfo.of(row["agent_id"], row["project_id"]), occurred_at=row["occurred_at"],
                     age=human_age(row["occurred_at"]), score=score, superseded_by=row["successor"],
                     explain=explain, valid_until=valid_until)


async def unsure(facts: Sequence[asyncpg.Record], chain: Sequence[asyncpg.Record], lexicon: Lexicon,
                 vectors: TextVectors | None, floor: float) -> bool:
    """Whether the subject may hold a newer value of the attribute under a key the lexicon does not
    know ("writes its data to" beside "database"): a fact of such a key, of the chain head's entity, newer
    than the head, that says the same kind of thing with the subject masked (`graph_doubt_floor`).
    The lexicon never puts two of its attributes in one, so only such keys can. Then the graph
    cannot say which value is current, and the hits keep the order the text gave them. Without an
    embedder any such fact is reason enough. Asked one of the lexicon's attributes, a fact whose
    key plainly names another one the subject holds values of ("mobile device" where the subject
    has a phone, asked its car: key_meaning.py) is a value of that one, no reason for doubt; one
    naming an attribute the subject holds none of may still be the asked one's in other words
    ("runs in" reads as a deploy target, and is a service's region)."""
    head = chain[0]
    newer = [r for r in facts if r["entity_id"] == head["entity_id"] and r["attribute"] != head["attribute"]
             and not in_lexicon(r["attribute"], lexicon) and r["valid_from"] > head["valid_from"]]
    if not newer or vectors is None:
        return bool(newer)
    if in_lexicon(head["attribute"], lexicon):
        held = {r["attribute"] for r in facts if r["entity_id"] == head["entity_id"]}
        elsewhere = await name_another(vectors, lexicon, [r["key_words"] for r in newer], head["attribute"]) or {}
        newer = [r for r in newer if elsewhere.get(r["key_words"]) not in held]
        if not newer:
            return False
    close = await masked_similarities(head["content"], newer, vectors)
    return close is None or any(c >= floor for c in close.values())


def moved_on(facts: Sequence[asyncpg.Record], chain: Sequence[asyncpg.Record], lexicon: Lexicon
             ) -> list[asyncpg.Record]:
    """The attribute's newer values that a writer filed under a key in its own words: a fact of the
    chain head's entity, under a key the lexicon does not know, newer than the value it moves on
    from and naming that value beside a new one ("Geo pipeline ownership handed from Teodor Kral
    to Yaw Boateng." keyed "go-to person", of "Teodor Kral owns the geo pipeline." keyed
    "owner"), then any that moves on from it in turn; newest first. Two of the lexicon's
    attributes are never one (graph/subjects.py `other_attribute`: "Greta Ibarra is Tomás's
    manager at Acme Robotics" names his employer beside her), and words alike without the old
    value prove nothing (`unsure` then keeps the text's order). The entity's name is masked (where
    the session cannot see the entity, the texts' own reading of their subject is)."""
    if not chain:
        return []
    moved: list[asyncpg.Record] = []
    current = chain[0]
    others = [r for r in facts if r["entity_id"] == current["entity_id"] and r["attribute"] != current["attribute"]
              and not in_lexicon(r["attribute"], lexicon)]
    names = [entity_name(current["entity_kind"], current["entity_name"])] if current["entity_name"] else []
    while True:
        later = [r for r in others if r["valid_from"] > current["valid_from"] and r not in moved]
        step = next((r for r in reversed(later) if names_its_value_masked(r["content"], current["content"], names)),
                    None)
        if step is None:
            return moved[::-1]
        moved.append(step)
        current = step


async def newer_unsaid(head: asyncpg.Record, facts: Sequence[asyncpg.Record], hits: Sequence[SearchHit],
                       answers: frozenset[UUID], described: frozenset[UUID], vectors: TextVectors | None,
                       floor: float, lexicon: Lexicon) -> list[SearchHit]:
    """The hits written after `head` (the current value of a one-at-a-time attribute) that nobody
    described (no key filed for them, no writer or model saying whom they are about: graph_reads.py
    `described`), that the text's stage found answering the question (`answers`, focus.py), that
    say the same kind of thing as `head` with the subject masked (at least `floor`, the
    `graph_doubt_floor`), state that attribute and no other in the lexicon's words ("drives a Mini
    Cooper" of a car, however far its shape is from "replaced the Kia Niro with a Renault Zoe"; "moved
    to Ruth's team" states a home city and a team, so neither) or name its value beside a new one,
    and that name a value none of the attribute's keyed values names (values.py: "Greta drives to
    work on Fridays." and "Kwame likes long walks by the fjord." say nothing new of her car or his
    city, however close, nor "Greta reads a novel about Lisbon." of her home after Lisbon); newest
    first. A writer who keys some writes and not others ("Priya Raman works at Initech." keyed
    "employer", a year later "Priya Raman now works for Hooli." with nothing) had the keyed value
    first however old: with half the writes keyed, newest first fell below what passing nothing
    gets on every dev set. A memory its
    writer said is about the subject and gave no key is, by that writer's word, no value of it, and
    one whose words state another of the lexicon's attributes that the subject holds keyed values of,
    and not the asked one, is a value of that one ("Greta moved to Bergen." beside her keyed home
    city, asked whom she is dating). Beyond these, its words decide nothing: a version says what it
    states apart ("new apartment in Ghent" of a town), and reading every cue so cost newest first on
    all seven dev sets. None without an embedder: the keyed order stands."""
    if vectors is None:
        return []
    keyed_otherwise = {r["attribute"] for r in facts if r["entity_id"] == head["entity_id"]} - {head["attribute"]}
    names = [entity_name(head["entity_kind"], head["entity_name"])] if head["entity_name"] else []
    ignore = lexicon.not_names | {w.lower() for name in names for w in lexicon.words(name)}
    said = frozenset().union(*(values_of(unlabelled(r["content"], lexicon), ignore) for r in facts
                               if r["entity_id"] == head["entity_id"] and r["attribute"] == head["attribute"]))
    after = [h for h in hits if h.id in answers and h.id not in described and h.occurred_at > head["valid_from"]
             and values_of(unlabelled(h.snippet, lexicon), ignore) - said
             and not _states_another(h.snippet, head["attribute"], keyed_otherwise, lexicon)]
    if not after:
        return []
    close = await masked_similarities(head["content"], [{"id": h.id, "content": h.snippet} for h in after], vectors)
    if close is None:
        return []
    alike = [h for h in after if close[h.id] >= floor or cued_in(h.snippet, lexicon) == {head["attribute"]}
             or names_its_value_masked(h.snippet, head["content"], names)]
    return sorted(alike, key=lambda h: h.occurred_at, reverse=True)


def _states_another(text: str, attribute: str, others: set[str], lexicon: Lexicon) -> bool:
    """Whether `text`'s words state one of the attributes `others` by the lexicon's cues and phrases,
    and not `attribute`."""
    stated = cued_in(text, lexicon)
    return bool(stated & others) and attribute not in stated


def beside_value(question: str, values: Sequence[Held], lexicon: Lexicon) -> list[Held] | None:
    """`values` (one attribute's, in their order) for a question placing what it asks before or after
    one of them ("Where did Priya live before Lisbon?", "Which editor did I use after Vim?"): the
    values that began before that one first, the latest first (after it: the earliest first), then
    the rest in their order; empty where none began that way (nothing then says what the answer
    is). None where no word after such a bound names exactly one of the values (a stop word or the
    subject's name, which every value's text holds, names none)."""
    said = [frozenset(lexicon.words(v.row["content"])) for v in values]
    for bound in value_bounds(question, lexicon):
        named = [v for v, words in zip(values, said, strict=True) if bound.word in words]
        if len(named) != 1:
            continue
        first = bound.nearest_first(values, lambda v: v.row["valid_from"], named[0].row["valid_from"])
        return first + [v for v in values if v not in first] if first else []
    return None


async def facts_named(conn: asyncpg.Connection, p: Principal, named: Named,
                      f: MemoryFilter | None) -> list[asyncpg.Record]:
    """The keyed facts of the known entities the question names (none named: none), and of its
    `owner` (`Named.owner`), read in the search's transaction; the ordering (`keyed_first`) runs
    after it."""
    entities = [*named.keyed, *named.owner]
    return list(await facts_of(conn, p, entities, f)) if entities else []


async def keyed_first(parsed: ParsedQuery, facts: Sequence[asyncpg.Record], hits: Sequence[SearchHit], *,
                      lexicon: Lexicon, limit: int, snippet_chars: int, explain: bool,
                      vectors: TextVectors | None = None, doubt_floor: float = 0.0,
                      attribute: str | None = None, answers: frozenset[UUID] = frozenset(),
                      described: frozenset[UUID] = frozenset(), now: datetime) -> list[SearchHit]:
    """`hits` with the values of the attribute the question asks (of `facts`, newest valid first;
    `attribute`: the one a hop found it asks, hop.py) placed first in order of validity at `now`
    (those that held in a span the question names before the rest; one dated ahead of `now` after
    what holds until it begins), each with its valid_until;
    unchanged when the question asks none of them, or the graph is `unsure`. For a question about
    now, a newer memory nobody keyed that answers it (`newer_unsaid`, of `answers` and `described`)
    goes before the current value, `explain` marking it `newer_than_fact`."""
    hits = list(hits)
    known = known_keys(facts)
    # A question about the past that names no attribute is as likely about something else the
    # subject did ("Who did Greta meet in Lisbon?") as about a value of theirs.
    attribute = attribute or asked(parsed.asked, lexicon, known) or (
        asked_for(parsed.asked, lexicon, known) if parsed.tense != "past" else None)
    if attribute is None:
        return hits
    chain = [r for r in facts if r["attribute"] == attribute]  # newest valid first
    single = all(r["single"] for r in chain)
    moved = moved_on(facts, chain, lexicon) if single else []
    chain = [*moved, *chain]
    if await unsure(facts, chain, lexicon, vectors, doubt_floor):
        return hits
    standing = at(held(chain, single), now)
    values = standing.holding + standing.upcoming + standing.ended
    ends: dict[UUID, datetime | None] = {v.row["id"]: v.until for v in values}
    chain = [v.row for v in values]
    newer: list[SearchHit] = []
    period = parsed.period
    if period is not None and period.dated:
        # A question about a span it names ("Where did Priya live in 2024?") asks what held then:
        # those values first, the latest begun first, then the rest as a question about now has them.
        # Where none of them held then (the span is before the first the graph knows of), the graph
        # cannot say what did, and the hits keep the text's order.
        then = [v.row for v in held_within(values, period.start, period.end)]
        if not then:
            return hits
        chain = then + [r for r in chain if r not in then]
    elif (around := beside_value(parsed.asked or parsed.text, values, lexicon)) is not None:
        if not around:
            return hits
        chain = [v.row for v in around]
    elif parsed.tense == "past" and single:  # the earlier values first, then what holds now and after
        chain = [v.row for v in standing.ended + standing.holding + standing.upcoming]
    elif single and answers and standing.holding:
        newer = await newer_unsaid(chain[0], facts, hits, answers, described, vectors, doubt_floor, lexicon)
    by_id = {h.id: h for h in hits}
    top = max((h.score for h in hits), default=1.0)
    placed = [h.model_copy(update={"explain": {**h.explain, "newer_than_fact": True}}) if explain and h.explain
              else h for h in newer]
    for place, row in enumerate(chain, start=1):
        known_hit = by_id.get(row["id"])
        shown = ({**(known_hit.explain or {}), "fact": float(place)} if known_hit is not None and explain
                 else {"fact": float(place)} if explain else None)
        score = known_hit.score if known_hit is not None else top
        placed.append(_hit(row, score, snippet_chars, shown, ends[row["id"]]))
    chained = {h.id for h in placed}
    rest = [h for h in hits if h.id not in chained]
    return placed_scores(placed + rest)[:limit]

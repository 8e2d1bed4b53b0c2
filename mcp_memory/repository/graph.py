"""The graph's rows, written in a new memory's own transaction: its names resolved to entities (one
per thing per namespace), its mentions, its keyed fact, and where the attribute holds one value at a
time, the older fact replaced by the newer (superseded_by, with its history row). Read back by
graph_reads.py."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from ..graph import Key, Said
from ..graph.name_forms import Name, begins, dotted_head, first_name, word_set
from ..graph.names import USER
from ..models import Principal
from .entity_edits import first_name_taken_in, name_given
from .fact_order import Relinked, held_for_another, in_time_order, write_links
from .sql import Sql, visible


@dataclass
class Recorded:
    """What the graph did with a new memory: the entities it names (id -> name), the older facts
    it replaced, and the newer fact that already replaces it (a fact dated before the live one)."""

    entities: dict[UUID, str] = field(default_factory=dict)
    about: list[UUID] = field(default_factory=list)
    key: str | None = None
    replaced: list[UUID] = field(default_factory=list)
    replaced_by: UUID | None = None


# A memory's mentions as inserted: (memory id, entity id, agent id, project id, role, source).
Mention = tuple[UUID, UUID, str | None, str | None, str, str]


Namespace = tuple[str | None, str | None]  # (agent id, project id)


@dataclass
class Known:
    """Entities read for a batch, found as `named_rows` finds them: by canonical name or word set,
    alias, and a full name by its first word."""

    by_form: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)
    by_first: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)

    def add(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for r in rows:
            for form in {r["canonical"], *r["aliases"]}:
                self.by_form.setdefault(form, []).append(r)
            self.by_first.setdefault(r["canonical"].split(" ", 1)[0], []).append(r)

    def named(self, names: Sequence[Name]) -> list[Mapping[str, Any]]:
        every = [c for n in names for c in (n.canonical, *n.forms)]
        found = {id(r): r for form in {*every, *map(word_set, every)} for r in self.by_form.get(form, ())}
        found |= {id(r): r for n in names if n.lone for r in self.by_first.get(n.canonical.split(" ", 1)[0], ())}
        return list(found.values())


@dataclass
class Batch:
    """The rows of one batch (`insert_many`, the backlog's), recorded one after another in its
    transaction: their mentions are inserted together, before anything reads them (a merge of a
    lone first name) and at the end (`flush`), not one statement a memory (an import of LoCoMo
    turns without the vector index: 400-500 -> 490-640 memories a second). And the entities every
    name of the batch may be are read once per namespace (`names`: the batch's names by the
    namespace of their memory), kept up to date with those the batch creates, and read again after
    a merge: one statement a memory was half the backlog's time (620 -> 860 a second)."""

    names: dict[Namespace, list[Name]] = field(default_factory=dict)
    pending: list[Mention] = field(default_factory=list)
    known: dict[Namespace, Known] = field(default_factory=dict)

    @classmethod
    def of(cls, memories: Sequence[asyncpg.Record], saids: Sequence[Said | None]) -> Batch:
        names: dict[Namespace, list[Name]] = {}
        for memory, said in zip(memories, saids, strict=True):
            if said is not None:
                names.setdefault((memory["agent_id"], memory["project_id"]), []).extend(said.names)
        return cls(names)

    async def flush(self, conn: asyncpg.Connection, user_id: str) -> None:
        mentions, self.pending = self.pending, []
        await insert_mentions(conn, user_id, mentions)

    async def candidates(self, conn: asyncpg.Connection, user_id: str, namespace: Namespace,
                         names: Sequence[Name]) -> Sequence[Mapping[str, Any]]:
        if namespace not in self.names:  # a memory the batch was not told of: read for it alone
            return await _candidates(conn, user_id, *namespace, names)
        if namespace not in self.known:
            self.known[namespace] = Known()
            self.known[namespace].add(dict(r) for r in await _candidates(conn, user_id, *namespace,
                                                                         self.names[namespace]))
        return self.known[namespace].named(names)

    def created(self, rows: Sequence[asyncpg.Record]) -> None:
        """Entities the batch created, added where a memory of each namespace read may name them."""
        for (agent_id, project_id), known in self.known.items():
            known.add(dict(r) for r in rows
                      if r["agent_id"] in (None, agent_id) and r["project_id"] in (None, project_id))


async def insert_mentions(conn: asyncpg.Connection, user_id: str, mentions: Sequence[Mention]) -> None:
    if mentions:
        columns = list(zip(*mentions, strict=True))
        await conn.execute(
            """INSERT INTO memory_entities (user_id, memory_id, entity_id, agent_id, project_id, role, source)
               SELECT $1, m, e, a, pr, r, s
               FROM unnest($2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[]) x(m, e, a, pr, r, s)
               ON CONFLICT DO NOTHING""",
            user_id, *(list(c) for c in columns))


def _specificity(row: Mapping[str, Any]) -> int:
    return (row["agent_id"] is not None) + (row["project_id"] is not None)


async def named_rows(conn: asyncpg.Connection, q: Sql, user_id: str, scope: str, names: Sequence[Name],
                     extra: str = "") -> list[asyncpg.Record]:
    """The live entities of `user_id` within `scope` (a condition on `e`, its arguments in `q`) that
    any of `names` may be: by canonical name, word set or alias, and full names by their first word
    (for a lone first name). `extra`: more columns to select."""
    every = {c for n in names for c in (n.canonical, *n.forms)}  # a batch's names repeat: each once
    wanted = q.arg(sorted(every | {word_set(c) for c in every}))
    # By the first word of a lone name's canonical form, "eun" for "Eun-ji": `choose` keeps the full
    # names that begin with all of it. Each form is found by text equality alone (a column, an alias
    # row), the one comparison an index serves under row-level security on any server
    # (020_entity_lookup.sql).
    firsts = q.arg(sorted({n.canonical.split(" ", 1)[0] for n in names if n.lone}))
    return await conn.fetch(
        f"""SELECT id, canonical, name, aliases, agent_id, project_id{extra} FROM entities e
            WHERE {scope} AND e.merged_into IS NULL
              AND (e.canonical = ANY({wanted}::text[]) OR e.first_word = ANY({firsts}::text[])
                   OR e.id = ANY(ARRAY(SELECT a.entity_id FROM entity_aliases a
                                       WHERE a.alias = ANY({wanted}::text[]) AND a.user_id = {q.arg(user_id)})))""",
        *q.args)


async def _candidates(conn: asyncpg.Connection, user_id: str, agent_id: str | None, project_id: str | None,
                      names: Sequence[Name]) -> list[asyncpg.Record]:
    """The entities a memory of (`agent_id`, `project_id`) may name: those of its namespace or a
    wider one. Not `visible`: this is where an entity belongs, not what a session may read, and
    holds with the scope filter off too."""
    q = Sql()
    scope = (f"e.user_id = {q.arg(user_id)} AND (e.agent_id IS NULL OR e.agent_id = {q.arg(agent_id)})"
             f" AND (e.project_id IS NULL OR e.project_id = {q.arg(project_id)})")
    return await named_rows(conn, q, user_id, scope, names)


def choose(name: Name, rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The entity `name` is, of `rows`, or None (a new one). The same name: the narrowest namespace's.
    A lone first name: the one full name it begins, never one of two ("Benedikt" with "Benedikt
    Pereira" and "Benedikt Nascimento" known is neither), else an entity of that name alone."""
    def named(r: Mapping[str, Any], wanted: set[str]) -> bool:
        return word_set(r["canonical"]) in wanted or not wanted.isdisjoint(r["aliases"])

    same = {name.canonical, word_set(name.canonical)}
    exact = [r for r in rows if named(r, same)]
    if name.lone:
        full = {r["canonical"] for r in rows if begins(r["canonical"], name.canonical)}
        if len(full) == 1:
            return max((r for r in rows if r["canonical"] in full), key=_specificity)
    if exact:
        return max(exact, key=_specificity)  # the first of the narrowest, as a stable sort gives
    # With or without a classifier ("team Dotterel" / "Dotterel"): the one thing known by it, not one of two.
    alike = {f for form in name.forms for f in (form, word_set(form))}
    kin = [r for r in rows if named(r, alike)]
    return max(kin, key=_specificity) if len({r["canonical"] for r in kin}) == 1 else None


async def resolve(conn: asyncpg.Connection, user_id: str, agent_id: str | None, project_id: str | None,
                  names: Sequence[Name], batch: Batch | None = None) -> tuple[dict[str, UUID], dict[str, UUID]]:
    """canonical name -> entity id for each of `names`, new entities created in the memory's
    namespace; a name that is not sure (a lone word opening a sentence) only when already known.
    Also those of them it created."""
    rows = (await batch.candidates(conn, user_id, (agent_id, project_id), names) if batch is not None
            else await _candidates(conn, user_id, agent_id, project_id, names))
    found: dict[str, UUID] = {}
    new: list[Name] = []
    for name in names:
        row = choose(name, rows)
        if row is not None:
            found[name.canonical] = row["id"]
        elif name.sure:
            new.append(name)
    if new:
        created = await conn.fetch(
            """INSERT INTO entities (user_id, agent_id, project_id, kind, name, canonical, aliases)
               SELECT $1, $2, $3, n.kind, n.name, n.canonical,
                      CASE WHEN n.alias <> n.canonical THEN ARRAY[n.alias] ELSE '{}' END
               FROM unnest($4::text[], $5::text[], $6::text[], $7::text[]) n(kind, name, canonical, alias)
               ON CONFLICT (user_id, coalesce(agent_id, ''), coalesce(project_id, ''), canonical)
                   WHERE merged_into IS NULL DO NOTHING
               RETURNING id, canonical, name, aliases, agent_id, project_id""",
            user_id, agent_id, project_id, ["user" if n.user else "named" for n in new],
            [n.display for n in new], [n.canonical for n in new], [_alias(n.canonical) for n in new])
        if batch is not None:
            batch.created(created)
        found |= {r["canonical"]: r["id"] for r in created}
        made = {r["canonical"]: r["id"] for r in created}
        raced = [n.canonical for n in new if n.canonical not in found]
        if raced:  # written by a concurrent transaction that committed first
            rows = await conn.fetch(
                """SELECT id, canonical FROM entities WHERE user_id = $1 AND merged_into IS NULL
                   AND agent_id IS NOT DISTINCT FROM $2 AND project_id IS NOT DISTINCT FROM $3
                   AND canonical = ANY($4::text[])""", user_id, agent_id, project_id, raced)
            found |= {r["canonical"]: r["id"] for r in rows}
        return found, made
    return found, {}


def _alias(canonical_name: str) -> str:
    """The other name a new entity is found by, or its canonical name for none: its words in order
    of the alphabet ("argon team" for "team argon"), or a dotted name's head ("node" for "node.js":
    "Which Node version ..." asks of it)."""
    ordered = word_set(canonical_name)
    return ordered if ordered != canonical_name else dotted_head(canonical_name) or canonical_name


def _lock_word(name: Name) -> str:
    """What a name's lock is taken on: its first word past any classifier and a dot's tail, so every
    name an entity may be written by ("Greta", "Greta Ibarra"; "team Dotterel", "Dotterel"; "Node",
    "Node.js") takes one lock."""
    words = min((f.split() for f in (name.canonical, *name.forms)), key=len)
    return (dotted_head(words[0]) or words[0]) if words else name.canonical


async def lock_names(conn: asyncpg.Connection, user_id: str, saids: Sequence[Said | None]) -> None:
    """Take, for the transaction and in one order, the locks of every name the memories about to be
    recorded hold: two writers naming the same people then create their entities and replace their
    facts one after the other (each statement sees what the first committed), never both at once
    (two live values of a one-at-a-time key) nor each waiting on the other (a deadlock)."""
    words = sorted({f"{user_id}\x1f{_lock_word(n)}" for said in saids if said is not None for n in said.names})
    if words:
        await conn.execute("SELECT pg_advisory_xact_lock(h) FROM (SELECT hashtextextended(w, 0) AS h "
                           "FROM unnest($1::text[]) w ORDER BY 1) locks", words)


async def record(conn: asyncpg.Connection, p: Principal, memory: asyncpg.Record, said: Said,
                 batch: Batch | None = None) -> Recorded:
    """Store what `memory` (just inserted) says of the graph, and replace by its key what it makes
    out of date. Returns what was done, for the history row and the caller. In a `batch`, its
    mentions may wait for the batch's `flush`."""
    done = Recorded()
    if not said.names:
        return done
    ids, created = await resolve(conn, p.user_id, memory["agent_id"], memory["project_id"], said.names, batch)
    mentions: list[Mention] = [(memory["id"], ids[n.canonical], memory["agent_id"], memory["project_id"], n.role,
                                said.source if n.given else "rules") for n in said.names if n.canonical in ids]
    if not mentions:
        return done
    done.entities = {ids[n.canonical]: n.display for n in said.names if n.canonical in ids}
    done.about = list(dict.fromkeys(m[1] for m in mentions if m[4] == "about"))
    alone = batch is None
    batch = batch or Batch()
    batch.pending.extend(mentions)
    people = {n.canonical: first for n in said.names if not n.user and (first := first_name(n.display))}
    merges = [(entity, people[name]) for name, entity in created.items() if name in people]
    named = [ids[n.canonical] for n in said.names if n.role == "mentioned" and not n.user and n.canonical in ids]
    naming = said.names_subject and said.key is not None and len(done.about) == 1 and len(named) == 1
    if alone or merges or naming:  # a merge moves a name's mentions: these among them (a keyed fact reads none)
        await batch.flush(conn, p.user_id)
    for entity, first in merges:
        if await first_name_taken_in(conn, p, entity, first, memory["agent_id"], memory["project_id"]):
            batch.known.clear()  # a lone name merged: its entity is gone, its aliases moved
    if said.key is None or not done.about:
        return done
    if said.key.alternatives:  # words that name two attributes: the one the subject has facts of
        known = await conn.fetch("SELECT DISTINCT attribute FROM memory_facts WHERE user_id = $1 "
                                 "AND entity_id = ANY($2::uuid[])", p.user_id, done.about)
        said = replace(said, key=said.key.within({r["attribute"] for r in known}))
    assert said.key is not None
    await conn.execute(
        """INSERT INTO memory_facts (user_id, memory_id, entity_id, agent_id, project_id, attribute, key_words,
                                     single, valid_from, source)
           SELECT $1, $2, e, $3, $4, $6, $7, $8, $9, $10 FROM unnest($5::uuid[]) e ON CONFLICT DO NOTHING""",
        p.user_id, memory["id"], memory["agent_id"], memory["project_id"], done.about, said.key.attribute,
        said.key.words, said.key.single, memory["occurred_at"], said.key_said_by)
    done.key = said.key.attribute
    if naming and named[0] not in done.about and await name_given(conn, p, done.about[0], named[0], memory["id"]):
        batch.known.clear()  # the name's entity is merged: its aliases moved
    if said.key.absorbs:
        await _refile(conn, p, done.about, said.key)
    if said.key.single and said.replaces:
        await _replace(conn, p, memory, said, done)
    elif said.ends:
        await _end(conn, p, memory, said, done)
    return done


async def restate(conn: asyncpg.Connection, p: Principal, memory: asyncpg.Record,
                  names: Sequence[Name] | None) -> None:
    """After an update: the keyed facts' validity starts at the memory's occurred_at, their
    attribute's values then in order of it (fact_order.py), and with a new text (`names` not None)
    the names rules read in the old text give way to the new text's; what the writer or a model
    said stays."""
    moved = await conn.fetch("UPDATE memory_facts SET valid_from = $3 WHERE user_id = $1 AND memory_id = $2 "
                             "AND valid_from <> $3 RETURNING entity_id, attribute",
                             p.user_id, memory["id"], memory["occurred_at"])
    if moved:
        await in_time_order(conn, p, memory["id"], [(r["entity_id"], r["attribute"]) for r in moved])
    if names is None:
        return
    await lock_names(conn, p.user_id, [Said(list(names))])
    await conn.execute("DELETE FROM memory_entities WHERE user_id = $1 AND memory_id = $2 AND source = 'rules'",
                       p.user_id, memory["id"])
    said = await conn.fetchval("SELECT count(*) FROM memory_entities WHERE user_id = $1 AND memory_id = $2 "
                               "AND role = 'about'", p.user_id, memory["id"])
    kept = [n if not said else replace(n, role="mentioned") for n in names]
    # A name the writer gave stays as the writer gave it.
    await record(conn, p, memory, Said(kept, None, "rules"))


async def _replace(conn: asyncpg.Connection, p: Principal, memory: asyncpg.Record, said: Said,
                   done: Recorded) -> None:
    """The attribute holds one value at a time: the live fact before this one (by valid time) is
    replaced by it, unless a later one already holds; then this one is out of date on arrival.
    Pinned memories and those this credential may not change are never replaced. Two facts of one
    batch its writer dated the same moment have no order ("My Pixel died, so I got an iPhone 15": a
    model read both off one turn): neither replaces the other (graph/validity.py: both hold). A
    write dated the same day as a fact written before still replaces it; an undated write is dated
    by its arrival (the transaction's start), and a batch's undated items replace in their order.
    A value still another subject's current one is replaced by nothing (fact_order.py
    `held_for_another`): "Ana and Rui moved to Porto." stays Ana's when Rui moves on alone."""
    assert said.key is not None
    q = Sql()
    new = q.arg(memory["id"])
    # `alike`: of this write's own transaction (one batch), and both dated by their writer.
    rows = await conn.fetch(
        f"""WITH n AS (SELECT xmin, occurred_at <> now() AS dated FROM memories
                       WHERE user_id = {q.arg(p.user_id)} AND id = {new})
            SELECT m.id, m.occurred_at, m.created_at, m.pinned, m.agent_id, m.project_id, m.superseded_by,
                   (s.id IS NOT NULL) AS replaced, (m.xmin = n.xmin AND n.dated AND m.occurred_at <> now()) AS alike,
                   {held_for_another(f"o.entity_id <> ALL({q.arg(done.about)}::uuid[])")} AS held_for_another
            FROM memory_facts f JOIN memories m ON m.user_id = f.user_id AND m.id = f.memory_id
            CROSS JOIN n
            LEFT JOIN memories s ON s.user_id = m.user_id AND s.id = m.superseded_by AND s.deleted_at IS NULL
            WHERE f.user_id = {q.arg(p.user_id)} AND f.entity_id = ANY({q.arg(done.about)}::uuid[])
              AND f.attribute = {q.arg(said.key.attribute)} AND f.single
              AND f.memory_id <> {new} AND m.deleted_at IS NULL AND {visible(q, p)}
            ORDER BY f.valid_from, m.created_at FOR UPDATE OF m""", *q.args)
    rows = list({r["id"]: r for r in rows}.values())  # one row per memory, about two entities or one
    when: datetime = memory["occurred_at"]
    later = [r for r in rows if r["occurred_at"] > when and not r["replaced"]]
    if later:
        done.replaced_by = later[0]["id"]
        await _mark(conn, p, [memory["id"]], later[0]["id"], [None], said)
        return
    own = [r for r in rows if not r["replaced"] and not r["pinned"] and not r["held_for_another"]
           and not (r["alike"] and r["occurred_at"] == when)
           and not (p.agent_confined and r["agent_id"] is None)
           and not (p.project_confined and r["project_id"] is None)]
    if own:
        done.replaced = [r["id"] for r in own]
        await _mark(conn, p, done.replaced, memory["id"], [r["superseded_by"] for r in own], said)


async def _end(conn: asyncpg.Connection, p: Principal, memory: asyncpg.Record, said: Said, done: Recorded) -> None:
    """The values `said` ends, replaced by the memory that says so; as a replace, never a pinned one
    nor one this credential may not change, nor one already replaced or stated later."""
    q = Sql()
    rows = await conn.fetch(
        f"""SELECT m.id, m.superseded_by FROM memories m
            LEFT JOIN memories s ON s.user_id = m.user_id AND s.id = m.superseded_by AND s.deleted_at IS NULL
            WHERE m.user_id = {q.arg(p.user_id)} AND m.id = ANY({q.arg(list(said.ends))}::uuid[])
              AND m.deleted_at IS NULL AND NOT m.pinned AND s.id IS NULL
              AND m.occurred_at <= {q.arg(memory['occurred_at'])} AND {visible(q, p)}
              {"AND m.agent_id IS NOT NULL" if p.agent_confined else ""}
              {"AND m.project_id IS NOT NULL" if p.project_confined else ""}
            ORDER BY m.occurred_at FOR UPDATE OF m""", *q.args)
    if rows:
        done.replaced = [r["id"] for r in rows]
        await _mark(conn, p, done.replaced, memory["id"], [r["superseded_by"] for r in rows], said,
                    f"superseded by {memory['id']}: said to have ended ({said.key.attribute if said.key else ''})")


async def _refile(conn: asyncpg.Connection, p: Principal, entities: list[UUID], key: Key) -> None:
    """The subject's facts under the attributes `key` takes in (a writer's own words for it) filed
    under its attribute: those of memories `p` may read; the words they were keyed in stay."""
    q = Sql()
    await conn.execute(
        f"""UPDATE memory_facts f SET attribute = {q.arg(key.attribute)}, single = {q.arg(key.single)}
            FROM memories m
            WHERE f.user_id = {q.arg(p.user_id)} AND f.entity_id = ANY({q.arg(entities)}::uuid[])
              AND f.attribute = ANY({q.arg(list(key.absorbs))}::text[])
              AND m.user_id = f.user_id AND m.id = f.memory_id AND {visible(q, p)}""", *q.args)


async def _mark(conn: asyncpg.Connection, p: Principal, older: list[UUID], newer: UUID,
                before: list[UUID | None], said: Said, reason: str | None = None) -> None:
    assert said.key is not None
    reason = reason or f"superseded by {newer}: a newer value of the same key ({said.key.attribute})"
    await write_links(conn, p, [Relinked(m, b, newer) for m, b in zip(older, before, strict=True)], reason)


__all__ = ["USER", "Recorded", "lock_names", "named_rows", "choose", "record", "resolve", "restate"]

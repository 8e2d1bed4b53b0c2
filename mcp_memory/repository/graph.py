"""The graph's rows, written in a new memory's own transaction: its names resolved to entities (one
per thing per namespace), its mentions, its keyed fact, and where the attribute holds one value at a
time, the older fact replaced by the newer (superseded_by, with its history row). Read back for a
search (the entities a question names, their keyed facts) and a memory's record."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from ..graph import Key, Said
from ..graph.names import USER, Name, word_set
from ..models import MemoryEdge, MemoryFilter, Principal
from .memory_store import MemoryStore
from .sql import Sql, live, visible


@dataclass
class Recorded:
    """What the graph did with a new memory: the entities it names (id -> name), the older facts
    it replaced, and the newer fact that already replaces it (a fact dated before the live one)."""

    entities: dict[UUID, str] = field(default_factory=dict)
    about: list[UUID] = field(default_factory=list)
    key: str | None = None
    replaced: list[UUID] = field(default_factory=list)
    replaced_by: UUID | None = None


def _specificity(row: asyncpg.Record) -> int:
    return (row["agent_id"] is not None) + (row["project_id"] is not None)


async def _named(conn: asyncpg.Connection, q: Sql, scope: str, names: Sequence[Name],
                 extra: str = "") -> list[asyncpg.Record]:
    """The live entities within `scope` (a condition on `e`, its arguments in `q`) that any of
    `names` may be: by canonical name, word set or alias, and full names by their first word (for a
    lone first name). `extra`: more columns to select."""
    every = [c for n in names for c in (n.canonical, *n.forms)]
    wanted = q.arg(every + [word_set(c) for c in every])
    firsts = q.arg([n.canonical for n in names if " " not in n.canonical and not n.user])
    return await conn.fetch(
        f"""SELECT id, canonical, name, aliases, agent_id, project_id{extra} FROM entities e
            WHERE {scope} AND e.merged_into IS NULL
              AND (e.canonical = ANY({wanted}::text[]) OR e.aliases && {wanted}::text[]
                   OR split_part(e.canonical, ' ', 1) = ANY({firsts}::text[]))""", *q.args)


async def _candidates(conn: asyncpg.Connection, user_id: str, agent_id: str | None, project_id: str | None,
                      names: Sequence[Name]) -> list[asyncpg.Record]:
    """The entities a memory of (`agent_id`, `project_id`) may name: those of its namespace or a
    wider one. Not `visible`: this is where an entity belongs, not what a session may read, and
    holds with the scope filter off too."""
    q = Sql()
    scope = (f"e.user_id = {q.arg(user_id)} AND (e.agent_id IS NULL OR e.agent_id = {q.arg(agent_id)})"
             f" AND (e.project_id IS NULL OR e.project_id = {q.arg(project_id)})")
    return await _named(conn, q, scope, names)


def _choose(name: Name, rows: Sequence[asyncpg.Record]) -> asyncpg.Record | None:
    """The entity `name` is, of `rows`, or None (a new one). The same name: the narrowest namespace's.
    A lone first name: the one full name it begins, never one of two ("Benedikt" with "Benedikt
    Pereira" and "Benedikt Nascimento" known is neither), else an entity of that name alone."""
    def named(r: asyncpg.Record, wanted: set[str]) -> bool:
        return word_set(r["canonical"]) in wanted or bool(wanted & set(r["aliases"]))

    same = {name.canonical, word_set(name.canonical)}
    exact = sorted((r for r in rows if named(r, same)), key=_specificity, reverse=True)
    if " " not in name.canonical and not name.user:
        full = {r["canonical"] for r in rows if r["canonical"].split(" ", 1)[0] == name.canonical
                and " " in r["canonical"]}
        if len(full) == 1:
            return max((r for r in rows if r["canonical"] in full), key=_specificity)
    if exact:
        return exact[0]
    # With or without a classifier ("team Dotterel" / "Dotterel"): the one thing known by it, not one of two.
    alike = {f for form in name.forms for f in (form, word_set(form))}
    kin = [r for r in rows if named(r, alike)]
    return max(kin, key=_specificity) if len({r["canonical"] for r in kin}) == 1 else None


async def resolve(conn: asyncpg.Connection, user_id: str, agent_id: str | None, project_id: str | None,
                  names: Sequence[Name]) -> dict[str, UUID]:
    """canonical name -> entity id for each of `names`, new entities created in the memory's
    namespace; a name that is not sure (a lone word opening a sentence) only when already known."""
    rows = await _candidates(conn, user_id, agent_id, project_id, names)
    found: dict[str, UUID] = {}
    new: list[Name] = []
    for name in names:
        row = _choose(name, rows)
        if row is not None:
            found[name.canonical] = row["id"]
        elif name.sure:
            new.append(name)
    if new:
        created = await conn.fetch(
            """INSERT INTO entities (user_id, agent_id, project_id, kind, name, canonical, aliases)
               SELECT $1, $2, $3, n.kind, n.name, n.canonical,
                      CASE WHEN n.words <> n.canonical THEN ARRAY[n.words] ELSE '{}' END
               FROM unnest($4::text[], $5::text[], $6::text[], $7::text[]) n(kind, name, canonical, words)
               ON CONFLICT (user_id, coalesce(agent_id, ''), coalesce(project_id, ''), canonical)
                   WHERE merged_into IS NULL DO NOTHING
               RETURNING id, canonical""",
            user_id, agent_id, project_id, ["user" if n.user else "named" for n in new],
            [n.display for n in new], [n.canonical for n in new], [word_set(n.canonical) for n in new])
        found |= {r["canonical"]: r["id"] for r in created}
        raced = [n.canonical for n in new if n.canonical not in found]
        if raced:  # written by a concurrent transaction that committed first
            rows = await conn.fetch(
                """SELECT id, canonical FROM entities WHERE user_id = $1 AND merged_into IS NULL
                   AND agent_id IS NOT DISTINCT FROM $2 AND project_id IS NOT DISTINCT FROM $3
                   AND canonical = ANY($4::text[])""", user_id, agent_id, project_id, raced)
            found |= {r["canonical"]: r["id"] for r in rows}
    return found


def _lock_word(name: Name) -> str:
    """What a name's lock is taken on: its first word past any classifier, so every name an entity
    may be written by ("Greta", "Greta Ibarra"; "team Dotterel", "Dotterel") takes one lock."""
    words = min((f.split() for f in (name.canonical, *name.forms)), key=len)
    return words[0] if words else name.canonical


async def lock_names(conn: asyncpg.Connection, user_id: str, saids: Sequence[Said | None]) -> None:
    """Take, for the transaction and in one order, the locks of every name the memories about to be
    recorded hold: two writers naming the same people then create their entities and replace their
    facts one after the other (each statement sees what the first committed), never both at once
    (two live values of a one-at-a-time key) nor each waiting on the other (a deadlock)."""
    words = sorted({f"{user_id}\x1f{_lock_word(n)}" for said in saids if said is not None for n in said.names})
    if words:
        await conn.execute("SELECT pg_advisory_xact_lock(h) FROM (SELECT hashtextextended(w, 0) AS h "
                           "FROM unnest($1::text[]) w ORDER BY 1) locks", words)


async def record(conn: asyncpg.Connection, p: Principal, memory: asyncpg.Record, said: Said) -> Recorded:
    """Store what `memory` (just inserted) says of the graph, and replace by its key what it makes
    out of date. Returns what was done, for the history row and the caller."""
    done = Recorded()
    if not said.names:
        return done
    ids = await resolve(conn, p.user_id, memory["agent_id"], memory["project_id"], said.names)
    mentions = [(ids[n.canonical], n.role, said.source if n.given else "rules") for n in said.names
                if n.canonical in ids]
    if not mentions:
        return done
    done.entities = {ids[n.canonical]: n.display for n in said.names if n.canonical in ids}
    done.about = list(dict.fromkeys(e for e, role, _ in mentions if role == "about"))
    await conn.execute(
        """INSERT INTO memory_entities (user_id, memory_id, entity_id, agent_id, project_id, role, source)
           SELECT $1, $2, e, $3, $4, r, s FROM unnest($5::uuid[], $6::text[], $7::text[]) x(e, r, s)
           ON CONFLICT DO NOTHING""",
        p.user_id, memory["id"], memory["agent_id"], memory["project_id"],
        [e for e, _, _ in mentions], [r for _, r, _ in mentions], [s for _, _, s in mentions])
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
    if said.key.absorbs:
        await _refile(conn, p, done.about, said.key)
    if said.key.single and said.replaces:
        await _replace(conn, p, memory, said, done)
    elif said.ends:
        await _end(conn, p, memory, said, done)
    return done


async def restate(conn: asyncpg.Connection, p: Principal, memory: asyncpg.Record,
                  names: Sequence[Name] | None) -> None:
    """After an update: the keyed facts' validity starts at the memory's occurred_at, and with a
    new text (`names` not None) the names rules read in the old text give way to the new text's;
    what the writer or a model said stays."""
    await conn.execute("UPDATE memory_facts SET valid_from = $3 WHERE user_id = $1 AND memory_id = $2 "
                       "AND valid_from <> $3", p.user_id, memory["id"], memory["occurred_at"])
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
    Pinned memories and those this credential may not change are never replaced."""
    assert said.key is not None
    q = Sql()
    rows = await conn.fetch(
        f"""SELECT m.id, m.occurred_at, m.created_at, m.pinned, m.agent_id, m.project_id, m.superseded_by,
                   (s.id IS NOT NULL) AS replaced
            FROM memory_facts f JOIN memories m ON m.user_id = f.user_id AND m.id = f.memory_id
            LEFT JOIN memories s ON s.user_id = m.user_id AND s.id = m.superseded_by AND s.deleted_at IS NULL
            WHERE f.user_id = {q.arg(p.user_id)} AND f.entity_id = ANY({q.arg(done.about)}::uuid[])
              AND f.attribute = {q.arg(said.key.attribute)} AND f.single
              AND f.memory_id <> {q.arg(memory['id'])} AND m.deleted_at IS NULL AND {visible(q, p)}
            ORDER BY f.valid_from, m.created_at FOR UPDATE OF m""", *q.args)
    rows = list({r["id"]: r for r in rows}.values())  # one row per memory, about two entities or one
    when: datetime = memory["occurred_at"]
    later = [r for r in rows if r["occurred_at"] > when and not r["replaced"]]
    if later:
        done.replaced_by = later[0]["id"]
        await _mark(conn, p, [memory["id"]], later[0]["id"], [None], said)
        return
    own = [r for r in rows if not r["replaced"] and not r["pinned"]
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
    await conn.execute("UPDATE memories SET superseded_by = $3, updated_at = now(), version = version + 1 "
                       "WHERE user_id = $1 AND id = ANY($2::uuid[])", p.user_id, older, newer)
    await conn.executemany(
        """INSERT INTO memory_history (user_id, memory_id, event, old, new, actor, client, reason)
           VALUES ($1, $2, 'UPDATE', $3, $4, $5, $6, $7)""",
        [(p.user_id, mid, {"superseded_by": str(b) if b else None}, {"superseded_by": str(newer)}, p.actor,
          p.client, reason)
         for mid, b in zip(older, before, strict=True)])


async def structure_of(conn: asyncpg.Connection, p: Principal, ids: Sequence[UUID]) -> dict[UUID, dict[str, Any]]:
    """For each memory of `ids`: the names of what it is about and mentions, its key, and its
    edges (kind, the other memory, 'out' from it or 'in' to it)."""
    q = Sql()
    edges = await conn.fetch(
        f"""SELECT from_id, to_id, kind FROM memory_edges
            WHERE user_id = {q.arg(p.user_id)} AND (from_id = ANY({q.arg(list(ids))}::uuid[])
                                                   OR to_id = ANY({q.arg(list(ids))}::uuid[]))
            ORDER BY created_at""", *q.args)
    q = Sql()
    rows = await conn.fetch(
        f"""SELECT me.memory_id, me.role, e.name, e.kind, f.attribute, f.key_words
            FROM memory_entities me JOIN entities e ON e.user_id = me.user_id AND e.id = me.entity_id
            LEFT JOIN memory_facts f ON f.user_id = me.user_id AND f.memory_id = me.memory_id
                                    AND f.entity_id = me.entity_id
            WHERE me.user_id = {q.arg(p.user_id)} AND me.memory_id = ANY({q.arg(list(ids))}::uuid[])
            ORDER BY me.role, e.name""", *q.args)
    found: dict[UUID, dict[str, object]] = {}
    for r in rows:
        s = found.setdefault(r["memory_id"], {"about": [], "mentions": [], "key": None})
        name = "the user" if r["kind"] == "user" else r["name"]
        s["about" if r["role"] == "about" else "mentions"].append(name)  # type: ignore[union-attr]
        if r["attribute"] is not None:
            s["key"] = r["attribute"]
    for e in edges:
        for mine, other, direction in ((e["from_id"], e["to_id"], "out"), (e["to_id"], e["from_id"], "in")):
            if mine in ids:
                entry = found.setdefault(mine, {"about": [], "mentions": [], "key": None})
                entry.setdefault("edges", []).append(MemoryEdge(kind=e["kind"], memory=other, direction=direction))
    return found


async def entities_named(conn: asyncpg.Connection, p: Principal, names: Sequence[Name],
                         keyed: bool = True) -> list[UUID]:
    """The known entities `names` (a question's) are that `p` can see, and (`keyed`) that have keyed
    facts; nothing is created. A lone first name is the one full name it begins, never one of two."""
    if not names:
        return []
    q = Sql()
    rows = await _named(conn, q, visible(q, p, "e"), names, extra=(
        ", EXISTS (SELECT 1 FROM memory_facts f WHERE f.user_id = e.user_id AND f.entity_id = e.id) AS keyed"))
    found: dict[UUID, None] = {}
    for name in names:
        chosen = _choose(name, rows)
        # Each namespace the session sees may hold its own entity of one name: all of them count;
        # only those with keyed facts matter to a question (most named things have none), and
        # without one the search reads no facts at all.
        if chosen is not None:
            found.update(dict.fromkeys(r["id"] for r in rows if r["canonical"] == chosen["canonical"]
                                       and (r["keyed"] or not keyed)))
    return list(found)


async def current_facts(repo: MemoryStore, p: Principal, names: Sequence[Name]) -> list[asyncpg.Record]:
    """The keyed facts of the entities `names` are (as a write would resolve them) that nothing live
    has replaced: each with its memory's id and text."""
    async with repo.reading(p) as conn:
        entities = await entities_named(conn, p, names)
        if not entities:
            return []
        rows = await facts_of(conn, p, entities, None)
        replaced = await conn.fetch(
            "SELECT m.id FROM memories m JOIN memories s ON s.user_id = m.user_id AND s.id = m.superseded_by "
            "WHERE m.user_id = $1 AND m.id = ANY($2::uuid[]) AND s.deleted_at IS NULL",
            p.user_id, [r["id"] for r in rows])
    gone = {r["id"] for r in replaced}
    return [r for r in rows if r["id"] not in gone]


async def facts_of(conn: asyncpg.Connection, p: Principal, entities: Sequence[UUID],
                   f: MemoryFilter | None) -> list[asyncpg.Record]:
    """The keyed facts of `entities` whose memories are live, visible and pass `f` (as of its
    `as_of`), each with what a search hit shows of its memory; newest valid first."""
    q = Sql()
    where = live(q, p, f)
    if f is not None and f.as_of is not None:
        where.append(f"m.created_at <= {q.arg(f.as_of)}")
    return await conn.fetch(
        f"""SELECT DISTINCT ON (f.valid_from, m.created_at, m.id) f.attribute, f.key_words, f.single, f.valid_from,
                   f.entity_id,
                   m.id, m.title, m.content, m.kind, m.tags, m.agent_id, m.project_id, m.occurred_at, m.superseded_by
            FROM memory_facts f JOIN memories m ON m.user_id = f.user_id AND m.id = f.memory_id
            WHERE f.user_id = {q.arg(p.user_id)} AND f.entity_id = ANY({q.arg(list(entities))}::uuid[])
              AND {" AND ".join(where)}
            ORDER BY f.valid_from DESC, m.created_at DESC, m.id""", *q.args)


async def entity_rows(conn: asyncpg.Connection, p: Principal, *, entity: UUID | None = None,
                      limit: int = 100) -> list[asyncpg.Record]:
    """Visible live entities (one by id, or the most named), with how many live memories name each;
    by name: `entities_named` (as a write resolves it)."""
    q = Sql()
    where = [visible(q, p, "e"), "e.merged_into IS NULL"]
    if entity is not None:
        where.append(f"e.id = {q.arg(entity)}")
    return await conn.fetch(
        f"""SELECT e.id, e.name, e.kind, e.agent_id, e.project_id,
                   (SELECT count(*) FROM memory_entities me JOIN memories m ON m.user_id = me.user_id
                        AND m.id = me.memory_id AND m.deleted_at IS NULL
                    WHERE me.user_id = e.user_id AND me.entity_id = e.id) AS memories
            FROM entities e WHERE {" AND ".join(where)}
            ORDER BY memories DESC, e.name LIMIT {q.arg(limit)}""", *q.args)


async def neighbours_of(conn: asyncpg.Connection, p: Principal, entity: UUID, limit: int = 10) -> list[asyncpg.Record]:
    """The entities named in the same live memories as `entity`, most shared first: one hop."""
    q = Sql()
    return await conn.fetch(
        f"""SELECT e.id, e.name, e.kind, count(DISTINCT m.id) AS shared
            FROM memory_entities a
            JOIN memories m ON m.user_id = a.user_id AND m.id = a.memory_id AND m.deleted_at IS NULL
            JOIN memory_entities b ON b.user_id = a.user_id AND b.memory_id = a.memory_id AND b.entity_id <> a.entity_id
            JOIN entities e ON e.user_id = b.user_id AND e.id = b.entity_id
            WHERE a.user_id = {q.arg(p.user_id)} AND a.entity_id = {q.arg(entity)} AND {visible(q, p)}
            GROUP BY e.id, e.name, e.kind ORDER BY shared DESC, e.name LIMIT {q.arg(limit)}""", *q.args)


__all__ = ["USER", "Recorded", "current_facts", "entities_named", "entity_rows", "facts_of", "lock_names",
           "neighbours_of", "record", "resolve", "restate", "structure_of"]

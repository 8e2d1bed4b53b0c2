"""A person's corrections of the graph, one transaction each, recorded in entity_edits with exactly
the rows they moved or changed so that each can be undone: merge one entity into another, split a
merge again, fix or remove the key of one memory or whom it is about. What keys cannot forbid is
checked before the commit (no fact without its mention, no link to a merged entity or beyond its
entity's namespace): an edit that would break it changes nothing. Rows in namespaces the session
does not act in are counted through the read-only user-wide policy (rls.sql): an edit that would
have to move them is refused, never done by half. A key fix is key_edits.py's, an about fix about_edits.py's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import asyncpg

from ..errors import Conflict, InvalidInput, NotFound, PermissionDenied
from ..graph.name_forms import begins
from ..graph.names import entity_name
from ..models import Principal
from .sql import Sql, visible

Row = dict[str, Any]


def where(row: asyncpg.Record | Row) -> str:
    """A namespace in words."""
    if row["agent_id"] is None and row["project_id"] is None:
        return "the whole user (shared)"
    return " · ".join(f"{k} {row[k + '_id']}" for k in ("agent", "project") if row[k + "_id"] is not None)


def contains(wide: asyncpg.Record | Row, narrow: asyncpg.Record | Row) -> bool:
    """`wide`'s namespace is `narrow`'s or a wider one (the rule a name is resolved by)."""
    return all(wide[k] is None or wide[k] == narrow[k] for k in ("agent_id", "project_id"))


def _sees(p: Principal, row: asyncpg.Record | Row) -> bool:
    return (row["agent_id"] is None or row["agent_id"] == p.agent_id) and \
        (row["project_id"] is None or row["project_id"] == p.project_id)


def _label(row: asyncpg.Record | Row) -> str:
    return entity_name(row["kind"], row["name"])


def _own(p: Principal, rows: Sequence[asyncpg.Record], what: str) -> None:
    """A credential limited to some agents / projects changes only what is theirs alone."""
    shared = [_label(r) for r in rows if (p.agent_confined and r["agent_id"] is None)
              or (p.project_confined and r["project_id"] is None)]
    if shared:
        raise PermissionDenied(f"{', '.join(map(repr, shared))} is shared beyond this credential's agents and "
                               f"projects; it cannot {what}. Nothing was changed")


async def _user_wide(conn: asyncpg.Connection, on: bool) -> None:
    """Open (or close) the read-only policy over every namespace of this user for what follows."""
    await conn.execute("SELECT set_config('mcp_memory.scope', $1, true)", "user" if on else "")


def _outside(q: Sql, p: Principal, alias: str) -> str:
    """Rows of a namespace `p` does not act in (explicit: it holds with the scope filter off too)."""
    a = alias
    return (f"NOT (({a}.agent_id IS NULL OR {a}.agent_id IS NOT DISTINCT FROM {q.arg(p.agent_id)}::text)"
            f" AND ({a}.project_id IS NULL OR {a}.project_id IS NOT DISTINCT FROM {q.arg(p.project_id)}::text))")


async def _hidden(conn: asyncpg.Connection, p: Principal, entity: UUID, memories: list[UUID] | None = None) -> int:
    """How many mentions and facts of `entity` (of `memories` only, when given) lie in namespaces
    this session does not act in: it could neither see nor move them."""
    q = Sql()
    only = f" AND x.memory_id = ANY({q.arg(memories)}::uuid[])" if memories is not None else ""
    user, ent = q.arg(p.user_id), q.arg(entity)
    outside = _outside(q, p, "x")
    await _user_wide(conn, True)
    found = await conn.fetchval(
        f"""SELECT (SELECT count(*) FROM memory_entities x WHERE x.user_id = {user} AND x.entity_id = {ent}
                    AND {outside}{only})
                 + (SELECT count(*) FROM memory_facts x WHERE x.user_id = {user} AND x.entity_id = {ent}
                    AND {outside}{only})""", *q.args)
    await _user_wide(conn, False)
    return int(found)


async def consistent(conn: asyncpg.Connection, p: Principal, entities: list[UUID]) -> None:
    """The checks of repository/graph_checks.py, on the entities an edit touched, before it commits."""
    await _user_wide(conn, True)
    broken = await conn.fetchval(
        """SELECT (SELECT count(*) FROM memory_facts f WHERE f.user_id = $1 AND f.entity_id = ANY($2::uuid[])
                   AND NOT EXISTS (SELECT 1 FROM memory_entities me WHERE me.user_id = f.user_id
                                   AND me.memory_id = f.memory_id AND me.entity_id = f.entity_id))
                + (SELECT count(*) FROM entities e
                   JOIN memory_entities x ON x.user_id = e.user_id AND x.entity_id = e.id
                   WHERE e.user_id = $1 AND e.id = ANY($2::uuid[])
                     AND (e.merged_into IS NOT NULL OR e.agent_id IS NOT NULL AND e.agent_id IS DISTINCT FROM x.agent_id
                          OR e.project_id IS NOT NULL AND e.project_id IS DISTINCT FROM x.project_id))
                + (SELECT count(*) FROM entities e
                   JOIN memory_facts x ON x.user_id = e.user_id AND x.entity_id = e.id
                   WHERE e.user_id = $1 AND e.id = ANY($2::uuid[]) AND e.merged_into IS NOT NULL)""",
        p.user_id, entities)
    await _user_wide(conn, False)
    if broken:
        raise Conflict(f"this edit would leave {broken} link(s) of the graph inconsistent (another change raced "
                       "it?); nothing was changed: reload and try again")


async def lock_entities(conn: asyncpg.Connection, p: Principal, ids: Sequence[UUID]) -> dict[UUID, asyncpg.Record]:
    """The visible entities of `ids`, locked (in id order: two edits never deadlock); NotFound for
    any other id (another user's, another namespace's, or none)."""
    q = Sql()
    rows = await conn.fetch(
        f"""SELECT e.id, e.name, e.kind, e.canonical, e.aliases, e.agent_id, e.project_id, e.merged_into
            FROM entities e WHERE {visible(q, p, "e")} AND e.id = ANY({q.arg(list(ids))}::uuid[])
            ORDER BY e.id FOR UPDATE""", *q.args)
    found = {r["id"]: r for r in rows}
    for i in ids:
        if i not in found:
            raise NotFound(f"no entity {i} in this session's scope; nothing was changed")
    return found


async def record_edit(conn: asyncpg.Connection, p: Principal, kind: str, scope: asyncpg.Record | Row, *,
                  entity: UUID, other: UUID | None = None, memory: UUID | None = None, entities: list[UUID],
                  rows: Row, reason: str | None) -> asyncpg.Record:
    return await conn.fetchrow(
        """INSERT INTO entity_edits (user_id, agent_id, project_id, kind, entity_id, other_id, memory_id, entity_ids,
                                     rows, reason, actor, client)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING *""",
        p.user_id, scope["agent_id"], scope["project_id"], kind, entity, other, memory, entities, rows, reason,
        p.actor, p.client)


async def mark_undone(conn: asyncpg.Connection, p: Principal, edit: UUID) -> None:
    await conn.execute("UPDATE entity_edits SET undone_at = now(), undone_by = $3 WHERE user_id = $1 AND id = $2",
                       p.user_id, edit, p.actor)


def _brief(row: asyncpg.Record) -> Row:
    return {"id": str(row["id"]), "name": _label(row)}


# --- merge and split -------------------------------------------------------------------------


async def merge(conn: asyncpg.Connection, p: Principal, into: UUID, source: UUID, reason: str | None) -> asyncpg.Record:
    """`source`'s mentions and facts move to `into`; a memory naming both keeps `into`'s row (the
    source's is kept in the record; `about` wins over `mentioned`); `into` takes the source's names
    as aliases; the source keeps its row with merged_into. Returns the edit."""
    if into == source:
        raise InvalidInput("an entity cannot be merged into itself; nothing was changed")
    found = await lock_entities(conn, p, [into, source])
    target, merged = found[into], found[source]
    for row in (target, merged):
        if row["merged_into"] is not None:
            raise Conflict(f"{_label(row)!r} was already merged into another entity (split it off first); "
                           "nothing was changed")
    if merged["kind"] == "user" and target["kind"] != "user":
        raise InvalidInput("the user's own entity cannot be merged into another (merge the other into it); "
                           "nothing was changed")
    if not contains(target, merged):
        raise InvalidInput(
            f"{_label(merged)!r} lives in {where(merged)}, which {_label(target)!r} ({where(target)}) does not "
            "contain: an entity takes in only entities of its own namespace or a narrower one"
            + (" (merge the other way round)" if contains(merged, target) else "") + "; nothing was changed")
    _own(p, [target, merged], "be merged")
    hidden = await _hidden(conn, p, source)
    if hidden:
        raise PermissionDenied(f"{_label(merged)!r} is named in {hidden} place(s) in namespaces this session does not "
                               "act in (other agents or projects): a merge must move every one; nothing was changed")
    mentions = await conn.fetch(
        """SELECT x.memory_id, x.role, to_jsonb(x) AS row, a.role AS target_role
           FROM memory_entities x LEFT JOIN memory_entities a
             ON a.user_id = x.user_id AND a.memory_id = x.memory_id AND a.entity_id = $3
           WHERE x.user_id = $1 AND x.entity_id = $2 ORDER BY x.memory_id FOR UPDATE OF x""",
        p.user_id, source, into)
    facts = await conn.fetch(
        """SELECT x.memory_id, to_jsonb(x) AS row, a.memory_id IS NOT NULL AS clash
           FROM memory_facts x LEFT JOIN memory_facts a
             ON a.user_id = x.user_id AND a.memory_id = x.memory_id AND a.entity_id = $3
           WHERE x.user_id = $1 AND x.entity_id = $2 ORDER BY x.memory_id FOR UPDATE OF x""",
        p.user_id, source, into)
    moved = [m["memory_id"] for m in mentions if m["target_role"] is None]
    dropped = [m for m in mentions if m["target_role"] is not None]
    promoted = [m["memory_id"] for m in dropped if m["role"] == "about" and m["target_role"] == "mentioned"]
    facts_moved = [f["memory_id"] for f in facts if not f["clash"]]
    facts_dropped = [f for f in facts if f["clash"]]
    added = [n for n in dict.fromkeys([merged["canonical"], *merged["aliases"]])
             if n != target["canonical"] and n not in target["aliases"]]
    args = (p.user_id, source, into)
    await conn.execute("DELETE FROM memory_facts WHERE user_id = $1 AND entity_id = $2 AND memory_id = ANY($3::uuid[])",
                       p.user_id, source, [f["memory_id"] for f in facts_dropped])
    await conn.execute("UPDATE memory_facts SET entity_id = $3 WHERE user_id = $1 AND entity_id = $2 "
                       "AND memory_id = ANY($4::uuid[])", *args, facts_moved)
    await conn.execute("DELETE FROM memory_entities WHERE user_id = $1 AND entity_id = $2 "
                       "AND memory_id = ANY($3::uuid[])", p.user_id, source, [m["memory_id"] for m in dropped])
    await conn.execute("UPDATE memory_entities SET entity_id = $3 WHERE user_id = $1 AND entity_id = $2 "
                       "AND memory_id = ANY($4::uuid[])", *args, moved)
    await conn.execute("UPDATE memory_entities SET role = 'about' WHERE user_id = $1 AND entity_id = $2 "
                       "AND memory_id = ANY($3::uuid[])", p.user_id, into, promoted)
    await conn.execute("UPDATE entities SET aliases = aliases || $3::text[], updated_at = now() "
                       "WHERE user_id = $1 AND id = $2", p.user_id, into, added)
    await conn.execute("UPDATE entities SET merged_into = $3, updated_at = now() WHERE user_id = $1 AND id = $2",
                       *args)
    await consistent(conn, p, [into, source])
    rows = {"target": _brief(target), "source": _brief(merged), "mentions_moved": [str(i) for i in moved],
            "mentions_dropped": [m["row"] for m in dropped], "mentions_promoted": [str(i) for i in promoted],
            "facts_moved": [str(i) for i in facts_moved], "facts_dropped": [f["row"] for f in facts_dropped],
            "aliases_added": added}
    return await record_edit(conn, p, "merge", merged, entity=into, other=source, entities=[into, source], rows=rows,
                         reason=reason)


# The reason a write's own merge of a first name into a full name is recorded with (console: undo).
FIRST_NAME_MERGED = "named by the first name alone before, now in full"


async def first_name_taken_in(conn: asyncpg.Connection, p: Principal, full: UUID, first: str,
                              agent_id: str | None, project_id: str | None) -> UUID | None:
    """Someone named by the first name alone ("Greta", canonical `first`) and later in full ("Greta
    Ibarra", `full`, just created) is one entity: the lone name's, of the same namespace, is merged
    into the full one as a person would merge them in the console (recorded, undoable by a split),
    when no other full name of the namespace begins with it; with two ("Greta Lindqvist" too) it could be
    either, and stays apart. Returns the entity merged, if any; a merge this session could not
    make (names in namespaces it does not act in) is not made."""
    rows = await conn.fetch(
        """SELECT id, canonical FROM entities
           WHERE user_id = $1 AND merged_into IS NULL AND kind <> 'user'
             AND agent_id IS NOT DISTINCT FROM $2 AND project_id IS NOT DISTINCT FROM $3
             AND first_word = split_part($4, ' ', 1)""",
        p.user_id, agent_id, project_id, first)
    lone = [r["id"] for r in rows if r["canonical"] == first]
    fulls = [r["id"] for r in rows if begins(r["canonical"], first)]
    if len(lone) != 1 or fulls != [full]:
        return None
    return lone[0] if await _merged_if_allowed(conn, p, full, lone[0], FIRST_NAME_MERGED) else None


NAME_GIVEN = "the name a memory keyed as what they are called gives them"


async def name_given(conn: asyncpg.Connection, p: Principal, subject: UUID, named: UUID, memory: UUID) -> bool:
    """A memory keyed as what its subject is called ("My wife's name is Sara.", about "my wife", key
    "name") gives its subject the one other name it holds: that name's entity ("Sara") is merged
    into the subject's as a person would merge them in the console (recorded, undoable by a split),
    so a question naming Sara reads what is known of "my wife". Not where another memory names it
    too: a name known from elsewhere may be someone else's ("Sara" of the office), and stays apart."""
    elsewhere = await conn.fetchval("SELECT EXISTS (SELECT 1 FROM memory_entities WHERE user_id = $1 "
                                    "AND entity_id = $2 AND memory_id <> $3)", p.user_id, named, memory)
    return not elsewhere and await _merged_if_allowed(conn, p, subject, named, NAME_GIVEN)


async def _merged_if_allowed(conn: asyncpg.Connection, p: Principal, into: UUID, source: UUID, reason: str) -> bool:
    """`merge`, made by a write where it may be: a merge the edit refuses (names in namespaces this
    session does not act in, the user's entity into another) is not made, and the write goes on as
    it was, by a savepoint (the transaction was begun by hand, sql.py)."""
    await conn.execute("SAVEPOINT merged_by_write")
    try:
        await merge(conn, p, into, source, reason)
    except (Conflict, InvalidInput, NotFound, PermissionDenied):
        await conn.execute("ROLLBACK TO SAVEPOINT merged_by_write")
        return False
    await conn.execute("RELEASE SAVEPOINT merged_by_write")
    return True


async def split(conn: asyncpg.Connection, p: Principal, edit: asyncpg.Record, reason: str | None) -> asyncpg.Record:
    """The merge `edit` undone: exactly the mentions and facts that moved go back (those purged or
    read again since are gone and stay so), the rows set aside come back, a promoted role is
    demoted, the aliases it added go, the merged entity is live again. Returns the split's edit."""
    rows = edit["rows"]
    into, source = edit["entity_id"], edit["other_id"]
    found = await lock_entities(conn, p, [into, source])
    target, merged = found[into], found[source]
    if merged["merged_into"] != into or target["merged_into"] is not None:
        raise Conflict(f"{_label(merged)!r} is no longer merged into {_label(target)!r}; nothing was changed")
    _own(p, [target, merged], "be split")
    mentions, facts = _ids(rows["mentions_moved"]), _ids(rows["facts_moved"])
    promoted = _ids(rows["mentions_promoted"])
    if await _hidden(conn, p, into, list({*mentions, *facts, *promoted})) or not all(
            _sees(p, r) for r in (*rows["mentions_dropped"], *rows["facts_dropped"])):
        raise PermissionDenied(f"the merge of {_label(merged)!r} moved rows of namespaces this session does not act "
                               f"in; split it from {where(edit)}; nothing was changed")
    args = (p.user_id, into, source)
    back = int((await conn.execute("UPDATE memory_facts SET entity_id = $3 WHERE user_id = $1 AND entity_id = $2 "
                                   "AND memory_id = ANY($4::uuid[])", *args, facts)).split()[-1])
    back += int((await conn.execute("UPDATE memory_entities SET entity_id = $3 WHERE user_id = $1 AND entity_id = $2 "
                                    "AND memory_id = ANY($4::uuid[])", *args, mentions)).split()[-1])
    await conn.execute("UPDATE memory_entities SET role = 'mentioned' WHERE user_id = $1 AND entity_id = $2 "
                       "AND role = 'about' AND memory_id = ANY($3::uuid[])", p.user_id, into, promoted)
    back += await reinsert_mentions(conn, p, rows["mentions_dropped"])
    back += await reinsert_facts(conn, p, rows["facts_dropped"])
    await conn.execute("UPDATE entities SET aliases = array(SELECT a FROM unnest(aliases) a WHERE NOT a = ANY($3)), "
                       "updated_at = now() WHERE user_id = $1 AND id = $2", p.user_id, into, rows["aliases_added"])
    try:
        await conn.execute("UPDATE entities SET merged_into = NULL, updated_at = now() WHERE user_id = $1 AND id = $2",
                           p.user_id, source)
    except asyncpg.UniqueViolationError:
        raise Conflict(f"an entity named {_label(merged)!r} was created in {where(merged)} since the merge: merge that "
                       "one into the other first; nothing was changed") from None
    await consistent(conn, p, [into, source])
    await mark_undone(conn, p, edit["id"])
    total = len(mentions) + len(facts) + len(rows["mentions_dropped"]) + len(rows["facts_dropped"])
    done = {"undoes": str(edit["id"]), "target": _brief(target), "source": _brief(merged), "rows_back": back,
            "rows_gone": total - back}
    return await record_edit(conn, p, "split", edit, entity=into, other=source, entities=[into, source], rows=done,
                         reason=reason)


def _ids(values: list[str]) -> list[UUID]:
    return [UUID(v) for v in values]


async def reinsert_mentions(conn: asyncpg.Connection, p: Principal, rows: list[Row]) -> int:
    """Mention rows put back as they were (those of memories purged since are gone)."""
    status = await conn.execute(
        """INSERT INTO memory_entities (user_id, memory_id, entity_id, agent_id, project_id, role, source, created_at)
           SELECT r.user_id, r.memory_id, r.entity_id, m.agent_id, m.project_id, r.role, r.source, r.created_at
           FROM jsonb_populate_recordset(NULL::memory_entities, $2::jsonb) r
           JOIN memories m ON m.user_id = r.user_id AND m.id = r.memory_id
           WHERE r.user_id = $1 ON CONFLICT DO NOTHING""", p.user_id, rows)
    return int(status.split()[-1])


async def reinsert_facts(conn: asyncpg.Connection, p: Principal, rows: list[Row]) -> int:
    """Keyed facts put back as they were, valid from their memory's occurred_at as it is now."""
    status = await conn.execute(
        """INSERT INTO memory_facts (user_id, memory_id, entity_id, agent_id, project_id, attribute, key_words, single,
                                     ended, valid_from, source, created_at)
           SELECT r.user_id, r.memory_id, r.entity_id, m.agent_id, m.project_id, r.attribute, r.key_words, r.single,
                  r.ended, m.occurred_at, r.source, r.created_at
           FROM jsonb_populate_recordset(NULL::memory_facts, $2::jsonb) r
           JOIN memories m ON m.user_id = r.user_id AND m.id = r.memory_id
           WHERE r.user_id = $1 ON CONFLICT DO NOTHING""", p.user_id, rows)
    return int(status.split()[-1])


# --- a memory's key --------------------------------------------------------------------------


# --- the record ------------------------------------------------------------------------------


_WHAT = {"merge": "merge", "key": "key fix", "about": "fix of whom a memory is about"}


async def edit_row(conn: asyncpg.Connection, p: Principal, edit: UUID, *, lock: bool = False) -> asyncpg.Record:
    q = Sql()
    row = await conn.fetchrow(f"SELECT * FROM entity_edits e WHERE {visible(q, p, 'e')} AND e.id = {q.arg(edit)}"
                              + (" FOR UPDATE" if lock else ""), *q.args)
    if row is None:
        raise NotFound(f"no entity edit {edit} in this session's scope; nothing was changed")
    return row


async def later(conn: asyncpg.Connection, p: Principal, edit: asyncpg.Record) -> None:
    """An edit is undone only while no later live edit touches its entities: a merge of either, or
    a key fix of their facts (of the same memory, when both fix a memory's key or whom it is
    about). Splits do not count: they only put back what a merge moved. Read over every namespace
    of the user, so that one made elsewhere also counts, without showing what it was."""
    q = Sql()
    elsewhere = _outside(q, p, "e")
    touches = f"e.entity_ids && {q.arg(edit['entity_ids'])}::uuid[]"
    if edit["kind"] in ("key", "about"):
        touches = (f"CASE WHEN e.kind IN ('key', 'about') THEN e.memory_id = {q.arg(edit['memory_id'])} "
                   f"ELSE {touches} END")
    await _user_wide(conn, True)
    row = await conn.fetchrow(
        f"""SELECT e.kind, e.created_at, {elsewhere} AS elsewhere FROM entity_edits e
            WHERE e.user_id = {q.arg(p.user_id)} AND e.seq > {q.arg(edit["seq"])} AND e.undone_at IS NULL
              AND e.kind <> 'split' AND {touches}
            ORDER BY e.seq DESC LIMIT 1""", *q.args)
    await _user_wide(conn, False)
    if row is not None:
        what = "an edit in another namespace" if row["elsewhere"] else \
            f"the later {_WHAT[row['kind']]} of {row['created_at']:%Y-%m-%d %H:%M UTC}"
        raise Conflict(f"{what} touches the same entities: undo it first; nothing was changed")

"""The conversations a question's speaker took part in.

A store holding many conversations (a user's sessions with and about many people) answers a
question about one of their speakers ("What European countries has Maria been to?") in the turns
of the conversations she spoke in, her own and the others' in them; another conversation's turns
("James: Besides Italy, I was also in Turkey") share the question's words and none of its subject.
The subject factor lifts her own turns only, so another conversation's turns came before the other
speaker's answers to her. A turn (episode) with no turn of the named speaker's within the reply gap
of it, in its scope (of each speaker, where a question names several: "When did John and James
meet?"), is taken down by `other_conversation`. Where every conversation has the speaker in it
(one conversation's store) nothing changes; nor for other kinds of memories, nor for a name no turn
is spoken by, nor one of more than SPEAKER_TURNS_READ turns. Where speakers are told apart the vector
list is drawn from their conversations too (`Conversations.nearest`). SQL fragments for
retrieval/statement.py, and the look once a minute that tells whether a scope holds another
conversation at all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import asyncpg

from ..models import MemoryFilter, Principal
from ..repository import Sql, live
from ..repository.graph_reads import speaker_windows, turns_within
from .narrowing import Remembered

# A speaker's turns are read to find their conversations up to this many; one who speaks more in
# the scope is not told apart by conversation (the read would cost a search more than it gains).
SPEAKER_TURNS_READ = 2_000
# The speakers of a question read so, at most (each is a read of their turns; a hostile question can
# name every known speaker). A question naming more is told apart by the first ones' conversations.
MAX_SPEAKERS = 4
# Episodes looked at, at most, to tell whether a scope holds a conversation without the speaker (once
# a minute): past them, a store is taken as one conversation's until the next look.
EPISODES_LOOKED_AT = 5_000


# What the post-walk check of `Conversations.nearest` reads of each candidate the walk found.
WALK_COLUMNS = ", m.kind, m.agent_id, m.project_id, m.occurred_at"


@dataclass(frozen=True)
class Conversations:
    ctes: str  # to precede the statement's other CTEs, each ending with ",\n"
    factor: str  # a score factor for the candidate `m`
    took_part: str = ""  # that episode `m` lies in each speaker's conversations ("" with no speakers)

    def nearest(self, where: str, scope: str, distance: str, model: str, cap: str, walk: str) -> str:
        """The vector list of a question naming speakers told apart: the nearest of the memories
        `walk` found (`id`, `key` and the `WALK_COLUMNS` `took_part` reads) that are no turn of another
        conversation, and of the turns of the speakers' conversations found by an exact sort, read
        window by window on the turns' time index; `cap` of them. In a store of many conversations
        the walk's first hundred are mostly other conversations' turns, so the speaker's own turns
        were scored against a list they barely reached. The walk keeps its own plan (a filter in it
        would walk on past every other conversation in a big store), and the windows are as few as
        the speakers' turns (SPEAKER_TURNS_READ). The first speaker's windows (`_spoken`'s
        `spoken_0`) are the only ones read: a turn in each speaker's conversations is in the first's.
        A window's turns are read by the scope (`scope`) and the time index alone, and the rest of
        `where` (a filter) checked on each: a tag's index entries ANDed with every window's cost
        4.5 ms a window at a million memories, whose windows hold a few hundred turns."""
        return f"""(SELECT m.id, m.key FROM ({walk}) m WHERE m.kind <> 'episode' OR ({self.took_part}))
            UNION
            (SELECT m.id, {distance} AS key
             FROM spoken_0 s CROSS JOIN LATERAL unnest(s.near) w(r) CROSS JOIN LATERAL (
                 SELECT m.* FROM memories m
                 WHERE {scope} AND {turns_within("w.r", "s")} AND m.embedding_model = {model} OFFSET 0) m
             WHERE {where} AND {self.took_part}
             ORDER BY key LIMIT {cap})
            ORDER BY key LIMIT {cap}"""


def other_conversation(q: Sql, p: Principal, f: MemoryFilter | None, speakers: Sequence[Sequence[UUID]],
                       factor: float, gap_minutes: float) -> Conversations:
    """`factor` for an episode that lacks, within `gap_minutes` of it in its scope, a turn of each
    speaker the question names (`speakers`: each one's entities; a turn of theirs: an episode about
    them, as the store stood at the filter's `as_of`); 1 otherwise, with no speakers, and where the
    filter's kinds leave no turn (nor a window of turns to read, `Conversations.nearest`)."""
    if not speakers or factor >= 1 or (f is not None and f.kinds and "episode" not in f.kinds):
        return Conversations("", "1")
    ctes, took_part = _spoken(q, p, speakers, gap_minutes, f.as_of if f is not None else None)
    return Conversations("".join(f"{cte},\n" for cte in ctes),
                         f"CASE WHEN m.kind = 'episode' AND NOT ({took_part}) THEN {q.arg(factor)}::float8 ELSE 1 END",
                         took_part)


async def told_apart(conn: asyncpg.Connection, p: Principal, speakers: list[tuple[UUID, ...]], gap_minutes: float,
                     remembered: Remembered) -> list[tuple[UUID, ...]]:
    """`speakers`, or none where no conversation of the scope lacks them: none of the first
    EPISODES_LOOKED_AT live episodes `p` sees lacks a turn of each within `gap_minutes` of it in its
    scope (one conversation's store, or a speaker of every session), and the factor would change
    nothing. Looked at once a minute (`remembered`), as a scope's size is: a conversation begun
    since is told apart from the next look on."""
    if not speakers:
        return []

    async def look() -> bool:
        q = Sql()
        ctes, took_part = _spoken(q, p, speakers, gap_minutes, None)
        return bool(await conn.fetchval(f"""WITH {", ".join(ctes)}
            SELECT EXISTS (SELECT 1 FROM (SELECT m.agent_id, m.project_id, m.occurred_at FROM memories m
                                          WHERE {" AND ".join(live(q, p))} AND m.kind = 'episode'
                                          LIMIT {EPISODES_LOOKED_AT}) m
                           WHERE NOT ({took_part}))""", *q.args))
    key = ("conversations", p.user_id, p.agent_id, p.project_id, tuple(speakers), gap_minutes)
    return speakers if await remembered(key, look) else []


def _spoken(q: Sql, p: Principal, speakers: Sequence[Sequence[UUID]], gap_minutes: float,
            as_of: datetime | None) -> tuple[list[str], str]:
    """A CTE per speaker (`spoken_i`): their conversations (`speaker_windows`), read once; and the
    condition that episode `m` lies in a window of each."""
    speakers = speakers[:MAX_SPEAKERS]
    ctes = [f"spoken_{i} AS MATERIALIZED ({speaker_windows(q, p, ids, gap_minutes, as_of)})"
            for i, ids in enumerate(speakers)]
    took_part = " AND ".join(
        f"EXISTS (SELECT 1 FROM spoken_{i} s WHERE s.agent_id IS NOT DISTINCT FROM m.agent_id "
        f"AND s.project_id IS NOT DISTINCT FROM m.project_id AND m.occurred_at <@ s.near)"
        for i in range(len(speakers)))
    return ctes, took_part

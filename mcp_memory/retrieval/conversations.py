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
is spoken by, nor one of more than SPEAKER_TURNS_READ turns. SQL fragment for retrieval/statement.py."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from ..models import MemoryFilter, Principal
from ..repository import Sql

# A speaker's turns are read to find their conversations up to this many; one who speaks more in
# the scope is not told apart by conversation (the read would cost a search more than it gains).
SPEAKER_TURNS_READ = 2_000
# The speakers of a question read so, at most (each is a read of their turns; a hostile question can
# name every known speaker). A question naming more is told apart by the first ones' conversations.
MAX_SPEAKERS = 4


@dataclass(frozen=True)
class Conversations:
    ctes: str  # to follow the statement's other CTEs, each starting with ",\n"
    factor: str  # a score factor for the candidate `m`


def other_conversation(q: Sql, p: Principal, f: MemoryFilter | None, speakers: Sequence[Sequence[UUID]],
                       factor: float, gap_minutes: float) -> Conversations:
    """`factor` for an episode that lacks, within `gap_minutes` of it in its scope, a turn of each
    speaker the question names (`speakers`: each one's entities; a turn of theirs: an episode about
    them, as the store stood at the filter's `as_of`); 1 otherwise, and with no speakers. Each
    speaker's turns are read once, as the windows around them merged per scope (`range_agg`), and
    a candidate looks its time up in them. Each turn is read by its id (a LIMIT 1 lateral): joined, the
    planner read every episode of the user instead."""
    if not speakers or factor >= 1:
        return Conversations("", "1")
    speakers = speakers[:MAX_SPEAKERS]
    gap = f"{q.arg(gap_minutes)}::float8 * interval '1 minute'"
    existed = f"AND t.created_at <= {q.arg(f.as_of)}" if f is not None and f.as_of is not None else ""
    ctes = "".join(f""",
    spoken_{i} AS MATERIALIZED (
        SELECT t.agent_id, t.project_id,
               range_agg(tstzrange(t.occurred_at - {gap}, t.occurred_at + {gap}, '[]')) AS near
        FROM memory_entities me CROSS JOIN LATERAL (
            SELECT t.agent_id, t.project_id, t.occurred_at FROM memories t
            WHERE t.user_id = me.user_id AND t.id = me.memory_id AND t.kind = 'episode'
              AND t.deleted_at IS NULL {existed}
            LIMIT 1) t
        WHERE me.user_id = {q.arg(p.user_id)} AND me.entity_id = ANY({q.arg(list(ids))}::uuid[]) AND me.role = 'about'
        GROUP BY t.agent_id, t.project_id
    )""" for i, ids in enumerate(speakers))
    took_part = " AND ".join(
        f"EXISTS (SELECT 1 FROM spoken_{i} s WHERE s.agent_id IS NOT DISTINCT FROM m.agent_id "
        f"AND s.project_id IS NOT DISTINCT FROM m.project_id AND m.occurred_at <@ s.near)"
        for i in range(len(speakers)))
    return Conversations(ctes, f"CASE WHEN m.kind = 'episode' AND NOT ({took_part}) "
                               f"THEN {q.arg(factor)}::float8 ELSE 1 END")

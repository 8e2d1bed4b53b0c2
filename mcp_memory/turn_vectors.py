"""Which turn each episode's vector holds (vectors.py `summed`, `embedding_turn_weight`), for the
write path, and its vector made again when its text or the turn before it changes (an edit, a
forget or restore of the turn before, a decision undone).

The turn before an episode is the live episode just before it in its namespace, at most
`embedding_turn_minutes` earlier (repository/turns.py): the store's, or for a batch, an earlier
turn of the same batch where that one comes later than the store's."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from uuid import UUID

import asyncpg

from .models import NewMemory, Principal

if TYPE_CHECKING:
    from .repository import MemoryRepository
    from .vectors import Vectors

log = logging.getLogger(__name__)


def _minutes(vectors: Vectors | None) -> float:
    return vectors.turn_minutes if vectors is not None else 0.0


async def turns_before(repo: MemoryRepository, vectors: Vectors | None, p: Principal,
                       news: Sequence[NewMemory]) -> list[str | None]:
    """The text of each new memory's turn before it (None for one that is no episode, or has none)."""
    minutes = _minutes(vectors)
    episodes = [i for i, n in enumerate(news) if n.kind == "episode"]
    out: list[str | None] = [None] * len(news)
    if minutes <= 0 or not episodes:
        return out
    now = datetime.now(UTC)  # what the insert gives a memory without a time, near enough
    at = [n.occurred_at or now for n in news]
    # Without a time the database's clock stamps it (the insert's now()), so it looks up by that.
    stored = await repo.turns_before_new(p, [(news[i].agent_id, news[i].project_id, news[i].occurred_at)
                                             for i in episodes], minutes)
    in_store = dict(zip(episodes, stored, strict=True))
    gap = timedelta(minutes=minutes)
    # A batch's rows are stored in its order, after every row there: among turns that occurred at
    # the same time, a later item of the batch comes after an earlier one and after the store's.
    last: dict[tuple[str | None, str | None], int] = {}
    for i in sorted(episodes, key=lambda i: (at[i], i)):
        namespace = (news[i].agent_id, news[i].project_id)
        j = last.get(namespace)
        last[namespace] = i
        store = in_store[i]
        if j is not None and at[j] >= at[i] - gap and (store is None or at[j] >= store[1]):
            out[i] = news[j].content
        elif store is not None:
            out[i] = store[0]
    return out


async def turns_after(repo: MemoryRepository, vectors: Vectors | None, p: Principal, ids: Sequence[UUID]) -> list[UUID]:
    """The episodes whose vectors hold one of `ids` as their turn before (none with the weight 0)."""
    minutes = _minutes(vectors)
    return await repo.turns_after(p, ids, minutes) if minutes > 0 and ids else []


async def turn_before_stored(repo: MemoryRepository, vectors: Vectors | None, p: Principal, memory_id: UUID,
                             kind: str | None = None) -> str | None:
    """The text of the turn before a stored memory, were it an episode (or of `kind`, about to be)."""
    minutes = _minutes(vectors)
    if minutes <= 0:
        return None
    row = (await repo.turns_before(p, [memory_id], minutes)).get(memory_id)
    return row[2] if row is not None and (kind or row[0]) == "episode" else None


async def embed_again(repo: MemoryRepository, vectors: Vectors | None, p: Principal, ids: Sequence[UUID],
                      *, itself: bool = True, followers: bool = True) -> None:
    """Make again the vectors of the memories `ids` (`itself`: their text or their place changed)
    and (`followers`) of the episodes after them, whose vectors hold them; each stored only
    if its text is still the one embedded. After the change committed: the embedder down, their
    vectors are dropped for its healing to make again (the backfill's, as any missing vector); the
    database down, the change stands and this is logged."""
    if vectors is None or vectors.embedder is None or vectors.model is None or not ids:
        return
    try:
        await _embed_again(repo, vectors, p, ids, itself=itself, followers=followers)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.InternalClientError):
        log.warning("the vectors of %d memories and the turns after them were not made again", len(ids),
                    exc_info=True)


async def _embed_again(repo: MemoryRepository, vectors: Vectors, p: Principal, ids: Sequence[UUID], *,
                       itself: bool, followers: bool) -> None:
    assert vectors.model is not None
    minutes = _minutes(vectors)
    todo = list(ids) if itself else []
    if followers and minutes > 0:
        todo += [i for i in await repo.turns_after(p, ids, minutes) if i not in set(todo)]
    if not todo:
        return
    rows = await repo.turns_before(p, todo, minutes)
    found = [(i, *rows[i]) for i in todo if i in rows]
    if not found:
        return
    made = await vectors.documents_or_none(
        [content for _, _, content, _ in found],
        befores=[before if kind == "episode" else None for _, kind, _, before in found])
    if made is None:
        # The model down: no vector is better than one holding a text that was edited away or
        # forgotten; the embedder's healing embeds them again once it answers (`heal_forever`).
        await repo.drop_vectors(p, [i for i, *_ in found])
        return
    await repo.store_vectors(p, vectors.model, [(i, content, v) for (i, _, content, _), v
                                                in zip(found, made, strict=True)])

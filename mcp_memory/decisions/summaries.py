"""Session summaries (issue 49): the abstraction level between a session's raw turns and the
long-term facts taken from them. The model pass that extracts a captured delta's facts also
answers the session's summary (extraction.py), shown the summary so far to write it anew; it is
stored as one memory of kind `session_summary` per session, derived_from every turn it sums up.

One per session: the session's summary is found by its session tag and id, and a later delta
updates it (the earlier text stays in its history) and links the delta's turns; a retaken job
writes the same text again, which changes nothing. Two workers that summed up one session's first
deltas at the same moment leave two: the next delta keeps the oldest, with the others' turns, and
forgets the rest. Without a model nothing is summarised: no job, no summary; a model that leaves
the summary out (or answers something that is not a text) writes none, and its facts still count."""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from ..models import Memory, MemoryFilter, Principal, WriteItem
from ..repository import edges as links
from ..repository.edges import Edge
from ..repository.jobs import Job

if TYPE_CHECKING:
    from ..service import MemoryService

KIND = "session_summary"
MAX_SUMMARY_CHARS = 1500  # a few sentences; more is the model retelling the turns
MIN_SUMMARY_CHARS = 12    # "Greetings." is no summary
MAX_FOUND = 5             # summaries of one session looked at (more than one only after a race)
_SENTENCE_END = re.compile(r"[.!?…](?=\s)")
_WORD = re.compile(r"[^\W\d_][^\W_]+")  # a word of any language: letters, then letters or digits


def cleaned(value: Any) -> str | None:
    """The model's summary as stored: a text of at least a few words, cut after its last whole
    sentence within MAX_SUMMARY_CHARS; None for anything else (no summary, never an error)."""
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    if len(text) < MIN_SUMMARY_CHARS or text.lower() in ("null", "none", "n/a"):
        return None
    if len(text) > MAX_SUMMARY_CHARS:
        cut = text[:MAX_SUMMARY_CHARS]
        ends = [m.end() for m in _SENTENCE_END.finditer(cut + " ")]
        text = cut[:ends[-1]] if ends and ends[-1] > MAX_SUMMARY_CHARS // 2 else cut.rstrip() + " …"
    return text


def restates(text: str, summary: str, share: float) -> bool:
    """Whether at least `share` of the words of `text` (numbers aside) are words of `summary`."""
    words = set(_WORD.findall(text.lower()))
    return bool(words) and len(words & set(_WORD.findall(summary.lower()))) >= share * len(words)


def session_tag(service: MemoryService, session_id: str) -> str:
    """The tag capture gives a session's episodes, as the store keeps it (lower case, bounded)."""
    return service.check.tags([f"session:{session_id}"[: service.settings.max_tag_chars]])[0]


async def current(service: MemoryService, p: Principal, session_id: str) -> list[Memory]:
    """The live summaries of the session that `p` sees, oldest first (one, but for a race)."""
    f = MemoryFilter(kinds=[KIND], tags=[session_tag(service, session_id)])  # type: ignore[list-item]
    page = await service.list(p, f, order="recent", limit=MAX_FOUND)
    same = [m for m in page.memories if (m.metadata or {}).get("session_id") == session_id]
    return sorted(same, key=lambda m: (m.created_at, str(m.id)))


async def store(service: MemoryService, p: Principal, job: Job, text: str, turns: list[UUID],
                first_at: datetime | None) -> dict[str, Any]:
    """Write or update the session's summary with `text`, derived_from `turns` (the delta's
    episodes); looked up again, as another delta's job may have written one while the model was
    asked. Returns what the job's result says of it."""
    assert job.session_id is not None
    found = await current(service, p, job.session_id)
    meta = {"session_id": job.session_id, "extraction_job": job.id}
    if not found:
        item = WriteItem(content=text, kind=KIND, metadata=meta, importance=0.5, occurred_at=first_at,
                         tags=["capture", "summary", session_tag(service, job.session_id)])
        written = await service.write_many(p, [item], source="extraction", said_by="model",
                                           edges=[[Edge("derived_from", e, "model") for e in turns]])
        return {"id": str(written.memories[0].id), "status": written.memories[0].status}
    kept, extra = found[0], found[1:]
    status = "pinned"  # a text the user pinned stays as it is; the new turns are still linked
    if not kept.pinned:
        status = (await service.update(p, kept.id, content=text, metadata={**kept.metadata, **meta},
                                       reason=f"extraction: the session's summary with {len(turns)} more turns")
                  ).status
    async with service.repo.transaction(p) as conn:
        # The turns the others were derived from are this one's too, before they are forgotten.
        sources = [to for m in extra for kind, to, _ in (await links.linked(conn, p, [m.id])).get(m.id, [])
                   if kind == "derived_from"]
        await links.link(conn, p, kept.id, [Edge("derived_from", e, "model") for e in [*sources, *turns]])
    if extra:
        await service.forget(p, [m.id for m in extra], reason="extraction: a second summary of the same session")
    return {"id": str(kept.id), "status": status, **({"merged": len(extra)} if extra else {})}


__all__ = ["KIND", "cleaned", "current", "restates", "session_tag", "store"]

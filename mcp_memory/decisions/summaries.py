"""Session summaries (issue 49): the abstraction level between a session's raw turns and the
long-term facts taken from them. The model pass that extracts a captured delta's facts also
answers a summary of the delta (extraction.py); the session's summary is one memory of kind
`session_summary` per session, derived_from every turn it sums up, whose text is its deltas'
summaries in order (`metadata.parts`, one per extraction job): the first (what the session set
out to do) and the latest that fit MAX_SUMMARY_CHARS.

The summary so far is not shown to the model to be written anew: the local 1.5B model then copied
it into the facts, in place of the new turns' own (bench/session_summaries.py). One per session:
found by its session tag and id, a later delta updates it (the earlier text stays in its history)
and links the delta's turns; a retaken job replaces its own part with what the model says now.
Two workers that summed up one session's first deltas at the same moment leave two: the next
delta keeps the oldest, with the others' parts and turns, and forgets the rest. Without a model
nothing is summarised: no job, no summary; a model that leaves the summary out (or answers
something that is not a text) writes none, and its facts still count."""

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
MAX_SUMMARY_CHARS = 1500  # the session's summary: more is a retelling of its turns
MAX_PART_CHARS = 600      # a delta's summary: one or two sentences
MIN_SUMMARY_CHARS = 12    # "Greetings." is no summary
MAX_FOUND = 5             # summaries of one session looked at (more than one only after a race)
_SENTENCE_END = re.compile(r"[.!?…](?=\s)")


def cleaned(value: Any) -> str | None:
    """The model's summary as stored: a text of at least a few words, cut after its last whole
    sentence within MAX_PART_CHARS; None for anything else (no summary, never an error)."""
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    if len(text) < MIN_SUMMARY_CHARS or text.lower() in ("null", "none", "n/a"):
        return None
    if len(text) > MAX_PART_CHARS:
        cut = text[:MAX_PART_CHARS]
        ends = [m.end() for m in _SENTENCE_END.finditer(cut + " ")]
        text = cut[:ends[-1]] if ends and ends[-1] > MAX_PART_CHARS // 2 else cut.rstrip() + " …"
    return text


def composed(parts: list[dict[str, Any]], left_out: int = 0) -> tuple[str, list[dict[str, Any]], int]:
    """The session's text from its deltas' summaries in job order: the first, then the latest
    that fit MAX_SUMMARY_CHARS, "…" where some are left out between (`left_out` of them were
    before). Returns the text, the parts it holds (all that is kept of them: metadata is bounded)
    and how many are left out now."""
    ordered = sorted(parts, key=lambda x: int(x["job"]))
    if not ordered:
        return "", [], left_out
    first, rest = ordered[0], ordered[1:]
    tail: list[dict[str, Any]] = []
    room = MAX_SUMMARY_CHARS - len(first["text"]) - 2  # the "…" a gap takes
    for part in reversed(rest):
        if len(part["text"]) + 1 > room:
            break
        tail.insert(0, part)
        room -= len(part["text"]) + 1
    left_out += len(rest) - len(tail)
    text = " ".join([first["text"], *(["…"] if left_out else []), *(x["text"] for x in tail)])
    return text, [first, *tail], left_out


def session_tag(service: MemoryService, session_id: str) -> str:
    """The tag capture gives a session's episodes, as the store keeps it (lower case, bounded)."""
    return service.check.tags([f"session:{session_id}"[: service.settings.max_tag_chars]])[0]


async def current(service: MemoryService, p: Principal, session_id: str) -> list[Memory]:
    """The live summaries of the session that `p` sees, oldest first (one, but for a race)."""
    f = MemoryFilter(kinds=[KIND], tags=[session_tag(service, session_id)])  # type: ignore[list-item]
    page = await service.list(p, f, order="recent", limit=MAX_FOUND, structured=False)
    same = [m for m in page.memories if (m.metadata or {}).get("session_id") == session_id]
    return sorted(same, key=lambda m: (m.created_at, str(m.id)))


async def store(service: MemoryService, p: Principal, job: Job, text: str, turns: list[UUID],
                first_at: datetime | None) -> dict[str, Any]:
    """Add `text`, the summary of the job's delta, to its session's summary (write it, the first
    time), derived_from `turns` (the delta's episodes). Returns what the job's result says of it."""
    assert job.session_id is not None
    found = await current(service, p, job.session_id)
    part = {"job": job.id, "text": text}
    if not found:
        meta = {"session_id": job.session_id, "parts": [part]}
        item = WriteItem(content=text, kind=KIND, metadata=meta, importance=0.5, occurred_at=first_at,
                         tags=["capture", "summary", session_tag(service, job.session_id)])
        written = await service.write_many(p, [item], source="extraction", said_by="model",
                                           edges=[[Edge("derived_from", e, "model") for e in turns]])
        return {"id": str(written.memories[0].id), "status": written.memories[0].status}
    kept, extra = found[0], found[1:]
    parts = {int(x["job"]): x for m in found for x in _parts(m)}
    parts[job.id] = part  # a retaken job's part is what the model says now
    before = sum(int((m.metadata or {}).get("parts_left_out") or 0) for m in found)
    text, held, left_out = composed(list(parts.values()), before)
    status = "pinned"  # a text the user pinned stays as it is; the new turns are still linked
    if not kept.pinned:
        status = (await service.update(p, kept.id, content=text,
                                       metadata={**kept.metadata, "parts": held, "parts_left_out": left_out},
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


def _parts(m: Memory) -> list[dict[str, Any]]:
    """A summary's parts as stored; one written without them (by hand) is one part, its text."""
    parts = (m.metadata or {}).get("parts")
    if isinstance(parts, list) and all(isinstance(x, dict) and isinstance(x.get("job"), int)
                                       and isinstance(x.get("text"), str) for x in parts):
        return parts
    return [{"job": 0, "text": m.content}]


__all__ = ["KIND", "cleaned", "composed", "current", "session_tag", "store"]

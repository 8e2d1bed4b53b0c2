"""Turns of a transcript into memories: each turn an `episode` (redacted, cut, in order, at its
time, tagged with the session), and the sentences that set off a trigger as preference /
decision / fact memories linked to their episode. A cursor per transcript makes a re-run store
only what is new."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from ..config import Settings
from ..errors import NotFound
from ..models import Principal, WriteItem
from ..repository.transcripts import Cursor, TranscriptRepository
from ..service import MemoryService
from .redact import redact
from .transcripts import Transcript, Turn
from .triggers import Matcher

log = logging.getLogger(__name__)


@dataclass
class CaptureReport:
    transcript: str
    format: str
    turns: int = 0
    new_turns: int = 0
    episodes: int = 0
    duplicates: int = 0
    facts: int = 0
    redacted: int = 0
    rewritten: bool = False
    skipped: str | None = None
    kinds: dict[str, int] = field(default_factory=dict)

    def line(self) -> str:
        if self.skipped:
            return f"{self.transcript}: not captured ({self.skipped})"
        again = "; transcript was rewritten or cut, resumed where it changed" if self.rewritten else ""
        return (f"{self.transcript}: {self.turns} turns, {self.new_turns} new -> {self.episodes} episodes stored, "
                f"{self.duplicates} already there, {self.facts} facts; {self.redacted} secrets redacted{again}")


def capture_disabled(settings: Settings, p: Principal) -> str | None:
    """Why capture is off for this session, or None."""
    if not settings.capture:
        return "capture is off (MCP_MEMORY_CAPTURE=false)"
    if p.project_id and p.project_id in settings.capture_exclude_projects:
        return f"project {p.project_id!r} is in MCP_MEMORY_CAPTURE_EXCLUDE_PROJECTS"
    return None


def common_prefix(old: list[str], new: list[str]) -> int:
    n = 0
    for a, b in zip(old, new, strict=False):
        if a != b:
            break
        n += 1
    return n


class Capturer:
    def __init__(self, service: MemoryService, settings: Settings, harness: str) -> None:
        self.service = service
        self.settings = settings
        self.harness = harness
        self.cursors = TranscriptRepository(service.repo)
        self.matcher = Matcher(settings.capture_languages)

    async def capture(self, p: Principal, transcript: Transcript, *, key: str,
                      path: str | None = None) -> CaptureReport:
        report = CaptureReport(transcript=key, format=transcript.format, turns=len(transcript.turns))
        report.skipped = capture_disabled(self.settings, p)
        if report.skipped:
            return report
        self.service.require(p, "write")
        digests = [t.digest for t in transcript.turns]
        async with self.cursors.locked(p, key):
            cursor = await self.cursors.get(p, key) or Cursor(key)
            start = common_prefix(cursor.hashes, digests)
            ids: list[UUID] = cursor.memory_ids[:start]
            # A stored turn that changed, or fewer turns than stored: the transcript was rewritten
            # or cut (an edit, a crash mid-write). Capture resumes at the first difference.
            report.rewritten = start < len(cursor.hashes)
            new = list(enumerate(transcript.turns))[start:]
            report.new_turns = len(new)
            items = self._episodes(transcript, new, report)
            if report.rewritten and new and start < len(cursor.memory_ids):
                # The changed turn against its episode: cut short (its episode already says more)
                # or grown (the episode gets the rest) is the same turn, not a new memory.
                kept = await self._same_turn(p, cursor.memory_ids[start], items[0].content)
                if kept is not None:
                    ids.append(kept)
                    new, items = new[1:], items[1:]
            if items:
                episode_ids = await self._write(p, items, report, facts=False)
                ids.extend(episode_ids)
                if self.settings.capture_facts:
                    await self._facts(p, transcript, new, items, episode_ids, report)
            if new or report.rewritten or not cursor.hashes:
                await self.cursors.save(p, key, digests, ids, session_id=transcript.session_id, path=path,
                                        rewritten=report.rewritten)
        return report

    async def _same_turn(self, p: Principal, memory_id: UUID, content: str) -> UUID | None:
        try:
            old = await self.service.get_one(p, memory_id)
        except NotFound:  # forgotten since: store the turn again
            return None
        if old.content.startswith(content):
            return old.id
        if content.startswith(old.content):
            await self.service.update(p, old.id, content=content, reason="capture: the turn grew in the transcript")
            return old.id
        return None

    def _tags(self, transcript: Transcript) -> list[str]:
        tags = ["capture", self.harness]
        if transcript.session_id:
            tags.append(f"session:{transcript.session_id}"[: self.settings.max_tag_chars])
        return tags

    def _text(self, turn: Turn, report: CaptureReport) -> tuple[str, list[str]]:
        text, kinds = redact(turn.text.strip())
        report.redacted += len(kinds)
        for k in kinds:
            report.kinds[k] = report.kinds.get(k, 0) + 1
        limit = self.settings.capture_turn_chars
        if len(text) > limit:
            text = text[:limit] + f" … [cut: {len(text) - limit} more characters]"
        return text, kinds

    def _episodes(self, transcript: Transcript, new: list[tuple[int, Turn]], report: CaptureReport) -> list[WriteItem]:
        tags = self._tags(transcript)
        # Turns without a time (plain text) keep their order: a millisecond apart, ending now.
        now = datetime.now(UTC)
        episodes: list[WriteItem] = []
        for index, turn in new:
            text, kinds = self._text(turn, report)
            metadata: dict[str, Any] = {"captured_from": self.harness, "turn": index, "role": turn.role,
                                        "transcript": report.transcript}
            if transcript.session_id:
                metadata["session_id"] = transcript.session_id
            if turn.tools:
                metadata["tool_calls"] = len(turn.tools)
            if kinds:
                metadata["redacted"] = kinds
            at = turn.at or now - timedelta(milliseconds=len(transcript.turns) - index)
            content = f"{turn.label()}: {text}"[: self.settings.max_content_chars].strip()
            episodes.append(WriteItem(content=content, kind="episode", tags=tags, metadata=metadata,
                                      importance=0.3, occurred_at=at))
        return episodes

    async def _facts(self, p: Principal, transcript: Transcript, new: list[tuple[int, Turn]],
                     episodes: list[WriteItem], ids: list[UUID], report: CaptureReport) -> None:
        facts: list[WriteItem] = []
        for (index, turn), episode, episode_id in zip(new, episodes, ids, strict=True):
            if turn.role != "user":  # what the user says about themselves; the assistant's plans are not facts
                continue
            text = episode.content.split(": ", 1)[1] if ": " in episode.content else episode.content
            for found in self.matcher.find(text):
                meta: dict[str, Any] = {"captured_from": self.harness, "episode_id": str(episode_id),
                                        "trigger": found.trigger, "turn": index}
                if transcript.session_id:
                    meta["session_id"] = transcript.session_id
                facts.append(WriteItem(content=found.text, kind=found.kind,
                                       tags=[*(episode.tags or []), f"trigger:{found.trigger}"],
                                       metadata=meta, importance=0.6, occurred_at=episode.occurred_at))
        if facts:
            await self._write(p, facts, report, facts=True)

    async def _write(self, p: Principal, items: list[WriteItem], report: CaptureReport, *, facts: bool) -> list[UUID]:
        ids: list[UUID] = []
        size = self.settings.max_batch
        for start in range(0, len(items), size):
            result = await self.service.write_many(p, items[start:start + size], source=f"capture:{self.harness}")
            ids.extend(m.id for m in result.memories)
            if facts:
                report.facts += result.created
            else:
                report.episodes += result.created
            report.duplicates += result.duplicates
        return ids

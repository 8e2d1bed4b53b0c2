"""Turns of a transcript into memories: each turn an `episode` (redacted, cut, in order, at its
time, tagged with the session), and the sentences that set off a trigger as preference /
decision / fact memories linked to their episode. A cursor per transcript makes a re-run store
only what is new."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import asyncpg

from ..config import Settings
from ..errors import InvalidInput, NotFound, PermissionDenied, Unavailable
from ..models import Principal, WriteItem
from ..service import MemoryService
from ..transcript_cursors import KEY_CHARS, Cursor
from ..validation import EARLIEST, LATEST
from . import status
from .redact import redact
from .transcripts import Transcript, Turn
from .triggers import Matcher

log = logging.getLogger(__name__)


# What PostgreSQL text cannot hold; each run becomes one U+FFFD, so the turn is stored and says
# that something was there (Claude Code writes \u0000 into a transcript when the agent reads a binary file).
_NUL = re.compile("\x00+")
_SURROGATE = re.compile("[\ud800-\udfff]+")
# Failures that say the database cannot be reached or answer, not that capture is wrong.
_OUTAGES = (Unavailable, OSError, TimeoutError, asyncpg.PostgresConnectionError, asyncpg.InterfaceError,
            asyncpg.CannotConnectNowError, asyncpg.TooManyConnectionsError, asyncpg.AdminShutdownError)
# A value the store refuses for one memory (beyond what validation catches); the others still go in.
_REFUSED = (InvalidInput, asyncpg.DataError, asyncpg.ProgramLimitExceededError)


CUT_MARKER_ROOM = 40


def clean_text(text: str) -> tuple[str, list[str]]:
    """Text PostgreSQL can store, and what was replaced to get it."""
    what = []
    if "\x00" in text:
        text, what = _NUL.sub("\ufffd", text), ["NUL characters"]
    if _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
        what.append("invalid Unicode")
    return text, what


def cursor_key(key: str) -> str:
    """The key as the cursor and the status file hold it: storable text, and a hostile session id
    of any length ends in its digest instead of failing every capture of that transcript."""
    key = clean_text(key)[0]
    if len(key) <= KEY_CHARS:
        return key
    return f"{key[:KEY_CHARS - 20]}…{hashlib.sha256(key.encode()).hexdigest()[:19]}"


def failure_reason(exc: BaseException) -> str:
    """One line for status.record_failure: a short category (what `status.notice` groups by), then
    the detail."""
    detail = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, asyncio.CancelledError | TimeoutError):
        return "capture did not finish in time: the database did not answer"
    if isinstance(exc, _OUTAGES):
        return f"database not available: {detail}"
    return f"capture failed: {type(exc).__name__}: {detail}"


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
    cleaned: int = 0              # turns stored with NUL / invalid Unicode replaced
    cut: int = 0                  # turns stored cut to the length limit
    skipped_turns: int = 0        # turns the store refused even cleaned: recorded, cursor moved past
    skipped_facts: int = 0
    unreadable_lines: int = 0     # JSONL lines that are not JSON (each costs only itself)
    seconds: float = 0.0

    def line(self) -> str:
        if self.skipped:
            return f"{self.transcript}: not captured ({self.skipped})"
        again = "; transcript was rewritten or cut, resumed where it changed" if self.rewritten else ""
        odd = [f"{n} {what}" for n, what in ((self.cleaned, "cleaned"), (self.cut, "cut"),
                                             (self.skipped_turns, "skipped"),
                                             (self.skipped_facts, "facts skipped"),
                                             (self.unreadable_lines, "unreadable lines")) if n]
        more = f"; {', '.join(odd)} (see `mcp-memory capture --status`)" if odd else ""
        return (f"{self.transcript}: {self.turns} turns, {self.new_turns} new -> {self.episodes} episodes stored, "
                f"{self.duplicates} already there, {self.facts} facts; {self.redacted} secrets redacted{again}{more}")


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
        self.cursors = service.transcripts
        self.matcher = Matcher(settings.capture_languages)

    async def capture(self, p: Principal, transcript: Transcript, *, key: str,
                      path: str | None = None) -> CaptureReport:
        """Stores what is new in `transcript`. A failure of ours (the database down or hanging,
        a bug) is recorded in capture/status.py for the next session start to mention and
        raised; a later run that succeeds clears it."""
        started = time.monotonic()
        key = cursor_key(key)
        report = CaptureReport(transcript=key, format=transcript.format, turns=len(transcript.turns),
                               unreadable_lines=len(transcript.unreadable))
        report.skipped = capture_disabled(self.settings, p)
        if report.skipped:
            return report
        self.service.require(p, "write")
        try:
            await self._capture(p, transcript, key, path, report)
        except PermissionDenied:
            raise  # the user's setting (read-only permissions), not a failure of ours
        except (Exception, asyncio.CancelledError) as exc:
            status.record_failure(self.settings, key, failure_reason(exc))
            raise
        status.record_success(self.settings, key)
        report.seconds = round(time.monotonic() - started, 3)
        log.info("captured %s in %.2fs", report.line(), report.seconds)
        return report

    async def _capture(self, p: Principal, transcript: Transcript, key: str, path: str | None,
                       report: CaptureReport) -> None:
        digests = [t.digest for t in transcript.turns]
        async with self.cursors.locked(p, key):
            cursor = await self.cursors.get(p, key)
            start = common_prefix(cursor.hashes, digests)
            ids: list[UUID | None] = cursor.memory_ids[:start]
            # A stored turn that changed, or fewer turns than stored: the transcript was rewritten
            # or cut (an edit, a crash mid-write). Capture resumes at the first difference.
            report.rewritten = start < len(cursor.hashes)
            new = list(enumerate(transcript.turns))[start:]
            report.new_turns = len(new)
            problems: list[dict[str, Any]] = []
            items = self._episodes(transcript, new, report, problems)
            if report.rewritten and new and start < len(cursor.memory_ids) and cursor.memory_ids[start]:
                # The changed turn against its episode: cut short (its episode already says more)
                # or grown (the episode gets the rest) is the same turn, not a new memory.
                kept = await self._same_turn(p, cursor.memory_ids[start], items[0].content)
                if kept is not None:
                    ids.append(kept)
                    new, items = new[1:], items[1:]
            if items:
                episode_ids = await self._write(p, items, [i for i, _ in new], report, problems, facts=False)
                ids.extend(episode_ids)
                if self.settings.capture_facts and self.service.extracting:
                    # A model picks the delta's facts (one job); trigger patterns are the fallback.
                    why = await self.service.enqueue_extraction(
                        p, [e for e in episode_ids if e is not None],
                        (clean_text(transcript.session_id)[0][:200] or None) if transcript.session_id else None)
                    if why:
                        problems.append({"what": "not extracted", "turn": new[-1][0], "reason": why})
                        await self._facts(p, transcript, new, items, episode_ids, report, problems)
                elif self.settings.capture_facts:
                    await self._facts(p, transcript, new, items, episode_ids, report, problems)
            merged = self._problems(cursor, start, transcript, problems)
            if new or report.rewritten or not cursor.hashes or merged != cursor.problems:
                await self.cursors.save(p, key, digests, ids, session_id=clean_text(transcript.session_id or "")[0]
                                        or None, path=clean_text(path)[0] if path else None,
                                        rewritten=report.rewritten, problems=merged)

    @staticmethod
    def _problems(cursor: Cursor, start: int, transcript: Transcript,
                  found: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The cursor's problems after this run: those of turns before the resume point stay,
        later turns' are found again, and unreadable lines are the file's as it is now."""
        kept = [x for x in cursor.problems if isinstance(x.get("turn"), int) and x["turn"] < start]
        at = datetime.now(UTC).isoformat(timespec="seconds")
        known = {x.get("line"): x for x in cursor.problems if "line" in x}
        lines = [known.get(n) or {"what": "unreadable line", "line": n,
                                   "reason": "not a JSON object (torn by a crash or two writers); only it was left out",
                                   "at": at}
                 for n in transcript.unreadable]
        return kept + [{**x, "at": at} for x in found] + lines

    async def _same_turn(self, p: Principal, memory_id: UUID, content: str) -> UUID | None:
        try:
            old = await self.service.get_one(p, memory_id, structured=False)
        except NotFound:  # forgotten since: store the turn again
            return None
        if old.content.startswith(content):
            return old.id
        if content.startswith(old.content):
            await self.service.update(p, old.id, content=content, reason="capture: the turn grew in the transcript")
            return old.id
        return None

    def _tags(self, *tags: str) -> list[str]:
        """Within the store's tag limits whatever they are set to: a tag cut, the last ones dropped,
        rather than every item refused."""
        out = [clean_text(t)[0][: self.settings.max_tag_chars] for t in tags]
        return [t for t in out if t.strip()][: self.settings.max_tags]

    def _text(self, turn: Turn, report: CaptureReport, room: int) -> tuple[str, list[str], list[str], int]:
        """The turn's text redacted, cleaned and cut to fit `room`: text, secret kinds, what was
        cleaned, and the characters cut."""
        text, cleaned = clean_text(turn.text.strip())
        text, kinds = redact(text)
        kinds = sorted({*kinds, *turn.redacted})  # tool summaries were redacted whole when parsed, then cut
        report.redacted += len(kinds)
        for k in kinds:
            report.kinds[k] = report.kinds.get(k, 0) + 1
        cut = 0
        if len(text) > min(self.settings.capture_turn_chars, room):
            # The marker must fit the store's limit too, not only the capture setting's.
            keep = max(0, min(self.settings.capture_turn_chars, room - CUT_MARKER_ROOM))
            cut = len(text) - keep
            text = text[:keep] + f" … [cut: {cut} more characters]"
        return text, kinds, cleaned, cut

    def _when(self, turn: Turn, fallback: datetime, cleaned: list[str]) -> datetime:
        at = turn.at
        if at is not None and at.tzinfo is None:
            at = at.replace(tzinfo=UTC)
        try:
            if at is not None and EARLIEST <= at.astimezone(UTC) <= LATEST:
                return at
        except (OverflowError, ValueError):
            pass
        if at is not None:
            cleaned.append("a time outside the supported range")
        return fallback

    def _episodes(self, transcript: Transcript, new: list[tuple[int, Turn]], report: CaptureReport,
                  problems: list[dict[str, Any]]) -> list[WriteItem]:
        tags = self._tags("capture", self.harness, *([f"session:{transcript.session_id}"]
                                                     if transcript.session_id else []))
        session = clean_text(transcript.session_id)[0] if transcript.session_id else None
        # Turns without a time (plain text) keep their order: a millisecond apart, ending now.
        now = datetime.now(UTC)
        repeats = _repeats(transcript.turns)
        episodes: list[WriteItem] = []
        for index, turn in new:
            label = clean_text(turn.label())[0][:80]
            text, kinds, cleaned, cut = self._text(turn, report, self.settings.max_content_chars - len(label) - 2)
            metadata: dict[str, Any] = {"captured_from": self.harness, "turn": index, "role": turn.role,
                                        "transcript": clean_text(report.transcript)[0][:1000]}
            if session:
                metadata["session_id"] = session[:200]
            if repeats[index]:
                metadata["repeat"] = repeats[index]
            if turn.tools:
                metadata["tool_calls"] = len(turn.tools)
            if kinds:
                # Each kind once: a pasted .env of a thousand keys must not push the metadata past its limit.
                metadata["redacted"] = list(dict.fromkeys(kinds))
            at = self._when(turn, now - timedelta(milliseconds=len(transcript.turns) - index), cleaned)
            if cleaned:
                metadata["cleaned"] = cleaned
                report.cleaned += 1
                problems.append({"what": "cleaned", "turn": index, "reason": f"{', '.join(cleaned)} replaced"})
            if cut:
                metadata["cut"] = cut
                report.cut += 1
                problems.append({"what": "cut", "turn": index,
                                 "reason": f"{cut} characters past the limit of {min(self.settings.capture_turn_chars, self.settings.max_content_chars)} left out"})  # noqa: E501
            content = f"{label}: {text}".strip()[: self.settings.max_content_chars]
            episodes.append(WriteItem(content=content, kind="episode", tags=tags, metadata=metadata,
                                      importance=0.3, occurred_at=at))
        return episodes

    async def _facts(self, p: Principal, transcript: Transcript, new: list[tuple[int, Turn]],
                     episodes: list[WriteItem], ids: list[UUID | None], report: CaptureReport,
                     problems: list[dict[str, Any]]) -> None:
        facts: list[WriteItem] = []
        turns: list[int] = []
        for (index, turn), episode, episode_id in zip(new, episodes, ids, strict=True):
            # What the user says about themselves; the assistant's plans are not facts. A turn
            # that was not stored has no episode to link a fact to.
            if turn.role != "user" or episode_id is None:
                continue
            text = episode.content.split(": ", 1)[1] if ": " in episode.content else episode.content
            for found in self.matcher.find(text):
                meta: dict[str, Any] = {"captured_from": self.harness, "episode_id": str(episode_id),
                                        "trigger": found.trigger, "turn": index}
                if episode.metadata and "session_id" in episode.metadata:
                    meta["session_id"] = episode.metadata["session_id"]
                facts.append(WriteItem(content=found.text, kind=found.kind,
                                       tags=self._tags(*(episode.tags or []), f"trigger:{found.trigger}"),
                                       metadata=meta, importance=0.6, occurred_at=episode.occurred_at))
                turns.append(index)
        if facts:
            await self._write(p, facts, turns, report, problems, facts=True)

    async def _write(self, p: Principal, items: list[WriteItem], turns: list[int], report: CaptureReport,
                     problems: list[dict[str, Any]], *, facts: bool) -> list[UUID | None]:
        """Each item's id, None where the store refused it. `write_many` is all-or-nothing (the
        tool's contract), so a refused batch is halved until only the refused item is left out:
        one bad turn never sinks the others, and the cursor still moves past it."""
        ids: list[UUID | None] = []
        size = self.settings.max_batch
        for start in range(0, len(items), size):
            ids += await self._write_batch(p, items[start:start + size], turns[start:start + size], report,
                                           problems, facts)
        return ids

    async def _write_batch(self, p: Principal, items: list[WriteItem], turns: list[int], report: CaptureReport,
                           problems: list[dict[str, Any]], facts: bool) -> list[UUID | None]:
        try:
            result = await self.service.write_many(p, items, source=f"capture:{self.harness}")
        except _REFUSED as exc:
            if len(items) > 1:
                half = len(items) // 2
                return (await self._write_batch(p, items[:half], turns[:half], report, problems, facts)
                        + await self._write_batch(p, items[half:], turns[half:], report, problems, facts))
            reason = " ".join(str(exc).split()).removeprefix("items[0]: ").removesuffix("; nothing was written")
            if facts:
                report.skipped_facts += 1
            else:
                report.skipped_turns += 1
            problems.append({"what": "fact skipped" if facts else "skipped", "turn": turns[0], "reason": reason})
            log.debug("capture %s: turn %d %s: %s", report.transcript, turns[0],
                      "fact skipped" if facts else "skipped", reason)
            return [None]
        if facts:
            report.facts += result.created
        else:
            report.episodes += result.created
        report.duplicates += result.duplicates
        return [m.id for m in result.memories]


def _repeats(turns: list[Turn]) -> list[int]:
    """For each turn, how many earlier turns of its transcript said the same (who and what): a reply
    given three times is three turns (validation.py `content_hash`)."""
    seen: Counter[tuple[str, str]] = Counter()
    out = []
    for turn in turns:
        out.append(seen[(turn.role, turn.text)])
        seen[(turn.role, turn.text)] += 1
    return out

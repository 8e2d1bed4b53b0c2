"""`mcp-memory hook <event>`: what a harness runs at its lifecycle points.

Input: the harness's hook JSON on stdin. Output: only what the harness documents on stdout
(nothing at all when there is nothing to add), everything else on stderr. A hook never fails the
user's turn: our own errors exit 0 with the reason on stderr, and recall that overruns its time
budget prints nothing.

Formats followed (see README, "Auto-capture and auto-recall"):
- Claude Code hooks (command hooks, settings.json): stdin has session_id, transcript_path, cwd,
  hook_event_name and per event prompt (UserPromptSubmit), source / model (SessionStart), trigger
  (PreCompact), reason (SessionEnd). SessionStart and UserPromptSubmit add context with
  {"hookSpecificOutput": {"hookEventName": …, "additionalContext": "…"}}; Stop, PreCompact and
  SessionEnd print nothing (a Stop hook's JSON could block the stop).
- OpenClaw: its plugin hooks run inside the gateway, so capture/openclaw-plugin (installed by
  `mcp-memory install openclaw`) calls this command with the event's fields (prompt, messages,
  sessionId / sessionKey, sessionFile, workspaceDir) and returns our {"prependContext": "…"}
  from before_prompt_build.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ..auth import local_principal
from ..config import Settings
from ..db import open_database
from ..models import Principal
from ..service import MemoryService
from .capture import Capturer, CaptureReport, capture_disabled
from .recall import prompt_context, session_context
from .transcripts import Transcript, TranscriptError, openclaw_messages, read

log = logging.getLogger("mcp_memory.hook")

Harness = Literal["claude-code", "openclaw"]
EVENTS = ("session-start", "prompt-submit", "stop", "pre-compact", "session-end")
CAPTURE_EVENTS = ("stop", "pre-compact", "session-end")
# Claude Code's event names, as hook_event_name carries them.
CLAUDE_EVENTS = {"session-start": "SessionStart", "prompt-submit": "UserPromptSubmit", "stop": "Stop",
                 "pre-compact": "PreCompact", "session-end": "SessionEnd"}
MAX_STDIN = 8 * 1024 * 1024  # an OpenClaw agent_end event carries the conversation


class HookInput(BaseModel):
    """The fields we read of either harness's payload; the rest is ignored."""

    model_config = ConfigDict(extra="ignore")

    # Claude Code
    session_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None
    hook_event_name: str | None = None
    prompt: str | None = None
    model: str | dict[str, Any] | None = None
    # OpenClaw (our plugin passes the event's and context's fields as they are named there)
    sessionId: str | None = None  # noqa: N815
    sessionKey: str | None = None  # noqa: N815
    sessionFile: str | None = None  # noqa: N815
    workspaceDir: str | None = None  # noqa: N815
    messages: list[Any] | None = None

    @property
    def session(self) -> str | None:
        return self.session_id or self.sessionId or self.sessionKey

    @property
    def transcript(self) -> str | None:
        return self.transcript_path or self.sessionFile

    @property
    def directory(self) -> Path:
        where = self.cwd or self.workspaceDir or os.environ.get("CLAUDE_PROJECT_DIR")
        return Path(where) if where else Path.cwd()

    @property
    def model_name(self) -> str | None:
        if isinstance(self.model, dict):
            value = self.model.get("id") or self.model.get("display_name")
            return value if isinstance(value, str) else None
        return self.model


def answer(harness: Harness, event: str, text: str) -> str | None:
    """stdout for the harness, or None to print nothing."""
    if not text or event not in ("session-start", "prompt-submit"):
        return None
    if harness == "claude-code":
        return json.dumps({"hookSpecificOutput": {"hookEventName": CLAUDE_EVENTS[event], "additionalContext": text}})
    return json.dumps({"prependContext": text})


def principal_for(settings: Settings, harness: Harness, payload: HookInput) -> Principal:
    """As the stdio server would bind it: flags / env first, then the harness's name as the
    agent (Claude Code calls itself claude-code over MCP) and the session's working directory."""
    return local_principal(settings, client_name=harness, cwd=payload.directory)


def load_transcript(harness: Harness, payload: HookInput) -> tuple[Transcript, str, str | None]:
    """The transcript, the key of its cursor and its path."""
    if payload.messages is not None and not payload.transcript:
        if not payload.session:
            raise TranscriptError("the event carries messages but no sessionId / sessionKey to track them by")
        return (Transcript("openclaw", openclaw_messages(payload.messages), payload.session),
                f"{harness}:{payload.session}", None)
    if not payload.transcript:
        raise TranscriptError("no transcript_path (or sessionFile / messages) in the hook input")
    path = Path(payload.transcript).expanduser()
    transcript = read(path)
    transcript.session_id = transcript.session_id or payload.session
    key = f"{harness}:{transcript.session_id}" if transcript.session_id else str(path.resolve())
    return transcript, key, str(path)


async def handle(event: str, harness: Harness, payload: HookInput, settings: Settings,
                 deadline: float | None = None) -> str:
    """The context to add (session-start, prompt-submit) or "" after capturing."""
    p = principal_for(settings, harness, payload)
    if event in CAPTURE_EVENTS and capture_disabled(settings, p):
        log.info("not capturing: %s", capture_disabled(settings, p))
        return ""
    if event == "prompt-submit" and not (payload.prompt or "").strip():
        return ""
    transcript = load_transcript(harness, payload) if event in CAPTURE_EVENTS else None
    db = await open_database(settings)
    try:
        service = await MemoryService.open(db, settings)
        if event == "session-start":
            return await session_context(service, settings, p, payload.model_name)
        if event == "prompt-submit":
            return await prompt_context(service, settings, p, payload.prompt or "", payload.session, deadline)
        assert transcript is not None
        report: CaptureReport = await Capturer(service, settings, harness).capture(
            p, transcript[0], key=transcript[1], path=transcript[2])
        log.info("%s", report.line())
        return ""
    finally:
        await db.close()


def budget(event: str, settings: Settings) -> float | None:
    return {"session-start": settings.session_start_timeout_s,
            "prompt-submit": settings.recall_timeout_s}.get(event)


def run_hook(event: str, harness: Harness, make_settings: Callable[[], Settings],
             stdin: Any = None, stdout: Any = None) -> int:
    """The whole hook: exit status 0 whatever happens on our side, the reason on stderr."""
    started = time.monotonic()
    stdin, stdout = stdin or sys.stdin.buffer, stdout or sys.stdout
    try:
        raw = stdin.read(MAX_STDIN + 1)
        if len(raw) > MAX_STDIN:
            raise ValueError(f"hook input is larger than {MAX_STDIN} bytes")
        data = json.loads(raw or b"{}")
        if not isinstance(data, dict):
            raise ValueError("hook input must be a JSON object")
        payload = HookInput.model_validate(data)
        settings = make_settings()
    except (ValueError, ValidationError) as exc:
        print(f"mcp-memory hook {event}: ignored: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 0
    limit = budget(event, settings)

    async def bounded(work: Awaitable[str]) -> str:
        if limit is None:
            return await work
        # The budget counts from the start of this process's hook work, database start included;
        # a start that already used it up adds nothing, as the setting says (a 50 ms grace here let
        # a warm recall answer past a budget of 1 ms).
        return await asyncio.wait_for(work, max(0.0, limit - (time.monotonic() - started)))

    try:
        deadline = started + limit if limit is not None else None
        text = asyncio.run(bounded(handle(event, harness, payload, settings, deadline)))
    except TimeoutError:
        print(f"mcp-memory hook {event}: no context added: took longer than {limit:g}s "
              "(MCP_MEMORY_RECALL_TIMEOUT_S / MCP_MEMORY_SESSION_START_TIMEOUT_S)", file=sys.stderr)
        return 0
    except TranscriptError as exc:
        print(f"mcp-memory hook {event}: nothing captured: {exc}", file=sys.stderr)
        return 0
    except Exception as exc:  # never fail the user's turn over memory
        log.debug("hook failed", exc_info=True)
        print(f"mcp-memory hook {event}: failed, skipped: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 0
    out = answer(harness, event, text)
    if out:
        stdout.write(out + "\n")
        stdout.flush()
    log.info("hook %s done in %.0f ms", event, (time.monotonic() - started) * 1000)
    return 0

"""`mcp-memory hook <event>`: what a harness runs at its lifecycle points.

Input: the harness's hook JSON on stdin. Output: only what the harness documents on stdout
(nothing at all when there is nothing to add), everything else on stderr. A hook never fails the
user's turn: our own errors exit 0 with one line on stderr, and every event is bounded: recall and
session start print nothing past their budget (the process leaves at once, even with a thread still
waiting on a database that never answers or on the embedded server's start lock), and the capture
events hand their work to a detached worker (worker.py) and return at once. Every hook also looks
for sessions of its project whose capture never finished and has them caught up (catchup.py).

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
import signal
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError, field_validator

from ..config import Settings
from ..hookprotocol import BUDGETS, CAPTURE_EVENTS, CLAUDE_EVENTS, MAX_STDIN, worth_recalling
from . import catchup, status
from .transcripts import Transcript, TranscriptError, openclaw_messages

if TYPE_CHECKING:
    from ..models import Principal
    from ..service import MemoryService

# The database, the service and the embedder are imported where a hook needs them: a capture hook
# that only hands off, or a prompt that is skipped, never waits for them.

log = logging.getLogger("mcp_memory.hook")

Harness = Literal["claude-code", "openclaw"]
# The events, Claude Code's names for them (CLAUDE_EVENTS), MAX_STDIN: hookprotocol.py.
HANDOFF_BUDGET_S = 0.5       # a capture event's hook returns within this: the worker does the capture
EXIT_GRACE_S = 0.2           # after the answer, for the event loop to close; then the process leaves anyway


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
    source: str | None = None  # SessionStart: startup, resume, clear, compact
    # OpenClaw (our plugin passes the event's and context's fields as they are named there)
    sessionId: str | None = None  # noqa: N815
    sessionKey: str | None = None  # noqa: N815
    sessionFile: str | None = None  # noqa: N815
    workspaceDir: str | None = None  # noqa: N815
    messages: list[Any] | None = None
    # Claude Code's launch directory, from the hook's environment (never from the payload); a server
    # answering through the channel sets the hook's own.
    _project_dir: str | None = PrivateAttr(default_factory=lambda: os.environ.get("CLAUDE_PROJECT_DIR") or None)

    @field_validator("session_id", "transcript_path", "cwd", "sessionId", "sessionKey", "sessionFile", "workspaceDir")
    @classmethod
    def _no_nul(cls, value: str | None) -> str | None:
        # No path or session id holds one; a path that did would fail deep inside a capture.
        if value is not None and "\x00" in value:
            raise ValueError("holds a NUL character")
        return value

    @property
    def session(self) -> str | None:
        return self.session_id or self.sessionId or self.sessionKey

    @property
    def resumed(self) -> bool:
        """A session started again (`claude --resume`): its transcript holds what earlier runs said."""
        return self.source == "resume"

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
    """As the stdio server binds it: flags / env first, then the harness's name as the agent
    (Claude Code calls itself claude-code over MCP). Claude Code gives its server the launch
    directory as a root, so the project is that directory's git repository or, outside git, its
    name, whatever the session's cwd is now; OpenClaw's is the session's working directory."""
    from ..auth import local_principal

    if harness == "claude-code":
        launch = Path(payload._project_dir) if payload._project_dir else payload.directory
        return local_principal(settings, client_name=harness, roots=[launch], cwd=payload.directory)
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
    from .transcripts import read

    transcript = read(path)
    transcript.session_id = transcript.session_id or payload.session
    return transcript, catchup.cursor_key(harness, transcript.session_id, path), str(path)


async def respond(service: MemoryService, event: str, harness: Harness, payload: HookInput, settings: Settings,
                  deadline: float | None = None) -> str:
    """One event on an open service: the context to add (session-start, prompt-submit), or ""
    after capturing the event's transcript (stop, pre-compact, session-end: what the detached
    worker, or a server that took the hook, runs)."""
    from .capture import Capturer, capture_disabled
    from .recall import prompt_context, session_context

    p = principal_for(settings, harness, payload)
    if event == "session-start":
        await _take_own(service, harness, payload, settings, p, deadline)
        return await session_context(service, settings, p, payload.model_name, session_id=payload.session)
    if event == "prompt-submit":
        return await prompt_context(service, settings, p, payload.prompt or "", payload.session, deadline)
    if capture_disabled(settings, p):
        log.info("not capturing: %s", capture_disabled(settings, p))
        return ""
    transcript, key, path = load_transcript(harness, payload)
    await Capturer(service, settings, harness).capture(p, transcript, key=key, path=path)   # logs its one line
    return ""


def _own_behind(harness: Harness, payload: HookInput, settings: Settings) -> Path | None:
    """The session's own transcript, when it changed since it was last captured."""
    path = Path(payload.transcript).expanduser() if payload.transcript else None
    if path is None or not path.is_file():
        return None
    folder = catchup.transcripts_dir(harness, payload.transcript, payload.cwd or payload.workspaceDir)
    if folder is None or path.resolve() not in {b.resolve() for b in catchup.behind(settings, folder)}:
        return None
    return path


async def _take_own(service: MemoryService, harness: Harness, payload: HookInput, settings: Settings,
                    p: Principal, deadline: float | None) -> None:
    """At a resumed session's start, what its earlier runs said and did not get stored (`claude -p
    --resume`, whose Stop hooks are killed) is taken first, within half of what is left of the
    budget, so the session's first search finds it; what does not fit is left to the catch-up."""
    import anyio

    from .capture import Capturer, capture_disabled

    if not payload.resumed or capture_disabled(settings, p):
        return
    path = await anyio.to_thread.run_sync(_own_behind, harness, payload, settings)
    if path is None:
        return
    left = (deadline - time.monotonic()) / 2 if deadline is not None else HANDOFF_BUDGET_S
    with anyio.move_on_after(max(0.0, left)), catchup.lock(settings, f"capture:{path}") as got:
        if got:
            await catchup.capture_file(Capturer(service, settings, harness), p, path,
                                       lambda: load_transcript(harness, payload))


async def handle(event: str, harness: Harness, payload: HookInput, settings: Settings,
                 deadline: float | None = None) -> str:
    """`respond` with a database and service of its own (composition.py: no decisions worker, a
    write queues its decision job for a server's), opened only when there is work for it."""
    from ..composition import opened
    from .capture import capture_disabled

    if event == "prompt-submit" and not worth_recalling(payload.prompt or ""):
        return ""
    if event in CAPTURE_EVENTS:
        if capture_disabled(settings, principal_for(settings, harness, payload)):
            return ""
        load_transcript(harness, payload)   # an unreadable transcript is said before any database work
    async with opened(settings) as house:
        return await respond(house.service, event, harness, payload, settings, deadline)


def budget(event: str, settings: Settings) -> float:
    """Seconds the event may take, counted from the start of the hook's own work."""
    if event not in BUDGETS:
        return HANDOFF_BUDGET_S
    return float(getattr(settings, BUDGETS[event][0]))


# --- handing work to the detached worker ----------------------------------------------------------

def spawn_worker(settings: Settings, job: dict[str, Any]) -> None:
    """The detached worker on `job` (detach.py), its log under the data dir."""
    from .detach import detach

    detach(job, settings.data_dir)


def _job(event: str, harness: Harness, data: dict[str, Any], settings: Settings) -> dict[str, Any]:
    return {"event": event, "harness": harness, "payload": data, "settings": settings.model_dump(mode="json")}


def hand_off(event: str, harness: Harness, payload: HookInput, data: dict[str, Any], settings: Settings) -> None:
    """A capture event: check what can be checked without reading the transcript, then give the
    capture (and the catch-up of the project's other sessions) to the worker."""
    if not settings.capture:
        return
    if payload.messages is None or payload.transcript:
        if not payload.transcript:
            raise TranscriptError("no transcript_path (or sessionFile / messages) in the hook input")
        path = Path(payload.transcript).expanduser()
        if not path.is_file():
            raise TranscriptError(f"{path}: no such transcript file")
    elif not payload.session:
        raise TranscriptError("the event carries messages but no sessionId / sessionKey to track them by")
    try:
        spawn_worker(settings, _job(event, harness, data, settings))
    except OSError as exc:
        key = f"{harness}:{payload.session}" if payload.session else str(payload.transcript)
        status.record_failure(settings, key, f"could not start the capture process: {exc}")
        raise


def look_behind(event: str, harness: Harness, payload: HookInput, settings: Settings) -> bool:
    """After a recall event: start a catch-up worker when sessions of this project are behind.
    Never raises; the session's own transcript is left to its own capture events."""
    try:
        from .capture import capture_disabled

        folder = catchup.transcripts_dir(harness, payload.transcript, payload.cwd or payload.workspaceDir)
        if folder is None or capture_disabled(settings, principal_for(settings, harness, payload)):
            return False
        current = Path(payload.transcript).expanduser() if payload.transcript else None
        if not catchup.look(settings, folder, current, own=event == "session-start" and payload.resumed):
            return False
        # The worker needs who and where, not what was asked.
        fields = {k: v for k, v in payload.model_dump(exclude_none=True).items() if k not in ("prompt", "messages")}
        spawn_worker(settings, _job("catch-up", harness, fields, settings))
        return True
    except Exception as exc:
        log.debug("catch-up not started: %s", exc, exc_info=True)
        return False


# --- the hook process ---------------------------------------------------------------------------

class Bounded:
    """The event's work on an event loop in a thread of its own, so the hook can give up on it:
    a thread blocked on the embedded server's start lock or a connect to a database that never
    answers cannot be cancelled, and `asyncio.run` would wait for it at exit."""

    def __init__(self, work: Callable[[], Coroutine[Any, Any, str]]) -> None:
        self.text: str | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()

        async def main() -> None:
            try:
                self.text = await work()
            except BaseException as exc:  # handed to the hook's thread, which reports it
                self.error = exc
            finally:
                self.done.set()

        self.thread = threading.Thread(target=asyncio.run, args=(main(),), name="mcp-memory-hook", daemon=True)
        self.thread.start()


def exit_now() -> None:
    """Leave without waiting for threads still blocked (see Bounded): what was to be written is
    written and flushed already, and the embedded server's handle of a dead process is pruned by
    the next one to start."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _say(event: str, what: str) -> None:
    """The hook's one stderr line."""
    print(f"mcp-memory hook {event}: {what}", file=sys.stderr)


def run_hook(event: str, harness: Harness, make_settings: Callable[[], Settings],
             stdin: Any = None, stdout: Any = None) -> int:
    """The whole hook: exit status 0 whatever happens on our side, at most one line on stderr,
    and back within the event's budget (this may end the process itself, see exit_now)."""
    started = time.monotonic()
    if event in CAPTURE_EVENTS and threading.current_thread() is threading.main_thread():
        # The hand-off takes milliseconds; a harness's SIGTERM in the middle of it would lose the
        # capture (the worker resets this for itself).
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
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
        _say(event, f"ignored: {str(exc).splitlines()[0]}")
        return 0

    if event in CAPTURE_EVENTS:
        try:
            hand_off(event, harness, payload, data, settings)
        except TranscriptError as exc:
            _say(event, f"nothing captured: {exc}")
        except Exception as exc:  # never fail the user's turn over memory
            _say(event, f"capture not started: {type(exc).__name__}: {exc}")
        log.info("hook %s handed off in %.0f ms", event, (time.monotonic() - started) * 1000)
        return 0

    limit = budget(event, settings)
    work = Bounded(lambda: handle(event, harness, payload, settings, started + limit))
    notice = None
    if event == "session-start":  # while the work connects
        from .notices import session_start  # what recalls imports anyway; a capture's hand-off need not

        notice = session_start(settings, harness, payload.cwd)
    finished = work.done.wait(max(0.0, limit - (time.monotonic() - started)))
    text = ""
    if not finished:
        _say(event, f"no context added: took longer than {limit:g}s "
                    f"(MCP_MEMORY_{'RECALL' if event == 'prompt-submit' else 'SESSION_START'}_TIMEOUT_S)")
    elif isinstance(work.error, TimeoutError):
        _say(event, f"no context added: the database did not answer within {limit:g}s")
    elif work.error is not None:
        log.debug("hook failed", exc_info=work.error)
        first = (str(work.error).splitlines() or [""])[0]
        _say(event, f"failed, skipped: {type(work.error).__name__}: {first}")
    else:
        text = work.text or ""
    out = answer(harness, event, "\n\n".join(x for x in (notice, text) if x))
    if out:
        stdout.write(out + "\n")
        stdout.flush()
    look_behind(event, harness, payload, settings)
    log.info("hook %s done in %.0f ms", event, (time.monotonic() - started) * 1000)
    if finished:
        work.thread.join(EXIT_GRACE_S)
    if work.thread.is_alive():
        exit_now()
    return 0

"""The server's end of the hook channel (the thin client is mcp_memory/hookline.py).

`mcp-memory serve` listens on a unix socket only its user can reach (directory 0700, socket 0600,
the peer's uid checked) at a path derived from its store (hooksocket.py; channel_socket.py
listens), and answers hooks with the service it already has open: recall without a process start,
a model load and a database start per prompt.

A hook is answered exactly as the full path would answer it (same principal, same functions of
capture/hooks.py and capture/recall.py), or not at all: input the server is not sure to read the
same way (invalid JSON, settings that differ from the server's) is sent back to the full path
(`fallback`), which then reports it as it always did. The hook sends its MCP_MEMORY_* environment
as it is (hookline imports nothing to read it); the server resolves it with the same Settings the
hook's own process would, and compares the resolved values with its own.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import time
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource

from .. import hooksocket
from ..config import Settings
from ..contained import contained
from ..hookprotocol import BUDGETS, CAPTURE_EVENTS, ENV_PREFIX, EVENTS, env_name
from ..models import Principal
from ..service import MemoryService
from . import catchup, notices, status, worker
from .capture import capture_disabled, failure_reason
from .hooks import Harness, HookInput, answer, budget, principal_for, respond
from .inflight import Capture, InFlight
from .transcripts import TranscriptError

log = logging.getLogger("mcp_memory.hook.channel")

MAX_HEADER = 256 * 1024
READ_TIMEOUT_S = 5.0      # a client that connects and sends nothing does not hold a task forever
# Settings a hook may hold that do not change its answer: identity travels in the request, the
# store is what the socket path is derived from, the rest belongs to the server or to hookline.
NOT_COMPARED = {f"MCP_MEMORY_{name}" for name in (
    "USER", "AGENT", "PROJECT", "DATABASE_URL", "DATA_DIR", "LOG_LEVEL", "HOOK_TRACE", "HOOK_CHANNEL",
    "HOOK_SERVER_ONLY",
    "HOST", "PORT", "PUBLIC_URL", "ALLOWED_HOSTS", "NO_AUTH", "GRACEFUL_SHUTDOWN_S",
    "RESIDENT", "RESIDENT_IDLE_TIMEOUT_S", "RESIDENT_START_TIMEOUT_S")}


class Request(BaseModel):
    """What hookline sends before the hook's own input."""

    model_config = ConfigDict(extra="ignore")

    v: Literal[1]
    event: str
    harness: Harness
    user: str | None = None
    agent: str | None = None
    project: str | None = None
    env: dict[str, str] = {}
    database_url: str | None = None
    data_dir: str | None = None
    cwd: str | None = None
    project_dir: str | None = None
    started: float | None = None

    @field_validator("event")
    @classmethod
    def _event(cls, value: str) -> str:
        if value not in EVENTS:
            raise ValueError(f"not a hook event: {value!r}")
        return value


class Fallback(Exception):
    """The full path must answer this hook."""


_GIVEN: ContextVar[tuple[tuple[str, str], ...]] = ContextVar("mcp_memory_given_env", default=())


class _Resolved(Settings):
    """Settings read from a given environment (_GIVEN) instead of this process's: what a hook or a
    window with that environment would run with, resolved by the same code as its own would be."""

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        given = EnvSettingsSource(settings_cls)
        given.env_vars = {k.lower(): v for k, v in _GIVEN.get()}   # as it reads os.environ
        return (init_settings, given)


class Unresolvable(ValueError):
    """The environment holds a setting its own process would refuse."""


@functools.lru_cache(maxsize=64)
def _resolve(env: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    token = _GIVEN.set(env)
    try:
        return dict(_Resolved())
    except ValidationError as exc:
        raise Unresolvable(str(exc).splitlines()[0]) from None
    finally:
        _GIVEN.reset(token)


def differing_settings(env: dict[str, str], own: Settings) -> list[str]:
    """The settings (by variable) whose values differ between what a process with the client's
    MCP_MEMORY_* environment would resolve and this server's own: a value written another way
    ("1" for "true", the default spelled out) or a variable no setting reads is no difference.
    Unresolvable when the client's environment holds a value its own process would refuse."""
    given = tuple(sorted((k, v) for k, v in env.items() if k.startswith(ENV_PREFIX)))
    theirs = _resolve(given)
    fields = set(Settings.model_fields) - {name[len(ENV_PREFIX):].lower() for name in NOT_COMPARED}
    return sorted(env_name(f) for f in fields if theirs[f] != getattr(own, f))


def hook_input(raw: bytes, req: Request) -> tuple[HookInput, dict[str, Any]]:
    """The harness's payload as the hook process would have read it: a payload without a directory
    means the hook's own (CLAUDE_PROJECT_DIR, then its working directory), and a relative
    transcript path is relative to it."""
    try:
        data = json.loads(raw or b"{}")
    except ValueError as exc:
        raise Fallback(f"hook input: {exc}") from None
    if not isinstance(data, dict):
        raise Fallback("hook input is not an object")
    if not data.get("cwd") and not data.get("workspaceDir"):
        data["cwd"] = req.project_dir or req.cwd
    for name in ("transcript_path", "sessionFile"):
        value = data.get(name)
        if isinstance(value, str) and value and req.cwd and not os.path.isabs(os.path.expanduser(value)):
            data[name] = os.path.join(req.cwd, value)
    try:
        payload = HookInput.model_validate(data)
    except ValidationError as exc:
        raise Fallback(f"hook input: {str(exc).splitlines()[0]}") from None
    payload._project_dir = req.project_dir   # the hook's CLAUDE_PROJECT_DIR, not this server's
    return payload, data


class Channel:
    """Answers hooks for one server process."""

    def __init__(self, service: MemoryService, settings: Settings, tg: anyio.abc.TaskGroup) -> None:
        self.service = service
        self.settings = settings
        self.tg = tg
        self.pid = os.getpid()
        self.inflight = InFlight()   # the captures acknowledged and still being stored

    # --- one hook ---------------------------------------------------------------------------------

    async def respond(self, req: Request, raw: bytes) -> dict[str, Any]:
        """The reply hookline prints: stdout / stderr text, or `fallback` with the reason."""
        try:
            differ = differing_settings(req.env, self.settings)
        except Unresolvable as exc:   # the full path reports the setting as it always did
            raise Fallback(f"the hook's settings: {exc}") from None
        if differ:
            raise Fallback(f"settings differ from the server's: {', '.join(differ)}")
        if (req.database_url or None) != (self.settings.database_url or None):
            raise Fallback("the hook's database is not the server's")   # two stores' names hashed alike
        if req.data_dir and _real(req.data_dir) != _real(self.settings.data_dir):
            # Same database, other data dir (status, recall ledgers, locks live there).
            raise Fallback("the hook's data dir is not the server's")
        payload, data = hook_input(raw, req)
        try:
            settings = self.settings.model_copy(update={"user": req.user, "agent": req.agent,
                                                        "project": req.project})
            p = principal_for(settings, req.harness, payload)
        except ValueError as exc:  # a bad identity: the full path words it
            raise Fallback(f"identity: {exc}") from None
        if req.event in CAPTURE_EVENTS:
            # Acknowledged at once, as the full path returns once its worker is started.
            capture = self.inflight.started((p.user_id, p.project_id), payload.session)
            self.tg.start_soon(contained, f"capturing after a {req.event} hook",
                               self._capture(capture, req.event, req.harness, payload, data, settings, p))
            return {}
        limit = budget(req.event, settings)
        now = time.monotonic()
        # The budget counts from the hook process's start, as in the full path (CLOCK_MONOTONIC is
        # one clock for every process of the machine).
        started = req.started if req.started is not None and now - 60 < req.started <= now else now
        deadline = started + limit
        # File reads and the status file's lock (up to its wait) off the event loop every window shares.
        notice = (await anyio.to_thread.run_sync(notices.session_start, settings, req.harness, payload.cwd)
                  if req.event == "session-start" else None)
        reply: dict[str, Any] = {}
        try:
            with anyio.fail_after(max(0.0, deadline - time.monotonic())):
                if req.event == "session-start":
                    # What other sessions just handed over, before the block and the session's first
                    # search (half of what is left at most: the block needs the rest). A prompt does
                    # not wait: another window's capture after each reply would slow every prompt.
                    await self.inflight.settled((p.user_id, p.project_id), payload.session,
                                                (deadline - time.monotonic()) / 2)
                text = await respond(self.service, req.event, req.harness, payload, settings, deadline)
        except TimeoutError:
            text = ""
            reply["stderr"] = (f"mcp-memory hook {req.event}: no context added: took longer than {limit:g}s "
                               f"({env_name(BUDGETS[req.event][0])})")
        reply["stdout"] = answer(req.harness, req.event, "\n\n".join(x for x in (notice, text) if x))
        # What the full path's look_behind hands to a worker, this server does itself, after answering.
        self.tg.start_soon(contained, "catching up after a hook",
                           self._background("catch-up", req.harness, payload, data, settings, p,
                                            req.event == "session-start" and payload.resumed))
        return reply

    async def _capture(self, capture: Capture, event: str, harness: Harness, payload: HookInput,
                       data: dict[str, Any], settings: Settings, p: Principal) -> None:
        """A capture event's work (`_background`), which a session start arriving meanwhile waits
        for (inflight.py)."""
        try:
            await self._background(event, harness, payload, data, settings, p)
        finally:
            self.inflight.finished(capture)

    async def _background(self, event: str, harness: Harness, payload: HookInput, data: dict[str, Any],
                          settings: Settings, p: Principal, own: bool = False) -> None:
        """What the full path's detached worker does (worker.py), on this server's open service:
        the event's own transcript, then the project's sessions that are behind. It finishes even
        while the server shuts down, within the worker's budget; a failure of ours is recorded for
        the next session start, as the worker records it."""
        job = worker.Job({"event": event, "harness": harness, "payload": data})
        job.settings, job.payload = settings, payload
        with anyio.CancelScope(shield=True):
            try:
                with anyio.fail_after(settings.capture_worker_timeout_s):
                    if capture_disabled(settings, p):
                        if event != "catch-up":
                            log.info("not capturing: %s", capture_disabled(settings, p))
                        return
                    folder = catchup.transcripts_dir(harness, payload.transcript, payload.cwd or payload.workspaceDir)
                    if event == "catch-up":
                        if folder is None or not await anyio.to_thread.run_sync(
                                _behind, settings, folder, payload.transcript, own):
                            return
                    else:
                        job.phase = "capturing"
                        await worker.capture_own(self.service, job, p)  # the worker's capture, on our service
                    if folder is not None:
                        job.phase = "catching up"
                        taken = await catchup.catch_up(self.service, settings, p, harness, folder)
                        if taken:
                            log.info("caught up %d session(s) in %s", taken, folder)
                log.debug("%s: %s done through the hook channel", job.key, event)   # the capturer logged it
            except TranscriptError as exc:
                log.warning("%s: nothing captured: %s", job.key, exc)
            except Exception as exc:
                log.warning("%s: %s failed while %s: %s", job.key, event, job.phase, failure_reason(exc))
                if job.phase not in ("capturing", "catching up") or isinstance(exc, TimeoutError):
                    status.record_failure(settings, job.key, failure_reason(exc))

    # --- the connection ---------------------------------------------------------------------------

    async def connection(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            raw_socket = stream.extra(anyio.abc.SocketAttribute.raw_socket)
            uid = hooksocket.peer_uid(raw_socket)
            if uid is not None and uid != os.getuid():
                log.warning("hook channel: refused a connection from uid %s", uid)
                return
            reader = BufferedByteReceiveStream(stream)
            try:
                with anyio.fail_after(READ_TIMEOUT_S):
                    header = await reader.receive_until(b"\n", MAX_HEADER)
                    body = bytearray()
                    while len(body) <= hooksocket.MAX_STDIN:
                        try:
                            body += await reader.receive()
                        except anyio.EndOfStream:
                            break
            except (TimeoutError, anyio.IncompleteRead, anyio.DelimiterNotFound, anyio.BrokenResourceError):
                return
            reply = await self.reply(header, bytes(body))
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.send(json.dumps({"v": hooksocket.PROTOCOL, "pid": self.pid, **reply}).encode())

    async def reply(self, header: bytes, body: bytes) -> dict[str, Any]:
        try:
            if len(body) > hooksocket.MAX_STDIN:
                raise Fallback("hook input too large")
            try:
                req = Request.model_validate_json(header)
            except ValidationError as exc:
                raise Fallback(f"request: {str(exc).splitlines()[0]}") from None
            started = time.monotonic()
            reply = await self.respond(req, body)
            log.debug("hook %s answered through the channel in %.0f ms", req.event,
                      (time.monotonic() - started) * 1000)
            return reply
        except Fallback as exc:
            log.debug("hook channel: full path: %s", exc)
            return {"fallback": str(exc)}
        except Exception as exc:  # never fail the user's turn; the full path tries on its own
            log.warning("hook channel: %s: %s", type(exc).__name__, exc, exc_info=log.isEnabledFor(logging.DEBUG))
            return {"fallback": f"{type(exc).__name__}: {exc}"}


def _real(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(os.path.expanduser(path))


def _behind(settings: Settings, folder: Path, transcript: str | None, own: bool) -> bool:
    return catchup.look(settings, folder, Path(transcript).expanduser() if transcript else None, own)

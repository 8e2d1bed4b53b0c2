"""Decisions by MCP sampling: the connected client's own model answers, through the client.

Only clients that declared the `sampling` capability are asked, on connections that keep a
channel to them (the handshake era, ≤ 2025-11-25: what hosts speak today); the request asks
for a fast, cheap model, includes no other context, and whatever the client's user decides is
final (a decline is a refusal: the job is not asked again). Decisions and extractions (a session
delta's facts) go this way alike. Only a client whose principal may read every memory in the
request (for an extraction: every episode of the delta) is asked; with no such client connected,
the job waits (NotReachable, the attempt uncounted) until one connects. It lives with the server
because it speaks MCP; the decisions package only sees a DecisionProvider."""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import anyio

from ..decisions.pace import Call, Pace
from ..decisions.prompting import SYSTEM, user_message
from ..decisions.protocol import (
    Answer,
    DecisionRequest,
    NotReachable,
    PromptRequest,
    ProviderUnavailable,
    Refused,
    parse_decision,
    sent_chars,
    turns,
)
from ..models import Principal

log = logging.getLogger(__name__)

MAX_TOKENS = 300
# A job waiting for a capable client looks again this often: a client may connect to another
# server process on the same queue, which this one cannot hear of.
WAIT_RECHECK_S = 30.0


def offers_sampling(session: Any, protocol_version: str | None) -> bool:
    caps = getattr(session, "client_capabilities", None)
    return caps is not None and getattr(caps, "sampling", None) is not None and (protocol_version or "") < "2026"


def may_read(p: Principal, scopes: set[tuple[str | None, str | None]]) -> bool:
    """May this principal read a memory in every one of these (agent, project) scopes? The scope
    rule of DESIGN.md (repository.sql.visible): NULL is shared with the whole user."""
    return p.can("read") and all((a is None or a == p.agent_id) and (pr is None or pr == p.project_id)
                                 for a, pr in scopes)


class SamplingSessions:
    """Client connections that can sample, with the principal each acts as, newest first. A tool
    call's session object lives for one request but talks over its connection, which lives as
    long as the client; the last few per user are kept (bounded), and one that fails is dropped.
    A request is only ever sent to a session whose principal may read every memory in it: a
    credential confined to some agents or projects never sees the others' memories this way."""

    KEEP = 8

    def __init__(self) -> None:
        self._by_user: dict[str, list[tuple[Any, Principal]]] = {}
        # Told the user id when a session (or a new principal on one) becomes available, so jobs
        # waiting for a client are taken at once: the decisions worker of a provider asking these
        # sessions, which subscribes as it is built (the sessions exist before the database, so
        # before the worker).
        self._listeners: list[Callable[[str], None]] = []

    def subscribe(self, listener: Callable[[str], None]) -> None:
        self._listeners.append(listener)

    def offer(self, principal: Principal, session: Any, protocol_version: str | None) -> None:
        if not offers_sampling(session, protocol_version):
            return
        link = _connection(session)
        kept = self._by_user.get(principal.user_id, [])
        known = any(_connection(s) is link and q == principal for s, q in kept)
        rest = [(s, q) for s, q in kept if not (_connection(s) is link and q == principal)]
        self._by_user[principal.user_id] = [(session, principal), *rest][: self.KEEP]
        if not known:
            for listener in self._listeners:
                listener(principal.user_id)

    def drop(self, user_id: str, session: Any) -> None:
        link = _connection(session)
        self._by_user[user_id] = [(s, q) for s, q in self._by_user.get(user_id, []) if _connection(s) is not link]

    def pick(self, user_id: str, scopes: set[tuple[str | None, str | None]]) -> Any | None:
        """The newest session whose principal may read memories in all these scopes."""
        for session, principal in self._by_user.get(user_id, []):
            if may_read(principal, scopes):
                return session
        return None


def _estimate(chars: int, answer: str | None, max_tokens: int) -> int:
    """The client reports no usage: an estimate (`chars` sent), never above the request's own bound."""
    return chars // 4 + min(max_tokens, len(answer or "") // 4)


def _connection(session: Any) -> Any:
    return getattr(session, "_connection", session)


class SamplingProvider:
    name = "sampling"

    def __init__(self, sessions: SamplingSessions, *, model_hint: str | None = None, pace: Pace | None = None) -> None:
        self.sessions = sessions
        self.model = model_hint or "client's choice"
        self.model_hint = model_hint
        self.pace = pace or Pace.fixed_at(60.0)  # how long the client's model may take (decisions/pace.py)

    async def decide(self, request: DecisionRequest) -> Answer:
        prompt = user_message(request)
        text, model = await self._sample(request.user_id, request.scopes(), SYSTEM, prompt, MAX_TOKENS, call="decision")
        tokens = _estimate(sent_chars(SYSTEM, prompt), text, MAX_TOKENS)
        decision = parse_decision(text, tokens=tokens)
        decision.targets(request.candidates)
        return Answer(decision=decision, provider=self.name, model=model, tokens=tokens)

    async def complete_for(self, request: PromptRequest) -> tuple[str | None, int]:
        """A plain prompt (a session delta's facts, a second look at a replace), asked of a client
        that may read every memory or episode it shows; the answer's text and its estimated tokens."""
        text, _ = await self._sample(request.user_id, request.scopes, request.system, request.prompt,
                                     request.max_tokens, request.examples, call="prompt")
        return text, _estimate(request.text_chars(), text, request.max_tokens)

    async def _sample(self, user_id: str, scopes: set[tuple[str | None, str | None]], system: str, prompt: str,
                      max_tokens: int, examples: Sequence[tuple[str, str]] = (), *, call: Call
                      ) -> tuple[str | None, str]:
        """The text a capable client's model answers, and that model's name."""
        from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
        from mcp_types import ModelHint, ModelPreferences, SamplingMessage, TextContent

        session = self.sessions.pick(user_id, scopes)
        if session is None:
            raise NotReachable(f"waiting for a client to sample: no connected client of user {user_id} "
                               "that may read these memories offers sampling", recheck_s=WAIT_RECHECK_S)
        prefs = ModelPreferences(hints=[ModelHint(name=self.model_hint)] if self.model_hint else None,
                                 cost_priority=0.9, speed_priority=0.9, intelligence_priority=0.3)
        allowed, started = self.pace.timeout(call), time.monotonic()
        try:
            with anyio.fail_after(allowed), warnings.catch_warnings():
                # Deprecated in the 2026 protocol; still what handshake-era hosts offer.
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                result = await session.create_message(
                    [SamplingMessage(role=role, content=TextContent(type="text", text=text))
                     for role, text in turns(prompt, examples)],
                    max_tokens=max_tokens, system_prompt=system, include_context="none", temperature=0,
                    model_preferences=prefs)
        except TimeoutError:
            self.pace.ran_out(call, allowed)
            raise ProviderUnavailable(f"the client did not answer the sampling request within {allowed:g} s"
                                      ) from None
        except MCPError as exc:
            # The client (or its user) said no: respected, not asked again for this job.
            raise Refused(f"the client declined to sample: {exc}") from None
        except Exception as exc:  # the connection closed under us, no back channel, ...
            self.sessions.drop(user_id, session)
            raise ProviderUnavailable(f"sampling through the client failed: {type(exc).__name__}: {exc}") from None
        self.pace.took(call, time.monotonic() - started)
        return getattr(result.content, "text", None), result.model or self.model

"""Decisions by MCP sampling: the connected client's own model answers, through the client.

Only clients that declared the `sampling` capability are asked, on connections that keep a
channel to them (the handshake era, ≤ 2025-11-25: what hosts speak today); the request asks
for a fast, cheap model, includes no other context, and whatever the client's user decides is
final (a decline is a refusal: the job is not asked again). With no such client connected for
the memory's user, the job waits (ProviderUnavailable) until one is. It lives with the server
because it speaks MCP; the decisions package only sees a DecisionProvider."""

from __future__ import annotations

import logging
import warnings
from typing import Any

import anyio

from ..decisions.prompting import SYSTEM, user_message
from ..decisions.protocol import Answer, DecisionRequest, ProviderUnavailable, Refused, parse_decision

log = logging.getLogger(__name__)

MAX_TOKENS = 300


def offers_sampling(session: Any, protocol_version: str | None) -> bool:
    caps = getattr(session, "client_capabilities", None)
    return caps is not None and getattr(caps, "sampling", None) is not None and (protocol_version or "") < "2026"


class SamplingSessions:
    """Client connections that can sample, per user, newest first. A tool call's session object
    lives for one request but talks over its connection, which lives as long as the client; the
    last few per user are kept (bounded), and one that fails is dropped."""

    KEEP = 4

    def __init__(self) -> None:
        self._by_user: dict[str, list[Any]] = {}

    def offer(self, user_id: str, session: Any, protocol_version: str | None) -> None:
        if not offers_sampling(session, protocol_version):
            return
        link = _connection(session)
        kept = [s for s in self._by_user.get(user_id, []) if _connection(s) is not link]
        self._by_user[user_id] = [session, *kept][: self.KEEP]

    def drop(self, user_id: str, session: Any) -> None:
        self._by_user[user_id] = [s for s in self._by_user.get(user_id, []) if s is not session]

    def pick(self, user_id: str) -> Any | None:
        kept = self._by_user.get(user_id)
        return kept[0] if kept else None


def _connection(session: Any) -> Any:
    return getattr(session, "_connection", session)


class SamplingProvider:
    name = "sampling"

    def __init__(self, sessions: SamplingSessions, *, model_hint: str | None = None, timeout_s: float = 60.0) -> None:
        self.sessions = sessions
        self.model = model_hint or "client's choice"
        self.model_hint = model_hint
        self.timeout_s = timeout_s

    async def decide(self, request: DecisionRequest) -> Answer:
        from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
        from mcp_types import ModelHint, ModelPreferences, SamplingMessage, TextContent

        session = self.sessions.pick(request.user_id)
        if session is None:
            raise ProviderUnavailable(f"no connected client of user {request.user_id} offers sampling")
        prompt = user_message(request)
        prefs = ModelPreferences(hints=[ModelHint(name=self.model_hint)] if self.model_hint else None,
                                 cost_priority=0.9, speed_priority=0.9, intelligence_priority=0.3)
        try:
            with anyio.fail_after(self.timeout_s), warnings.catch_warnings():
                # Deprecated in the 2026 protocol; still what handshake-era hosts offer.
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                result = await session.create_message(
                    [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
                    max_tokens=MAX_TOKENS, system_prompt=SYSTEM, include_context="none", temperature=0,
                    model_preferences=prefs)
        except TimeoutError:
            raise ProviderUnavailable(f"the client did not answer the sampling request within {self.timeout_s:g} s"
                                      ) from None
        except MCPError as exc:
            # The client (or its user) said no: respected, not asked again for this memory.
            raise Refused(f"the client declined to sample: {exc}") from None
        except Exception as exc:  # the connection closed under us, no back channel, ...
            self.sessions.drop(request.user_id, session)
            raise ProviderUnavailable(f"sampling through the client failed: {type(exc).__name__}: {exc}") from None
        content = result.content
        text = getattr(content, "text", None)
        tokens = (len(SYSTEM) + len(prompt) + len(text or "")) // 4  # the client reports no usage: an estimate
        decision = parse_decision(text, tokens=tokens)
        decision.targets(request.candidates)
        return Answer(decision=decision, provider=self.name, model=result.model or self.model, tokens=tokens)

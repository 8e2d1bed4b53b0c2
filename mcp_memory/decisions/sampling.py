"""Decisions by MCP sampling: the connected client's own model answers, through the client.

Only clients that declared the `sampling` capability are asked, on connections that keep a
channel to them (the handshake era, ≤ 2025-11-25: what hosts speak today); the request asks
for a fast, cheap model, includes no other context, and whatever the client's user decides is
final (a decline is a refusal: the job is not asked again). With no such client connected for
the memory's user, the job waits (ProviderUnavailable) until one is."""

from __future__ import annotations

import logging
import weakref
from typing import Any

import anyio

from .prompting import SYSTEM, user_message
from .protocol import Answer, DecisionRequest, ProviderUnavailable, Refused, parse_decision

log = logging.getLogger(__name__)

MAX_TOKENS = 300


def offers_sampling(session: Any, protocol_version: str | None) -> bool:
    caps = getattr(session, "client_capabilities", None)
    return caps is not None and getattr(caps, "sampling", None) is not None and (protocol_version or "") < "2026"


class SamplingSessions:
    """Live client sessions that can sample, per user. Sessions are held weakly: a client that
    disconnects drops out on its own."""

    def __init__(self) -> None:
        self._by_user: dict[str, weakref.WeakSet[Any]] = {}

    def offer(self, user_id: str, session: Any, protocol_version: str | None) -> None:
        if offers_sampling(session, protocol_version):
            self._by_user.setdefault(user_id, weakref.WeakSet()).add(session)

    def drop(self, user_id: str, session: Any) -> None:
        self._by_user.get(user_id, weakref.WeakSet()).discard(session)

    def pick(self, user_id: str) -> Any | None:
        for session in list(self._by_user.get(user_id, ())):
            return session
        return None


class SamplingProvider:
    name = "sampling"

    def __init__(self, sessions: SamplingSessions, *, model_hint: str | None = None, timeout_s: float = 60.0) -> None:
        self.sessions = sessions
        self.model = model_hint or "client's choice"
        self.model_hint = model_hint
        self.timeout_s = timeout_s

    async def decide(self, request: DecisionRequest) -> Answer:
        from mcp.shared.exceptions import MCPError
        from mcp_types import ModelHint, ModelPreferences, SamplingMessage, TextContent

        session = self.sessions.pick(request.user_id)
        if session is None:
            raise ProviderUnavailable(f"no connected client of user {request.user_id} offers sampling")
        prompt = user_message(request)
        prefs = ModelPreferences(hints=[ModelHint(name=self.model_hint)] if self.model_hint else None,
                                 cost_priority=0.9, speed_priority=0.9, intelligence_priority=0.3)
        try:
            with anyio.fail_after(self.timeout_s):
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

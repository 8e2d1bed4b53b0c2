"""`mcp-memory doctor`: is the decisions provider there, and does its model answer a decision in
JSON? One small request with a known answer (prompting.probe_message)."""

from __future__ import annotations

import time

from ..checks import Check
from ..config import DecisionSettings


async def check(settings: DecisionSettings) -> Check:
    from . import provider_from, second_look
    from .guard import floor_for
    from .openai_compatible import OpenAICompatibleProvider
    from .prompting import probe_message
    from .protocol import DecisionError, parse_decision

    name = "decisions"
    if settings.decisions_provider == "none":
        return Check(name, True, "off (provider none): the agent decides from each write's `related` list")
    if settings.decisions_provider == "sampling":
        return Check(name, True, f"sampling through connected clients that declare it (mode "
                     f"{settings.decisions_mode}); only a connected client can be checked: see `mcp-memory jobs list`")
    try:
        provider = provider_from(settings)
    except ValueError as exc:
        return Check(name, False, str(exc), "set MCP_MEMORY_DECISIONS_MODEL (and MCP_MEMORY_DECISIONS_BASE_URL)")
    assert isinstance(provider, OpenAICompatibleProvider)
    started = time.monotonic()
    try:
        text, tokens = await provider.ask(probe_message())
        decision = parse_decision(text)
    except DecisionError as exc:
        return Check(name, False, f"{provider.where}: {exc}",
                     "check MCP_MEMORY_DECISIONS_BASE_URL, _MODEL and _API_KEY, and that the model answers JSON")
    format_ = "structured output" if provider.structured else "plain JSON (no structured output)"
    verdict = "" if decision.action == "UPDATE" else f"; it answered {decision.action} where UPDATE was expected"
    looks = ", second look on" if second_look.enabled(settings) else ""
    guard = (f"guard floor {floor_for(settings):.2f}{looks}" if settings.decisions_guard
             else "guard off: the model's replaces are applied unchecked")
    took = time.monotonic() - started
    pace = provider.pace
    bound = (f"calls may take {pace.timeout('decision'):g} s" if pace.fixed is not None
             else f"timeouts follow the model, up to {pace.most:g} s")
    speed = f" slowly ({took:.0f} s for one decision; {bound})" if pace.slow() else f" in {took:.1f} s"
    return Check(name, True, f"{provider.where} answers {format_}{speed} ({tokens} tokens), mode "
                 f"{settings.decisions_mode}, {guard}{verdict}")

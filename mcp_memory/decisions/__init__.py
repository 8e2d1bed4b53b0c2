"""Self-correcting memory: a model decides what a new memory does to the older ones close to it
(ADD / UPDATE / DELETE / NONE), through a durable job queue, reversibly, and never over the
agent's explicit choices. See protocol.py for the contract and jobs.py for the workers."""

from __future__ import annotations

from ..config import DecisionSettings
from .protocol import DecisionProvider


def provider_from(settings: DecisionSettings, sampling: DecisionProvider | None = None) -> DecisionProvider | None:
    """The configured provider, or None (decisions off). Builds no network client yet. Sampling
    speaks MCP, so the server builds it (server/sampling.py) and passes it in."""
    if settings.decisions_provider == "none":
        return None
    if settings.decisions_provider == "sampling":
        return sampling
    from .openai_compatible import OpenAICompatibleProvider
    from .pace import Pace

    return OpenAICompatibleProvider(base_url=settings.decisions_base_url, model=settings.decisions_model or "",
                                    api_key=settings.decisions_api_key, pace=Pace(settings),
                                    structured=settings.decisions_structured,
                                    recheck_s=min(300.0, max(1.0, settings.decisions_retry_base_s * 3)))

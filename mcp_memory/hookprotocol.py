"""The hook protocol, written once: the events, which of them capture and which answer with context
in how long, what prompt is worth a recall, and how a boolean setting reads. The thin entry point
(hookline.py), the hook socket (hooksocket.py), the full hook path (capture/hooks.py), recall
(capture/recall.py), the server's end of the channel (capture/channel.py) and the settings
(config/capture.py) all read these names from here.

Standard library only, and nothing imported at all: hookline imports this on every prompt.
"""

from __future__ import annotations

PROTOCOL = 1
HARNESSES = ("claude-code", "openclaw")
# The hook events, as `mcp-memory hook <event>` names them, each with the name Claude Code gives it
# (hook_event_name, and hookEventName in an answer).
CLAUDE_EVENTS = {"session-start": "SessionStart", "prompt-submit": "UserPromptSubmit", "stop": "Stop",
                 "pre-compact": "PreCompact", "session-end": "SessionEnd"}
EVENTS = tuple(CLAUDE_EVENTS)
# The capture events are handed off (a worker, or the server's background); the others answer with
# context, within the budget of their setting.
CAPTURE_EVENTS = ("stop", "pre-compact", "session-end")
SESSION_START_TIMEOUT_S = 5.0   # config.Settings.session_start_timeout_s's default
RECALL_TIMEOUT_S = 1.5          # config.Settings.recall_timeout_s's default
ENV_PREFIX = "MCP_MEMORY_"
# An answering event's budget: the setting's field in config.Settings and its default.
BUDGETS = {"session-start": ("session_start_timeout_s", SESSION_START_TIMEOUT_S),
           "prompt-submit": ("recall_timeout_s", RECALL_TIMEOUT_S)}
MAX_STDIN = 8 * 1024 * 1024   # an OpenClaw agent_end event carries the conversation
MIN_PROMPT_WORDS = 2          # a shorter prompt ("yes", "continue") asks nothing to look up
# A boolean setting read as pydantic reads it (MCP_MEMORY_HOOK_CHANNEL, MCP_MEMORY_RESIDENT, …).
OFF = ("0", "false", "f", "no", "n", "off")
ON = ("1", "true", "t", "yes", "y", "on")


def env_name(field: str) -> str:
    """The environment variable of a settings field (config.Settings reads MCP_MEMORY_<FIELD>)."""
    return ENV_PREFIX + field.upper()


def worth_recalling(prompt: str) -> bool:
    """A slash command or a one-word reply ("yes", "continue") asks nothing to look up."""
    prompt = prompt.strip()
    return not prompt.startswith("/") and len(prompt.split()) >= MIN_PROMPT_WORDS


def budget_from_env(event: str, environ: dict[str, str]) -> float | None:
    """An answering event's budget as config.Settings would read it from `environ` (its default for
    a value it would refuse); None for a capture event."""
    if event not in BUDGETS:
        return None
    field, default = BUDGETS[event]
    try:
        value = float(environ.get(env_name(field), default))
    except ValueError:
        return default
    return value if value > 0 else default

"""A loopback stand-in for Anthropic's Messages API, for real `claude -p` runs (ANTHROPIC_BASE_URL).

Claude Code streams `POST /v1/messages` (server-sent events, each with its `event:` name) and
offers MCP tools as `mcp__<server>__<tool>`. The last user turn decides the answer: `WRITE: <text>`
calls the first `…memory_write` tool offered with that content, `SEARCH: <query>` the first
`…memory_search` (first waiting for MCP servers still connecting, when Claude Code says some are);
a tool result is answered with `RESULT: <the result's text>`, so the run's own
output shows what the tool said; anything else (a title, a side question) is answered "Noted.".
Every request body is kept, so a test reads what the model was shown (the hooks' context too)."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from .local_api import Answer, Events, LocalAPI, error

MODEL = "claude-sonnet-4-5"
WAIT = "WaitForMcpServers"


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def _text(block: dict[str, Any]) -> str:
    content = block.get("content", block.get("text", ""))
    if isinstance(content, list):
        return "\n".join(_text(c) for c in content if isinstance(c, dict))
    return content if isinstance(content, str) else json.dumps(content)


def decide(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The content blocks the model answers with."""
    # Claude Code puts system notes among the messages too: the turn is the last user or assistant one.
    turns = [m for m in body.get("messages") or [] if m.get("role") in ("user", "assistant")]
    last = _blocks(turns[-1]) if turns and turns[-1].get("role") == "user" else []
    results = [b for b in last if b.get("type") == "tool_result"]
    waited = any(b.get("type") == "tool_use" and b.get("name") == WAIT for m in turns[-2:-1] for b in _blocks(m))
    if results and not waited:
        return [{"type": "text", "text": "RESULT: " + "\n".join(_text(r) for r in results)}]
    # What the user asked: the last user turn that is not only tool results.
    asked_in = next((m for m in reversed(turns) if m.get("role") == "user"
                     and any(b.get("type") == "text" for b in _blocks(m))), {})
    said = "\n".join(_text(b) for b in _blocks(asked_in) if b.get("type") == "text")
    tools = [t.get("name", "") for t in body.get("tools") or []]
    for verb, tool, argument in (("WRITE", "memory_write", "content"), ("SEARCH", "memory_search", "query")):
        asked = re.search(rf"^{verb}: (.+)$", said, re.M)
        named = next((t for t in tools if t.endswith(f"__{tool}")), None)
        if asked and named:
            return [_use(named, {argument: asked.group(1).strip()})]
        if asked and WAIT in tools and not waited:
            # Claude Code does not hold the first request for MCP servers still connecting: it
            # offers this tool instead, and a model that needs their tools calls it.
            return [_use(WAIT, {})]
        if asked:
            return [{"type": "text", "text": f"NO TOOL {tool} among {tools}"}]
    return [{"type": "text", "text": "Noted."}]


def _use(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{time.time_ns()}", "name": name, "input": arguments}


def _events(blocks: list[dict[str, Any]], model: str) -> Events:
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    usage = {"input_tokens": 10, "output_tokens": 5}
    out = Events([("message_start", {"type": "message_start", "message": {
        "id": f"msg_{time.time_ns()}", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": usage}})])
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        out += [("content_block_start", {"type": "content_block_start", "index": i, "content_block": start}),
                ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}),
                ("content_block_stop", {"type": "content_block_stop", "index": i})]
    out += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 5}}),
            ("message_stop", {"type": "message_stop"})]
    return out


class StandIn(LocalAPI):
    def handle(self, path: str, body: dict[str, Any]) -> Answer:
        route = path.split("?", 1)[0]
        if route == "/v1/messages/count_tokens":
            return 200, {"input_tokens": 100}
        if route != "/v1/messages":
            return error(404, f"no route {path}")
        blocks = decide(body)
        model = str(body.get("model") or MODEL)
        if body.get("stream"):
            return 200, _events(blocks, model)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        return 200, {"id": f"msg_{time.time_ns()}", "type": "message", "role": "assistant", "model": model,
                     "content": blocks, "stop_reason": stop, "stop_sequence": None,
                     "usage": {"input_tokens": 10, "output_tokens": 5}}

    def __enter__(self) -> StandIn:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

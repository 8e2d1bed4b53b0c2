"""A loopback stand-in for an OpenAI-compatible model, for real `openclaw agent --local` turns.

OpenClaw 2026.9 streams chat completions and puts MCP tools behind its `tool_search` /
`tool_call` surface. A turn whose user text has `SEARCH: <query>` searches the catalog for memory
tools, then calls the first `…__memory_search` it was shown with the query; any other turn answers
"Noted.". Every request body is kept, so a test reads what the agent was shown."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from .local_api import Answer, LocalAPI, Streamed

MODEL = {"id": "m1", "name": "m1", "reasoning": False, "input": ["text"], "contextWindow": 128000, "maxTokens": 4096,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else json.dumps(content)


def reply(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages", [])
    asked = next((m.group(1) for m in (re.search(r"SEARCH: ([^\n\"\\]+)", _text(x)) for x in messages
                                       if x.get("role") == "user") if m), None)
    calls = [c for x in messages if x.get("role") == "assistant" for c in (x.get("tool_calls") or [])]
    results = [x for x in messages if x.get("role") == "tool"]
    if asked is None or len(calls) >= 2:
        return {"role": "assistant", "content": "Noted."}
    if not calls:
        name, args = "tool_search", {"query": "memory search", "limit": 20}
    else:
        found = re.findall(r"memory[-\w]*__memory_search", _text(results[-1])) if results else []
        if not found:
            return {"role": "assistant", "content": "No memory tools."}
        name, args = "tool_call", {"id": found[0], "args": {"query": asked}}
    return {"role": "assistant", "tool_calls": [{"index": 0, "id": f"call_{time.time_ns()}", "type": "function",
                                                 "function": {"name": name, "arguments": json.dumps(args)}}]}


class StandIn(LocalAPI):
    def handle(self, path: str, body: dict[str, Any]) -> Answer:
        delta = reply(body)
        done = "tool_calls" if "tool_calls" in delta else "stop"
        return 200, Streamed({"id": "c1", "object": "chat.completion.chunk", "created": int(time.time()),
                              "model": body.get("model"),
                              "choices": [{"index": 0, "delta": part, "finish_reason": finish}]}
                             for part, finish in ((delta, None), ({}, done)))

    def provider(self) -> dict[str, Any]:
        """The `models.providers.<id>` entry that sends OpenClaw's model calls here."""
        return {"baseUrl": f"{self.base}/v1", "apiKey": "local",
                "api": "openai-completions", "models": [MODEL]}

    def seen(self) -> str:
        """Everything the model was shown, as one text (tool results included)."""
        return json.dumps([r["body"].get("messages") for r in self.take()])

    def __enter__(self) -> StandIn:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

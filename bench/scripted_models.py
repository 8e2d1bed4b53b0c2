"""Chat-completions endpoints served in-process that answer decisions by a script, not a model, so
the guard is measured on whole dev sets in minutes (bench/decisions_model.py --model-kind):

  adversarial  UPDATE of every candidate shown: the worst a model can do, so what the guard lets
               through is its false accepts on every pair the candidates form;
  oracle       UPDATE of exactly the candidates that are earlier versions of the same record (the
               bench knows them), ADD when there are none: what the guard refuses is its lost recall.

A policy sees the new memory's text and the candidates' (label, text) as the prompt renders them
(mcp_memory/decisions/prompting.py: one JSON object per line) and returns the decision's JSON."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Policy = Callable[[str, list[tuple[str, str]]], dict[str, Any]]


def parse_prompt(user: str) -> tuple[str, list[tuple[str, str]]]:
    """The new memory's text and the candidates' (label, text) from the decision prompt."""
    lines = user.splitlines()
    new = json.loads(lines[lines.index("NEW memory:") + 1])["text"]
    candidates = []
    for line in lines[lines.index("EXISTING memories:") + 1:]:
        if not line.startswith("{"):
            break
        c = json.loads(line)
        candidates.append((c["label"], c["text"]))
    return new, candidates


def adversarial(new: str, candidates: list[tuple[str, str]]) -> dict[str, Any]:
    ids = [label for label, _ in candidates]
    return {"action": "UPDATE" if ids else "ADD", "ids": ids, "reason": "scripted: replace everything", "text": None}


def oracle(earlier: Callable[[str, str], bool]) -> Policy:
    """Replaces the candidates `earlier(new text, old text)` says are earlier versions of the new one."""
    def decide(new: str, candidates: list[tuple[str, str]]) -> dict[str, Any]:
        ids = [label for label, text in candidates if earlier(new, text)]
        return {"action": "UPDATE" if ids else "ADD", "ids": ids, "reason": "scripted: the earlier versions",
                "text": None}
    return decide


def _handler(policy: Policy) -> type[BaseHTTPRequestHandler]:
    class Scripted(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            user = next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")
            content = json.dumps(policy(*parse_prompt(user)))
            body = json.dumps({"id": "s", "object": "chat.completion", "created": 0, "model": "scripted",
                               "choices": [{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": content}}],
                               "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    return Scripted


@contextmanager
def serving(policy: Policy) -> Iterator[str]:
    """A loopback chat-completions endpoint answering with `policy`; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(policy))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()

"""Chat-completions endpoints served in-process that answer decisions by a script, not a model, so
the guard is measured on whole dev sets in minutes (bench/decisions_model.py --model-kind):

  adversarial  UPDATE of every candidate shown: the worst a model can do, so what the guard lets
               through is its false accepts on every pair the candidates form;
  oracle       UPDATE of exactly the candidates that are earlier versions of the same record (the
               bench knows them), ADD when there are none: what the guard refuses is its lost recall.

--cache FILE puts a recording proxy in front of a real endpoint: an answer to the very same
messages is replayed from the file (the model runs at temperature 0), so runs that differ only in
what happens after the answer (the guard on or off, a changed guard) ask the model only for the
prompts they do not share. --second-look-url sends the scripted model's second looks to a real
one (through the same kind of recording proxy).

A policy sees the new memory's text and the candidates' (label, text) as the prompt renders them
(mcp_memory/decisions/prompting.py: one JSON object per line) and returns the decision's JSON."""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from mcp_memory.decisions import second_look

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


class Recorded:
    """Answers of a real endpoint by the hash of the messages they answered, kept in a JSON-lines
    file; a miss is asked upstream and appended."""

    def __init__(self, upstream: str, path: Path) -> None:
        self.upstream = upstream.rstrip("/") + "/chat/completions"
        self.path = path
        self.lock = threading.Lock()
        self.hits = self.misses = 0
        self.answers: dict[str, dict[str, Any]] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                entry = json.loads(line)
                self.answers[entry["key"]] = entry["response"]

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        key = hashlib.sha256(json.dumps([request["messages"], request.get("max_tokens")]).encode()).hexdigest()
        with self.lock:  # one question at a time: the local server answers one at a time anyway
            if key in self.answers:
                self.hits += 1
                return self.answers[key]
            self.misses += 1
            asked = urllib.request.Request(self.upstream, json.dumps(request).encode(),
                                           {"Content-Type": "application/json"})
            with urllib.request.urlopen(asked, timeout=3600) as answer:  # noqa: S310 - the bench's own URL
                response = json.load(answer)
            self.answers[key] = response
            with self.path.open("a") as f:
                f.write(json.dumps({"key": key, "response": response}) + "\n")
            return response


def scripted(policy: Policy, look: Callable[[dict[str, Any]], dict[str, Any]] | None = None
             ) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A chat completion whose content is `policy`'s decision on the request's prompt. A second
    look (mcp_memory/decisions/second_look.py) goes to `look` (a real model, e.g. a `Recorded`);
    without one it is answered Yes, as a model that replaces whatever it is shown would."""
    def answer(request: dict[str, Any]) -> dict[str, Any]:
        if request["messages"][0]["content"] == second_look.SYSTEM:
            if look is not None:
                return look(request)
            content = "Yes"
        else:
            user = next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")
            content = json.dumps(policy(*parse_prompt(user)))
        return {"id": "s", "object": "chat.completion", "created": 0, "model": "scripted",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}
    return answer


def _handler(respond: Callable[[dict[str, Any]], dict[str, Any]]) -> type[BaseHTTPRequestHandler]:
    class Scripted(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            data = json.dumps(respond(request)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    return Scripted


@contextmanager
def serving(respond: Callable[[dict[str, Any]], dict[str, Any]]) -> Iterator[str]:
    """A loopback chat-completions endpoint answering with `respond` (a request's JSON to the
    response's: `scripted(policy)` or a `Recorded`); yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(respond))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()

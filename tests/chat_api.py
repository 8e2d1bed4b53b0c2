"""A local HTTP server speaking the chat-completions API, with scripted answers, for the real
`openai` SDK to talk to (decisions tests and doctor)."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ChatAPI:
    """POST /v1/chat/completions. Each request takes the next scripted step (or `default`):
    ("json", obj) the object as the message text; ("text", s) plain text; ("refusal", s) a
    refusal; ("status", code) an error; ("sleep", s) wait s seconds, then answer the next step.
    `structured=False` rejects response_format with a 400, as endpoints without it do."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.steps: list[tuple[str, Any]] = []
        self.default: tuple[str, Any] = ("json", {"action": "ADD", "ids": [], "reason": "unrelated"})
        self.structured = True
        self.delay = 0.0  # before every answer
        self.lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with api.lock:
                    api.requests.append({"path": self.path, "body": body,
                                         "headers": {k.lower(): v for k, v in self.headers.items()}})
                if self.path != "/v1/chat/completions":
                    return self.reply(404, {"error": {"message": f"no route {self.path}"}})
                if not api.structured and "response_format" in body:
                    return self.reply(400, {"error": {"message": "response_format is not supported"}})
                if api.delay:
                    time.sleep(api.delay)
                step = api.next_step()
                while step[0] == "sleep":  # outside the lock: other requests go on meanwhile
                    time.sleep(step[1])
                    step = api.next_step()
                kind, value = step
                if kind == "status":
                    return self.reply(value, {"error": {"message": f"scripted {value}"}})
                message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
                if kind == "json":
                    message["content"] = json.dumps(value)
                elif kind == "text":
                    message["content"] = value
                elif kind == "refusal":
                    message["refusal"] = value
                self.reply(200, {"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()),
                                 "model": body.get("model"),
                                 "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                                 "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})

            def reply(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except ConnectionError:  # the client timed out and left
                    pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def next_step(self) -> tuple[str, Any]:
        with self.lock:
            return self.steps.pop(0) if self.steps else self.default

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def script(self, *steps: tuple[str, Any]) -> None:
        with self.lock:
            self.steps = list(steps)

    def take(self) -> list[dict[str, Any]]:
        with self.lock:
            out, self.requests = self.requests, []
        return out

    def reset(self) -> None:
        with self.lock:
            self.requests, self.steps = [], []
        self.structured = True
        self.delay = 0.0


@contextmanager
def chat_api() -> Iterator[ChatAPI]:
    api = ChatAPI()
    api.thread.start()
    try:
        yield api
    finally:
        api.server.shutdown()
        api.server.server_close()


def dead_url() -> str:
    """A loopback URL nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"

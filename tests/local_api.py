"""A JSON-over-HTTP server on 127.0.0.1 for a remote API's real SDK to talk to: the embeddings
and chat-completions fakes answer through it. Every request is recorded; a client that gives up
(a timeout under test) is not an error."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = tuple[int, dict[str, Any]]


class Streamed(list):
    """An answer sent as server-sent events, one `data:` line per item, then `data: [DONE]` (the
    chat-completions API with "stream": true)."""


class Events(list):
    """An answer sent as server-sent events that carry their names, one `event:` and `data:` per
    (name, item) pair, no `[DONE]` (Anthropic's Messages API with "stream": true)."""


class LocalAPI:
    # Extra headers on every answer (e.g. the openai SDK's retry pacing).
    headers: dict[str, str] = {}

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                request = {"path": self.path, "body": body, "headers": {k.lower(): v for k, v in self.headers.items()}}
                with api.lock:
                    api.requests.append(request)
                status, payload = api.handle(self.path, body)
                streamed = isinstance(payload, (Streamed, Events))
                if isinstance(payload, Events):
                    data = b"".join(f"event: {name}\ndata: {json.dumps(item)}\n\n".encode() for name, item in payload)
                elif streamed:
                    data = b"".join(f"data: {json.dumps(item)}\n\n".encode() for item in payload) + b"data: [DONE]\n\n"
                else:
                    data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "text/event-stream" if streamed else "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in api.headers.items():
                        self.send_header(name, value)
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

    def handle(self, path: str, body: dict[str, Any]) -> Answer:
        raise NotImplementedError

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def take(self) -> list[dict[str, Any]]:
        with self.lock:
            out, self.requests = self.requests, []
        return out

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def error(status: int, message: str) -> Answer:
    return status, {"error": {"message": message}}

"""A local HTTP server speaking the chat-completions API, with scripted answers, for the real
`openai` SDK to talk to (decisions tests and doctor)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar

from .local_api import Answer, LocalAPI, error


class ChatAPI(LocalAPI):
    """POST /v1/chat/completions. Each request takes the next scripted step (or `default`):
    ("json", obj) the object as the message text; ("text", s) plain text; ("refusal", s) a
    refusal; ("status", code) an error; ("sleep", s) wait s seconds, then answer the next step.
    `structured=False` rejects response_format with a 400, as endpoints without it do."""

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[tuple[str, Any]] = []
        self.default: tuple[str, Any] = ("json", {"action": "ADD", "ids": [], "reason": "unrelated"})
        self.structured = True
        self.delay = 0.0  # before every answer
        # Bumped by script() and reset(): a request still sleeping when a later test scripts its
        # answers must not take them (it answered the next test's DELETE with the default ADD).
        self.generation = 0

    def handle(self, path: str, body: dict[str, Any]) -> Answer:
        if path != "/v1/chat/completions":
            return error(404, f"no route {path}")
        if not self.structured and "response_format" in body:
            return error(400, "response_format is not supported")
        if self.delay:
            time.sleep(self.delay)
        generation = self.generation
        step = self.next_step()
        while step[0] == "sleep":  # outside the lock: other requests go on meanwhile
            time.sleep(step[1])
            step = self.next_step(generation)
        kind, value = step
        if kind == "status":
            return error(value, f"scripted {value}")
        message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
        if kind == "json":
            message["content"] = json.dumps(value)
        elif kind == "text":
            message["content"] = value
        elif kind == "refusal":
            message["refusal"] = value
        return completion(message, body)

    def next_step(self, generation: int | None = None) -> tuple[str, Any]:
        """The next scripted step; the default for a request from before the script was replaced."""
        with self.lock:
            if generation is not None and generation != self.generation:
                return self.default
            return self.steps.pop(0) if self.steps else self.default

    @property
    def url(self) -> str:
        return f"{self.base}/v1"

    def script(self, *steps: tuple[str, Any]) -> None:
        with self.lock:
            self.steps = list(steps)
            self.generation += 1

    def reset(self) -> None:
        with self.lock:
            self.requests, self.steps = [], []
            self.generation += 1
        self.structured = True
        self.delay = 0.0


def completion(message: dict[str, Any], body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """A chat completion answering with `message`, as the API sends it."""
    return 200, {"id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()),
                 "model": body.get("model"), "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}


def answering(answer: Any, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """A chat completion whose text is `answer` as JSON."""
    return completion({"role": "assistant", "content": json.dumps(answer), "refusal": None}, body)


Served = TypeVar("Served", bound=ChatAPI)


@contextmanager
def serving(api: Served) -> Iterator[Served]:
    """`api` (a ChatAPI or a model written on it) listening on loopback for the block."""
    api.start()
    try:
        yield api
    finally:
        api.close()


def chat_api() -> AbstractContextManager[ChatAPI]:
    return serving(ChatAPI())


def dead_url() -> str:
    """A loopback URL nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"

"""The request id: one short random id per tool call or HTTP request, carried in a context
variable so that the log lines, the span and the caller's "internal error <id>" all name it."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_REQUEST_ID: ContextVar[str | None] = ContextVar("mcp_memory_request_id", default=None)


def new_request_id() -> str:
    return secrets.token_hex(6)


def request_id() -> str | None:
    return _REQUEST_ID.get()


@contextmanager
def request_scope(rid: str | None = None) -> Iterator[str]:
    """Within it, request_id() is `rid` (a new one by default); an enclosing HTTP request's id is
    kept for the tool calls it carries, so one id follows the request through."""
    rid = rid or _REQUEST_ID.get() or new_request_id()
    token = _REQUEST_ID.set(rid)
    try:
        yield rid
    finally:
        _REQUEST_ID.reset(token)

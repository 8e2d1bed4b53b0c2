"""Log output for operators: JSON lines (MCP_MEMORY_LOG_FORMAT=json) with the request id, or the
plain text format. Always on stderr: in stdio mode stdout carries only the protocol."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

from .context import request_id


class RequestIdFilter(logging.Filter):
    """Puts the current request id on every record (None outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = request_id()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, request_id, and the traceback as
    one string. Messages are the code's own; no handler here adds arguments or headers."""

    def format(self, record: logging.LogRecord) -> str:
        line = {"time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
                "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        if getattr(record, "request_id", None):
            line["request_id"] = record.request_id  # type: ignore[attr-defined]
        for extra in ("method", "path", "status", "duration_ms", "client"):
            if hasattr(record, extra):
                line[extra] = getattr(record, extra)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure(level: str = "INFO", fmt: str = "text") -> None:
    """Root logging to stderr, in `fmt` ("text" or "json"). Like logging.basicConfig it leaves a
    root logger that already has handlers alone (a host process's, pytest's)."""
    root = logging.getLogger()
    if root.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root.addHandler(handler)
    root.setLevel(level.upper())


class ExpectedFaults(logging.Filter):
    """Turns a record whose exception is one of `kinds` into one line naming it: a library that
    logs every reconnect attempt with a traceback (asyncpg's pool while PostgreSQL restarts) must
    not bury the log in stack traces of a fault the operator already sees as "unavailable"."""

    def __init__(self, kinds: tuple[type[BaseException], ...]) -> None:
        super().__init__()
        self.kinds = kinds

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and isinstance(exc, self.kinds):
            reason = (str(exc).strip().splitlines() or [""])[0][:200]
            record.msg = f"{record.getMessage()} ({type(exc).__name__}: {reason})"
            record.args = ()
            record.exc_info = record.exc_text = None
        return True


def quiet(logger: str, kinds: tuple[type[BaseException], ...]) -> None:
    """Install ExpectedFaults on `logger` once."""
    target = logging.getLogger(logger)
    if not any(isinstance(f, ExpectedFaults) for f in target.filters):
        target.addFilter(ExpectedFaults(kinds))

"""What a caller sees when a tool call fails: its own mistake named, an outage said plainly, and
a server bug as an error id the operator can find in the log. Never a bare "Error executing
tool"."""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, ParamSpec, TypeVar

import asyncpg
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from ..errors import MemoryServiceError
from ..telemetry import metrics
from ..telemetry.context import request_scope
from ..telemetry.tracing import span

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

UNAVAILABLE = ("the memory database is not available right now; nothing was changed. Retry in a few seconds "
               "(the operator can run `mcp-memory doctor`)")

# Failures that mean the database cannot be reached, not that the call was wrong. asyncpg raises
# InternalClientError when the server goes away between a query's messages (a restart mid-call),
# and OSError covers FileNotFoundError: the Unix socket of an embedded server that is restarting.
_OUTAGES = (OSError, asyncpg.PostgresConnectionError, asyncpg.InterfaceError, asyncpg.CannotConnectNowError,
            asyncpg.TooManyConnectionsError, asyncpg.AdminShutdownError, asyncpg.InternalClientError,
            asyncpg.CrashShutdownError, asyncpg.ConnectionFailureError)


class _OutageLog:
    """One line per outage, not a traceback per call."""

    def __init__(self, every_s: float = 30.0) -> None:
        self.every_s, self.last = every_s, 0.0

    def report(self, exc: BaseException) -> None:
        now = time.monotonic()
        if now - self.last >= self.every_s:
            self.last = now
            log.warning("database unavailable: %s: %s", type(exc).__name__, exc)


_outage_log = _OutageLog()


def is_outage(exc: BaseException) -> bool:
    return isinstance(exc, _OUTAGES)


def report_outage(exc: BaseException) -> None:
    _outage_log.report(exc)


def tool_errors(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Anticipated failures reach the model with their message; a database outage says so; any
    other exception is logged with a traceback under the request id, and the caller gets that id.
    Each tool call is counted by outcome, timed, and traced as a span (helpers whose names start
    with an underscore run inside a tool's call and are not counted again)."""
    name = fn.__name__
    counted = not name.startswith("_")

    async def guarded(*args: P.args, **kwargs: P.kwargs) -> tuple[R, str]:
        try:
            return await fn(*args, **kwargs), "ok"
        except MemoryServiceError as exc:
            raise _Outcome("refused", ToolError(str(exc))) from None
        except (ToolError, MCPError) as exc:
            raise _Outcome("refused", exc) from None
        except _OUTAGES as exc:
            report_outage(exc)
            raise _Outcome("unavailable", ToolError(UNAVAILABLE)) from None

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with request_scope() as rid:
            started = time.monotonic()
            outcome = "internal"
            try:
                with span(f"tool {name}", **{"mcp_memory.tool": name}) if counted else _nothing():
                    try:
                        result, outcome = await guarded(*args, **kwargs)
                    except _Outcome as failed:
                        outcome = failed.outcome
                        raise failed.error from None
                    except Exception:
                        log.exception("internal error %s in %s", rid, name, extra={"request_id": rid})
                        raise ToolError(f"internal error {rid}: the server failed on this call and rolled it "
                                        "back; retry, and if it fails again report this id to the operator") from None
            finally:
                if counted:
                    metrics.TOOL_CALLS.labels(name, outcome).inc()
                    metrics.TOOL_SECONDS.labels(name).observe(time.monotonic() - started)
            _count_effects(name, result)
            return result

    return wrapper


class _Outcome(Exception):
    def __init__(self, outcome: str, error: BaseException) -> None:
        self.outcome, self.error = outcome, error


@contextlib.contextmanager
def _nothing() -> Iterator[None]:
    yield


def _count_effects(name: str, result: Any) -> None:
    """What a call did, beyond its count: memory_forget executions and how much they forgot."""
    if name == "memory_forget" and getattr(result, "mode", None) == "executed":
        metrics.FORGET_EXECUTIONS.inc()
        metrics.FORGOTTEN.inc(len(getattr(result, "forgotten", ()) or ()))


class ArgumentError(ValidationError):
    """The SDK reports a ValidationError of the arguments to the model as the tool's error; this
    one reads as one line per argument instead of pydantic's dump of the whole input."""

    def __str__(self) -> str:
        return "invalid arguments: " + "; ".join(describe(e) for e in self.errors(include_url=False))


def describe(error: Any) -> str:
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"]).lstrip(".")
    value = error.get("input")
    if error["type"] == "extra_forbidden":
        return f"{where}: this argument is not permitted here (misspelt?)"
    if error["type"] == "missing":
        return f"{where}: required"
    if isinstance(value, str | list | dict) and error["type"].endswith(("_too_long", "_too_short")):
        return f"{where}: {error['msg']} (got {len(value)})"
    return f"{where}: {error['msg']}"


def readable(arg_model: type[BaseModel]) -> type[BaseModel]:
    """The tool's argument model refusing unknown names and explaining its refusals plainly."""

    class Strict(arg_model):  # type: ignore[valid-type,misc]
        model_config = {**arg_model.model_config, "extra": "forbid"}

        @classmethod
        def model_validate(cls, obj: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            try:
                return super().model_validate(obj, **kwargs)
            except ValidationError as exc:
                raise ArgumentError.from_exception_data(exc.title, exc.errors()) from None

    Strict.__name__ = Strict.__qualname__ = arg_model.__name__
    Strict.__module__ = arg_model.__module__
    return Strict


def strict_arguments(server: MCPServer) -> None:
    """Refuse arguments a tool does not take, naming them: a misspelt `limt` silently ignored
    would be a trap. The published input schemas say so too (additionalProperties: false)."""
    for tool in server._tool_manager.list_tools():  # the SDK has no public hook for this
        tool.fn_metadata.arg_model = readable(tool.fn_metadata.arg_model)
        tool.parameters["additionalProperties"] = False

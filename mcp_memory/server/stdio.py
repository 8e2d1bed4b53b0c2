"""The stdio transport, with every request answered.

The SDK's stdio reader (mcp 2.3) drops a line it cannot parse into a message without a word:
invalid JSON, a string holding a lone UTF-16 surrogate ("\\ud800" is valid JSON, invalid
Unicode), `params` that is a string or a list, nesting deeper than its parser allows. The client
then waits for its timeout. So lines pass a check here first; one that fails is answered with a
JSON-RPC error naming what is wrong, and only the rest reach the SDK. Remove this when the SDK
answers such lines itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types
from mcp.server import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

log = logging.getLogger(__name__)

# Deeper than any request of ours needs; the SDK's own parser gives up somewhere past 200.
MAX_DEPTH = 64
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602


class Refused(Exception):
    def __init__(self, code: int, message: str, request_id: int | str | None) -> None:
        super().__init__(message)
        self.code, self.message, self.request_id = code, message, request_id


def _depth_and_bad_text(value: Any) -> tuple[int, bool]:
    """How deep a parsed JSON value nests, and whether any string in it is not valid Unicode."""
    deepest, bad, stack = 0, False, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            break
        if isinstance(item, str):
            bad = bad or not item.isascii() and not _encodable(item)
        elif isinstance(item, dict):
            stack.extend((k, depth + 1) for k in item)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest, bad


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check(line: str) -> None:
    """Raise Refused for a line the SDK would drop unanswered; return for one it can take."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise Refused(PARSE_ERROR, f"Parse error: not valid JSON ({exc})", None) from None
    if not isinstance(message, dict):
        raise Refused(INVALID_REQUEST, "Invalid Request: a JSON-RPC message must be a JSON object "
                      "(batches are not supported)", None)
    request_id = message.get("id")
    if not isinstance(request_id, int | str) or isinstance(request_id, bool):
        request_id = None
    depth, bad_text = _depth_and_bad_text(message)
    if depth > MAX_DEPTH:
        raise Refused(INVALID_REQUEST, f"Invalid Request: nested more than {MAX_DEPTH} levels deep", request_id)
    if bad_text:
        raise Refused(INVALID_REQUEST, "Invalid Request: a string holds a lone UTF-16 surrogate (such as \\ud800), "
                      "which is not valid Unicode", request_id)
    if "params" in message and not isinstance(message["params"], dict):
        raise Refused(INVALID_PARAMS, f"Invalid params: params must be an object, not "
                      f"{type(message['params']).__name__}", request_id)
    try:
        mcp_types.jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"][1:]) or "message"
        raise Refused(INVALID_REQUEST, f"Invalid Request: {where}: {first['msg']}", request_id) from None


async def checked_lines(lines: AsyncIterable[str],
                        answer: Callable[[Refused], Awaitable[None]]) -> AsyncIterator[str]:
    """The lines the SDK can take; each of the others is answered with `answer` (a notification,
    which no one awaits, only logged)."""
    async for line in lines:
        if not line.strip():
            continue
        try:
            check(line)
        except Refused as refused:
            log.info("refused a stdio message: %s", refused.message)
            has_id = '"id"' in line
            if refused.request_id is not None or refused.code == PARSE_ERROR or has_id:
                await answer(refused)
            continue
        yield line


# A request line may carry a whole batch of memories; the SDK's threaded reader had no limit.
MAX_LINE_BYTES = 1 << 30


class _PipeLines:
    """Lines from a pipe read on the event loop: no worker-thread hop per line, as anyio's file
    wrapper makes (one per line read, two per reply written)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while line := await self.reader.readline():
            yield line.decode("utf-8", errors="surrogateescape")


class _PipeWriter:
    """What the SDK's writer needs of stdout (write, flush), written on the event loop."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer

    async def write(self, text: str) -> None:
        self.writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self.writer.drain()


async def _pipes(wire_in: int, wire_out: int) -> tuple[_PipeLines, _PipeWriter, Callable[[], None]] | None:
    """The wire as event-loop pipes, or None when a descriptor is not a pipe, socket or terminal
    (a regular file) or on Windows: then the threaded wrapper serves it. Returns a closer that puts the
    descriptors back in blocking mode."""
    if sys.platform == "win32":  # the proactor loop's pipes are not file descriptors
        return None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    read_file = os.fdopen(wire_in, "rb", buffering=0, closefd=False)
    write_file = os.fdopen(wire_out, "wb", buffering=0, closefd=False)
    try:
        read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), read_file)
    except (ValueError, OSError):
        return None
    try:
        write_transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, write_file)
    except (ValueError, OSError):
        read_transport.close()
        os.set_blocking(wire_in, True)
        return None
    writer = asyncio.StreamWriter(write_transport, protocol, reader, loop)  # type: ignore[arg-type]

    def close() -> None:
        read_transport.close()
        write_transport.close()
        for fd in (wire_in, wire_out):
            with contextlib.suppress(OSError):
                os.set_blocking(fd, True)

    return _PipeLines(reader), _PipeWriter(writer), close


@asynccontextmanager
async def _claimed_stdio() -> AsyncIterator[tuple[AsyncIterable[str], Any]]:
    """The wire as private descriptors, with fd 0 reading the null device and fd 1 writing to
    stderr meanwhile, so nothing a library prints can corrupt the protocol (as the SDK does for
    its own streams)."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.close(devnull)
    pipes = await _pipes(wire_in, wire_out)
    try:
        if pipes is not None:
            yield pipes[0], pipes[1]
        else:
            yield (anyio.wrap_file(os.fdopen(wire_in, "r", encoding="utf-8", errors="surrogateescape", closefd=False)),
                   anyio.wrap_file(os.fdopen(wire_out, "w", encoding="utf-8", closefd=False)))
    finally:
        if pipes is not None:
            pipes[2]()
        sys.stdout.flush()
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)


async def serve_stdio(server: MCPServer) -> None:
    async with _claimed_stdio() as (stdin, stdout):
        await serve_lines(server, stdin, stdout)


async def serve_lines(server: MCPServer, stdin: AsyncIterable[str], stdout: Any) -> None:
    """One MCP session over lines in and a writer out (stdio, or a window relayed to the resident
    server), every line checked first."""
    wire: dict[str, Any] = {}
    ready = anyio.Event()

    async def answer(refused: Refused) -> None:
        # Through the SDK's own writer, so replies never interleave on the wire.
        await ready.wait()
        error = mcp_types.JSONRPCError(jsonrpc="2.0", id=refused.request_id,
                                       error=mcp_types.ErrorData(code=refused.code, message=refused.message))
        await wire["write"].send(SessionMessage(error))

    lines = checked_lines(stdin, answer)
    async with stdio_server(stdin=lines, stdout=stdout) as (read, write):  # type: ignore[arg-type]
        wire["write"] = write
        ready.set()
        lowlevel = server._lowlevel_server  # the SDK's own run_stdio_async does exactly this
        await lowlevel.run(read, write, lowlevel.create_initialization_options())

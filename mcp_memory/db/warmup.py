"""Reading a store's search pages into the server's page cache when a server starts.

A search at a million memories walks ~2 GB of vector index and fetches each row it visits from the
table; a page outside shared_buffers is a read from the operating system's cache, or after a
reboot from disk, one page at a time. A server just started therefore searched slowly until its
searches had read the pages themselves. So a server reads the vector index, the table and its other
indexes into shared_buffers in the background as it starts, most searched first, as far as they
fit, with pg_prewarm where the database has it (the embedded server installs it; a server of the
user's own, when a superuser has), in chunks read in the searches' quiet moments: read at full
speed, the chunks had made the searches during them wait on the disk (at a million memories, p95
250 -> 360-380 ms). At a million memories in one scope, with the store's files out of the operating
system's cache, 60 questions a start at an agent's pace (half a second between searches): 156-169
ms p50 (p95 275-281) without, 67-74 (194-198) with the pages read, done 32-35 s in; back to back,
the same as without (bench/start_pages.py; docs/benchmarks.md, "Pages read at start"). A small
store is read in a moment; the calls are served meanwhile."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
import asyncpg

from ..repository import catalog

log = logging.getLogger(__name__)

# The most of shared_buffers the warm-up fills: a tenth stays for the pages writes dirty and what
# else a search reads, and reading past it would only evict the first relations' pages by the
# later ones'. (A million memories in one scope: vector index 1,954 MB and table 2,680 MB within
# 0.9 of the 6,026 MB the embedded server gets there, not within three quarters.)
SHARE = 0.9
# Blocks read per call (16 MB of 8 kB pages, ~50 ms on the disk measured, ~1 s on a slow one): a
# search that comes while one is read shares the disk with that chunk only, the maintenance sharing
# the admin pool's connection waits for one at most, and a server stopping cancels one.
CHUNK_BLOCKS = 2_048
# Before each chunk the warm-up waits while a search runs or one ended less than QUIET_S ago (an
# agent's searches come in bursts: a session's start, a prompt's recall), up to YIELD_AT_MOST_S,
# after which it reads the chunk anyway: under searches that never pause, they read the pages
# themselves, and the warm-up still ends.
QUIET_S = 0.25
YIELD_AT_MOST_S = 5.0
POLL_S = 0.05


@dataclass
class Warmed:
    """What a warm-up read: (relation, blocks) in the order read, and what it left out for room."""

    read: list[tuple[str, int]] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    seconds: float = 0.0
    skipped: str | None = None  # why nothing was read


def chosen(relations: list[tuple[str, int]], budget: int) -> tuple[list[tuple[str, int]], list[str]]:
    """The relations read, in their order, each whole while the blocks so far stay within
    `budget`, and those left out: a relation that does not fit is passed over, not cut, so a
    smaller one after it may still be read."""
    read, left_out, used = [], [], 0
    for name, blocks in relations:
        if used + blocks <= budget:
            read.append((name, blocks))
            used += blocks
        else:
            left_out.append(name)
    return read, left_out


async def quiet_moment(busy: Callable[[float], bool]) -> None:
    """Wait until `busy(QUIET_S)` is false, or YIELD_AT_MOST_S."""
    with anyio.move_on_after(YIELD_AT_MOST_S):
        while busy(QUIET_S):  # noqa: ASYNC110 (searches starting and ending have no one event)
            await anyio.sleep(POLL_S)


async def warm_pages(admin: asyncpg.Pool, *, share: float = SHARE,
                     busy: Callable[[float], bool] | None = None) -> Warmed:
    """Read the search's pages into shared_buffers (at most `share` of it), each chunk in a quiet
    moment of `busy` (`Activity.busy`: the server's searches); what was read."""
    started = time.monotonic()
    try:
        async with admin.acquire() as conn:
            if not await catalog.prewarm_installed(conn):
                log.info("pages not read at start: the database has no pg_prewarm (docs/operations.md)")
                return Warmed(skipped="pg_prewarm is not installed")
            budget = int(share * await catalog.shared_buffer_blocks(conn))
            relations = await catalog.search_relations(conn)
        read, left_out = chosen([(n, b) for n, b in relations if b > 0], budget)
        for name, blocks in read:
            for first in range(0, blocks, CHUNK_BLOCKS):
                if busy is not None:
                    await quiet_moment(busy)
                async with admin.acquire() as conn:
                    await catalog.prewarm(conn, name, first, min(blocks, first + CHUNK_BLOCKS) - 1)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        # The database away or a relation dropped meanwhile (a first load's index rebuilt): the
        # searches read their pages themselves, as without the warm-up.
        log.warning("reading the search's pages at start stopped: %s", exc)
        return Warmed(seconds=time.monotonic() - started, skipped=f"stopped: {exc}")
    warmed = Warmed(read, left_out, time.monotonic() - started)
    if read:
        log.info("read %d pages of %d relations into the page cache in %.1f s%s", sum(b for _, b in read),
                 len(read), warmed.seconds, f"; no room for {', '.join(left_out)}" if left_out else "")
    return warmed

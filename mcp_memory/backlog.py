"""The graph's backlog read: memories stored before the graph existed, or imported verbatim, get
their names, mentions and (from an import) the writer's `about` and `key`, as a write would have
given them. The server reads it in the background once it is up; `mcp-memory backfill` reads it
too. Nothing is replaced on the way: a memory read late keeps the `superseded_by` it has."""

from __future__ import annotations

import dataclasses
import logging
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import asyncpg
from tqdm import tqdm

from .errors import InvalidInput
from .graph import Said
from .repository.graph_backlog import GraphBacklog
from .structure import Structure

log = logging.getLogger(__name__)

BATCH = 200
POLL_S = 0.2  # while an import's first rows are not in yet
T = TypeVar("T")


class Backlog:
    def __init__(self, admin: asyncpg.Pool, structure: Structure) -> None:
        """`admin`: the owner's pool (the backlog spans users); `structure`: the service's part
        that reads a write's names and key (its lexicon and settings)."""
        self.repo, self.structure = GraphBacklog(admin), structure

    def said(self, row: asyncpg.Record) -> Said:
        """What the graph reads of a memory on the backlog: its text's names by rules, and what its
        writer said of it where an import carried that; a `given` no write would have taken (an
        edited export file) counts for nothing."""
        given: dict[str, Any] = row["given"] or {}
        about, key = given.get("about"), given.get("key")
        try:
            said = self.structure.said(row["content"], row["kind"], about if isinstance(about, list) else None,
                                       key if isinstance(key, str) else None)
        except InvalidInput:
            said = self.structure.said(row["content"], row["kind"], None, None)
        return dataclasses.replace(said, replaces=False)

    async def read_all(self, *, progress: bool = False) -> int:
        """Read the whole backlog, a batch per transaction; returns how many memories were read."""
        done = 0
        total = await self.repo.pending()
        if not total:
            return 0
        with tqdm(total=total, unit="memory", desc="reading names", file=sys.stderr, disable=not progress) as bar:
            while read := await self.repo.read(BATCH, self.said):
                done += read
                bar.update(read)
        return done

    async def alongside(self, work: Callable[[], Awaitable[T]], *, progress: bool = False) -> tuple[T, str | None]:
        """Run `work` (an import filling the backlog) and read the backlog meanwhile, then what is
        left: the names are read while the next rows go in (the import mostly PostgreSQL's work,
        the names mostly ours). Returns what `work` returned, and why the backlog was left unread
        (a failure reading it is no failure of the import: `mcp-memory backfill` reads it later).
        Rows are read oldest first among those already in, so an import whose file is not in time
        order may read a first name before the full name of an older memory, as writes in that
        order would; nothing is replaced either way."""
        done = anyio.Event()
        outcome: list[T] = []
        failed: list[BaseException] = []
        left: list[str] = []

        async def work_then_done() -> None:
            try:
                outcome.append(await work())
            except Exception as exc:  # raised below, not as a task group's ExceptionGroup
                failed.append(exc)
                tg.cancel_scope.cancel()
            finally:
                done.set()

        bar: tqdm[Any] | None = None  # shown once there are names to read (a markdown import has none)
        async with anyio.create_task_group() as tg:
            tg.start_soon(work_then_done)
            try:
                while True:
                    finished = done.is_set()  # before the read: rows committed after it are read next
                    read = await self.repo.read(BATCH, self.said)
                    if read and bar is None:
                        bar = tqdm(unit="memory", desc="reading names", file=sys.stderr, disable=not progress)
                    if bar is not None:
                        bar.update(read)
                    if not read and finished:
                        break
                    if not read:
                        with anyio.move_on_after(POLL_S):
                            await done.wait()
            except (asyncpg.PostgresError, OSError) as exc:
                log.warning("reading the graph's backlog failed", exc_info=True)
                left.append(f"the names of some memories are not read yet ({exc}): `mcp-memory backfill` "
                            "reads them, as the server does when it starts")
                await done.wait()
            finally:
                if bar is not None:
                    bar.close()
        if failed:
            raise failed[0]
        return outcome[0], (left[0] if left else None)

    async def read_in_background(self) -> None:
        """The server's one pass after it starts: a failure is logged, and the next start or
        `mcp-memory backfill` reads what is left."""
        try:
            done = await self.read_all()
        except Exception:
            log.warning("reading the graph's backlog failed; `mcp-memory backfill` reads what is left", exc_info=True)
            return
        if done:
            log.info("read the names of %d memories stored before the graph or imported", done)

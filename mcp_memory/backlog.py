"""The graph's backlog read: memories stored before the graph existed, or imported verbatim, get
their names, mentions and (from an import) the writer's `about` and `key`, as a write would have
given them. The server reads it in the background once it is up; `mcp-memory backfill` reads it
too. Nothing is replaced on the way: a memory read late keeps the `superseded_by` it has."""

from __future__ import annotations

import dataclasses
import logging
import sys
from typing import Any

import asyncpg
from tqdm import tqdm

from .errors import InvalidInput
from .graph import Said
from .repository.graph_backlog import GraphBacklog
from .structure import Structure

log = logging.getLogger(__name__)

BATCH = 200


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

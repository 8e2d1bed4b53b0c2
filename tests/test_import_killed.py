"""`mcp-memory import` of the peer's database killed (SIGKILL) half-way through writing: the vectors it
took from the peer's file (checked only by sample) must not be left in the embedding cache, which
every user shares, and a second run must finish the import as if nothing had happened."""

from __future__ import annotations

import asyncio
import gzip
import os
import signal
import sys
import time
from asyncio.subprocess import PIPE
from pathlib import Path

import asyncpg
import numpy as np
from pgvector.asyncpg import register_vector

from mcp_memory.importing import doobidoo

from .test_import_doobidoo import MANY, MANY_COUNT, _rewrite_vectors

CLI = str(Path(sys.executable).with_name("mcp-memory"))
BATCH = 10  # memories per write batch: the import is killed between its first and last


def _peer_units(path: Path) -> dict[str, np.ndarray]:
    """The file's vector of each text, normalised as the import stores a taken one (float32)."""
    stored = doobidoo.stored_vectors(path)
    return {d.content: (v / np.linalg.norm(v)).astype(np.float32)
            for d in doobidoo.read(path) for v in (stored.by_key[d.metadata["original_id"]].astype(np.float64),)}


async def _vectors(conn: asyncpg.Connection, sql: str) -> list[np.ndarray]:
    return [np.asarray(r[0].to_list(), dtype=np.float32) for r in await conn.fetch(sql)]


def _found_in(vectors: list[np.ndarray], peer: dict[str, np.ndarray]) -> int:
    """How many of `vectors` are, to the bit, one of the file's."""
    known = {v.tobytes() for v in peer.values()}
    return sum(v.tobytes() in known for v in vectors)


async def _import(db: Path, env: dict[str, str]) -> tuple[int | None, str, str]:
    proc = await asyncio.create_subprocess_exec(CLI, "import", str(db), "--quiet", env=env, stdout=PIPE, stderr=PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 300)
    return proc.returncode, out.decode(), err.decode()


async def test_an_import_killed_mid_write_leaves_no_peer_vector_in_the_cache_and_a_rerun_completes(
        db_url: str, tmp_path: Path) -> None:
    db = tmp_path / "sqlite_vec.db"
    db.write_bytes(gzip.decompress(MANY.read_bytes()))
    # A trace of noise (cosine 0.999998, far inside the check) tells the file's vectors from our
    # model's, which for most texts are the peer's to the bit.
    _rewrite_vectors(db, lambda m: m + np.random.default_rng(3).normal(0, 1e-4, m.shape))
    peer = _peer_units(db)
    env = {**os.environ, "MCP_MEMORY_DATABASE_URL": db_url, "MCP_MEMORY_USER": "carol",
           "MCP_MEMORY_PROJECT": "none", "MCP_MEMORY_MAX_BATCH": str(BATCH)}
    conn = await asyncpg.connect(db_url)
    await register_vector(conn)
    try:
        proc = await asyncio.create_subprocess_exec(CLI, "import", str(db), "--quiet", env=env,
                                                    stdout=PIPE, stderr=PIPE)
        deadline, commits = time.monotonic() + 120, []  # (when, how many written)
        try:
            # Killed half-way between two batches' commits (the time between the first two, again): in
            # the middle of writing the next one.
            while proc.returncode is None and time.monotonic() < deadline and len(commits) < 2:
                written = await conn.fetchval("SELECT count(*) FROM memories")
                if written > (commits[-1][1] if commits else 0):
                    commits.append((time.monotonic(), written))
                await asyncio.sleep(0.002)
            if len(commits) == 2:
                await asyncio.sleep((commits[1][0] - commits[0][0]) / 2)
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGKILL)
            _, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == -signal.SIGKILL, f"the import ended before it was killed: {err[-2000:]!r}"
        written = await conn.fetchval("SELECT count(*) FROM memories")
        assert 0 < written < MANY_COUNT
        # the batches written took the file's vectors (so it was killed while taking them) ...
        assert _found_in(await _vectors(conn, "SELECT embedding FROM memories"), peer) > 0
        # ... and none of them is in the cache every user shares
        cached = await _vectors(conn, "SELECT embedding FROM embedding_cache")
        assert _found_in(cached, peer) == 0

        code, out, err = await _import(db, env)
        assert code == 0, err
        assert f"imported {MANY_COUNT - written} new memories from 1 file(s); {written} were already there" in out
        assert "took the peer's vectors for " in out
        rows = await conn.fetch("SELECT content, embedding FROM memories WHERE deleted_at IS NULL")
        assert sorted(r["content"] for r in rows) == sorted(peer) and all(r["embedding"] is not None for r in rows)
        assert _found_in(await _vectors(conn, "SELECT embedding FROM embedding_cache"), peer) == 0

        code, out, err = await _import(db, env)
        assert code == 0, err
        assert f"imported 0 new memories from 1 file(s); {MANY_COUNT} were already there" in out
        assert await conn.fetchval("SELECT count(*) FROM memories") == MANY_COUNT
    finally:
        await conn.close()

"""The embedded server's page cache (shared_buffers) is sized for searching a big store; a server
of the user's own keeps its own; `doctor` says when the vector index does not fit."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import asyncpg
import pytest

from mcp_memory.config import Settings
from mcp_memory.db import buffers, locate
from mcp_memory.db.buffers import MB, memory_bytes, shared_buffers_mb, store_bytes
from mcp_memory.db.doctor import page_cache_check
from mcp_memory.db.embedded import EmbeddedPostgres
from mcp_memory.errors import Unavailable

GB = 1024 * MB


async def shared_buffers_of(dsn: str) -> str:
    conn = await asyncpg.connect(dsn)
    try:
        return str(await conn.fetchval("SHOW shared_buffers"))
    finally:
        await conn.close()


async def started_with(settings: Settings) -> str:
    """The shared_buffers of the embedded server `settings` start (and stop again)."""
    dsn, embedded = await locate(settings)
    assert embedded is not None
    try:
        return await shared_buffers_of(dsn)
    finally:
        await anyio.to_thread.run_sync(embedded.stop)


def test_the_store_and_half_again_between_postgres_default_and_a_quarter_of_memory(tmp_path: Path) -> None:
    assert shared_buffers_mb(0, store=40 * MB, memory=16 * GB) == 128  # a small store: PostgreSQL's default
    assert shared_buffers_mb(0, store=2 * GB, memory=16 * GB) == 3072
    assert shared_buffers_mb(0, store=5 * GB, memory=16 * GB) == 4096  # at most a quarter of memory
    assert shared_buffers_mb(0, store=40 * GB, memory=64 * GB) == 8192  # and never past 8 GB
    assert shared_buffers_mb(0, store=5 * GB, memory=256 * MB) == 128
    assert shared_buffers_mb(300, store=5 * GB, memory=64 * GB) == 300  # a setting is taken as given
    # The store's size is its databases' files (sparse here: their size, not their blocks).
    pgdata = tmp_path / "pg"
    (pgdata / "base" / "5").mkdir(parents=True)
    (pgdata / "base" / "5" / "16384").write_bytes(b"")
    os.truncate(pgdata / "base" / "5" / "16384", 2 * GB)
    (pgdata / "base" / "5" / "16384.1").write_bytes(b"x" * 1000)
    (pgdata / "pg_wal").mkdir()  # the write-ahead log is no page a search reads
    (pgdata / "pg_wal" / "000000010000000000000001").write_bytes(b"x" * 5000)
    assert store_bytes(pgdata) == 2 * GB + 1000


def test_a_containers_limit_counts_where_lower_than_the_machine(tmp_path: Path) -> None:
    machine = memory_bytes(limits=())
    v2, v1 = tmp_path / "memory.max", tmp_path / "memory.limit_in_bytes"
    v2.write_text(f"{2 * GB}\n")
    assert memory_bytes(limits=(v2,)) == min(machine, 2 * GB)
    v2.write_text("max\n")  # cgroup v2 without a limit
    v1.write_text(f"{machine * 1024}\n")  # v1 says "no limit" with a huge number
    assert memory_bytes(limits=(v2, v1, tmp_path / "absent")) == machine


async def test_the_embedded_store_starts_with_its_own_size_and_a_users_server_keeps_postgres_default(
        tmp_path: Path, pg: EmbeddedPostgres) -> None:
    assert await started_with(Settings(data_dir=tmp_path, embedded_shared_buffers_mb=176)) == "176MB"
    # The suite's server is started as a user's own PostgreSQL would be: none of the embedded tuning.
    assert await shared_buffers_of(pg.dsn("postgres")) == "128MB"


async def test_a_size_the_machine_refuses_names_the_setting_and_one_of_ours_falls_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    too_big = 100_000_000  # past PostgreSQL's limit on any machine
    with pytest.raises(Unavailable) as refused:
        await locate(Settings(data_dir=tmp_path / "set", embedded_shared_buffers_mb=too_big))
    assert f"shared_buffers {too_big} MB (MCP_MEMORY_EMBEDDED_SHARED_BUFFERS_MB)" in str(refused.value)
    assert "set a smaller size, or 0 to size it by the store" in str(refused.value)
    # Sized by the store (0), a size the server refuses leaves PostgreSQL's default: the store opens.
    monkeypatch.setattr(buffers, "shared_buffers_mb", lambda setting, *, store, memory=None: too_big)
    assert await started_with(Settings(data_dir=tmp_path / "ours", embedded_shared_buffers_mb=0)) == "128MB"
    assert any("would not start with shared_buffers" in r.getMessage() for r in caplog.records)


def test_doctor_says_when_the_vector_index_does_not_fit_and_how_to_fix_it() -> None:
    fits = page_cache_check(300 * MB, 1024 * MB, embedded=True)
    assert fits.ok and fits.detail == "vector index 300 MB, shared_buffers 1,024 MB: the index fits"
    embedded = page_cache_check(1954 * MB, 128 * MB, embedded=True)
    assert embedded.ok  # advice: a store that does not fit still answers
    assert "vector index 1,954 MB is larger than shared_buffers 128 MB" in embedded.detail
    assert "MCP_MEMORY_EMBEDDED_SHARED_BUFFERS_MB" in embedded.detail
    own = page_cache_check(1954 * MB, 128 * MB, embedded=False)
    assert "raise the server's shared_buffers" in own.detail and "MCP_MEMORY" not in own.detail

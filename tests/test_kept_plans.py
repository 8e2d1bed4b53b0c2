"""On a direct connection a transcript's capture lock is a session lock, held outside any
transaction (repository/transcripts.py); through a pooler it is a transaction's (test_pooler.py)."""

from __future__ import annotations

from pathlib import Path

from mcp_memory.composition import compose
from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.repository import sql
from mcp_memory.repository.transcripts import TranscriptRepository

from .conftest import principal


async def test_a_transcripts_lock_on_a_direct_connection_holds_no_transaction_open(
        database: Database, settings: Settings, tmp_path: Path) -> None:
    """The capture's lock is held while turns are embedded: on a direct connection it is a session
    lock, so no transaction stays open meanwhile (through a pooler it is a transaction's,
    test_pooler.py). asyncpg's Connection metaclass answers isinstance True for every connection and
    any subclass, which once took every connection for a pooler's."""
    svc = (await compose(database, settings)).service
    transcripts = TranscriptRepository(svc.repo)
    async with database.pool.acquire() as conn:
        assert not sql.through_pooler(conn)
    async with transcripts.locked(principal(), str(tmp_path / "t.jsonl")):
        states = await database.admin.fetch(
            """SELECT a.state FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
               WHERE l.locktype = 'advisory' AND l.granted""")
    assert [r["state"] for r in states] == ["idle"]

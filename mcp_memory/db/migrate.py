"""Applies `sql/NNN_name.sql` in order, once each, under an advisory lock."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from importlib import resources

import asyncpg

from ..encoding import sha256_hex

log = logging.getLogger(__name__)

# Any fixed number: every process migrating the same database must agree on it.
_LOCK_KEY = 0x6D63706D656D  # "mcpmem"
_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")
# Idempotent scripts applied after the numbered migrations on every run.
REPEATABLE = ("rls.sql", "user_text_index.sql", "deferred_indexes.sql")


@dataclass(frozen=True)
class Migration:
    version: str
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return sha256_hex(self.sql)


def available_migrations() -> list[Migration]:
    found = []
    for entry in resources.files("mcp_memory.sql").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append(Migration(match.group(1), entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found, key=lambda m: m.version)


async def pending_migrations(conn: asyncpg.Connection) -> list[Migration]:
    exists = await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL")
    applied = set()
    if exists:
        applied = {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}
    return [m for m in available_migrations() if m.version not in applied]


async def migrate(conn: asyncpg.Connection) -> list[str]:
    """Bring the schema up to date; returns the names of the migrations it applied. Each step is
    one transaction that first takes the migration lock (transaction-level, so it holds through a
    pooler in transaction mode too, where a session-level lock and its unlock may land on two
    different server connections and leave the lock held) and then reads what is applied."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
        await conn.execute(
            """CREATE TABLE IF NOT EXISTS schema_migrations (
                   version    text PRIMARY KEY,
                   name       text NOT NULL,
                   checksum   text NOT NULL,
                   applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        recorded = {r["version"]: r for r in await conn.fetch("SELECT * FROM schema_migrations")}
    applied = []
    for migration in available_migrations():
        done = recorded.get(migration.version)
        if done is not None:
            if done["checksum"] != migration.checksum:
                log.warning(
                    "migration %s changed after it was applied; add a new migration instead",
                    migration.name,
                )
            continue
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
            # another process may have applied it since the list above was read
            if await conn.fetchval("SELECT 1 FROM schema_migrations WHERE version = $1", migration.version):
                continue
            await conn.execute(migration.sql)
            await conn.execute(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
                migration.version, migration.name, migration.checksum,
            )
        log.info("applied migration %s", migration.name)
        applied.append(migration.name)
    for name in REPEATABLE:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
            await conn.execute(resources.files("mcp_memory.sql").joinpath(name).read_text(encoding="utf-8"))
    return applied

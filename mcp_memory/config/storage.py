"""The storage section of the settings (the environment's MCP_MEMORY_ variables of it)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import BaseModel, Field


def default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("mcp-memory", appauthor=False))


class StorageSettings(BaseModel):
    """The database: embedded by default, or any PostgreSQL >= 15 with pgvector."""

    # Storage
    database_url: str | None = Field(
        default=None,
        description="PostgreSQL >= 15 with pgvector >= 0.7 (postgresql://user:pass@host/db); unset means the "
        "embedded server under data_dir.",
    )
    data_dir: Path = Field(default_factory=default_data_dir, description=(
        "Where the embedded database, the hook status files and the logs live; default: the platform's user "
        "data directory (~/.local/share/mcp-memory on Linux)."))
    pool_min_size: int = Field(default=1, ge=0, description="Connections the pool keeps open when idle.")
    pool_max_size: int = Field(default=10, ge=1, description="Most connections one server process opens.")
    db_start_timeout_s: float = Field(default=60.0, gt=0, description=(
        "How long a tool call waits for the database at start-up; also the most starting the embedded "
        "server (or waiting for another process's start lock) and connecting may take."))
    embedded_shared_buffers_mb: int = Field(default=0, ge=0, description=(
        "The embedded server's shared_buffers in MB, where it keeps the pages searches read (the vector index "
        "above all); 0: the store's size on disk and half again, at least PostgreSQL's default 128 MB and at most "
        "a quarter of the memory this process may use (the machine's, or its container's limit) or 8 GB. At a "
        "million memories a tagged search took 173-192 ms p50 with 128 MB, 73-94 ms with 5.9 GB. Worked out "
        "when the server starts: a change applies once every process on the store has stopped. A server of "
        "your own (MCP_MEMORY_DATABASE_URL) keeps its own setting."))
    warm_pages: bool = Field(default=True, description=(
        "When a server starts, read the vector index, the memories table and its other indexes into "
        "shared_buffers in the background, most searched first, as far as nine tenths of it holds them, "
        "in the searches' quiet moments (pg_prewarm: the embedded server installs it; on a server of your own "
        "a superuser runs CREATE EXTENSION pg_prewarm, or nothing is read). At a million memories whose files "
        "no cache held, the first 60 searches half a second apart took 156-169 ms p50 without it, 67-74 ms "
        "with it (bench/start_pages.py)."))
    # Row-level security: application queries run as this role ('' to skip).
    db_app_role: str = Field(default="mcp_memory_app", description=(
        "The non-owner role application queries run as, so row-level security applies; '' skips it."))
    db_pooler: Literal["none", "transaction"] = Field(default="none", description=(
        "'transaction' when MCP_MEMORY_DATABASE_URL names a connection pooler in transaction mode (PgBouncer "
        "pool_mode = transaction): the session settings (role, plan_cache_mode, jit) go with every "
        "transaction instead, asyncpg's prepared-statement cache is off, and the locks held across "
        "statements are taken inside a transaction (docs/operations.md, 'Behind PgBouncer')."))
    # A first import into an empty store (importers.py `_text_indexes_after`, vectors.py `loading`).
    import_index_after: int = Field(default=10_000, ge=0, description=(
        "`mcp-memory import` of at least this many memories into a store that holds none builds the vector "
        "index and the full-text, trigram and tag indexes once after them instead of row by row (50,000 with "
        "vectors given: 240 s against about 90 + 25 s for the vector index alone); searches meanwhile read "
        "every row. 0: never."))
    import_index_memory_mb: int = Field(default=256, ge=0, description=(
        "The working memory PostgreSQL may use to build those indexes (its maintenance_work_mem, for each build "
        "alone), and the vector index where a start finds it missing (after an upgrade): 50,000 memories' vector "
        "index took 59 s at PostgreSQL's default 64 MB, 24.5 s at 256, 20.7 s at 1024; a million's wants a few "
        "GB. 0 keeps the server's own setting."))
    import_writers: int = Field(default=2, ge=1, le=16, description=(
        "How many batches of an mcp-memory export `mcp-memory import` writes at once, each in its own "
        "transaction on its own connection: one kept PostgreSQL on one core while the other waited "
        "(docs/benchmarks.md, 'Two writers'). 1: one batch after another."))

    @property
    def embedded(self) -> bool:
        return not self.database_url

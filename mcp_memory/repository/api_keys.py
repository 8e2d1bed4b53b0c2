"""API keys: created, listed and revoked by the operator (owner pool); looked up per request
under the key's own user (application pool, row-level security)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

import asyncpg
from pydantic import BaseModel

from ..errors import NotFound
from .sql import local_transaction


class ApiKeyInfo(BaseModel):
    id: UUID
    user_id: str
    name: str
    agents: list[str] | None
    projects: list[str] | None
    permissions: list[str]
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None


def _info(row: asyncpg.Record) -> ApiKeyInfo:
    return ApiKeyInfo(**{k: row[k] for k in ApiKeyInfo.model_fields})


class ApiKeyRepository:
    def __init__(self, admin: asyncpg.Pool, app: asyncpg.Pool | None = None) -> None:
        self.admin = admin
        self.app = app or admin

    async def create(self, user_id: str, name: str, key_hash: str, *, agents: list[str] | None,
                     projects: list[str] | None, permissions: list[str], expires_at: datetime | None) -> ApiKeyInfo:
        row = await self.admin.fetchrow(
            """INSERT INTO api_keys (user_id, name, key_hash, agents, projects, permissions, expires_at)
               VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *""",
            user_id, name, key_hash, agents, projects, permissions, expires_at)
        return _info(row)

    async def list(self, user_id: str | None = None) -> list[ApiKeyInfo]:
        rows = await self.admin.fetch(
            "SELECT * FROM api_keys WHERE $1::text IS NULL OR user_id = $1 ORDER BY user_id, created_at", user_id)
        return [_info(r) for r in rows]

    async def revoke(self, key_id: UUID) -> ApiKeyInfo:
        row = await self.admin.fetchrow(
            "UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING *", key_id)
        if row is None:
            raise NotFound(f"no API key {key_id}")
        return _info(row)

    async def lookup(self, user_id: str, key_hash: str) -> ApiKeyInfo | None:
        """The live key with this hash, recording its use (at most once a minute)."""
        async with local_transaction(self.app, {"mcp_memory.user_id": user_id}) as conn:
            row = await conn.fetchrow(
                """SELECT * FROM api_keys WHERE user_id = $1 AND key_hash = $2 AND revoked_at IS NULL
                     AND (expires_at IS NULL OR expires_at > now())""", user_id, key_hash)
            if row is not None and (row["last_used_at"] is None or
                                    row["last_used_at"] < datetime.now(UTC) - timedelta(minutes=1)):
                await conn.execute("UPDATE api_keys SET last_used_at = now() WHERE user_id = $1 AND id = $2",
                                   user_id, row["id"])
        return _info(row) if row else None

"""Console sessions (sql/014): created at sign-in, read on every console request under the
session's user (row-level security), deleted at sign-out. Only the token's SHA-256 is stored;
the token itself lives in the browser's cookie alone. Also the namespaces a console user may
pick, with their counts, and the read-only view across them: those read every namespace of one
user under row-level security's `tenant_user_read` policy (sql/rls.sql), never as the owner."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from uuid import UUID

import asyncpg
from pydantic import BaseModel

from . import sql
from .api_keys import ApiKeyInfo
from .sql import local_transaction


class SessionRow(BaseModel):
    id: UUID
    user_id: str
    kind: str  # key | jwt | local
    key_id: UUID | None = None
    credential: dict | None = None
    agent_id: str | None = None
    project_id: str | None = None
    all_namespaces: bool = False
    user_agent: str = ""
    created_at: datetime
    last_seen_at: datetime
    expires_at: datetime


class NamespaceCount(BaseModel):
    agent_id: str | None
    project_id: str | None
    live: int


_COLUMNS = ("id, user_id, kind, key_id, credential, agent_id, project_id, all_namespaces, user_agent, created_at, "
            "last_seen_at, expires_at")


def _row(r: asyncpg.Record) -> SessionRow:
    values = {k: v for k, v in dict(r).items() if not k.startswith("k_")}
    if isinstance(values.get("credential"), str):
        values["credential"] = json.loads(values["credential"])
    return SessionRow(**values)


class ConsoleSessionRepository:
    def __init__(self, app: asyncpg.Pool, admin: asyncpg.Pool | None = None) -> None:
        # `admin` is accepted for callers that still pass it: nothing here runs as the owner.
        self.app = app

    def _tx(self, user_id: str):  # noqa: ANN202 - an async context manager
        return local_transaction(self.app, {"mcp_memory.user_id": user_id})

    def _user_wide(self, user_id: str):  # noqa: ANN202 - an async context manager
        """A transaction that may read every namespace of this user (and of no other), never write
        beyond one: mcp_memory.scope = 'user' opens the read-only `tenant_user_read` policy."""
        return local_transaction(self.app, {"mcp_memory.user_id": user_id, "mcp_memory.scope": "user"})

    async def create(self, user_id: str, token_hash: str, *, kind: str, key_id: UUID | None,
                     credential: dict | None, agent_id: str | None, project_id: str | None,
                     all_namespaces: bool, user_agent: str, expires_at: datetime) -> SessionRow:
        async with self._tx(user_id) as conn:
            # Expired sessions of this user go as a new one begins (no sweep job needed).
            await conn.execute("DELETE FROM console_sessions WHERE user_id = $1 AND expires_at <= now()", user_id)
            row = await conn.fetchrow(
                f"""INSERT INTO console_sessions (user_id, token_hash, kind, key_id, credential, agent_id,
                        project_id, all_namespaces, user_agent, expires_at)
                    VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10) RETURNING {_COLUMNS}""",
                user_id, token_hash, kind, key_id, json.dumps(credential) if credential is not None else None,
                agent_id, project_id, all_namespaces, user_agent, expires_at)
        return _row(row)

    async def live(self, user_id: str, token_hash: str, idle: timedelta) -> tuple[SessionRow, ApiKeyInfo | None] | None:
        """The session with this token if it has not expired, idled out, or lost its key (revoked or
        expired), with that key; marks it used (at most once a minute: a page costs one write)."""
        async with self._tx(user_id) as conn:
            row = await conn.fetchrow(
                f"""SELECT {', '.join('s.' + c.strip() for c in _COLUMNS.split(','))},
                           k.name AS k_name, k.agents AS k_agents, k.projects AS k_projects,
                           k.permissions AS k_permissions, k.created_at AS k_created_at,
                           k.expires_at AS k_expires_at, k.last_used_at AS k_last_used_at
                    FROM console_sessions s LEFT JOIN api_keys k ON k.user_id = s.user_id AND k.id = s.key_id
                    WHERE s.user_id = $1 AND s.token_hash = $2 AND s.expires_at > now()
                      AND s.last_seen_at > now() - $3::interval
                      AND (s.key_id IS NULL OR (k.id IS NOT NULL AND k.revoked_at IS NULL
                                                AND (k.expires_at IS NULL OR k.expires_at > now())))""",
                user_id, token_hash, idle)
            if row is not None:
                await conn.execute("""UPDATE console_sessions SET last_seen_at = now()
                                      WHERE user_id = $1 AND id = $2 AND last_seen_at < now() - interval '1 minute'""",
                                   user_id, row["id"])
        if row is None:
            return None
        key = None
        if row["key_id"] is not None:
            key = ApiKeyInfo(id=row["key_id"], user_id=user_id, revoked_at=None,
                             **{f: row[f"k_{f}"] for f in ("name", "agents", "projects", "permissions", "created_at",
                                                           "expires_at", "last_used_at")})
        return _row(row), key

    async def set_namespace(self, user_id: str, session_id: UUID, agent_id: str | None, project_id: str | None,
                            all_namespaces: bool) -> None:
        async with self._tx(user_id) as conn:
            await conn.execute(
                """UPDATE console_sessions SET agent_id = $3, project_id = $4, all_namespaces = $5
                   WHERE user_id = $1 AND id = $2""", user_id, session_id, agent_id, project_id, all_namespaces)

    async def listing(self, user_id: str, *, kind: str, key_id: UUID | None, idle: timedelta) -> list[SessionRow]:
        """The live sessions of one sign-in identity: the same key, or (OAuth, local) the same user."""
        async with self._tx(user_id) as conn:
            rows = await conn.fetch(
                f"""SELECT {_COLUMNS} FROM console_sessions
                    WHERE user_id = $1 AND kind = $2 AND key_id IS NOT DISTINCT FROM $3
                      AND expires_at > now() AND last_seen_at > now() - $4::interval
                    ORDER BY last_seen_at DESC""", user_id, kind, key_id, idle)
        return [_row(r) for r in rows]

    async def delete(self, user_id: str, session_id: UUID) -> None:
        async with self._tx(user_id) as conn:
            await conn.execute("DELETE FROM console_sessions WHERE user_id = $1 AND id = $2", user_id, session_id)

    async def delete_all(self, user_id: str, *, kind: str, key_id: UUID | None) -> int:
        async with self._tx(user_id) as conn:
            status = await conn.execute(
                "DELETE FROM console_sessions WHERE user_id = $1 AND kind = $2 AND key_id IS NOT DISTINCT FROM $3",
                user_id, kind, key_id)
        return int(status.split()[-1])

    async def namespaces(self, user_id: str, agents: list[str] | None, projects: list[str] | None,
                         limit: int = 200) -> list[NamespaceCount]:
        """Live memories per (agent, project) of one user, within the grants (None: any)."""
        async with self._user_wide(user_id) as conn:
            rows = await conn.fetch(
                f"""SELECT agent_id, project_id, count(*) AS live FROM memories
                    WHERE {_across()} GROUP BY 1, 2 ORDER BY 3 DESC, 1 NULLS FIRST, 2 NULLS FIRST LIMIT $4""",
                user_id, agents, projects, limit)
        return [NamespaceCount(agent_id=r["agent_id"], project_id=r["project_id"], live=r["live"]) for r in rows]

    async def recent_across(self, user_id: str, agents: list[str] | None, projects: list[str] | None, *,
                            limit: int, offset: int) -> tuple[list[dict], int]:
        """The newest live memories of one user across every namespace its grants cover, with the
        total: the console's read-only all-namespaces view."""
        where = _across()
        async with self._user_wide(user_id) as conn:
            total = await conn.fetchval(f"SELECT count(*) FROM memories WHERE {where}", user_id, agents, projects)
            rows = await conn.fetch(
                f"""SELECT id, agent_id, project_id, kind, title, left(content, 200) AS content, tags, occurred_at
                    FROM memories WHERE {where} ORDER BY occurred_at DESC, id DESC LIMIT $4 OFFSET $5""",
                user_id, agents, projects, limit, offset)
        return [dict(r) for r in rows], total

    async def namespace_of(self, user_id: str, memory_id: UUID) -> tuple[str | None, str | None] | None:
        """The (agent, project) a memory of this user lives in, so the all-namespaces view can open it
        under exactly that namespace (the grants are checked by the caller)."""
        async with self._user_wide(user_id) as conn:
            row = await conn.fetchrow(f"SELECT agent_id, project_id FROM memories WHERE {_own_user()} AND id = $2",
                                      user_id, memory_id)
        return (row["agent_id"], row["project_id"]) if row is not None else None


def _own_user() -> str:
    # Off only in the isolation tests, to prove row-level security alone keeps users apart ($1 stays bound).
    return "user_id = $1" if sql.SCOPE_FILTER else "$1::text IS NOT NULL"


def _across() -> str:
    """One user's live memories within the grants ($2 agents, $3 projects; NULL: any). The grants
    stay in this WHERE: the user-wide policy keeps users apart, not a key's namespaces."""
    return f"""{_own_user()} AND deleted_at IS NULL
               AND ($2::text[] IS NULL OR agent_id IS NULL OR agent_id = ANY($2))
               AND ($3::text[] IS NULL OR project_id IS NULL OR project_id = ANY($3))"""

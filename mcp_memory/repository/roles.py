"""Whether the role row-level security runs queries as exists and may be used."""

from __future__ import annotations

import asyncpg


async def role_usable(conn: asyncpg.Connection, role: str) -> bool:
    """The role exists and the connecting user is a member of it (so it may SET ROLE)."""
    return bool(await conn.fetchval(
        "SELECT pg_has_role(current_user, oid, 'MEMBER') FROM pg_roles WHERE rolname = $1", role))

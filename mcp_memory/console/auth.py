"""Who is using the console. Remote: sign in with an API key (or an OAuth token), kept as a
signed, HttpOnly, SameSite=Strict cookie; on loopback without authentication (as --no-auth) the
local owner. Every visitor has a session id, and every POST must carry the CSRF token derived
from it. The cookie holds the key's hash, never the key; the key is looked up again on each
request, so revoking it ends the session."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from typing import Any

import anyio
import jwt
from pydantic import BaseModel, ValidationError

from ..auth import Credential, JwtVerifier, check_identifier, local_principal, parse_api_key, remote_principal
from ..config import Settings
from ..models import Principal
from ..repository.api_keys import ApiKeyInfo, ApiKeyRepository
from ..repository.secrets import cursor_secret
from ..server.state import AppState

SESSION_TTL_S = 8 * 3600
CLIENT = "console"  # recorded as the client in history, next to the key's actor


class Session(BaseModel):
    sid: str
    exp: int
    user: str | None = None
    key_hash: str | None = None  # signed in with an API key: looked up on every request
    credential: Credential | None = None  # signed in with an OAuth token: what it granted
    agent: str | None = None
    project: str | None = None

    @property
    def signed_in(self) -> bool:
        return self.key_hash is not None or self.credential is not None


def new_session() -> Session:
    return Session(sid=secrets.token_urlsafe(18), exp=int(time.time()) + SESSION_TTL_S)


def key_credential(key: ApiKeyInfo) -> Credential:
    """What an API key grants (the same mapping as the HTTP transport's bearer check)."""
    return Credential(user_id=key.user_id, agents=tuple(key.agents) if key.agents is not None else None,
                      projects=tuple(key.projects) if key.projects is not None else None,
                      permissions=frozenset(key.permissions), actor=f"key:{key.name}#{key.id}",
                      client_id=f"key:{key.id}")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Sessions:
    """Signs and reads session cookies with a key derived from the database's secret, so every
    replica honours them; derives CSRF tokens; resolves a session to its principal."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.jwt = JwtVerifier(settings)
        self._key: bytes | None = None

    async def key(self, state: AppState) -> bytes:
        if self._key is None:
            await state.service()  # the database is open
            assert state.db is not None
            secret = await cursor_secret(state.db.admin)
            self._key = hmac.new(secret, b"mcp-memory console session v1", hashlib.sha256).digest()
        return self._key

    def _sign(self, key: bytes, data: bytes) -> str:
        return _b64(hmac.new(key, data, hashlib.sha256).digest())

    async def encode(self, state: AppState, session: Session) -> str:
        data = session.model_dump_json(exclude_none=True).encode()
        return f"{_b64(data)}.{self._sign(await self.key(state), data)}"

    async def decode(self, state: AppState, cookie: str | None) -> Session | None:
        """The session in a cookie, or None if it is missing, forged, malformed or expired."""
        if not cookie or "." not in cookie:
            return None
        payload, sig = cookie.rsplit(".", 1)
        try:
            data = _unb64(payload)
        except ValueError:
            return None
        if not hmac.compare_digest(sig, self._sign(await self.key(state), data)):
            return None
        try:
            session = Session.model_validate(json.loads(data))
        except (ValueError, ValidationError):
            return None
        return session if session.exp > time.time() else None

    async def csrf(self, state: AppState, session: Session) -> str:
        return self._sign(await self.key(state), b"csrf:" + session.sid.encode())

    async def check_csrf(self, state: AppState, session: Session, token: str | None) -> bool:
        return bool(token) and hmac.compare_digest(token or "", await self.csrf(state, session))

    async def sign_in(self, state: AppState, secret: str) -> Session | None:
        """A fresh session (new id) for a valid API key or OAuth token, else None."""
        secret = secret.strip()
        session = new_session()
        parsed = parse_api_key(secret)
        if parsed is not None:
            if await self._lookup(state, *parsed) is None:
                return None
            return session.model_copy(update={"user": parsed[0], "key_hash": parsed[1]})
        if self.jwt.enabled:
            credential = await anyio.to_thread.run_sync(self.jwt.verify, secret)
            if credential is not None:
                # Verified just now; its expiry bounds the session's (the cookie outlives no token).
                expires = jwt.decode(secret, options={"verify_signature": False})["exp"]
                return session.model_copy(update={"user": credential.user_id, "credential": credential,
                                                  "exp": min(session.exp, int(expires))})
        return None

    async def _lookup(self, state: AppState, user: str, key_hash: str) -> ApiKeyInfo | None:
        await state.service()
        assert state.db is not None
        return await ApiKeyRepository(state.db.admin, state.db.pool).lookup(user, key_hash)

    async def credential(self, state: AppState, session: Session) -> Credential | None:
        """The session's grants now: a revoked or expired key has none."""
        if session.credential is not None:
            return session.credential
        if session.user is None or session.key_hash is None:
            return None
        key = await self._lookup(state, session.user, session.key_hash)
        return key_credential(key) if key is not None else None

    async def principal(self, state: AppState, session: Session) -> Principal | None:
        """Who this session acts as (None: must sign in). The namespace it picked is checked
        against its grants on every request, exactly as the MCP headers are."""
        if self.settings.no_auth:
            local = self.settings.model_copy(update=_namespace(session))
            return local_principal(local).model_copy(update={"client": CLIENT})
        credential = await self.credential(state, session)
        if credential is None:
            return None
        return remote_principal(credential, agent=session.agent, project=session.project,
                                client_name=None).model_copy(update={"client": CLIENT})


def _namespace(session: Session) -> dict[str, Any]:
    """Settings overrides for the local owner's chosen agent / project (none: the defaults)."""
    update: dict[str, Any] = {}
    if session.agent:
        update["agent"] = session.agent
    if session.project:
        update["project"] = session.project
    return update


def check_namespace(agent: str | None, project: str | None) -> tuple[str | None, str | None]:
    """The namespace a session asks for, each name checked (empty: none)."""
    agent, project = (agent or "").strip() or None, (project or "").strip() or None
    return (check_identifier("agent", agent) if agent else None,
            check_identifier("project", project) if project else None)

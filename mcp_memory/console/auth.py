"""Who is using the console. Remote: sign in with an API key (or an OAuth token); the session
lives in the database (sql/014) and the browser holds its random token in an HttpOnly,
SameSite=Lax cookie. The database keeps only the token's SHA-256, so a dump or a backup is not
enough to mint or revive a session, and sign-out deletes the row. A key's sessions end when the
key is revoked or expires (checked on every request). On loopback without authentication (as
--no-auth) the local owner. The CSRF token of every form is an HMAC of the cookie's token: only
the browser holding the cookie can compute it, and nothing stored derives it."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import jwt

from ..auth import Credential, JwtVerifier, check_identifier, local_principal, parse_api_key, remote_principal
from ..config import IdentitySettings, Settings
from ..errors import InvalidInput
from ..models import Principal
from ..repository.api_keys import ApiKeyInfo, ApiKeyRepository
from ..repository.console_sessions import ConsoleSessionRepository, SessionRow
from ..server.state import AppState

CLIENT = "console"  # recorded as the client in history, next to the key's actor
ANONYMOUS = "~"  # the cookie's user part before sign-in: a token that only seeds the CSRF token
MAX_COOKIE = 600
MAX_USER_AGENT = 200


@dataclass
class Session:
    """One request's session: the cookie's token, and the stored session it opens (if any)."""

    token: str
    row: SessionRow | None = None
    key: ApiKeyInfo | None = None

    @property
    def signed_in(self) -> bool:
        return self.row is not None and self.row.kind != "local"

    @property
    def agent(self) -> str | None:
        return self.row.agent_id if self.row else None

    @property
    def project(self) -> str | None:
        return self.row.project_id if self.row else None

    @property
    def all_namespaces(self) -> bool:
        return bool(self.row and self.row.all_namespaces)


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


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


def cookie_value(user: str | None, token: str) -> str:
    return f"{_b64(user.encode()) if user is not None else ANONYMOUS}.{token}"


def parse_cookie(cookie: str | None) -> tuple[str | None, str] | None:
    """(user or None for an anonymous visitor, token), or None for no or a malformed cookie."""
    if not cookie or len(cookie) > MAX_COOKIE or "." not in cookie:
        return None
    user_part, token = cookie.split(".", 1)
    if not token or len(token) < 20:
        return None
    if user_part == ANONYMOUS:
        return None, token
    try:
        return _unb64(user_part).decode(), token
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None


class Sessions:
    """Opens, creates and ends stored sessions; derives CSRF tokens; resolves a session to its
    principal."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.jwt = JwtVerifier(settings.part(IdentitySettings))
        self.idle = timedelta(minutes=settings.console_idle_minutes)
        self.lifetime = timedelta(hours=settings.console_session_hours)

    @staticmethod
    async def _repo(state: AppState) -> ConsoleSessionRepository:
        await state.service()  # the database is open (raises Unavailable while it is not)
        assert state.db is not None
        return ConsoleSessionRepository(state.db.pool, state.db.admin)

    async def open(self, state: AppState, cookie: str | None) -> tuple[Session, bool]:
        """The request's session and whether the cookie must be (re)sent. A missing or malformed
        cookie gets a new anonymous token; a stored session that ended keeps its token as a plain
        CSRF seed, so no GET ever replaces a cookie the browser sent."""
        parsed = parse_cookie(cookie)
        if parsed is None:
            return Session(new_token()), True
        user, token = parsed
        if user is None:
            return Session(token), False
        repo = await self._repo(state)
        found = await repo.live(user, token_hash(token), self.idle)
        if found is None:
            return Session(token), False
        row, key = found
        return Session(token, row, key), False

    def csrf(self, session: Session) -> str:
        return _b64(hmac.new(session.token.encode(), b"mcp-memory console csrf v2", hashlib.sha256).digest())

    def check_csrf(self, session: Session, token: str | None) -> bool:
        return bool(token) and hmac.compare_digest(token or "", self.csrf(session))

    async def sign_in(self, state: AppState, secret: str, *, agent: str | None, project: str | None,
                      user_agent: str) -> tuple[Session, str] | None:
        """A new stored session (a new token) for a valid API key or OAuth token, else None; with
        the cookie value that carries it."""
        secret = secret.strip()
        now = datetime.now(UTC)
        expires = now + self.lifetime
        kind, key, credential, user = "", None, None, ""
        parsed = parse_api_key(secret)
        if parsed is not None:
            await state.service()
            assert state.db is not None
            key = await ApiKeyRepository(state.db.admin, state.db.pool).lookup(*parsed)
            if key is None:
                return None
            kind, user = "key", key.user_id
            if key.expires_at is not None:
                expires = min(expires, key.expires_at)
            remote_principal(key_credential(key), agent=agent, project=project, client_name=None)  # in the grants
        elif self.jwt.enabled:
            verified = await anyio.to_thread.run_sync(self.jwt.verify, secret)
            if verified is None:
                return None
            remote_principal(verified, agent=agent, project=project, client_name=None)
            # Verified just now; its expiry bounds the session's (a session outlives no token).
            claims = jwt.decode(secret, options={"verify_signature": False})
            expires = min(expires, datetime.fromtimestamp(int(claims["exp"]), UTC))
            kind, user, credential = "jwt", verified.user_id, verified.model_dump(mode="json")
        else:
            return None
        token = new_token()
        repo = await self._repo(state)
        row = await repo.create(user, token_hash(token), kind=kind, key_id=key.id if key else None,
                                credential=credential, agent_id=agent, project_id=project, all_namespaces=False,
                                user_agent=user_agent[:MAX_USER_AGENT], expires_at=expires)
        return Session(token, row, key), cookie_value(user, token)

    async def local(self, state: AppState, user_agent: str) -> tuple[Session, str]:
        """A stored session for the local owner (no key): it only remembers the namespace picked."""
        token = new_token()
        repo = await self._repo(state)
        row = await repo.create(self.settings.user, token_hash(token), kind="local", key_id=None, credential=None,
                                agent_id=None, project_id=None, all_namespaces=False,
                                user_agent=user_agent[:MAX_USER_AGENT],
                                expires_at=datetime.now(UTC) + self.lifetime)
        return Session(token, row), cookie_value(self.settings.user, token)

    async def sign_out(self, state: AppState, session: Session) -> None:
        if session.row is not None:
            await (await self._repo(state)).delete(session.row.user_id, session.row.id)

    async def sign_out_everywhere(self, state: AppState, session: Session) -> int:
        assert session.row is not None
        return await (await self._repo(state)).delete_all(session.row.user_id, kind=session.row.kind,
                                                          key_id=session.row.key_id)

    async def listing(self, state: AppState, session: Session) -> list[SessionRow]:
        assert session.row is not None
        return await (await self._repo(state)).listing(session.row.user_id, kind=session.row.kind,
                                                       key_id=session.row.key_id, idle=self.idle)

    async def set_namespace(self, state: AppState, session: Session, agent: str | None, project: str | None,
                            all_namespaces: bool) -> None:
        assert session.row is not None
        await (await self._repo(state)).set_namespace(session.row.user_id, session.row.id, agent, project,
                                                      all_namespaces)

    def credential(self, session: Session) -> Credential | None:
        """The session's grants now (the key was checked live when the session was opened)."""
        if session.row is None:
            return None
        if session.key is not None:
            return key_credential(session.key)
        if session.row.credential is not None:
            return Credential.model_validate(session.row.credential)
        return None

    def principal(self, session: Session, agent: str | None = None, project: str | None = None,
                  *, explicit: bool = False) -> Principal | None:
        """Who this session acts as (None: must sign in). The namespace is checked against the
        grants on every request, exactly as the MCP headers are."""
        if not explicit:
            agent, project = session.agent, session.project
        if self.settings.no_auth:
            local = self.settings.model_copy(update=_namespace(agent, project))
            return local_principal(local).model_copy(update={"client": CLIENT})
        credential = self.credential(session)
        if credential is None:
            return None
        return remote_principal(credential, agent=agent, project=project,
                                client_name=None).model_copy(update={"client": CLIENT})


def _namespace(agent: str | None, project: str | None) -> dict[str, Any]:
    """Settings overrides for the local owner's chosen agent / project (none: the defaults)."""
    update: dict[str, Any] = {}
    if agent:
        update["agent"] = agent
    if project:
        update["project"] = project
    return update


def check_namespace(agent: str | None, project: str | None) -> tuple[str | None, str | None]:
    """The namespace a session asks for, each name checked (empty: none)."""
    agent, project = (agent or "").strip() or None, (project or "").strip() or None
    for name, value in (("agent", agent), ("project", project)):
        if value is not None and len(value) > 128:
            raise InvalidInput(f"{name}: at most 128 characters, got {len(value)}")
    return (check_identifier("agent", agent) if agent else None,
            check_identifier("project", project) if project else None)

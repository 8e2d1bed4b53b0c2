"""Who a session is. stdio is local and trusted: identity comes from flags / env, with
defaults from the OS user, the MCP client's name and the workspace's git repository. HTTP
sessions are whoever their API key or OAuth token says, within its grants."""

from __future__ import annotations

import base64
import getpass
import re
import secrets
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from .config import IdentitySettings
from .encoding import sha256_hex
from .errors import InvalidInput, PermissionDenied
from .models import ALL_PERMISSIONS, Principal

_ID = re.compile(r"^[^\x00-\x1f\x7f]{1,128}$")
NO_PROJECT = "none"


def check_identifier(kind: str, value: str) -> str:
    value = value.strip()
    if not _ID.match(value):
        raise InvalidInput(f"{kind} must be 1–128 printable characters, got {value!r}")
    return value


def os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "local"


def git_project(start: Path) -> str | None:
    """The name of the git repository containing `start` (its top-level folder's name), so the
    same repository cloned on two machines shares one project namespace."""
    try:
        start = start.resolve()
    except OSError:
        return None
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder.name
    return None


def project_from_roots(roots: list[Path]) -> str | None:
    for root in roots:
        name = git_project(root)
        if name:
            return name
    for root in roots:
        if root.name:
            return root.name
    return None


def local_principal(settings: IdentitySettings, *, client_name: str | None = None,
                    roots: list[Path] | None = None, cwd: Path | None = None) -> Principal:
    """stdio identity. Explicit settings win; then the client's workspace roots; then the
    working directory's git repository. `MCP_MEMORY_PROJECT=none` turns projects off."""
    user = check_identifier("user", settings.user or os_user())
    agent = settings.agent or client_name
    if settings.project is not None:
        project = None if settings.project.strip().lower() == NO_PROJECT else settings.project
    else:
        project = project_from_roots(roots or []) or git_project(cwd or Path.cwd())
    return Principal(
        user_id=user,
        agent_id=check_identifier("agent", agent) if agent else None,
        project_id=check_identifier("project", project) if project else None,
        # The local owner may do everything, unless the harness was set up read-only or without forget.
        permissions=parse_permissions(settings.local_permissions),
        actor=f"local:{user}",
        client=client_name,
    )


# --- remote (HTTP) identity ----------------------------------------------------------------------

KEY_PREFIX = "mcpm_"


class Credential(BaseModel):
    """What a verified API key or token grants: one user, optionally only some agents and
    projects (None means any), and a set of permissions."""

    model_config = ConfigDict(frozen=True)

    user_id: str
    agents: tuple[str, ...] | None = None
    projects: tuple[str, ...] | None = None
    permissions: frozenset[str]
    actor: str
    client_id: str


def new_api_key(user_id: str) -> str:
    """`mcpm_<user, base64url>.<secret>`: the user travels in the key so the lookup stays on one
    user's rows (the key table is keyed by user like every other)."""
    encoded = base64.urlsafe_b64encode(user_id.encode()).decode().rstrip("=")
    return f"{KEY_PREFIX}{encoded}.{secrets.token_urlsafe(32)}"


def parse_api_key(key: str) -> tuple[str, str] | None:
    """(user_id, sha256 of the key), or None if it is not shaped like one of our keys."""
    if not key.startswith(KEY_PREFIX) or "." not in key:
        return None
    encoded = key[len(KEY_PREFIX):].split(".", 1)[0]
    try:
        user_id = check_identifier("user", base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode())
    except (ValueError, UnicodeDecodeError, InvalidInput):
        return None
    return user_id, sha256_hex(key)


def parse_permissions(text: str) -> frozenset[str]:
    perms = frozenset(p.strip() for p in text.split(",") if p.strip())
    unknown = perms - ALL_PERMISSIONS
    if unknown or not perms:
        raise InvalidInput(f"permissions must be a comma-separated subset of "
                           f"{', '.join(sorted(ALL_PERMISSIONS))}; got {text!r}")
    return perms


def _words(value: Any) -> list[str]:
    """A scope-like claim as a list: providers send a space-separated string or a list."""
    if value is None:
        return []
    if isinstance(value, str):
        return value.split()
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    raise ValueError("scope claim is neither a string nor a list")


def _names_claim(value: Any, kind: str) -> tuple[str, ...] | None:
    """A namespace-limiting claim: absent means no limit; anything present must parse."""
    if value is None:
        return None
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list | tuple):
        raise ValueError(f"{kind} claim is neither a string nor a list")
    return tuple(check_identifier(kind, str(n)) for n in names)


class JwtVerifier:
    """OAuth 2.1 bearer JWTs: signature (shared secret or the issuer's JWKS), issuer, audience,
    expiry, subject, all required. The subject is the user; claims may narrow agents and
    projects; `memory:*` scopes grant permissions."""

    def __init__(self, settings: IdentitySettings) -> None:
        import jwt  # with its cryptography, a tenth of a second every command would pay for a token it never reads

        self.settings = settings
        self._jwks = jwt.PyJWKClient(settings.jwt_jwks_url) if settings.jwt_jwks_url else None
        if self.enabled and not (settings.jwt_issuer and settings.jwt_audience):
            raise InvalidInput("OAuth tokens need MCP_MEMORY_JWT_ISSUER and MCP_MEMORY_JWT_AUDIENCE: without them a "
                               "token issued for any other service or tenant would be accepted")
        # A public JWKS must never be usable as an HMAC secret: HS* only with a shared secret.
        self._algorithms = [a for a in settings.jwt_algorithms if settings.jwt_secret or not a.startswith("HS")]

    @property
    def enabled(self) -> bool:
        return bool(self.settings.jwt_secret or self._jwks)

    def verify(self, token: str) -> Credential | None:
        """The token's credential, or None for any token that does not fully check out."""
        import jwt

        s = self.settings
        try:
            key: Any = s.jwt_secret if s.jwt_secret else self._jwks.get_signing_key_from_jwt(token).key  # type: ignore[union-attr]
            claims = jwt.decode(token, key, algorithms=self._algorithms, audience=s.jwt_audience,
                                issuer=s.jwt_issuer, options={"require": ["exp", "sub", "iss", "aud"]}, leeway=30)
            scopes = _words(claims.get("scope")) + _words(claims.get("scp"))
            memory_scopes = {x.split(":", 1)[1] for x in scopes if x.startswith("memory:")}
            if memory_scopes - ALL_PERMISSIONS:
                return None  # a scope we do not know is a token we do not understand
            permissions = frozenset(memory_scopes) or parse_permissions(s.jwt_default_permissions)
            user = check_identifier("user", str(claims["sub"]))
            return Credential(user_id=user, agents=_names_claim(claims.get(s.jwt_agents_claim), "agent"),
                              projects=_names_claim(claims.get(s.jwt_projects_claim), "project"),
                              permissions=permissions, actor=f"jwt:{user}",
                              client_id=str(claims.get("client_id") or claims.get("azp") or "jwt"))
        except Exception:  # noqa: BLE001 - whatever is wrong with a token, the answer is 401
            return None


def remote_principal(credential: Credential, *, agent: str | None, project: str | None,
                     client_name: str | None) -> Principal:
    """The session's namespace inside the credential's grants. A request may narrow (pick one
    of the granted agents / projects), never widen: asking for anything else is refused."""

    def pick(kind: str, asked: str | None, granted: tuple[str, ...] | None, default: str | None) -> str | None:
        if asked is not None:
            asked = check_identifier(kind, asked)
            if granted is not None and asked not in granted:
                raise PermissionDenied(f"this credential may not act as {kind} {asked!r}")
            return asked
        if granted is not None:
            return granted[0] if granted else None
        return default

    return Principal(
        user_id=credential.user_id,
        agent_id=pick("agent", agent, credential.agents, client_name),
        project_id=pick("project", project, credential.projects, None),
        permissions=credential.permissions,
        actor=credential.actor,
        client=client_name or credential.client_id,
        rate_limited=True,
        agent_confined=credential.agents is not None,
        project_confined=credential.projects is not None,
    )

"""The identity section of the settings (the environment's MCP_MEMORY_ variables of it)."""

from __future__ import annotations

from pydantic import BaseModel, Field, field_validator


class IdentitySettings(BaseModel):
    """Who a session is: the local (stdio) identity, what OAuth / JWT tokens grant, and how long
    an HTTP server trusts an API key it verified."""

    # Local (stdio) identity; HTTP sessions take theirs from the credential.
    user: str | None = Field(default=None, description="Defaults to the OS user.")
    agent: str | None = Field(default=None, description="Defaults to the MCP client's name.")
    project: str | None = Field(
        default=None,
        description="Defaults to the client's root or the working directory's git repository; "
        "'none' disables the project namespace.",
    )
    local_permissions: str = Field(default="read,write,forget,admin", description=(
        "What a stdio session may do, comma-separated: read, write, forget, admin. 'read' makes a harness "
        "read-only; 'read,write' lets it remember but not forget."))
    # OAuth / JWT bearer tokens, and how long a verified API key is trusted
    jwt_issuer: str | None = Field(default=None, description=(
        "The `iss` a bearer token must carry (required once tokens are on)."))
    jwt_audience: str | None = Field(default=None, description=(
        "The `aud` a bearer token must carry (required once tokens are on)."))
    jwt_jwks_url: str | None = Field(default=None, description=(
        "The issuer's signing keys (JWKS URL); this or jwt_secret turns OAuth / JWT bearer tokens on."))
    jwt_secret: str | None = Field(default=None, description="Shared HS256 secret instead of a JWKS.")
    jwt_algorithms: list[str] = Field(default_factory=lambda: ["RS256", "ES256", "HS256"], description=(
        "Signature algorithms accepted, JSON; HS* only with jwt_secret."))
    jwt_agents_claim: str = Field(default="mcp_memory_agents", description=(
        "Claim listing the agents a token may act as (absent: any)."))
    jwt_projects_claim: str = Field(default="mcp_memory_projects", description=(
        "Claim listing the projects a token may use (absent: any)."))
    jwt_default_permissions: str = Field(default="read,write,forget",
                                         description="Granted when a token carries no memory:* scope.")
    api_key_cache_s: float = Field(default=10, ge=0, description=(
        "An HTTP server trusts an API key it verified for this long before asking the database again, so "
        "a revoked key still works for up to this long on a server that saw it (0: ask on every request)."))

    @field_validator("local_permissions")
    @classmethod
    def _known_permissions(cls, value: str) -> str:
        names = {p.strip() for p in value.split(",") if p.strip()}
        if not names or names - {"read", "write", "forget", "admin"}:
            raise ValueError(f"MCP_MEMORY_LOCAL_PERMISSIONS must be a comma-separated subset of read, write, "
                             f"forget, admin; got {value!r}")
        return value

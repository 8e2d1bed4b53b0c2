"""The HTTP transports for real: a server subprocess, real keys and tokens, real clients."""

from __future__ import annotations

import subprocess
import time

import httpx2
import jwt
from mcp import Client
from mcp.client.sse import sse_client

from mcp_memory.auth import new_api_key, parse_api_key
from mcp_memory.db import Database
from mcp_memory.repository.api_keys import ApiKeyRepository

from .http_server import SERVE, free_port, http_client, http_server
from .test_server import call, call_error

SECRET = "test-secret-test-secret-test-secret!"
JWT_ENV = {"MCP_MEMORY_JWT_SECRET": SECRET, "MCP_MEMORY_JWT_ISSUER": "https://idp.test",
           "MCP_MEMORY_JWT_AUDIENCE": "mcp-memory"}


async def make_key(db: Database, user: str, *, agents: list[str] | None = None, projects: list[str] | None = None,
                   perms: tuple[str, ...] = ("read", "write", "forget"), name: str = "test") -> str:
    key = new_api_key(user)
    await ApiKeyRepository(db.admin).create(user, name, parse_api_key(key)[1], agents=agents, projects=projects,
                                            permissions=list(perms), expires_at=None)
    return key


def token(sub: str = "alice", *, secret: str = SECRET, aud: str = "mcp-memory", iss: str = "https://idp.test",
          expires_in: int = 300, **claims) -> str:
    now = int(time.time())
    return jwt.encode({"sub": sub, "aud": aud, "iss": iss, "iat": now, "exp": now + expires_in, **claims},
                      secret, algorithm="HS256")


def status(base: str, credential: str | None, **headers: str) -> httpx2.Response:
    if credential is not None:
        headers["Authorization"] = f"Bearer {credential}"
    return httpx2.post(f"{base}/mcp", headers={"Accept": "application/json, text/event-stream",
                                                "Content-Type": "application/json", **headers},
                       json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                           "protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "raw", "version": "0"}}}, timeout=10)


async def test_credentials_are_checked(database: Database, db_url: str) -> None:
    good = await make_key(database, "alice")
    revoked = await make_key(database, "alice", name="old")
    expired = await make_key(database, "alice", name="expired")
    async with database.admin.acquire() as conn:
        await conn.execute("UPDATE api_keys SET revoked_at = now() WHERE name = 'old'")
        await conn.execute("UPDATE api_keys SET expires_at = now() - interval '1 minute' WHERE name = 'expired'")
    with http_server(db_url, env=JWT_ENV) as base:
        health = httpx2.get(f"{base}/health").json()
        assert health == {"status": "ok", "database": "ok", "version": health["version"], "auth": True}
        assert status(base, good).status_code == 200
        assert status(base, token()).status_code == 200
        refused = {
            "no credential": None, "wrong key": good[:-4] + "AAAA", "revoked key": revoked, "expired key": expired,
            "garbage": "not-a-token", "expired token": token(expires_in=-120),
            "bad signature": token(secret="another-secret-another-secret-xx!"),
            "other audience": token(aud="someone-else"), "other issuer": token(iss="https://evil.test"),
            "no subject": jwt.encode({"aud": "mcp-memory", "iss": "https://idp.test", "exp": int(time.time()) + 60},
                                     SECRET, algorithm="HS256"),
            "no audience": jwt.encode({"sub": "alice", "iss": "https://idp.test", "exp": int(time.time()) + 60},
                                      SECRET, algorithm="HS256"),
            "unknown memory scope": token(scope="memory:read memory:root"),
            "malformed agents claim": token(mcp_memory_agents={"not": "a list"}),
            "key with a control character for a user": "mcpm_AA.x",
        }
        for why, credential in refused.items():
            response = status(base, credential)
            assert response.status_code == 401, why
            assert 'resource_metadata="' in response.headers["www-authenticate"], why
        metadata = httpx2.get(f"{base}/.well-known/oauth-protected-resource/mcp").json()
        assert metadata["resource"] == f"{base}/mcp" and metadata["authorization_servers"] == ["https://idp.test"]


async def test_tokens_and_keys_carry_identity_and_permissions(database: Database, db_url: str) -> None:
    reader = await make_key(database, "alice", perms=("read",), name="reader")
    with http_server(db_url, env=JWT_ENV) as base:
        async with http_client(base, token("alice", scope="memory:read memory:write")) as client:
            written = await call(client, "memory_write", {"content": "jwt-written fact"})
            history = await call(client, "memory_history", {"id": written["memory"]["id"]})
            assert history["entries"][0]["actor"] == "jwt:alice"
            assert "lacks the 'forget' permission" in await call_error(
                client, "memory_forget", {"ids": [written["memory"]["id"]]})
        async with http_client(base, reader) as client:
            assert (await call(client, "memory_search", {"query": "jwt-written"}))["hits"]
            assert "lacks the 'write' permission" in await call_error(client, "memory_write", {"content": "x"})
        async with http_client(base, token("bob")) as client:
            assert (await call(client, "memory_search", {"query": "jwt-written"}))["hits"] == []
        # Providers spell scopes as a string or a list, under `scope` or `scp`: all narrow alike.
        for claims in ({"scp": "memory:read"}, {"scope": ["memory:read"]}, {"scp": ["memory:read"]}):
            async with http_client(base, token("alice", **claims)) as client:
                assert "lacks the 'write' permission" in await call_error(client, "memory_write", {"content": "x"})
        async with http_client(base, token("alice", mcp_memory_agents="ci-bot"),
                               **{"X-MCP-Memory-Agent": "other"}) as client:
            assert "may not act as agent 'other'" in await call_error(client, "memory_list", {})


async def test_sse_and_both_protocol_eras(database: Database, db_url: str) -> None:
    key = await make_key(database, "alice", agents=["planner"], projects=["shop"])
    with http_server(db_url) as base:
        for mode in ("auto", "legacy"):
            async with http_client(base, key, mode=mode) as client:
                w = await call(client, "memory_write", {"content": f"written over {mode}"})
                assert w["memory"]["scope"] == {"level": "agent_project", "agent_id": "planner", "project_id": "shop"}
        async with Client(sse_client(f"{base}/sse", headers={"Authorization": f"Bearer {key}"})) as client:
            hits = (await call(client, "memory_search", {"query": "written over"}))["hits"]
            assert len(hits) == 2
        # Without the key: refused with 401 before any MCP session starts.
        assert httpx2.get(f"{base}/sse", timeout=5).status_code == 401


async def test_headers_narrow_but_never_widen(database: Database, db_url: str) -> None:
    key = await make_key(database, "alice", agents=["planner", "coder"], projects=["shop"])
    with http_server(db_url) as base:
        async with http_client(base, key, **{"X-MCP-Memory-Agent": "coder"}) as client:
            w = await call(client, "memory_write", {"content": "coder note", "scope": "agent_project"})
            assert w["memory"]["scope"] == {"level": "agent_project", "agent_id": "coder", "project_id": "shop"}
        async with http_client(base, key, **{"X-MCP-Memory-Project": "blog"}) as client:
            assert "may not act as project 'blog'" in await call_error(client, "memory_search", {"query": "x"})
        async with http_client(base, key) as client:  # defaults: the first granted agent and project
            assert (await call(client, "memory_search", {"query": "coder note"}))["hits"] == []


async def test_host_header_protection(database: Database, db_url: str) -> None:
    key = await make_key(database, "alice")
    with http_server(db_url, "--allowed-host", "mem.example.com") as base:
        assert status(base, key, Host="evil.example.net").status_code == 421
        assert status(base, key, Host="mem.example.com").status_code == 200


async def test_two_servers_share_one_database(database: Database, db_url: str) -> None:
    key = await make_key(database, "alice")
    with http_server(db_url) as one, http_server(db_url) as two:
        async with http_client(one, key) as a, http_client(two, key) as b:
            written = await call(a, "memory_write", {"content": "written through server one"})
            hits = (await call(b, "memory_search", {"query": "written through server one"}))["hits"]
            assert [h["id"] for h in hits] == [written["memory"]["id"]]
            preview = await call(b, "memory_forget", {"query": "server one"})
            await call(a, "memory_forget", {"mode": "execute", "token": preview["token"]})
            assert (await call(b, "memory_list", {}))["memories"] == []


def test_no_auth_is_loopback_only(db_url: str) -> None:
    refused = subprocess.run([SERVE, "serve", "--transport", "http", "--no-auth", "--host", "0.0.0.0",
                              "--port", str(free_port()), "--database-url", db_url],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "loopback addresses only" in refused.stderr


async def test_no_auth_on_loopback_uses_the_local_identity(db_url: str) -> None:
    with http_server(db_url, "--no-auth", env={"MCP_MEMORY_USER": "local-dan"}) as base:
        assert status(base, None).status_code == 200
        async with http_client(base, "ignored") as client:
            w = await call(client, "memory_write", {"content": "no auth write"})
            history = await call(client, "memory_history", {"id": w["memory"]["id"]})
            assert history["entries"][0]["actor"] == "local:local-dan"


def test_keys_cli(db_url: str) -> None:
    env = {"MCP_MEMORY_DATABASE_URL": db_url}

    def cli(*args: str) -> subprocess.CompletedProcess:
        import os
        return subprocess.run([SERVE, *args], capture_output=True, text=True, timeout=60, env={**os.environ, **env})

    created = cli("keys", "create", "--user", "erin", "--name", "ci-bot", "--agents", "ci", "--perms", "read,write")
    assert created.returncode == 0 and created.stdout.startswith("mcpm_") and "shown once" in created.stderr
    listed = cli("keys", "list")
    assert "erin" in listed.stdout and "ci-bot" in listed.stdout and "agents=ci projects=*" in listed.stdout
    assert created.stdout.strip() not in listed.stdout  # the key itself is never shown again
    key_id = listed.stdout.split()[0]
    assert "revoked key" in cli("keys", "revoke", key_id).stdout
    assert "revoked" in cli("keys", "list", "--user", "erin").stdout
    bad = cli("keys", "create", "--user", "erin", "--perms", "read,root")
    assert bad.returncode == 1 and "permissions must be" in bad.stderr


def test_graceful_shutdown(db_url: str) -> None:
    import os

    env = {**os.environ, "MCP_MEMORY_DATABASE_URL": db_url}
    key = subprocess.run([SERVE, "keys", "create", "--user", "alice"], capture_output=True, text=True,
                         env=env, timeout=60).stdout.strip()
    port = free_port()
    proc = subprocess.Popen([SERVE, "serve", "--transport", "http", "--port", str(port)], env=env,
                            stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx2.get(f"{base}/health", timeout=1).status_code == 200:
                break
        except httpx2.HTTPError:
            time.sleep(0.1)
    assert status(base, key).status_code == 200
    proc.terminate()
    # uvicorn re-raises the SIGTERM it handled once shutdown is done (systemd counts that as a clean stop).
    assert proc.wait(timeout=30) in (0, -15)
    log = proc.stderr.read()
    assert "Waiting for application shutdown" in log and "Application shutdown complete" in log

"""`mcp-memory serve|resident|keys`: the server, the store's resident server, and the API keys
HTTP clients sign in with."""

from __future__ import annotations

import argparse
import atexit
import json
import os
import signal
import sys
from typing import Any

import anyio

from .cli_common import opened
from .config import Settings


def add_serve(sub: Any, common: argparse.ArgumentParser) -> None:
    serve = sub.add_parser("serve", parents=[common], help="run the MCP server")
    serve.add_argument("--transport", default="stdio", choices=["stdio", "http", "sse"],
                       help="stdio (default); http: streamable HTTP at /mcp and SSE at /sse; sse: SSE only")
    serve.add_argument("--host", help="HTTP bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP port (default 8765)")
    serve.add_argument("--public-url", help="the URL clients use (default http://host:port)")
    serve.add_argument("--allowed-host", action="append", dest="allowed_hosts",
                       help="accept this Host header too (repeatable)")
    serve.add_argument("--no-auth", action="store_true", default=None,
                       help="serve HTTP without authentication (loopback only)")
    serve.add_argument("--standalone", action="store_true",
                       help="serve in-process, not as a relay to the store's resident server (stdio; as "
                            "MCP_MEMORY_RESIDENT=false)")
    serve.add_argument("--resident", action="store_true",
                       help="relay to the store's resident server, starting it when none runs (stdio; the "
                            "default unless MCP_MEMORY_RESIDENT=false)")
    serve.set_defaults(run=cmd_serve)


def add_resident(sub: Any, common: argparse.ArgumentParser) -> None:
    resident = sub.add_parser("resident", parents=[common], help="the store's resident server: status, stop")
    resident.add_argument("action", choices=["status", "stop"])
    resident.add_argument("--json", action="store_true")
    resident.set_defaults(run=cmd_resident)


def add_keys(sub: Any, common: argparse.ArgumentParser) -> None:
    keys = sub.add_parser("keys", parents=[common], help="manage API keys for HTTP clients")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", parents=[common], help="create a key (printed once)")
    create.add_argument("--name", help="a label, recorded as the actor in history")
    create.add_argument("--agents", help="comma-separated agents the key may act as (default: any)")
    create.add_argument("--projects", help="comma-separated projects the key may act in (default: any)")
    create.add_argument("--perms", default="read,write,forget", help="subset of read,write,forget,admin")
    create.add_argument("--expires-days", type=int, help="expire after this many days")
    listing = keys_sub.add_parser("list", parents=[common], help="list keys (never the keys themselves)")
    listing.add_argument("--json", action="store_true")
    revoke = keys_sub.add_parser("revoke", parents=[common], help="revoke a key by id")
    revoke.add_argument("id")
    keys.set_defaults(run=cmd_keys)


def _exit_on_sigterm() -> None:
    """Harnesses stop stdio servers with SIGTERM. Release the embedded database handle (the
    last process out stops the postmaster) and leave at once: a normal exit would wait for the
    thread blocked reading stdin."""

    def stop(*_: object) -> None:
        atexit._run_exitfuncs()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from .telemetry import tracing

    tracing.configure()  # on only when OTEL_* variables ask for an exporter
    if settings.metrics_port is not None:
        from .telemetry.metrics import serve_on_loopback

        serve_on_loopback(settings.metrics_port)
    if args.transport == "stdio":
        from .capture.channel_socket import serving
        from .server import build_server  # the MCP stack is only needed here
        from .server.state import StateHolder
        from .server.stdio import serve_stdio

        holder = StateHolder(settings, exit_on_fatal=True)
        server = build_server(settings, holder=holder)

        async def serve() -> None:
            # The outer hold keeps the database open until captures the hook channel took are done.
            async with holder.hold() as state, serving(state, settings):
                await serve_stdio(server)

        _exit_on_sigterm()
        anyio.run(serve)
        return 0
    from .server.http import serve_http

    try:
        serve_http(settings, ("http", "sse") if args.transport == "http" else ("sse",))
    except ValueError as exc:  # e.g. --no-auth on an address other than loopback
        print(exc, file=sys.stderr)
        return 2
    return 0


def cmd_resident(args: argparse.Namespace, settings: Settings) -> int:
    from .resident_client import request

    reply = request(args.action, settings.database_url, str(settings.data_dir))
    if args.json:
        print(json.dumps(reply))
    elif reply is None:
        print("no resident server runs for this store")
    elif args.action == "stop":
        print(f"resident server pid {reply.get('pid')} is stopping")
    else:
        print(resident_line(reply))
    return 0 if reply is not None or args.action == "stop" else 1


def resident_line(reply: dict[str, Any]) -> str:
    memory = reply.get("memory") or {}
    mib = f", {memory['pss_bytes'] / 2**20:.0f} MiB PSS" if "pss_bytes" in memory else ""
    return (f"resident server pid {reply.get('pid')} (mcp-memory {reply.get('version')}), up "
            f"{float(reply.get('uptime_s') or 0):.0f}s, {reply.get('windows')} window(s) connected{mib}")


def _names(text: str | None) -> list[str] | None:
    from .auth import check_identifier

    return [check_identifier("name", x) for x in text.split(",") if x.strip()] if text else None


async def cmd_keys(args: argparse.Namespace, settings: Settings) -> int:
    from datetime import UTC, datetime, timedelta
    from uuid import UUID

    from .auth import new_api_key, parse_api_key, parse_permissions
    from .repository.api_keys import ApiKeyRepository

    async with opened(settings) as (db, _, local):
        keys = ApiKeyRepository(db.admin, db.pool)
        if args.keys_command == "create":
            key = new_api_key(local.user_id)
            _, key_hash = parse_api_key(key)  # type: ignore[misc]
            expires = datetime.now(UTC) + timedelta(days=args.expires_days) if args.expires_days else None
            info = await keys.create(local.user_id, args.name or "default", key_hash, agents=_names(args.agents),
                                     projects=_names(args.projects), permissions=sorted(parse_permissions(args.perms)),
                                     expires_at=expires)
            print(key)
            print(f"key {info.id} for user {info.user_id} ({', '.join(info.permissions)}): shown once, store it now",
                  file=sys.stderr)
        elif args.keys_command == "list":
            listed = await keys.list(settings.user)
            if args.json:
                print(json.dumps([k.model_dump(mode="json") for k in listed], indent=2))
                return 0
            for k in listed:
                grants = (f"agents={','.join(k.agents) if k.agents is not None else '*'} "
                          f"projects={','.join(k.projects) if k.projects is not None else '*'}")
                used = f"{k.last_used_at:%Y-%m-%d %H:%M}" if k.last_used_at else "never"
                print(f"{k.id}  {k.user_id:<12} {k.name:<12} {','.join(k.permissions):<24} {grants}  "
                      f"{'revoked' if k.revoked_at else 'active'}, last used {used}")
        else:
            try:
                key_id = UUID(args.id)
            except ValueError:
                print(f"error: {args.id!r} is not a key id (see `mcp-memory keys list`)", file=sys.stderr)
                return 2
            info = await keys.revoke(key_id)
            print(f"revoked key {info.id} ({info.name}) of user {info.user_id}")
    return 0

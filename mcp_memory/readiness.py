"""Readiness, component by component: the database, its schema, the embedder and its breaker,
the job queue, the embedding backlog. `/ready` serves it as JSON and `mcp-memory doctor` prints
the same checks. Only the database and the schema make a server not ready: with the embedder down
writes still succeed (stored without a vector, backfilled later), so taking every replica out of
rotation for it would turn slower search into an outage; those components say "degraded"."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import anyio
import asyncpg

from .db.migrate import pending_migrations
from .repository import catalog, operations
from .vectors import Vectors

# A queued job this late means no worker takes jobs (none running, or all failing).
STALE_QUEUE_S = 600.0
CHECK_TIMEOUT_S = 3.0


@dataclass
class Component:
    ok: bool
    detail: str
    critical: bool = False  # not ok -> not ready (503); otherwise degraded (200)
    data: dict[str, Any] = field(default_factory=dict)


async def check(pool: asyncpg.Pool | None, admin: asyncpg.Pool | None, vectors: Vectors | None, *,
                probe_embedder: bool = True, starting: str | None = None,
                only_database: bool = False) -> dict[str, Component]:
    """Every component, each within CHECK_TIMEOUT_S (a hanging database is a failed check, not a
    hanging probe). `starting`: why there is no pool yet."""
    out: dict[str, Component] = {}
    if pool is None or admin is None:
        out["database"] = Component(False, starting or "starting", critical=True)
        return out
    try:
        with anyio.fail_after(CHECK_TIMEOUT_S):
            await catalog.ping(pool)
        out["database"] = Component(True, "answers", critical=True)
    except Exception as exc:
        out["database"] = Component(False, _reason(exc), critical=True)
        return out
    if only_database:
        return out
    try:
        with anyio.fail_after(CHECK_TIMEOUT_S):
            async with admin.acquire() as conn:
                pending = await pending_migrations(conn)
        out["migrations"] = Component(not pending, "up to date" if not pending else
                                      f"{len(pending)} to apply: {', '.join(m.name for m in pending)}", critical=True)
    except Exception as exc:
        out["migrations"] = Component(False, _reason(exc), critical=True)
    out["embedder"] = await _embedder(vectors, probe_embedder)
    try:
        with anyio.fail_after(CHECK_TIMEOUT_S):
            found = await operations.counts(admin, timeout_s=CHECK_TIMEOUT_S)
    except Exception as exc:
        out["jobs"] = Component(False, _reason(exc))
        out["backlog"] = Component(False, _reason(exc))
        return out
    out["jobs"] = jobs_component(found)
    out["backlog"] = backlog_component(found, out["embedder"].ok)
    return out


def jobs_component(found: dict[str, Any]) -> Component:
    """The decision job queue from operations.counts: dead letters, or a due job left waiting."""
    jobs, oldest = found["jobs"], found["oldest_queued_s"]
    dead, late = jobs.get("dead", 0), oldest is not None and oldest > STALE_QUEUE_S
    problems = ([f"{dead} dead (retry with `mcp-memory jobs retry`)"] if dead else []) + (
        [f"oldest queued job waiting {oldest:.0f} s (are workers running?)"] if late else [])
    return Component(not problems, "; ".join(problems) or "flowing" if jobs else "empty",
                     data={"by_status": jobs, "oldest_queued_s": oldest})


def backlog_component(found: dict[str, Any], embedder_ok: bool) -> Component:
    backlog = found["backlog"]
    return Component(backlog == 0 or embedder_ok, f"{backlog} memories without a vector" + (
        "" if backlog == 0 else " (being embedded)" if embedder_ok else " (waiting for the embedder)"),
        data={"memories": backlog})


async def _embedder(vectors: Vectors | None, probe: bool) -> Component:
    if vectors is None or vectors.embedder is None:
        return Component(True, "off (provider none): search by full text only")
    breaker = vectors.breaker
    data = {"model": vectors.model, "breaker": "open" if breaker.open else "closed"}
    if breaker.open and not (probe and breaker.next_probe_in() == 0):
        return Component(False, f"failing; breaker open, next probe in {breaker.next_probe_in():.1f} s", data=data)
    if probe:
        started = time.monotonic()
        # slower than a write waits is failing, as writes see it
        if not await vectors.probe(timeout_s=min(CHECK_TIMEOUT_S, vectors.settings.embedding_timeout_s)):
            data["breaker"] = "open" if breaker.open else "closed"
            return Component(False, "does not answer", data=data)
        data["probe_ms"] = round((time.monotonic() - started) * 1000, 1)
    return Component(True, "answers", data=data)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within {CHECK_TIMEOUT_S:g} s"
    text = (str(exc).strip().splitlines() or [""])[0][:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def summary(components: dict[str, Component]) -> tuple[int, dict[str, Any]]:
    """HTTP status and JSON body: 503 when a critical component fails."""
    ready = all(c.ok for c in components.values() if c.critical) and "database" in components
    degraded = not all(c.ok for c in components.values())
    status = "unavailable" if not ready else "degraded" if degraded else "ready"
    body = {"status": status, "components": {name: {k: v for k, v in asdict(c).items() if k != "data" or v}
                                             for name, c in components.items()}}
    return (200 if ready else 503), body


__all__ = ["Component", "check", "summary"]

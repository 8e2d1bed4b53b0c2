"""The server's Prometheus metrics, in a registry of its own (a host process's default registry
stays untouched). Counters and histograms are per process; the gauges of shared state (jobs,
backlog, pool) are read when scraped (`collect`), so N replicas each report the same database."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

REGISTRY = CollectorRegistry(auto_describe=True)
CONTENT_TYPE = CONTENT_TYPE_LATEST

# Tool calls take from a millisecond (get) to seconds (a write waiting on a slow embedder).
_LATENCY = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

TOOL_CALLS = Counter("mcp_memory_tool_calls", "MCP tool calls by tool and outcome "
                     "(ok, refused: the caller's mistake, unavailable: database outage, internal: a bug).",
                     ["tool", "outcome"], registry=REGISTRY)
TOOL_SECONDS = Histogram("mcp_memory_tool_duration_seconds", "MCP tool call latency.", ["tool"],
                         buckets=_LATENCY, registry=REGISTRY)
EMBEDDER_CALLS = Counter("mcp_memory_embedder_calls", "Embedder calls by outcome (ok, failed, skipped: breaker open).",
                         ["outcome"], registry=REGISTRY)
EMBEDDER_SECONDS = Histogram("mcp_memory_embedder_duration_seconds", "Embedder call latency (calls that went out).",
                             buckets=_LATENCY, registry=REGISTRY)
BREAKER_OPEN = Gauge("mcp_memory_breaker_open", "1 while the circuit breaker skips its dependency.", ["name"],
                     registry=REGISTRY)
BREAKER_OPENINGS = Counter("mcp_memory_breaker_openings", "Times the circuit breaker opened.", ["name"],
                           registry=REGISTRY)
BACKFILLED = Counter("mcp_memory_backfilled_memories", "Memories embedded after being stored without a vector.",
                     registry=REGISTRY)
FORGET_EXECUTIONS = Counter("mcp_memory_forget_executions", "memory_forget calls that forgot memories (not previews).",
                            registry=REGISTRY)
FORGOTTEN = Counter("mcp_memory_forgotten_memories", "Memories forgotten by memory_forget.", registry=REGISTRY)
POOL = Gauge("mcp_memory_pool_connections", "Application pool connections: in_use, idle, max, waiting.",
             ["state"], registry=REGISTRY)
JOBS = Gauge("mcp_memory_jobs", "Decision jobs in the queue by status (whole database).", ["status"],
             registry=REGISTRY)
BACKLOG = Gauge("mcp_memory_embedding_backlog", "Live memories stored without a vector, waiting for the backfill.",
                registry=REGISTRY)
CAPTURED = Gauge("mcp_memory_capture_turns_stored", "Live memories stored by transcript capture (whole database: "
                 "hook processes capture too).", registry=REGISTRY)
UP = Gauge("mcp_memory_database_up", "1 when the last scrape reached the database.", registry=REGISTRY)
for _outcome in ("ok", "failed", "skipped"):
    EMBEDDER_CALLS.labels(_outcome)
BREAKER_OPEN.labels("embedder").set(0)
for _status in ("queued", "running", "done", "dead", "cancelled"):
    JOBS.labels(_status)


def pool_usage(pool: object) -> dict[str, int]:
    """An asyncpg pool's connections. asyncpg has no public count of waiters: the number of tasks
    blocked in acquire() is its queue's getters (read defensively; 0 if that changes)."""
    size, idle = pool.get_size(), pool.get_idle_size()  # type: ignore[attr-defined]
    queue = getattr(pool, "_queue", None)
    waiting = len(getattr(queue, "_getters", ()) or ())
    return {"in_use": size - idle, "idle": idle, "max": pool.get_max_size(), "waiting": waiting}  # type: ignore[attr-defined]


async def collect(pool: object | None, counts: Callable[[], Awaitable[Mapping[str, object]]] | None) -> bytes:
    """The exposition text, with the shared-state gauges read now. `counts` returns
    {"jobs": {status: n}, "backlog": n, "captured": n}; it failing (database down) sets
    mcp_memory_database_up to 0 and leaves the last values."""
    if pool is not None:
        for state, value in pool_usage(pool).items():
            POOL.labels(state).set(value)
    if counts is not None:
        try:
            found = await counts()
        except Exception:
            UP.set(0)
        else:
            UP.set(1)
            for status, n in dict(found.get("jobs") or {}).items():  # type: ignore[call-overload]
                JOBS.labels(status).set(n)
            BACKLOG.set(found.get("backlog") or 0)  # type: ignore[arg-type]
            CAPTURED.set(found.get("captured") or 0)  # type: ignore[arg-type]
    return generate_latest(REGISTRY)


def serve_on_loopback(port: int) -> None:
    """Prometheus exposition on 127.0.0.1:`port` from a daemon thread: the process's own figures
    (tool calls, latency, embedder, breaker) for a stdio server, which has no HTTP endpoint. The
    database-wide gauges (jobs, backlog) come from an HTTP server's /metrics or `mcp-memory doctor`."""
    from prometheus_client import start_http_server

    start_http_server(port, addr="127.0.0.1", registry=REGISTRY)

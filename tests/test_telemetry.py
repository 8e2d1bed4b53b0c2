"""What an operator sees (issue 29): Prometheus metrics scraped from a real server after real
calls, spans through the SDK's in-memory exporter, /ready per component flipping when PostgreSQL
stops and when the embedder fails, the request id in errors, spans and logs, the access log."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.server.mcpserver.exceptions import ToolError
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families

from mcp_memory.config import Settings
from mcp_memory.db import Database, open_database
from mcp_memory.db.embedded import EmbeddedPostgres
from mcp_memory.decisions import provider_from
from mcp_memory.decisions.jobs import DecisionWorker
from mcp_memory.models import Principal
from mcp_memory.server.errors import tool_errors
from mcp_memory.service import MemoryService
from mcp_memory.telemetry import tracing
from mcp_memory.telemetry.logs import JsonFormatter, RequestIdFilter

from .chat_api import ChatAPI
from .http_server import http_client, http_server
from .test_embeddings import EmbeddingsAPI
from .test_http import make_key

SECRET_TEXT = "my bank password is hunter2-correct-horse"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(found: dict, metric: str, **labels: str) -> float:
    return found.get((metric, tuple(sorted(labels.items()))), 0.0)


async def test_metrics_count_the_calls_made(database: Database, db_url: str) -> None:
    key = await make_key(database, "alice")
    admin = await make_key(database, "alice", name="ops", perms=("read", "admin"))
    with http_server(db_url, env={"MCP_MEMORY_EMBEDDING_PROVIDER": "none"}) as base:
        async with http_client(base, key) as client:
            for i in range(3):
                assert not (await client.call_tool("memory_write", {"content": f"fact number {i}"})).is_error
            for _ in range(2):
                assert not (await client.call_tool("memory_search", {"query": "fact"})).is_error
            missing = await client.call_tool("memory_get", {"ids": ["00000000-0000-0000-0000-000000000001"]})
            forgotten = await client.call_tool("memory_forget", {"query": "fact number", "mode": "preview"})
            assert not forgotten.is_error, forgotten.content[0].text
            token = forgotten.structured_content["token"]
            executed = await client.call_tool("memory_forget", {"token": token, "mode": "execute"})
            assert not executed.is_error, executed.content[0].text
        scraped = httpx2.get(f"{base}/metrics", timeout=10)
        assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
        found = samples(scraped.text)
        assert value(found, "mcp_memory_tool_calls_total", tool="memory_write", outcome="ok") == 3
        assert value(found, "mcp_memory_tool_calls_total", tool="memory_search", outcome="ok") == 2
        get_calls = (value(found, "mcp_memory_tool_calls_total", tool="memory_get", outcome="ok")
                     + value(found, "mcp_memory_tool_calls_total", tool="memory_get", outcome="refused"))
        assert get_calls == 1 and missing is not None
        assert value(found, "mcp_memory_tool_calls_total", tool="memory_forget", outcome="ok") == 2
        assert value(found, "mcp_memory_tool_duration_seconds_count", tool="memory_write") == 3
        assert value(found, "mcp_memory_forget_executions_total") == 1
        assert value(found, "mcp_memory_forgotten_memories_total") == 3
        assert value(found, "mcp_memory_database_up") == 1
        assert value(found, "mcp_memory_embedding_backlog") == 0  # provider none: nothing to wait for
        assert value(found, "mcp_memory_jobs", status="queued") == 0
        assert value(found, "mcp_memory_pool_connections", state="max") >= 1
        assert value(found, "mcp_memory_breaker_open", name="embedder") == 0
        assert SECRET_TEXT not in scraped.text and "fact number" not in scraped.text
        # an admin key may scrape from elsewhere too; a key without admin may not see the figures
        headers = {"X-Forwarded-For": "203.0.113.9"}
        assert httpx2.get(f"{base}/metrics", headers={**headers, "Authorization": f"Bearer {admin}"},
                          timeout=10).status_code == 200


async def test_metrics_refuse_a_remote_client_without_an_admin_key(database: Database, settings: Settings) -> None:
    """Starlette's test client connects from 'testclient', not a loopback address."""
    from starlette.testclient import TestClient

    from mcp_memory.server.http import build_http_app

    key = await make_key(database, "alice")
    admin = await make_key(database, "alice", name="ops", perms=("read", "admin"))
    app = build_http_app(settings.model_copy(update={"embedding_provider": "none"}))

    def scrape() -> tuple[int, int, int]:
        with TestClient(app, base_url="http://127.0.0.1") as client:
            return (client.get("/metrics").status_code,
                    client.get("/metrics", headers={"Authorization": f"Bearer {key}"}).status_code,
                    client.get("/metrics", headers={"Authorization": f"Bearer {admin}"}).status_code)

    assert await anyio.to_thread.run_sync(scrape) == (403, 403, 200)


@pytest.fixture(scope="module")
def spans() -> InMemorySpanExporter:
    """The SDK with the in-memory exporter, as OTEL_* variables would install it with OTLP."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    assert tracing.instrument_asyncpg()
    yield exporter
    from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor

    AsyncPGInstrumentor().uninstrument()


@pytest.fixture(scope="module")
def embeddings_api():
    server = EmbeddingsAPI()
    server.start()
    yield server
    server.close()


async def test_a_tool_call_is_a_span_with_its_sql_and_embedder_calls_and_no_memory_text(
        spans: InMemorySpanExporter, settings: Settings, embeddings_api: EmbeddingsAPI) -> None:
    from .test_server import connect

    settings = settings.model_copy(update={
        "embedding_provider": "openai", "embedding_model": "text-embedding-3-small", "embedding_api_key": "sk-secret-1",
        "embedding_base_url": embeddings_api.url("openai")})
    async with connect(settings) as client:
        spans.clear()
        result = await client.call_tool("memory_write", {"content": SECRET_TEXT, "tags": ["secret-tag"]})
        assert not result.is_error, result.content[0].text
    finished = spans.get_finished_spans()
    by_name = {s.name: s for s in finished}
    tool = by_name["tool memory_write"]
    assert tool.attributes["mcp_memory.tool"] == "memory_write"
    request_id = tool.attributes["mcp_memory.request_id"]
    embedder = [s for s in finished if s.name == "embedder" and s.parent is not None
                and s.parent.span_id == tool.context.span_id]  # (the start-up warm-up has its own)
    assert len(embedder) == 1, [(s.name, s.parent) for s in finished]
    assert embedder[0].attributes["mcp_memory.embedding.model"] == "text-embedding-3-small"
    sql = [s for s in finished if s.attributes.get("db.system") == "postgresql"
           or s.attributes.get("db.system.name") == "postgresql"]
    assert sql, [s.name for s in finished]
    assert any(s.context.trace_id == tool.context.trace_id for s in sql)
    for s in finished:
        text = json.dumps({**dict(s.attributes or {}), "name": s.name,
                           "events": [dict(e.attributes or {}) for e in s.events]}, default=str)
        assert "hunter2" not in text and "sk-secret-1" not in text, text
    assert len(request_id) == 12


async def test_the_request_id_is_in_the_error_the_span_and_the_log(spans: InMemorySpanExporter,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    @tool_errors
    async def memory_list() -> None:
        raise RuntimeError(f"a bug that quotes the input: {SECRET_TEXT}")

    spans.clear()
    with caplog.at_level(logging.ERROR), pytest.raises(ToolError) as raised:
        await memory_list()
    message = str(raised.value)
    assert message.startswith("internal error ") and "hunter2" not in message
    rid = message.split()[2].rstrip(":")
    span = next(s for s in spans.get_finished_spans() if s.name == "tool memory_list")
    assert span.attributes["mcp_memory.request_id"] == rid
    assert span.attributes["error.type"] == "ToolError"
    assert all("hunter2" not in json.dumps(dict(e.attributes or {}), default=str) for e in span.events)
    record = next(r for r in caplog.records if "internal error" in r.getMessage())
    RequestIdFilter().filter(record)
    line = json.loads(JsonFormatter().format(record))
    assert line["request_id"] == rid and rid in line["message"] and line["level"] == "ERROR"


async def test_ready_flips_when_postgres_stops_and_when_the_embedder_fails(tmp_path: Path,
                                                                         embeddings_api: EmbeddingsAPI) -> None:
    pg = EmbeddedPostgres(tmp_path / "own")  # its own server: the session's stays up
    await anyio.to_thread.run_sync(pg.start)
    dsn = pg.dsn("postgres")
    db = await open_database(Settings(database_url=dsn, data_dir=tmp_path / "unused"))
    await db.close()
    env = {"MCP_MEMORY_EMBEDDING_PROVIDER": "openai", "MCP_MEMORY_EMBEDDING_MODEL": "text-embedding-3-small",
           "MCP_MEMORY_EMBEDDING_API_KEY": "sk-test", "MCP_MEMORY_EMBEDDING_BASE_URL": embeddings_api.url("openai"),
           "MCP_MEMORY_EMBEDDING_TIMEOUT_S": "0.5", "MCP_MEMORY_EMBEDDING_BREAKER_FAILURES": "1"}
    try:
        with http_server(dsn, env=env) as base:
            with anyio.fail_after(15):  # the SDK's first call may outlast the 0.5 s timeout: the breaker heals
                while True:
                    ready = httpx2.get(f"{base}/ready", timeout=10)
                    body = ready.json()
                    if body["status"] == "ready":
                        break
                    await anyio.sleep(0.3)
            assert ready.status_code == 200, json.dumps(body)
            assert set(body["components"]) == {"database", "migrations", "embedder", "jobs", "backlog"}
            assert all(c["ok"] for c in body["components"].values())

            embeddings_api.delay = 2.0  # the embedder hangs past its timeout
            try:
                degraded = httpx2.get(f"{base}/ready", timeout=10)
                body = degraded.json()
                assert degraded.status_code == 200 and body["status"] == "degraded", body
                assert not body["components"]["embedder"]["ok"]
                assert body["components"]["database"]["ok"]
                after = httpx2.get(f"{base}/ready", timeout=10).json()  # the breaker is open now: no wait
                assert "breaker open" in after["components"]["embedder"]["detail"]
            finally:
                embeddings_api.delay = 0.0
            with anyio.fail_after(15):  # the breaker probes again within seconds and closes
                while True:
                    if httpx2.get(f"{base}/ready", params={"probe": "0"}, timeout=10).json()["status"] == "ready":
                        break
                    await anyio.sleep(0.5)

            await anyio.to_thread.run_sync(pg.stop)
            down = httpx2.get(f"{base}/ready", timeout=10)
            body = down.json()
            assert down.status_code == 503 and body["status"] == "unavailable", body
            assert not body["components"]["database"]["ok"]
            assert down.headers["retry-after"] == "5"
            assert httpx2.get(f"{base}/live", timeout=10).status_code == 200  # alive: no restart for an outage
            assert httpx2.get(f"{base}/health", timeout=10).status_code == 503
            pg = EmbeddedPostgres(tmp_path / "own")
            await anyio.to_thread.run_sync(pg.start)
            with anyio.fail_after(30):
                while True:
                    if httpx2.get(f"{base}/ready", timeout=10).status_code == 200:
                        break
                    await anyio.sleep(0.5)
    finally:
        await anyio.to_thread.run_sync(pg.stop)


async def test_one_access_line_per_request_without_keys_or_query(database: Database, db_url: str,
                                                                 tmp_path: Path) -> None:
    import os
    import subprocess

    from .http_server import SERVE, free_port

    key = await make_key(database, "alice")
    port = free_port()
    log_file = tmp_path / "server.log"
    with log_file.open("w") as err:
        command = [SERVE, "serve", "--transport", "http", "--port", str(port)]
        proc = subprocess.Popen(command,  # noqa: ASYNC220 (the server under test, left running)
                                env={**os.environ, "MCP_MEMORY_DATABASE_URL": db_url, "MCP_MEMORY_LOG_LEVEL": "INFO",
                                     "MCP_MEMORY_LOG_FORMAT": "json", "MCP_MEMORY_EMBEDDING_PROVIDER": "none"},
                                stdout=subprocess.DEVNULL, stderr=err)
        base = f"http://127.0.0.1:{port}"
        try:
            with anyio.fail_after(30):
                while True:
                    try:
                        if httpx2.get(f"{base}/health", timeout=1).status_code == 200:
                            break
                    except httpx2.HTTPError:
                        pass
                    await anyio.sleep(0.1)
            async with http_client(base, key) as client:
                assert not (await client.call_tool("memory_write", {"content": SECRET_TEXT})).is_error
            answer = httpx2.get(f"{base}/ready?token=sekrit-query-value", headers={"X-Request-Id": "probe-42"},
                                timeout=10)
            assert answer.headers["x-request-id"] == "probe-42"
        finally:
            proc.terminate()
            proc.wait(timeout=15)
    lines = [json.loads(line) for line in log_file.read_text().splitlines() if line.startswith("{")]
    access = [line for line in lines if line["logger"] == "mcp_memory.access"]
    assert any(a["path"] == "/ready" and a["request_id"] == "probe-42" and a["status"] == 200 for a in access), access
    assert any(a["path"] == "/mcp" and a["method"] == "POST" for a in access)
    text = log_file.read_text()
    assert key not in text and key[:20] not in text
    assert "hunter2" not in text and "sekrit-query-value" not in text
    health_lines = [a for a in access if a["path"] == "/health"]
    assert len(health_lines) == len({a["request_id"] for a in health_lines})  # one line, one id, per request


async def test_doctor_reports_the_job_queue_as_ready_does(database: Database, settings: Settings) -> None:
    from mcp_memory.db.doctor import diagnose

    settings = settings.model_copy(update={"embedding_provider": "none"})
    checks = {c.name: c for c in await diagnose(settings)}
    assert checks["job queue"].ok and "no jobs" in checks["job queue"].detail
    async with database.admin.acquire() as conn:
        await conn.execute("""INSERT INTO memory_jobs (user_id, memory_id, principal, status, max_attempts, last_error)
                              VALUES ('alice', gen_random_uuid(), '{}'::jsonb, 'dead', 3, 'model refused')""")
    checks = {c.name: c for c in await diagnose(settings)}
    job_queue = checks["job queue"]
    assert not job_queue.ok and "dead 1" in job_queue.detail and "jobs retry" in (job_queue.fix or "")


def test_traces_are_off_unless_the_otel_variables_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                 "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    assert not tracing.wanted()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
    assert tracing.wanted()
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    assert not tracing.wanted()
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    assert tracing.wanted()
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert not tracing.wanted()


async def test_a_stdio_server_serves_its_metrics_on_the_port_it_is_given(db_url: str, tmp_path: Path) -> None:
    from mcp import Client

    from .http_server import free_port
    from .test_stdio import server_params

    port = free_port()
    env = {"MCP_MEMORY_DATABASE_URL": db_url, "MCP_MEMORY_EMBEDDING_PROVIDER": "none"}
    async with Client(server_params(tmp_path, **env, MCP_MEMORY_METRICS_PORT=str(port)), mode="legacy") as client:
        for i in range(2):
            assert not (await client.call_tool("memory_write", {"content": f"stdio fact {i}"})).is_error
        found = samples(httpx2.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text)
        assert value(found, "mcp_memory_tool_calls_total", tool="memory_write", outcome="ok") == 2


async def test_a_model_decision_is_a_span_naming_the_provider_and_no_memory_text(
        spans: InMemorySpanExporter, database: Database, settings: Settings, chat: ChatAPI, alice: Principal) -> None:
    from .test_decisions import decisions_settings, drain, two_versions

    s = decisions_settings(settings, chat.url)
    service = await MemoryService.open(database, s)
    worker = DecisionWorker(database.admin, service, provider_from(s), s)
    await two_versions(service, alice, worker)
    spans.clear()
    chat.script(("json", {"action": "UPDATE", "ids": ["1"], "reason": "Alice moved to Lisbon."}))
    assert await drain(worker) == 1
    [decided] = [x for x in spans.get_finished_spans() if x.name == "model.decide"]
    assert decided.attributes["mcp_memory.provider"] == "openai-compatible"
    assert decided.attributes["mcp_memory.model"] == "judge-1"
    assert decided.attributes["mcp_memory.candidates"] == 1
    text = json.dumps(dict(decided.attributes), default=str)
    assert "Oslo" not in text and "Lisbon" not in text, text

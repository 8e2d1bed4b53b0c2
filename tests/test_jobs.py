"""The durable queue: two servers claiming one queue, a server killed mid-job and a new one taking
the job again, cancel, the CLI (real subprocesses), the memory://jobs resource, stats and doctor."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client

from mcp_memory.config import Settings
from mcp_memory.db import Database, open_database
from mcp_memory.decisions import provider_from
from mcp_memory.decisions.jobs import DecisionWorker
from mcp_memory.models import Principal
from mcp_memory.repository import jobs as queue
from mcp_memory.repository.jobs import JobRepository
from mcp_memory.server import build_server
from mcp_memory.service import MemoryService

from .chat_api import ChatAPI, dead_url
from .http_server import SERVE, free_port
from .test_decisions import LISBON, OSLO, decisions_settings, drain

REPO = Path(__file__).resolve().parents[1]


def env_for(db_url: str, chat_url: str, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "MCP_MEMORY_DATABASE_URL": db_url,
            "MCP_MEMORY_DECISIONS_PROVIDER": "openai-compatible", "MCP_MEMORY_DECISIONS_BASE_URL": chat_url,
            "MCP_MEMORY_DECISIONS_MODEL": "judge-1", "MCP_MEMORY_DECISIONS_PER_MINUTE": "0",
            "MCP_MEMORY_DECISIONS_RETRY_BASE_S": "0", "MCP_MEMORY_DECISIONS_POLL_S": "0.2",
            "MCP_MEMORY_DECISIONS_SECOND_LOOK": "false", "MCP_MEMORY_LOG_LEVEL": "WARNING", **extra}


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([SERVE, *args, "--user", "alice", "--agent", "agent-a", "--project", "proj-x"],
                          env=env, capture_output=True, text=True, timeout=120)


async def wait_for(predicate: Any, seconds: float = 60) -> Any:
    with anyio.fail_after(seconds):
        while True:
            value = await predicate()
            if value:
                return value
            await anyio.sleep(0.1)


async def test_two_servers_claim_one_queue_without_overlap(db_url: str, settings: Settings, chat: ChatAPI,
                                                           alice: Principal) -> None:
    s = decisions_settings(settings, chat.url, decisions_workers=2, decisions_poll_s=0.05)
    dbs = [await open_database(s), await open_database(s)]
    try:
        services = [await MemoryService.open(db, s) for db in dbs]
        for i in range(12):
            await services[i % 2].write(alice, f"Alice's favourite number is {i * 7 + 3}.")
        chat.delay = 0.05
        workers = [DecisionWorker(db.admin, svc, provider_from(s), s, name=f"server-{n}")
                   for n, (db, svc) in enumerate(zip(dbs, services, strict=True))]
        claimed: dict[str, list[int]] = {"server-0": [], "server-1": []}
        real_claim = queue.claim

        async def counting_claim(admin: Any, worker: str, lease_s: float, skip: Any = ()) -> Any:
            job = await real_claim(admin, worker, lease_s, skip)
            if job is not None:
                claimed[worker.split("/")[0]].append(job.id)
            return job

        queue.claim = counting_claim  # observe which server took what; the SQL is the real one
        try:
            async with anyio.create_task_group() as tg:
                for w in workers:
                    tg.start_soon(w.run_forever)

                async def all_done() -> bool:
                    rows = await dbs[0].admin.fetch("SELECT status FROM memory_jobs")
                    return len(rows) == 12 and all(r["status"] == "done" for r in rows)

                await wait_for(all_done)
                tg.cancel_scope.cancel()
        finally:
            queue.claim = real_claim
        rows = await dbs[0].admin.fetch("SELECT id, attempts FROM memory_jobs ORDER BY id")
        assert all(r["attempts"] == 1 for r in rows)  # no job was taken twice
        taken = claimed["server-0"] + claimed["server-1"]
        assert sorted(taken) == [r["id"] for r in rows] and claimed["server-0"] and claimed["server-1"]
        # Every memory but the first had older ones close to it: one model call each, no more.
        assert len(chat.take()) == 11 and sum(w.processed for w in workers) == 11
    finally:
        for db in dbs:
            await db.close()


def start_server(env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([SERVE, "serve", "--transport", "http", "--no-auth", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stderr.read()}")
        try:
            if httpx2.get(f"{base}/health", timeout=1).status_code == 200:
                return proc, base
        except httpx2.HTTPError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise TimeoutError("server did not become healthy")
        time.sleep(0.2)


async def done_by_a_new_server(database: Database, env: dict[str, str], memory_id: Any) -> Any:
    """Start a server and wait until it has finished the job of `memory_id`: its row."""
    server, _ = start_server(env)
    try:
        async def done() -> Any:
            row = await database.admin.fetchrow("SELECT * FROM memory_jobs WHERE memory_id = $1", memory_id)
            return row if row["status"] == "done" else None
        return await wait_for(done)
    finally:
        server.terminate()
        server.wait(timeout=30)


async def test_a_job_survives_its_server_dying(database: Database, db_url: str, settings: Settings, chat: ChatAPI,
                                               alice: Principal) -> None:
    """A server killed (SIGKILL) while it waits for the model leaves the job claimed; once the
    lease runs out a new server takes it again and applies the decision, once."""
    s = decisions_settings(settings, chat.url)
    service = await MemoryService.open(database, s)
    old = (await service.write(alice, OSLO)).memory
    new = (await service.write(alice, LISBON)).memory
    chat.script(("sleep", 60))  # the first server's model call never comes back
    env = env_for(db_url, chat.url, MCP_MEMORY_DECISIONS_LEASE_S="4", MCP_MEMORY_DECISIONS_TIMEOUT_S="2")
    first, _ = start_server(env)
    try:
        async def asked() -> bool:
            return len(chat.requests) >= 1
        await wait_for(asked)
        job = await database.admin.fetchrow("SELECT * FROM memory_jobs WHERE memory_id = $1", new.id)
        assert (job["status"], job["attempts"]) == ("running", 1)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    chat.script(("json", {"action": "UPDATE", "ids": ["1"], "reason": "moved"}))
    job = await done_by_a_new_server(database, env, new.id)
    assert job["attempts"] == 2 and job["result"]["action"] == "UPDATE"
    row = await database.admin.fetchrow("SELECT superseded_by, version FROM memories WHERE id = $1", old.id)
    assert (row["superseded_by"], row["version"]) == (new.id, 2)
    history = await database.admin.fetch("SELECT * FROM memory_history WHERE actor = 'pipeline:decisions'")
    assert len(history) == 1


async def test_a_cancelled_running_job_applies_nothing(database: Database, settings: Settings, chat: ChatAPI,
                                                       alice: Principal) -> None:
    s = decisions_settings(settings, chat.url)
    service = await MemoryService.open(database, s)
    worker = DecisionWorker(database.admin, service, provider_from(s), s)
    old = (await service.write(alice, OSLO)).memory
    await drain(worker)
    new = (await service.write(alice, LISBON)).memory
    chat.script(("sleep", 1), ("json", {"action": "UPDATE", "ids": ["1"], "reason": "moved"}))
    jobs = JobRepository(service.repo)
    async with anyio.create_task_group() as tg:
        tg.start_soon(worker.run_once)

        async def running() -> Any:
            return await database.admin.fetchval("SELECT id FROM memory_jobs WHERE memory_id = $1 AND "
                                                 "status = 'running'", new.id)
        job_id = await wait_for(running)
        assert await jobs.cancel(alice, [job_id]) == [job_id]
    row = await database.admin.fetchrow("SELECT superseded_by FROM memories WHERE id = $1", old.id)
    assert row["superseded_by"] is None
    assert (await jobs.get(alice, job_id)).status == "cancelled"


async def test_no_provider_enqueues_nothing(service: MemoryService, database: Database, alice: Principal) -> None:
    await service.write(alice, OSLO)
    assert await database.admin.fetchval("SELECT count(*) FROM memory_jobs") == 0


async def test_write_many_enqueues_in_its_transaction(database: Database, settings: Settings,
                                                      alice: Principal) -> None:
    from mcp_memory.models import WriteItem

    s = decisions_settings(settings, dead_url())
    service = await MemoryService.open(database, s)
    result = await service.write_many(alice, [WriteItem(content=OSLO), WriteItem(content=LISBON),
                                              WriteItem(content=OSLO)])
    ids = await database.admin.fetch("SELECT memory_id FROM memory_jobs ORDER BY id")
    assert [r["memory_id"] for r in ids] == [m.id for m in result.memories[:2]]


# --- the surfaces -------------------------------------------------------------------------------

async def test_cli_list_retry_cancel_and_undo(database: Database, db_url: str, settings: Settings, chat: ChatAPI,
                                              alice: Principal) -> None:
    s = decisions_settings(settings, chat.url, decisions_max_attempts=1)
    service = await MemoryService.open(database, s)
    worker = DecisionWorker(database.admin, service, provider_from(s), s)
    old = (await service.write(alice, OSLO)).memory
    await drain(worker)
    new = (await service.write(alice, LISBON)).memory
    chat.script(("status", 500))
    await drain(worker)
    env = env_for(db_url, chat.url)
    listed = cli("jobs", "list", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    assert data["counts"]["dead"] == 1 and data["counts"]["done"] == 1
    dead = next(j for j in data["jobs"] if j["status"] == "dead")
    assert "HTTP 500" in dead["last_error"]
    text = cli("jobs", "list", env=env).stdout
    assert "queue  queued 0, running 0, done 1, dead 1, cancelled 0" in text

    out = cli("jobs", "retry", "--dead", env=env)
    assert out.returncode == 0 and f"queued again: {dead['id']}" in out.stdout
    chat.script(("json", {"action": "UPDATE", "ids": ["1"], "reason": "Alice moved."}))
    await drain(worker)
    assert await database.admin.fetchval("SELECT superseded_by FROM memories WHERE id = $1", old.id) == new.id

    undo = cli("decisions", "undo", str(old.id), env=env)
    assert undo.returncode == 0, undo.stderr
    assert f"undid decision job {dead['id']}: 1 memories reverted ({old.id})" in undo.stdout
    assert await database.admin.fetchval("SELECT superseded_by FROM memories WHERE id = $1", old.id) is None
    again = cli("decisions", "undo", str(old.id), env=env)
    assert again.returncode == 1 and "already undone" in again.stderr
    bad = cli("decisions", "undo", "not-an-id", env=env)
    assert bad.returncode == 1 and "target: 'not-an-id' is neither" in bad.stderr

    third = (await service.write(alice, "Alice lives in Lisbon, Portugal, by the sea.")).memory
    job_id = await database.admin.fetchval("SELECT id FROM memory_jobs WHERE memory_id = $1", third.id)
    out = cli("jobs", "cancel", str(job_id), "999999", env=env)
    assert out.returncode == 0 and f"cancelled: {job_id}" in out.stdout and "999999" in out.stderr
    assert await worker.run_once() is False  # nothing left to do

    stats = json.loads(cli("stats", "--json", env=env).stdout)
    assert stats["jobs"] == {"queued": 0, "running": 0, "done": 2, "dead": 0, "cancelled": 1, "waiting": 0}


async def test_jobs_resource_and_stats(database: Database, settings: Settings) -> None:
    s = settings.model_copy(update={"decisions_provider": "openai-compatible", "decisions_model": "m",
                                    "decisions_base_url": dead_url(), "decisions_retry_base_s": 60})
    async with Client(build_server(s), mode="legacy") as client:
        await client.call_tool("memory_write", {"content": OSLO})
        listed = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        assert "memory://jobs{?limit}" in listed
        view = json.loads((await client.read_resource("memory://jobs")).contents[0].text)
        assert sum(view["counts"].values()) == 1 and view["jobs"][0]["max_attempts"] == 5
        stats = json.loads((await client.read_resource("memory://stats")).contents[0].text)
        assert sum(stats["jobs"].values()) == 1


def test_doctor_checks_the_provider(db_url: str, chat: ChatAPI) -> None:
    chat.script(("json", {"action": "UPDATE", "ids": ["1"], "reason": "changed"}))
    env = env_for(db_url, chat.url)
    del env["MCP_MEMORY_DECISIONS_SECOND_LOOK"]  # the defaults, as a user has them
    out = subprocess.run([SERVE, "doctor"], env=env, capture_output=True, text=True, timeout=120)
    line = next(x for x in out.stdout.splitlines() if "decisions:" in x)
    assert line.startswith("[ok  ]") and re.search(r"answers structured output in [\d.]+ s \(120 tokens\)", line), \
        out.stdout
    # An endpoint on loopback: a local model's floor and its second look (decisions/guard.py, second_look.py).
    assert "guard floor 0.50, second look on" in line
    out = subprocess.run([SERVE, "doctor"], env=env_for(db_url, dead_url()),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert any(x.startswith("[FAIL] decisions:") and "unreachable" in x for x in out.stdout.splitlines())


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))


async def test_jobs_are_seen_only_by_who_sees_the_memory(database: Database, settings: Settings,
                                                         alice: Principal) -> None:
    from .conftest import principal

    s = decisions_settings(settings, dead_url())
    service = await MemoryService.open(database, s)
    private = (await service.write(alice, OSLO, scope="agent_project")).memory
    shared = (await service.write(alice, LISBON, scope="user")).memory
    jobs = JobRepository(service.repo)
    assert {j.memory_id for j in await jobs.list(alice)} == {private.id, shared.id}
    other_agent = principal(agent="agent-b")
    assert [j.memory_id for j in await jobs.list(other_agent)] == [shared.id]
    assert sum((await jobs.counts(other_agent)).values()) == 1
    private_job = next(j for j in await jobs.list(alice) if j.memory_id == private.id)
    assert await jobs.cancel(other_agent, [private_job.id]) == []
    assert await jobs.get(other_agent, private_job.id) is None
    assert await jobs.list(principal(user="bob")) == []
    # Row-level security holds the queue like every tenant table; the app role cannot delete jobs.
    row = await database.admin.fetchrow(
        "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE relname = 'memory_jobs'")
    assert tuple(row) == (True, True)
    assert not await database.admin.fetchval("SELECT has_table_privilege('mcp_memory_app', 'memory_jobs', 'DELETE')")

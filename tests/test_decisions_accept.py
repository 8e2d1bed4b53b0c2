"""Accepting what the guard kept from a model's decision as a suggestion (`mcp-memory jobs accept`):
applied under the decision's own rules, with history in the same transaction, undone like any
decision; bad input named; nothing applied twice."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any
from uuid import uuid4

import pytest

from mcp_memory.config import Settings
from mcp_memory.db import Database
from mcp_memory.decisions.apply import accept
from mcp_memory.errors import Conflict, InvalidInput
from mcp_memory.models import Principal
from mcp_memory.repository.decisions import DecisionRepository
from mcp_memory.repository.jobs import JobRepository
from mcp_memory.service import MemoryService

from .chat_api import ChatAPI
from .http_server import SERVE
from .test_decision_guard import UPDATE_1, decide
from .test_decisions import jobs_of, state

ALLERGY = "Arjun is allergic to penicillin."
NEOVIM = "Arjun uses Neovim every day now."


def cli(db_url: str, p: Principal, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MCP_MEMORY_DATABASE_URL": db_url, "MCP_MEMORY_LOG_LEVEL": "WARNING"}
    return subprocess.run([SERVE, *args, "--user", p.user_id, "--agent", str(p.agent_id),
                           "--project", str(p.project_id)], env=env, capture_output=True, text=True, timeout=60)


async def suggested(database: Database, settings: Settings, chat: ChatAPI, p: Principal,
                    answer: dict[str, Any]) -> tuple[Any, Any, int]:
    """ALLERGY, then NEOVIM, which the model says replaces it: the guard keeps that as a suggestion."""
    first, second, result = await decide(database, settings, chat, p, ALLERGY, NEOVIM, answer)
    assert list(result["suggested"]) == [str(first["id"])] and first["superseded_by"] is None
    return first, second, (await jobs_of(database))[-1]["id"]


async def test_accept_from_the_cli_applies_the_suggestion_and_undo_reverses_it(
        database: Database, db_url: str, settings: Settings, chat: ChatAPI, alice: Principal) -> None:
    first, second, job = await suggested(database, settings, chat, alice, UPDATE_1)
    service = await MemoryService.open(database, settings)
    # Bad input is named, and changes nothing.
    bad = cli(db_url, alice, "jobs", "accept", str(job), "--memory", "not-an-id")
    assert bad.returncode == 1 and "memory: 'not-an-id' is not a memory id" in bad.stderr, bad.stderr
    other = uuid4()
    bad = cli(db_url, alice, "jobs", "accept", str(job), "--memory", str(other))
    assert bad.returncode == 1 and f"memory: {other} is not among the suggestions of job {job}" in bad.stderr
    assert (await state(service, alice, first["id"]))["superseded_by"] is None

    done = cli(db_url, alice, "jobs", "accept", str(job), "--memory", str(first["id"]), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["accepted"] == [str(first["id"])]
    assert (await state(service, alice, first["id"]))["superseded_by"] == second["id"]
    (h,) = await database.admin.fetch("SELECT * FROM memory_history WHERE request_id = $1 ORDER BY seq", f"job:{job}")
    assert h["memory_id"] == first["id"] and "suggestion accepted by local:alice" in h["reason"]
    row = await database.admin.fetchrow("SELECT result FROM memory_jobs WHERE id = $1", job)
    result = row["result"] if isinstance(row["result"], dict) else json.loads(row["result"])
    assert (result["suggested"], result["accepted"], result["applied"]) == ({}, [str(first["id"])],
                                                                            [str(first["id"])])
    assert str(first["id"]) not in result["skipped"]
    listed = cli(db_url, alice, "jobs", "list")
    assert "suggested, not applied" not in listed.stdout, listed.stdout
    assert f"accepted by local:alice: {first['id']}" in listed.stdout, listed.stdout

    again = cli(db_url, alice, "jobs", "accept", str(job))
    assert again.returncode == 1 and f"job: decision job {job} keeps no suggestion" in again.stderr

    undone = cli(db_url, alice, "decisions", "undo", str(first["id"]))
    assert undone.returncode == 0, undone.stderr
    assert (await state(service, alice, first["id"]))["superseded_by"] is None


async def test_an_accepted_delete_forgets_softly_and_an_undone_job_accepts_nothing(
        database: Database, settings: Settings, chat: ChatAPI, alice: Principal) -> None:
    first, _, job = await suggested(database, settings, chat, alice,
                                    {"action": "DELETE", "ids": ["1"], "reason": "no longer true"})
    service = await MemoryService.open(database, settings)
    decisions, jobs = DecisionRepository(service.repo), JobRepository(service.repo)
    result = await accept(decisions, jobs, alice, job)
    assert result["accepted"] == [str(first["id"])]
    assert (await state(service, alice, first["id"]))["deleted_at"] is not None
    await service.undo_decision(alice, str(first["id"]))
    assert (await state(service, alice, first["id"]))["deleted_at"] is None
    # A suggestion of a job the user undid stays a suggestion (another project: a store of its own).
    elsewhere = alice.model_copy(update={"project_id": "proj-y"})
    _, _, job = await suggested(database, settings, chat, elsewhere, UPDATE_1)
    await database.admin.execute("UPDATE memory_jobs SET result = result || '{\"undone_at\": \"now\"}' "
                                 "WHERE id = $1", job)
    with pytest.raises(Conflict, match="was undone"):
        await accept(decisions, jobs, elsewhere, job)


async def test_a_credential_that_cannot_see_the_job_accepts_nothing(
        database: Database, settings: Settings, chat: ChatAPI, alice: Principal) -> None:
    first, _, job = await suggested(database, settings, chat, alice, UPDATE_1)
    service = await MemoryService.open(database, settings)
    confined = alice.model_copy(update={"project_id": "elsewhere"})
    from mcp_memory.errors import NotFound

    with pytest.raises(NotFound, match=f"job: no decision job {job}"):
        await accept(DecisionRepository(service.repo), JobRepository(service.repo), confined, job)
    reader = alice.model_copy(update={"permissions": frozenset({"read"})})
    with pytest.raises(Exception, match="write"):
        await accept(DecisionRepository(service.repo), JobRepository(service.repo), reader, job)
    assert (await state(service, alice, first["id"]))["superseded_by"] is None
    with pytest.raises(InvalidInput, match="memory: "):
        await accept(DecisionRepository(service.repo), JobRepository(service.repo), alice, job, uuid4())


async def test_accept_over_mcp_with_the_cli_checks(database: Database, settings: Settings, chat: ChatAPI,
                                                   alice: Principal) -> None:
    from mcp import Client

    from mcp_memory.server import build_server

    first, second, job = await suggested(database, settings, chat, alice, UPDATE_1)
    read_only = settings.model_copy(update={"local_permissions": "read"})
    async with Client(build_server(read_only)) as client:
        denied = await client.call_tool("memory_accept_suggestion", {"job": job})
        assert denied.is_error and "write" in denied.content[0].text
    async with Client(build_server(settings)) as client:
        bad = await client.call_tool("memory_accept_suggestion", {"job": job, "memory": str(uuid4())})
        assert bad.is_error and "memory: " in bad.content[0].text
        done = await client.call_tool("memory_accept_suggestion", {"job": job})
        assert not done.is_error, done.content[0].text
        assert done.structured_content["accepted"] == [str(first["id"])]
        service = await MemoryService.open(database, settings)
        assert (await state(service, alice, first["id"]))["superseded_by"] == second["id"]
        undone = await client.call_tool("memory_undo_decision", {"target": str(first["id"])})
        assert not undone.is_error and (await state(service, alice, first["id"]))["superseded_by"] is None

"""`mcp-memory hook <event>` run the way a harness runs it: a subprocess with the hook JSON on
stdin, stdout checked against the harness's documented output shape, exit status 0 always.

Capture events hand their work to a detached worker and return at once, so a test of what they
stored waits for the workers of its own data dir to finish (`settle`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from mcp_memory.config import Settings
from mcp_memory.models import MemoryFilter, Principal
from mcp_memory.service import MemoryService

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"
CLI = str(Path(sys.executable).with_name("mcp-memory"))
# Functional tests must not depend on this machine's speed; the budget has tests of its own.
RELAXED = {"MCP_MEMORY_RECALL_TIMEOUT_S": "60", "MCP_MEMORY_SESSION_START_TIMEOUT_S": "60"}


WORKER = "mcp_memory.capture.worker"


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's own data dir: the capture status and the catch-up state live there, and the
    detached workers of a test are told apart by it."""
    folder = tmp_path / "data"
    monkeypatch.setenv("MCP_MEMORY_DATA_DIR", str(folder))
    return folder


def workers(data_dir: Path) -> list[psutil.Process]:
    """The detached capture workers started with this data dir."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if WORKER in (proc.info["cmdline"] or []) and proc.environ().get("MCP_MEMORY_DATA_DIR") == str(data_dir):
                found.append(proc)
        except psutil.Error:
            continue
    return found


async def settle(data_dir: Path) -> None:
    """Wait (at most 180 s) until every worker of this data dir has finished: they are other
    processes, so polling is the only way to hear of it."""
    with anyio.fail_after(180):
        for _ in range(1_000_000):
            if not workers(data_dir):
                return
            await anyio.sleep(0.1)


def hook(event: str, payload: Any, db_url: str, *flags: str, env: dict[str, str] | None = None,
         raw: str | None = None) -> subprocess.CompletedProcess[str]:
    args = [CLI, "hook", event, "--database-url", db_url, "--user", "alice", *flags]
    out = subprocess.run(args, input=raw if raw is not None else json.dumps(payload), capture_output=True,
                         text=True, timeout=180, env={**os.environ, **RELAXED, **(env or {})})
    assert out.returncode == 0, out.stderr   # never fail the user's turn
    return out


def claude(event: str, **fields: Any) -> dict[str, Any]:
    """A Claude Code hook input: the common fields and the event's own."""
    return {"session_id": "0b7f3c2a-1111-4e5f-9a8b-222233334444", "transcript_path": "/nonexistent.jsonl",
            "cwd": "/tmp", "permission_mode": "default", "hook_event_name": event, **fields}


def context_of(out: subprocess.CompletedProcess[str], event: str) -> str:
    """The documented shape: one JSON object, hookSpecificOutput with the event name and
    additionalContext, nothing else."""
    answer = json.loads(out.stdout)
    assert list(answer) == ["hookSpecificOutput"]
    assert set(answer["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}
    assert answer["hookSpecificOutput"]["hookEventName"] == event
    return answer["hookSpecificOutput"]["additionalContext"]


@pytest.fixture
async def stored(service: MemoryService, alice: Principal) -> None:
    await service.write(alice, "Production deploys happen only on Tuesdays after the standup.", kind="procedure",
                        pinned=True, priority=10, scope="user")
    await service.write(alice, "The job queue runs on PostgreSQL with SKIP LOCKED; Redis was removed.",
                        kind="decision", scope="project")
    await service.write(alice, "Dana prefers small commits with imperative messages.", kind="preference",
                        scope="project")
    await service.write(alice, "User: the office plant needs water on Fridays", kind="episode", scope="project",
                        tags=["session:0b7f3c2a-1111-4e5f-9a8b-222233334444"])


async def test_session_start_gives_core_and_recent_project_memories(stored: None, db_url: str) -> None:
    out = hook("session-start", claude("SessionStart", source="startup", model="claude-sonnet-4-5"), db_url,
               "--project", "proj-x")
    text = context_of(out, "SessionStart")
    assert "Core memories" in text and "Production deploys happen only on Tuesdays" in text
    assert "Recent memories for project proj-x" in text and "SKIP LOCKED" in text
    assert "office plant" not in text   # episodes are the raw conversation, not session-start context
    assert text.count("<memory ") == 3 and "not instructions" in text


async def test_prompt_recall_adds_relevant_memories_only(stored: None, db_url: str) -> None:
    out = hook("prompt-submit", claude("UserPromptSubmit", prompt="Which database does our job queue use?"),
               db_url, "--project", "proj-x")
    text = context_of(out, "UserPromptSubmit")
    assert "SKIP LOCKED" in text and "auto-recall" in text
    assert "office plant" not in text   # this session's own turns are already in the model's context
    nothing = hook("prompt-submit", claude("UserPromptSubmit", prompt="Write a limerick about penguins on a ski trip"),
                   db_url, "--project", "proj-x")
    assert nothing.stdout == ""
    slash = hook("prompt-submit", claude("UserPromptSubmit", prompt="/compact"), db_url, "--project", "proj-x")
    assert slash.stdout == ""


async def test_recall_respects_the_character_budget(stored: None, db_url: str) -> None:
    out = hook("prompt-submit", claude("UserPromptSubmit", prompt="Which database does our job queue use?"),
               db_url, "--project", "proj-x", env={"MCP_MEMORY_RECALL_BUDGET_CHARS": "60"})
    assert out.stdout == ""   # no memory fits 60 characters: nothing rather than half of one


async def test_stop_captures_the_transcript_once(service: MemoryService, db_url: str, tmp_path: Path,
                                                 data_dir: Path) -> None:
    repo = tmp_path / "shop"
    (repo / ".git").mkdir(parents=True)   # the project comes from the payload's cwd, as for stdio
    transcript = tmp_path / "projects" / "session.jsonl"
    transcript.parent.mkdir()
    shutil.copy(FIXTURES / "claude_code_session.jsonl", transcript)
    payload = claude("Stop", transcript_path=str(transcript), cwd=str(repo), stop_hook_active=False)
    p = Principal(user_id="alice", agent_id="claude-code", project_id="shop", actor="test:alice")
    first = hook("stop", payload, db_url)
    assert first.stdout == "" and first.stderr == ""   # Stop: nothing on stdout (it could block the stop)
    await settle(data_dir)
    assert len((await service.list(p, MemoryFilter(kinds=["episode"]), limit=50)).memories) == 4
    hook("stop", payload, db_url)   # the next Stop: nothing new
    with transcript.open("a") as f:
        f.write((FIXTURES / "claude_code_more.jsonl").read_text())
    hook("pre-compact", claude("PreCompact", transcript_path=str(transcript), cwd=str(repo), trigger="auto",
                               custom_instructions=""), db_url)
    hook("session-end", claude("SessionEnd", transcript_path=str(transcript), cwd=str(repo), reason="other"),
         db_url)
    await settle(data_dir)
    episodes = (await service.list(p, MemoryFilter(kinds=["episode"]), order="oldest", limit=50)).memories
    assert len(episodes) == 6 and {e.scope.project_id for e in episodes} == {"shop"}
    assert all("session:3f1c6a7e-2b7d-4d1a-9a51-0c1f2e3d4b5a" in e.tags for e in episodes)
    facts = (await service.list(p, MemoryFilter(kinds=["fact", "preference", "decision"]), limit=50)).memories
    assert len(facts) == 4


def session_file(folder: Path, session: str, fixture: str = "claude_code_session.jsonl") -> Path:
    """A copy of a Claude Code transcript as session `session` in `folder` (a project's
    transcripts directory); tests never point hooks at the fixtures folder, which a catch-up would
    take whole."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session}.jsonl"
    path.write_text((FIXTURES / fixture).read_text().replace("3f1c6a7e-2b7d-4d1a-9a51-0c1f2e3d4b5a", session))
    return path


async def test_capture_off_stores_nothing(service: MemoryService, alice: Principal, db_url: str, tmp_path: Path,
                                          data_dir: Path) -> None:
    payload = claude("Stop", transcript_path=str(session_file(tmp_path / "projects", "s-off")))
    hook("stop", payload, db_url, "--project", "proj-x", env={"MCP_MEMORY_CAPTURE": "false"})
    hook("stop", payload, db_url, "--project", "proj-x", env={"MCP_MEMORY_CAPTURE_EXCLUDE_PROJECTS": '["proj-x"]'})
    await settle(data_dir)
    assert (await service.list(alice)).memories == []


async def test_openclaw_recall_and_capture(stored: None, service: MemoryService, db_url: str, tmp_path: Path,
                                           data_dir: Path) -> None:
    event = {"prompt": "Which database does our job queue use?", "sessionKey": "agent:main:main",
             "sessionId": "9b2d7c1e", "workspaceDir": "/tmp", "agentId": "main"}
    out = hook("prompt-submit", event, db_url, "--harness", "openclaw", "--project", "proj-x")
    answer = json.loads(out.stdout)
    assert list(answer) == ["prependContext"] and "SKIP LOCKED" in answer["prependContext"]
    lines = [json.loads(line) for line in (FIXTURES / "openclaw_session.jsonl").read_text().splitlines()]
    messages = [e["message"] for e in lines if e["type"] == "message"]
    end = {"messages": messages, "success": True, "sessionId": "9b2d7c1e", "sessionKey": "agent:main:main",
           "workspaceDir": "/tmp"}
    assert hook("stop", end, db_url, "--harness", "openclaw", "--project", "proj-x").stdout == ""
    await settle(data_dir)
    hook("stop", end, db_url, "--harness", "openclaw", "--project", "proj-x")
    await settle(data_dir)
    p = Principal(user_id="alice", agent_id="openclaw", project_id="proj-x", actor="test:alice")
    episodes = (await service.list(p, MemoryFilter(kinds=["episode"], tags=["openclaw"]), limit=50)).memories
    assert len(episodes) == 3
    session = tmp_path / "sessions" / "other.jsonl"
    session.parent.mkdir()
    shutil.copy(FIXTURES / "openclaw_session.jsonl", session)
    from_file = hook("stop", {"sessionFile": str(session), "sessionId": "other"},
                     db_url, "--harness", "openclaw", "--project", "proj-x")
    assert from_file.stdout == "" and from_file.stderr == ""


@pytest.mark.parametrize("raw, said", [("not json", "ignored"), ("[1, 2]", "JSON object"), ("", None)])
def test_bad_input_exits_zero_with_the_reason(raw: str, said: str | None, db_url: str) -> None:
    out = hook("prompt-submit", None, db_url, raw=raw)
    assert out.stdout == ""
    if said:
        assert said in out.stderr


def test_our_failures_never_fail_the_turn(db_url: str, tmp_path: Path) -> None:
    down = hook("prompt-submit", claude("UserPromptSubmit", prompt="which database for the queue?"),
                "postgresql://nobody@127.0.0.1:1/none")
    assert down.stdout == "" and "failed, skipped" in down.stderr
    missing = hook("stop", claude("Stop", transcript_path=str(tmp_path / "gone.jsonl")), db_url)
    assert missing.stdout == "" and "gone.jsonl" in missing.stderr
    bad_setting = hook("prompt-submit", claude("UserPromptSubmit", prompt="anything at all"), db_url,
                       env={"MCP_MEMORY_RECALL_LIMIT": "many"})
    assert bad_setting.stdout == "" and "recall_limit" in bad_setting.stderr


async def test_recall_past_its_budget_prints_nothing(stored: None, db_url: str) -> None:
    out = hook("prompt-submit", claude("UserPromptSubmit", prompt="Which database does our job queue use?"),
               db_url, "--project", "proj-x", env={"MCP_MEMORY_RECALL_TIMEOUT_S": "0.001"})
    assert out.stdout == "" and "took longer than" in out.stderr


def test_settings_defaults_match_the_issue() -> None:
    s = Settings()
    assert s.recall_timeout_s <= 1.5 and s.capture and s.recall_budget_chars > 0


async def test_recall_without_vectors_needs_shared_words(stored: None, db_url: str) -> None:
    """Embedder off (or not ready within the budget): full text alone, and only hits that share
    words with the prompt."""
    off = {"MCP_MEMORY_EMBEDDING_PROVIDER": "none"}
    out = hook("prompt-submit", claude("UserPromptSubmit", prompt="Which database does our job queue use?"),
               db_url, "--project", "proj-x", env=off)
    assert "SKIP LOCKED" in context_of(out, "UserPromptSubmit")
    nothing = hook("prompt-submit", claude("UserPromptSubmit", prompt="Write a limerick about penguins on a ski trip"),
                   db_url, "--project", "proj-x", env=off)
    assert nothing.stdout == ""


async def test_a_late_vector_falls_back_to_full_text(stored: None, service: MemoryService, settings: Settings) -> None:
    import time

    from mcp_memory.capture.recall import prompt_context

    p = Principal(user_id="alice", agent_id="claude-code", project_id="proj-x", actor="test:alice")
    text = await prompt_context(service, settings, p, "Which database does our job queue use?", None,
                                deadline=time.monotonic())   # no time left to embed the prompt
    assert "SKIP LOCKED" in text


async def test_concurrent_hook_processes_store_each_turn_once(service: MemoryService, alice: Principal,
                                                              db_url: str, tmp_path: Path, data_dir: Path) -> None:
    """Stop (in the background) and SessionEnd can run at once on one transcript."""
    payload = json.dumps(claude("Stop", transcript_path=str(session_file(tmp_path / "projects", "s-many"))))
    args = [CLI, "hook", "stop", "--database-url", db_url, "--user", "alice", "--project", "proj-x"]
    results: list[subprocess.CompletedProcess[bytes]] = []

    async def one() -> None:
        results.append(await anyio.run_process(args, input=payload.encode(), check=False))

    with anyio.fail_after(180):
        async with anyio.create_task_group() as group:
            for _ in range(4):
                group.start_soon(one)
    assert all(r.returncode == 0 and r.stdout == b"" for r in results), [r.stderr for r in results]
    await settle(data_dir)
    p = Principal(user_id="alice", agent_id="claude-code", project_id="proj-x", actor="test:alice")
    assert len((await service.list(p, MemoryFilter(kinds=["episode"]), limit=50)).memories) == 4
    history = [await service.history(p, m.id) for m in (await service.list(p, limit=50)).memories]
    assert all(len(h.entries) == 1 for h in history)   # each stored once, never rewritten


async def test_what_session_start_gave_is_not_recalled_again_in_that_session(stored: None, db_url: str) -> None:
    """The recall ledger is filled by a real session-start hook: the session's first prompt does
    not inject the same memory a second time (a fresh session still gets it)."""
    session = "5e55104e-aaaa-4bbb-8ccc-ddddeeeeffff"
    asked = "Which database does our job queue use?"
    start = hook("session-start", claude("SessionStart", source="startup", session_id=session), db_url,
                 "--project", "proj-x")
    assert "SKIP LOCKED" in context_of(start, "SessionStart")
    again = hook("prompt-submit", claude("UserPromptSubmit", prompt=asked, session_id=session), db_url,
                 "--project", "proj-x")
    assert "SKIP LOCKED" not in again.stdout, again.stdout
    fresh = hook("prompt-submit", claude("UserPromptSubmit", prompt=asked, session_id="another-session"), db_url,
                 "--project", "proj-x")
    assert "SKIP LOCKED" in context_of(fresh, "UserPromptSubmit")


def _launch_dir(tmp_path: Path, kind: str) -> Path:
    """Where Claude Code was started: a plain folder, or a folder inside a git repository."""
    if kind == "plain":
        folder = tmp_path / "notes-folder"
    else:
        (tmp_path / "the-repo" / ".git").mkdir(parents=True)
        folder = tmp_path / "the-repo" / "services" / "api"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.parametrize("kind", ["plain", "git-subfolder"])
@pytest.mark.parametrize("moved", [False, True])
def test_claude_code_hooks_name_the_project_as_its_mcp_server_does(
        kind: str, moved: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claude Code gives its MCP server the launch directory as a root (server/state.py binds
    local_principal(roots=[it])); the hooks must land in that namespace, also where the session's
    cwd has moved elsewhere (CLAUDE_PROJECT_DIR is still the launch directory)."""
    from mcp_memory.auth import local_principal
    from mcp_memory.capture.hooks import HookInput, principal_for

    for name in ("MCP_MEMORY_PROJECT", "MCP_MEMORY_AGENT", "MCP_MEMORY_USER"):
        monkeypatch.delenv(name, raising=False)
    launch = _launch_dir(tmp_path, kind)
    elsewhere = tmp_path / "scratch"
    elsewhere.mkdir()
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(launch))
    settings = Settings(user="alice")
    server = local_principal(settings, client_name="claude-code", roots=[launch])
    hooked = principal_for(settings, "claude-code", HookInput(cwd=str(elsewhere if moved else launch)))
    assert server.project_id == ("notes-folder" if kind == "plain" else "the-repo")
    assert (hooked.user_id, hooked.agent_id, hooked.project_id) == (server.user_id, server.agent_id,
                                                                      server.project_id)


async def test_a_hook_outside_git_recalls_the_servers_project(service: MemoryService, db_url: str,
                                                              tmp_path: Path) -> None:
    """Through a real hook process: what the agent stored over MCP in a non-git launch folder
    (project = the folder's name) is what the hook recalls there."""
    launch = _launch_dir(tmp_path, "plain")
    agent = Principal(user_id="alice", agent_id="claude-code", project_id="notes-folder", actor="test:alice")
    await service.write(agent, "The staging cluster is named heron and lives in eu-west-3.", kind="fact",
                        scope="project")
    out = hook("prompt-submit", claude("UserPromptSubmit", prompt="Where does the staging cluster heron live?",
                                       cwd=str(launch)), db_url, env={"CLAUDE_PROJECT_DIR": str(launch)})
    assert "eu-west-3" in context_of(out, "UserPromptSubmit")


async def test_a_capture_logs_one_summary_line_at_info(service: MemoryService, db_url: str, tmp_path: Path,
                                                       data_dir: Path) -> None:
    """The worker's log (capture.log under the data dir) holds one INFO line per capture: the
    capturer's summary, not a second "done" line beside it."""
    repo = tmp_path / "logged"
    (repo / ".git").mkdir(parents=True)
    transcript = session_file(tmp_path / "projects", "9d0e6a38-5b1c-4f57-8a37-0d5e1c2b3a4f")
    hook("stop", claude("Stop", transcript_path=str(transcript), cwd=str(repo)), db_url,
         env={"MCP_MEMORY_LOG_LEVEL": "INFO"})
    await settle(data_dir)
    info = [line for line in (data_dir / "capture.log").read_text().splitlines() if " INFO " in line]
    assert len(info) == 1 and "captured" in info[0] and "4 episodes stored" in info[0], info


def test_a_session_start_says_once_a_day_that_the_hooks_are_an_earlier_installs(db_url: str, tmp_path: Path,
                                                                                 data_dir: Path) -> None:
    """Hook commands an earlier install wrote (a capture hook `claude -p` can kill before it hands
    off): the next session start tells the model to have the user run install again, once a day;
    the commands this version writes get no such line."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    payload = claude("SessionStart", cwd=str(tmp_path), source="startup")
    assert subprocess.run([CLI, "install", "claude-code", "--home", str(home)], capture_output=True,
                          timeout=120).returncode == 0
    current = hook("session-start", payload, db_url, env={"HOME": str(home)})
    assert "earlier install" not in current.stdout + current.stderr
    settings = home / ".claude" / "settings.json"
    settings.write_text(settings.read_text().replace("trap '' TERM; exec ", ""))
    first = context_of(hook("session-start", payload, db_url, env={"HOME": str(home)}), "SessionStart")
    assert "earlier install's" in first and "`mcp-memory install claude-code` again" in first, first
    mark = data_dir / "stale-hooks-noticed"
    again = hook("session-start", payload, db_url, env={"HOME": str(home)})
    assert mark.is_file() and "earlier install" not in again.stdout   # once a day, not every session
    a_day_ago = time.time() - 25 * 3600
    os.utime(mark, (a_day_ago, a_day_ago))
    later = context_of(hook("session-start", payload, db_url, env={"HOME": str(home)}), "SessionStart")
    assert "earlier install's" in later, later

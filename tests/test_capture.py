"""Transcript capture: parsing the documented formats, redaction, trigger patterns, and storing
through the real service on a real database, with delta tracking (append, re-run, truncate,
concurrent runs) and the `mcp-memory capture` command as a subprocess."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_memory.capture.capture import Capturer
from mcp_memory.capture.redact import redact
from mcp_memory.capture.transcripts import parse_text, read
from mcp_memory.capture.triggers import TRIGGERS, Matcher
from mcp_memory.config import Settings
from mcp_memory.models import MemoryFilter, Principal
from mcp_memory.service import MemoryService

FIXTURES = Path(__file__).parent / "fixtures" / "transcripts"
CLI = str(Path(sys.executable).with_name("mcp-memory"))
SESSION = "3f1c6a7e-2b7d-4d1a-9a51-0c1f2e3d4b5a"


# --- parsing --------------------------------------------------------------------------------------

def test_claude_code_transcript_turns() -> None:
    t = read(FIXTURES / "claude_code_session.jsonl")
    assert (t.format, t.session_id, t.cwd) == ("claude-code", SESSION, "/home/dana/work/shop")
    assert [x.role for x in t.turns] == ["user", "assistant", "user", "assistant"]
    work = t.turns[1]
    # Two lines of one reply, the tool call and its result (a user line) fold into one assistant turn.
    assert work.text.startswith("Nice to meet you, Dana.")
    assert "[tool Bash(" in work.text and "[tool output," in work.text and "SKIP LOCKED" in work.text
    assert "The user wants a queue" not in work.text      # thinking is not stored
    assert all("subagent" not in x.text and "Caveat" not in x.text for x in t.turns)  # sidechain, meta
    assert t.turns[0].at is not None and t.turns[0].at.isoformat() == "2026-03-02T09:00:00+00:00"


def test_openclaw_transcript_turns() -> None:
    t = read(FIXTURES / "openclaw_session.jsonl")
    assert (t.format, t.session_id) == ("openclaw", "9b2d7c1e-5f4a-4e3b-8c2d-1a0b9c8d7e6f")
    assert [x.role for x in t.turns] == ["user", "assistant", "user"]
    assert "[tool memory_write(" in t.turns[1].text and t.turns[1].text.endswith("Noted: Ana's birthday is on 14 May.")


def test_plain_transcript_turns() -> None:
    t = read(FIXTURES / "plain_chat.txt")
    assert t.format == "plain"
    assert [x.role for x in t.turns] == ["user", "assistant", "user", "assistant", "user"]
    assert t.turns[2].text == "We will use the lake house in Sintra again.\nIt sleeps twelve people."
    named = parse_text("Dana: I prefer tea.\nBot: Noted.\nDana: Thanks a lot.")
    assert [(x.role, x.speaker) for x in named.turns] == [("user", "Dana"), ("assistant", "Bot"), ("user", "Dana")]


def test_a_line_cut_mid_write_waits_for_the_next_run() -> None:
    lines = (FIXTURES / "claude_code_session.jsonl").read_text().splitlines()
    partial = "\n".join(lines[:3]) + "\n" + lines[3][: len(lines[3]) // 2]
    assert len(parse_text(partial).turns) == 2


# --- redaction ------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, kind", [
    ("key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv_wxyz", "anthropic-key"),
    ("OPENAI_API_KEY=sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz", "openai-key"),
    ("aws AKIAIOSFODNN7EXAMPLE here", "aws-access-key"),
    ("ghp_0123456789abcdefghijABCDEFGHIJklmnop", "github-token"),
    ("xoxb-1234567890-abcdefghij", "slack-token"),
    ("Authorization: Bearer abc.def-ghi_jkl.mnopqrstu", "bearer-token"),
    ("postgres://app:s3cr3t-pw@db:5432/prod", "url-password"),
    ('{"password": "correct-horse-battery"}', "password"),
    ("db_password = Tr0ub4dor&3", "password"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----", "private-key"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "jwt"),
    ("mcpm_YWxpY2U.x8Kq3mN0vLr7TzYb2PcW5eHs9", "mcp-memory-key"),
])
def test_secrets_are_redacted(text: str, kind: str) -> None:
    out, kinds = redact(text)
    assert kind in kinds, (out, kinds)
    assert f"[REDACTED:{kind}]" in out


@pytest.mark.parametrize("text", [
    "I like password managers.", "The token bucket refills every second.", "Use sk-learn for this",
    "Run git push origin main", "See https://example.com/docs:8080",
])
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == (text, [])


# --- trigger patterns -----------------------------------------------------------------------------

@pytest.mark.parametrize("sentence, kind, trigger", [
    ("Remember that the staging database listens on port 5433.", "fact", "remember"),
    ("Please remember: invoices go out on the 3rd.", "fact", "remember"),
    ("I prefer tabs over spaces.", "preference", "prefer"),
    ("I really hate YAML configuration files.", "preference", "prefer"),
    ("My favourite editor is Helix.", "preference", "favourite"),
    ("We decided to use PostgreSQL for the job queue.", "decision", "decided"),
    ("We will use Terraform for all infrastructure.", "decision", "will-use"),
    ("Let's go with the blue theme.", "decision", "decision"),
    ("My name is Dana Whitfield.", "fact", "my-name"),
    ("I work at Acme Robotics as a platform engineer.", "fact", "identity"),
    ("My phone number is +351 912 345 678.", "fact", "contact"),
    ("You can reach me at dana@example.com any time.", "fact", "email"),
    ("Always run the migrations test before pushing.", "preference", "always-never"),
    ("Never commit directly to main.", "preference", "always-never"),
])
def test_trigger_patterns_fire(sentence: str, kind: str, trigger: str) -> None:
    found = Matcher().find(sentence)
    assert [(f.kind, f.trigger, f.text) for f in found] == [(kind, trigger, sentence)]


@pytest.mark.parametrize("sentence", [
    "Do you remember what we did yesterday?",
    "Do you prefer tabs or spaces?",
    "I'd like to ask a question about the parser.",
    "The function always returns None?",
    "This branch is never reached in practice.",
    "Please fix the failing test in parser.py.",
    "Let me check the logs first.",
    "ok",
])
def test_trigger_patterns_stay_quiet(sentence: str) -> None:
    assert Matcher().find(sentence) == []


def test_trigger_table_is_data() -> None:
    from mcp_memory.capture.triggers import Trigger

    TRIGGERS["xx"] = [Trigger("merken", "fact", r"^merk dir\b")]
    try:
        assert [f.trigger for f in Matcher(["xx"]).find("Merk dir, dass der Server in Frankfurt steht.")] == ["merken"]
        assert Matcher(["en"]).find("Merk dir, dass der Server in Frankfurt steht.") == []
    finally:
        del TRIGGERS["xx"]


# --- storing, delta tracking ----------------------------------------------------------------------

async def _all(service: MemoryService, p: Principal, kinds: list[str] | None = None) -> list:
    page = await service.list(p, MemoryFilter(kinds=kinds) if kinds else None, order="oldest", limit=200)
    return page.memories


async def test_capture_stores_episodes_and_linked_facts(service: MemoryService, settings: Settings,
                                                        alice: Principal) -> None:
    t = read(FIXTURES / "claude_code_session.jsonl")
    report = await Capturer(service, settings, "claude-code").capture(alice, t, key=f"claude-code:{SESSION}")
    assert (report.turns, report.new_turns, report.episodes, report.rewritten) == (4, 4, 4, False)
    episodes = await _all(service, alice, ["episode"])
    assert [e.content.split(":")[0] for e in episodes] == ["User", "Assistant", "User", "Assistant"]
    assert all(f"session:{SESSION}" in e.tags and "claude-code" in e.tags for e in episodes)
    assert [e.occurred_at.isoformat() for e in episodes][0] == "2026-03-02T09:00:00+00:00"
    # The pasted key and the password in the tool output are gone before anything was stored.
    everything = " ".join(m.content for m in await _all(service, alice))
    assert "sk-proj-" not in everything and "hunter2" not in everything
    assert "[REDACTED:openai-key]" in everything and report.redacted >= 2
    facts = {m.content: m for m in await _all(service, alice, ["fact", "preference", "decision"])}
    assert {(m.kind, m.metadata["trigger"]) for m in facts.values()} == {
        ("fact", "my-name"), ("decision", "decided"), ("preference", "prefer")}
    ids = {str(e.id) for e in episodes}
    assert all(m.metadata["episode_id"] in ids for m in facts.values())
    name = next(m for m in facts.values() if m.metadata["trigger"] == "my-name")
    assert name.content == "Hi! My name is Dana Whitfield." or name.content == "My name is Dana Whitfield."
    assert next(e for e in episodes if str(e.id) == name.metadata["episode_id"]).content.startswith("User: Hi!")


async def test_delta_append_rerun_truncate(service: MemoryService, settings: Settings, alice: Principal,
                                           tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    first = (FIXTURES / "claude_code_session.jsonl").read_text()
    more = (FIXTURES / "claude_code_more.jsonl").read_text()
    capturer = Capturer(service, settings, "claude-code")
    key = f"claude-code:{SESSION}"

    path.write_text(first)
    assert (await capturer.capture(alice, read(path), key=key)).episodes == 4
    again = await capturer.capture(alice, read(path), key=key)        # re-run: nothing new
    assert (again.new_turns, again.episodes, again.duplicates) == (0, 0, 0)

    path.write_text(first + more)                                      # appended: only the new turns
    grown = await capturer.capture(alice, read(path), key=key)
    assert (grown.turns, grown.new_turns, grown.episodes, grown.rewritten) == (6, 2, 2, False)
    assert grown.facts == 1                                            # "Always run the migrations test …"

    lines = first.splitlines(keepends=True)
    path.write_text("".join(lines[:3]))                                # cut short (rewritten by the harness)
    cut = await capturer.capture(alice, read(path), key=key)
    # The reply cut mid-way is the same turn as its stored episode, which already says more.
    assert cut.rewritten and (cut.new_turns, cut.episodes) == (1, 0)

    path.write_text(first + more)                                      # and grown back: found again, no duplicates
    back = await capturer.capture(alice, read(path), key=key)
    assert back.rewritten and (back.new_turns, back.episodes, back.facts) == (5, 0, 0)
    assert back.duplicates == 4 + 2   # four turns and their two facts, found by their text
    assert len(await _all(service, alice, ["episode"])) == 6


async def test_concurrent_runs_store_each_turn_once(service: MemoryService, settings: Settings,
                                                    alice: Principal) -> None:
    t = read(FIXTURES / "openclaw_session.jsonl")
    key = f"openclaw:{t.session_id}"
    reports = await asyncio.gather(*(Capturer(service, settings, "openclaw").capture(alice, t, key=key)
                                     for _ in range(5)))
    assert sorted(r.new_turns for r in reports) == [0, 0, 0, 0, 3]
    assert sum(r.episodes for r in reports) == 3 and sum(r.duplicates for r in reports) == 0
    assert len(await _all(service, alice, ["episode"])) == 3


async def test_capture_can_be_switched_off_per_project(service: MemoryService, settings: Settings,
                                                       alice: Principal) -> None:
    off = settings.model_copy(update={"capture_exclude_projects": ["proj-x"]})
    report = await Capturer(service, off, "cli").capture(alice, read(FIXTURES / "plain_chat.txt"), key="plain")
    assert report.skipped and "proj-x" in report.skipped
    assert await _all(service, alice) == []


def test_capture_command(db_url: str, tmp_path: Path) -> None:
    path = tmp_path / "chat.txt"
    shutil.copy(FIXTURES / "plain_chat.txt", path)
    args = [CLI, "capture", str(path), "--json", "--database-url", db_url, "--user", "bob", "--project", "offsite"]
    first = subprocess.run(args, capture_output=True, text=True, timeout=180)
    assert first.returncode == 0, first.stderr
    [report] = json.loads(first.stdout)
    assert (report["format"], report["episodes"], report["facts"]) == ("plain", 5, 2)
    with path.open("a") as f:
        f.write("Assistant: I'll pass it on.\n")
    second = subprocess.run(args, capture_output=True, text=True, timeout=180)
    [report] = json.loads(second.stdout)
    assert (report["new_turns"], report["episodes"]) == (1, 1)
    missing = subprocess.run([CLI, "capture", str(tmp_path / "nope.jsonl"), "--database-url", db_url],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and "nope.jsonl" in missing.stderr


async def test_a_turn_that_grew_updates_its_episode(service: MemoryService, settings: Settings, alice: Principal,
                                                    tmp_path: Path) -> None:
    """Captured mid-reply (the harness was still writing), then again: one episode, updated."""
    path = tmp_path / "session.jsonl"
    lines = (FIXTURES / "claude_code_session.jsonl").read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:3]))            # the reply's first line only
    capturer = Capturer(service, settings, "claude-code")
    key = f"claude-code:{SESSION}"
    assert (await capturer.capture(alice, read(path), key=key)).episodes == 2
    path.write_text("".join(lines))
    grown = await capturer.capture(alice, read(path), key=key)
    assert grown.rewritten and grown.episodes == 2   # the two turns after it; the grown one is updated
    episodes = await _all(service, alice, ["episode"])
    assert len(episodes) == 4
    reply = next(e for e in episodes if e.metadata["turn"] == 1)
    assert "SKIP LOCKED" in reply.content and reply.version == 2
    history = await service.history(alice, reply.id)
    assert [h.event for h in history.entries] == ["ADD", "UPDATE"]


async def test_cursors_are_per_user_under_row_level_security(service: MemoryService, settings: Settings,
                                                            alice: Principal) -> None:
    from tests.conftest import principal

    await Capturer(service, settings, "cli").capture(alice, read(FIXTURES / "plain_chat.txt"), key="chat")
    for who, expected in ((alice, 1), (principal("bob"), 0)):
        async with service.repo.transaction(who) as conn:   # the app role: only RLS decides
            assert await conn.fetchval("SELECT count(*) FROM transcript_cursors") == expected

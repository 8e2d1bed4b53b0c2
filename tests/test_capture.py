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


@pytest.mark.parametrize("sentence, fact", [
    ("Remember that the staging database listens on port 5433.", "the staging database listens on port 5433."),
    ("Please remember: invoices go out on the 3rd.", "invoices go out on the 3rd."),
    ("Remember that the staging cluster is called kestrel-7", "the staging cluster is called kestrel-7"),
    ("Don't forget, kestrel-7 is staging.", "kestrel-7 is staging."),
    ("note that npm is banned here.", "npm is banned here."),
])
def test_a_fact_asked_to_be_kept_is_stored_without_the_asking(sentence: str, fact: str) -> None:
    assert [(f.kind, f.trigger, f.text) for f in Matcher().find(sentence)] == [("fact", "remember", fact)]


@pytest.mark.parametrize("text, fact", [
    ("The staging cluster is kestrel-7. Note this down please.", "The staging cluster is kestrel-7."),
    ("Our on-call rota changes on Mondays. Please write that down!", "Our on-call rota changes on Mondays."),
    ("Invoices go out on the 3rd.\nRemember this.", "Invoices go out on the 3rd."),
    ("Note this down please.", None),  # nothing before it in the message: no fact, never "down please."
    ("Is staging on port 5433? Note this down please.", None),  # a question is no fact
    ("My token is sk-live-abcdefghijklmnopqrstuvwx. Remember this.", None),  # nor a secret
])
def test_a_request_to_keep_what_was_just_said_keeps_that(text: str, fact: str | None) -> None:
    found = Matcher().find(text)
    assert [(f.kind, f.text) for f in found] == ([("fact", fact)] if fact else [])


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


def _session(session_id: str, turns: list[tuple[str, str]]) -> str:
    """A Claude Code transcript of `turns` (role, text), a minute apart."""
    return "".join(json.dumps({"type": role, "sessionId": session_id, "uuid": f"{session_id}-{i}",
                               "timestamp": f"2026-03-02T09:{i:02d}:00Z",
                               "message": {"role": role, "content": text}}) + "\n"
                   for i, (role, text) in enumerate(turns))


async def test_a_sessions_history_stays_whole_where_its_words_repeat(service: MemoryService, settings: Settings,
                                                                      alice: Principal, tmp_path: Path) -> None:
    capturer = Capturer(service, settings, "claude-code")
    said = [("user", "Ship the release."), ("assistant", "Understood, noted."), ("user", "And tag it."),
            ("assistant", "Understood, noted."), ("user", "And announce it."), ("assistant", "Understood, noted.")]
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    one.write_text(_session("s-one", said))
    two.write_text(_session("s-two", said[:2]))
    first = await capturer.capture(alice, read(one), key="claude-code:s-one")
    assert (first.episodes, first.duplicates) == (6, 0)                # three replies alike: three turns
    second = await capturer.capture(alice, read(two), key="claude-code:s-two")
    assert (second.episodes, second.duplicates) == (2, 0)              # the same words in another session
    episodes = await _all(service, alice, ["episode"])
    assert len(episodes) == 8
    assert sum(e.content == "Assistant: Understood, noted." and "session:s-one" in e.tags for e in episodes) == 3
    # Captured again with no cursor (a rewritten transcript): each turn is found, none stored twice.
    again = await Capturer(service, settings, "claude-code").capture(alice, read(one), key="claude-code:s-one-copy")
    assert (again.episodes, again.duplicates) == (0, 6)
    assert len(await _all(service, alice, ["episode"])) == 8


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


async def test_cursors_follow_the_services_rules(service: MemoryService, settings: Settings,
                                                 alice: Principal) -> None:
    """Capture reaches its cursors through the service: a run (its lock, the cursor it resumes
    from, where it ended) needs `write`, what went wrong is read with `read`, a cursor is its
    user's, and a key longer than its index holds is refused by name, nothing stored."""
    from mcp_memory.errors import InvalidInput, PermissionDenied
    from mcp_memory.transcript_cursors import KEY_CHARS
    from tests.conftest import principal

    cursors = service.transcripts
    await Capturer(service, settings, "cli").capture(alice, read(FIXTURES / "plain_chat.txt"), key="chat")
    stored = await cursors.get(alice, "chat")
    assert stored.turns > 0 and len(stored.memory_ids) == stored.turns
    reader = principal(permissions=frozenset({"read"}))
    with pytest.raises(PermissionDenied):
        async with cursors.locked(reader, "chat"):
            pass
    for denied in (cursors.get(reader, "chat"),
                   cursors.save(reader, "chat", [], [], session_id=None, path=None, rewritten=False)):
        with pytest.raises(PermissionDenied):
            await denied
    assert await cursors.get(alice, "chat") == stored
    assert (await cursors.get(principal("bob"), "chat")).turns == 0
    with pytest.raises(PermissionDenied):
        await cursors.with_problems(principal(permissions=frozenset({"write"})))
    assert isinstance(await cursors.with_problems(reader), list)
    long = "k" * (KEY_CHARS + 1)
    with pytest.raises(InvalidInput, match="transcript"):
        await cursors.save(alice, long, ["h"], [None], session_id=None, path=None, rewritten=False)
    assert (await cursors.get(alice, long[:KEY_CHARS])).turns == 0


# --- no session is lost (issue 26) ----------------------------------------------------------------

def _cc(kind: str, content: object, n: int, **extra: object) -> str:
    """One Claude Code transcript line, as the harness writes it (JSON.stringify: non-ASCII raw)."""
    return json.dumps({"type": kind, "sessionId": SESSION, "cwd": "/home/dana/work/shop", "uuid": f"x{n}",
                       "timestamp": f"2026-03-02T10:{n:02d}:00.000Z", "message": {"role": kind, "content": content},
                       **extra}, ensure_ascii=False)


def _binary_cat(n: int) -> list[str]:
    """The agent `cat`s a binary file: the tool output holds NUL characters (JSON \\u0000)."""
    return [_cc("assistant", [{"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": "cat a.out"}}],
                n),
            _cc("user", [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "\x7fELF\x02\x01\x01\x00\x00\x00"}],
                n + 1)]


async def _cursor(service: MemoryService, p: Principal, key: str):
    from mcp_memory.repository.transcripts import TranscriptRepository

    return await TranscriptRepository(service.repo).get(p, key)


async def test_a_nul_byte_costs_nothing(service: MemoryService, settings: Settings, alice: Principal,
                                        tmp_path: Path) -> None:
    """Old code: one NUL refused the whole batch ("items[1]: content contains a NUL character …
    nothing was written") on every run, forever."""
    path = tmp_path / "s.jsonl"
    lines = [_cc("user", "Please inspect the binary a.out for me.", 1), *_binary_cat(2),
             _cc("assistant", [{"type": "text", "text": "It is an ELF executable."}], 4),
             _cc("user", "Thanks. I prefer static binaries for deployment.", 5),
             _cc("assistant", [{"type": "text", "text": "Noted."}], 6)]
    path.write_text("\n".join(lines) + "\n")
    key = f"claude-code:{SESSION}"
    capturer = Capturer(service, settings, "claude-code")
    report = await capturer.capture(alice, read(path), key=key)
    assert (report.turns, report.episodes, report.skipped_turns, report.cleaned) == (4, 4, 0, 1)
    assert report.facts == 1
    episodes = await _all(service, alice, ["episode"])
    assert len(episodes) == 4
    elf = next(e for e in episodes if "ELF" in e.content)
    assert "\x00" not in elf.content and "\ufffd" in elf.content and elf.metadata["cleaned"] == ["NUL characters"]
    cursor = await _cursor(service, alice, key)
    assert cursor.turns == 4 and None not in cursor.memory_ids
    assert [(x["what"], x["turn"]) for x in cursor.problems] == [("cleaned", 1)]
    # Later runs go on as usual: nothing again, then only what is new.
    assert (await capturer.capture(alice, read(path), key=key)).new_turns == 0
    path.write_text("\n".join([*lines, _cc("user", "One more question.", 7)]) + "\n")
    later = await capturer.capture(alice, read(path), key=key)
    assert (later.new_turns, later.episodes) == (1, 1)
    assert [(x["what"], x["turn"]) for x in (await _cursor(service, alice, key)).problems] == [("cleaned", 1)]


async def test_invalid_text_is_cleaned_and_stored(service: MemoryService, settings: Settings, alice: Principal,
                                                  tmp_path: Path) -> None:
    """Bytes that are not UTF-8 in the file, and a lone surrogate escaped in the JSON (a
    truncated emoji), which old code passed on to be refused with the whole batch."""
    path = tmp_path / "s.jsonl"
    lone = _cc("user", "half an emoji LONE here", 3).replace("LONE", "\\ud83d")  # JSON escape, as written
    path.write_bytes(("\n".join([_cc("user", "Latin-1 bytes follow:", 1)]) + "\n").encode()
                     + _cc("assistant", [{"type": "text", "text": "caf"}], 2).encode().replace(b"caf", b"caf\xe9 \xff")
                     + b"\n" + lone.encode() + b"\n" + _cc("assistant", [{"type": "text", "text": "ok"}], 4).encode())
    report = await Capturer(service, settings, "claude-code").capture(alice, read(path), key="k")
    assert (report.turns, report.episodes, report.skipped_turns) == (4, 4, 0)
    contents = [e.content for e in await _all(service, alice, ["episode"])]
    assert "User: half an emoji \ufffd here" in contents
    assert any(c.startswith("Assistant: caf\ufffd") for c in contents)
    assert report.cleaned == 1


async def test_an_over_long_turn_is_cut_and_stored(service: MemoryService, settings: Settings, alice: Principal,
                                                   tmp_path: Path) -> None:
    """Turns longer than the store's content limit, tighter here than the capture's own: each is
    stored cut and says so (old code sliced the marker off with the store's limit and recorded
    nothing), and its secrets are redacted over the whole text first."""
    small = settings.model_copy(update={"max_content_chars": 1000, "capture_turn_chars": 8000})
    env = "\n".join(f"AWS_KEY_{i}=AKIA{i:016d}" for i in range(2000))
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([_cc("user", "Here is my env file:\n" + env, 1),
                               _cc("assistant", [{"type": "text", "text": "word " * 20_000}], 2),
                               _cc("user", "My name is Dana.", 3)]) + "\n")
    report = await Capturer(service, small, "claude-code").capture(alice, read(path), key="k")
    episodes = await _all(service, alice, ["episode"])
    assert len(episodes) == 3 and all(len(e.content) <= 1000 for e in episodes)
    assert all("AKIA0000" not in e.content for e in episodes)
    assert [e.content.endswith("more characters]") for e in episodes] == [True, True, False]
    assert (report.episodes, report.skipped_turns, report.cut) == (3, 0, 2)
    assert episodes[1].metadata["cut"] > 90_000
    assert episodes[0].metadata["redacted"] == ["aws-access-key"]
    problems = (await _cursor(service, alice, "k")).problems
    assert [(x["what"], x["turn"]) for x in problems] == [("cut", 0), ("cut", 1)]


@pytest.mark.parametrize("torn", ["cut", "glued", "not-an-object"])
async def test_a_torn_line_costs_that_line_only(service: MemoryService, settings: Settings, alice: Principal,
                                                tmp_path: Path, torn: str) -> None:
    """Old code read the whole file as plain text: 0 turns, nothing said."""
    good = [_cc("user", f"Question {n}?" if n % 2 else "x", n) if n % 2 else
            _cc("assistant", [{"type": "text", "text": f"Answer {n}."}], n) for n in range(1, 7)]
    broken = {"cut": good[2][: len(good[2]) // 2],
              "glued": good[2][: len(good[2]) // 2] + good[3],   # a writer died mid-line; the next line follows
              "not-an-object": "[1, 2]"}[torn]
    lines = [*good[:2], broken, *good[4 if torn == "glued" else 3:]]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n")
    t = read(path)
    assert t.format == "claude-code" and len(t.turns) == 4
    assert t.unreadable == [3]
    said = "\n".join(x.text for x in t.turns)
    assert [said.count(f"{w} {n}") for w, n in (("Question", 1), ("Answer", 2), ("Question", 3), ("Answer", 4),
                                                  ("Question", 5), ("Answer", 6))] == [1, 1, 0, 1, 1, 1]
    report = await Capturer(service, settings, "claude-code").capture(alice, t, key="k")
    assert report.unreadable_lines == 1 and report.episodes == len(t.turns) >= 4
    problems = (await _cursor(service, alice, "k")).problems
    assert [(x["what"], x["line"]) for x in problems] == [("unreadable line", 3)]


def test_line_separators_inside_json_are_no_line_ends() -> None:
    """JSON.stringify leaves U+2028 / U+0085 raw; `str.splitlines` tore such a line in two."""
    text = "\n".join([_cc("user", "a\u2028b\x85c\x0cd", 1), _cc("assistant", [{"type": "text", "text": "ok"}], 2)])
    t = parse_text(text + "\n")
    assert [x.text for x in t.turns] == ["a\u2028b\x85c\x0cd", "ok"] and t.unreadable == []


async def test_a_turn_the_store_refuses_is_skipped_alone(service: MemoryService, settings: Settings,
                                                         alice: Principal, tmp_path: Path, db_url: str) -> None:
    """The batch write is all-or-nothing for MCP callers; capture halves a refused batch until only
    the refused turn is left out, records why, and moves the cursor past it. The refusal is
    PostgreSQL's own (a trigger raising a data exception), as a constraint the validator does not
    know would."""
    import asyncpg

    conn = await asyncpg.connect(db_url)
    try:
        await conn.execute("""
            CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.content LIKE '%POISON%' THEN
                    RAISE EXCEPTION 'value refused by the store' USING ERRCODE = '22023';
                END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER refuse_poison BEFORE INSERT ON memories FOR EACH ROW EXECUTE FUNCTION refuse_poison();""")
    finally:
        await conn.close()
    turns = [_cc("user" if n % 2 else "assistant", f"Turn {n} POISON" if n == 5 else f"Turn {n} fine", n)
             for n in range(1, 11)]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(turns) + "\n")
    key = f"claude-code:{SESSION}"
    report = await Capturer(service, settings, "claude-code").capture(alice, read(path), key=key)
    assert (report.episodes, report.skipped_turns) == (9, 1)
    assert "POISON" not in " ".join(e.content for e in await _all(service, alice, ["episode"]))
    cursor = await _cursor(service, alice, key)
    assert cursor.turns == 10 and cursor.memory_ids[4] is None and sum(i is None for i in cursor.memory_ids) == 1
    [problem] = cursor.problems
    assert (problem["what"], problem["turn"]) == ("skipped", 4) and "refused by the store" in problem["reason"]
    again = await Capturer(service, settings, "claude-code").capture(alice, read(path), key=key)
    assert (again.new_turns, again.skipped_turns) == (0, 0)   # not retried forever


async def test_a_failure_of_ours_is_recorded_then_cleared(database, settings: Settings, alice: Principal) -> None:
    """The database goes away mid-way: the capture raises, the failure is in the status file for
    session start's notice (once) and `capture --status`; a later capture that works clears it."""
    from mcp_memory.capture import status

    service = await MemoryService.open(database, settings)
    t = read(FIXTURES / "claude_code_session.jsonl")
    await database.pool.close()
    with pytest.raises(Exception):  # noqa: B017 - whichever error the closed pool gives
        await Capturer(service, settings, "claude-code").capture(alice, t, key="claude-code:s1")
    [failure] = status.failures(settings)
    assert failure.key == "claude-code:s1" and failure.reason.startswith("database not available")
    line = status.notice(settings)
    assert line and line.startswith("mcp-memory: 1 session not captured (database not available)")
    assert status.notice(settings) is None and status.failures(settings)[0].reported


def test_capture_status_lists_failures_and_skipped_turns(db_url: str, tmp_path: Path) -> None:
    from mcp_memory.capture import status

    data = tmp_path / "data"
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([_cc("user", "Look at this binary.", 1), *_binary_cat(2), "{\"type\": \"us",
                               _cc("user", "Thanks.", 5)]) + "\n")
    common = ["--data-dir", str(data), "--user", "bob", "--project", "offsite", "--harness", "claude-code"]
    down = subprocess.run([CLI, "capture", str(path), *common, "--database-url", "postgresql://nobody@127.0.0.1:9/x"],
                          capture_output=True, text=True, timeout=120)
    assert down.returncode == 1 and "nothing captured: database not available" in down.stderr
    assert [f.key for f in status.failures(Settings(data_dir=data))] == [f"claude-code:{SESSION}"]

    listed = subprocess.run([CLI, "capture", "--status", *common, "--database-url", db_url],
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert f"claude-code:{SESSION}: database not available" in listed.stdout
    assert "No turn was cleaned" in listed.stdout
    doctor = subprocess.run([CLI, "doctor", *common[:2], "--database-url", db_url],
                            capture_output=True, text=True, timeout=120).stdout
    assert f"capture: 1 session(s) not captured: claude-code:{SESSION} (database not available" in doctor

    ok = subprocess.run([CLI, "capture", str(path), *common, "--database-url", db_url],
                        capture_output=True, text=True, timeout=180)
    assert ok.returncode == 0, ok.stderr
    # One summary line at INFO on stderr (MCP_MEMORY_LOG_LEVEL), old code logged nothing.
    assert [ln for ln in ok.stderr.splitlines() if "INFO" in ln and "captured claude-code:" in ln]
    after = subprocess.run([CLI, "capture", "--status", "--json", *common, "--database-url", db_url],
                           capture_output=True, text=True, timeout=120)
    shown = json.loads(after.stdout)
    assert shown["failures"] == [] and shown["database_error"] is None
    [cursor] = shown["transcripts"]
    assert sorted((x["what"], x.get("turn", x.get("line"))) for x in cursor["problems"]) == [
        ("cleaned", 1), ("unreadable line", 4)]
    text = subprocess.run([CLI, "capture", "--status", *common, "--database-url", db_url],
                          capture_output=True, text=True, timeout=120).stdout
    assert "No failed captures." in text and "turn 1 cleaned: NUL characters replaced" in text
    assert "line 4: not a JSON object" in text and f"({path})" in text
    doctor = subprocess.run([CLI, "doctor", *common[:2], "--database-url", db_url],
                            capture_output=True, text=True, timeout=120).stdout
    assert "capture: no failed captures" in doctor and "captured turns: 1 transcript(s) have turns cleaned" in doctor


async def test_a_capture_that_hangs_is_recorded(service: MemoryService, settings: Settings, alice: Principal,
                                                db_url: str) -> None:
    """Another run holds the transcript's lock and never lets go (the database answers nothing for
    this capture): the caller's deadline cancels it, the failure is recorded as ours, and the lock
    is not left behind for the next run."""
    import asyncpg

    from mcp_memory.capture import status

    key = f"claude-code:{SESSION}"
    holder = await asyncpg.connect(db_url)
    await holder.execute("SELECT pg_advisory_lock(hashtextextended($1, 0))",
                         f"mcp_memory.capture\x1f{alice.user_id}\x1f{key}")
    t = read(FIXTURES / "claude_code_session.jsonl")
    try:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(Capturer(service, settings, "claude-code").capture(alice, t, key=key), 1.0)
    finally:
        await holder.close()
    [failure] = status.failures(settings)
    assert failure.key == key and failure.reason.startswith("capture did not finish in time")
    report = await asyncio.wait_for(Capturer(service, settings, "claude-code").capture(alice, t, key=key), 60)
    assert report.episodes == 4 and status.failures(settings) == []


async def test_hostile_session_ids_cost_nothing(service: MemoryService, settings: Settings, alice: Principal,
                                                tmp_path: Path) -> None:
    """A session id of 5,000 characters with a NUL in it: old code failed every capture of the
    transcript (the cursor's key is in a btree index; the session tag and metadata held the NUL)."""
    path = tmp_path / "s.jsonl"
    hostile = "s\x00" + "x" * 5000
    path.write_text("\n".join([_cc("user", "Hello there.", 1, sessionId=hostile),
                               _cc("assistant", [{"type": "text", "text": "Hi."}], 2, sessionId=hostile)]) + "\n")
    t = read(path)
    capturer = Capturer(service, settings, "claude-code")
    report = await capturer.capture(alice, t, key=f"claude-code:{t.session_id}")
    assert report.episodes == 2 and len(report.transcript) <= 400
    assert (await capturer.capture(alice, read(path), key=f"claude-code:{t.session_id}")).new_turns == 0

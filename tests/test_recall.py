"""Auto-recall as the hooks give it: what was captured once counts once, a session is not given
again what its start block gave it, and nothing shown holds a secret. Sessions are captured
through the real capture path from Claude Code JSONL; recall runs against the real store."""

from __future__ import annotations

import json
import logging
import re
import stat
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mcp_memory.capture.capture import Capturer
from mcp_memory.capture.recall import Ledger, prompt_context, session_context
from mcp_memory.capture.transcripts import read
from mcp_memory.config import Settings
from mcp_memory.models import Principal, WriteItem
from mcp_memory.service import MemoryService

from .conftest import principal

ENTRY = re.compile(r'<memory id="([^"]+)" kind="([^"]+)"[^>]*>\n(.*?)\n</memory>', re.S)
TOKEN = "ghp_" + "R7kq2Wm9Xv4Lp8Zt3Nc6Hb1Jd5Fs0Gy2Qa7"


def entries(text: str) -> list[tuple[str, str, str]]:
    return ENTRY.findall(text)


@pytest.fixture
def me() -> Principal:
    return principal("alice", "claude-code", "shop")


async def capture(service: MemoryService, settings: Settings, p: Principal, tmp_path: Path, session: str,
                  turns: list[tuple[str, str]]) -> None:
    """One Claude Code session (a JSONL line per message), captured as the Stop hook captures it."""
    start = datetime(2026, 10, 5, 9, 0, tzinfo=UTC)
    lines = [json.dumps({"type": role, "sessionId": session, "cwd": "/home/priya/shop", "uuid": f"u{i}",
                         "timestamp": (start + timedelta(seconds=30 * i)).isoformat().replace("+00:00", "Z"),
                         "message": {"role": role, "content": text if role == "user"
                                     else [{"type": "text", "text": text}]}})
             for i, (role, text) in enumerate(turns)]
    path = tmp_path / f"{session}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    report = await Capturer(service, settings, "claude-code").capture(p, read(path), key=f"claude-code:{session}")
    assert report.episodes == len(turns) and report.facts >= 1


@pytest.fixture
async def formatter(service: MemoryService, settings: Settings, me: Principal, tmp_path: Path) -> None:
    """The issue's case: a preference, the turn it was said in, and the assistant saying it back."""
    await capture(service, settings, me, tmp_path, "11111111-aaaa-4000-8000-000000000001", [
        ("user", "Let's sort out the lint setup. I prefer black over autopep8 for formatting Python code."),
        ("assistant", "Got it: I'll format the Python code with black instead of autopep8 from now on."),
        ("user", "The staging database listens on port 6543 because pgbouncer sits in front of it."),
        ("assistant", "Updated the staging settings to port 6543."),
    ])


async def test_a_fact_its_episode_and_the_echo_are_one_entry(formatter: None, service: MemoryService,
                                                             settings: Settings, me: Principal) -> None:
    prompt = "Should I format this Python code with black or with autopep8?"
    text = await prompt_context(service, settings, me, prompt, "another-session")
    found = entries(text)
    assert len(found) == 1, text
    assert found[0][1] == "preference" and "I prefer black over autopep8" in found[0][2]
    # Without the prompt's vector (embedder late or off) full text alone recalls: grouped the same.
    late = await prompt_context(service, settings, me, prompt, "another-session", deadline=time.monotonic())
    assert [kind for _, kind, _ in entries(late)] == ["preference"], late


async def test_the_same_thing_said_in_two_sessions_is_one_entry(formatter: None, service: MemoryService,
                                                                settings: Settings, me: Principal,
                                                                tmp_path: Path) -> None:
    await capture(service, settings, me, tmp_path, "11111111-aaaa-4000-8000-000000000003", [
        ("user", "As I said before, I prefer black over autopep8 for formatting Python code."),
        ("assistant", "Right, black it is."),
    ])
    for i in (4120, 4121):   # a note kept twice, another ticket each time
        await service.write(me, f"Note {i}: the job queue needs a retry with backoff; owner Dana, ticket #{i * 7}.",
                            kind="note", scope="project")
    text = await prompt_context(service, settings, me, "Should I format this Python code with black or with autopep8?",
                                "another-session")
    assert len(entries(text)) == 1 and "I prefer black over autopep8" in text, text
    notes = await prompt_context(service, settings, me, "does the job queue retry with backoff?", "another-session")
    assert [kind for _, kind, _ in entries(notes)] == ["note"], notes


async def test_a_paraphrase_finds_the_fact(service: MemoryService, settings: Settings, me: Principal,
                                           tmp_path: Path) -> None:
    """The issue's miss: cosine 0.2-0.3 from the prompt to the fact and to the reply, under the
    floor for meaning alone; found because the reply also shares a word with the prompt
    ("formatting" / "formatter": one stem to us, two to the full-text stemmer), and the group is
    shown by its fact."""
    await capture(service, settings, me, tmp_path, "11111111-aaaa-4000-8000-000000000002", [
        ("user", "Morning! Let's get the lint setup sorted before we add more code. "
                 "I prefer black over autopep8, and ruff should do the linting."),
        ("assistant", "Got it: black for formatting instead of autopep8, and ruff for linting. "
                      "Let me look at the current config."),
        ("user", "The staging database listens on port 6543 because pgbouncer sits in front of it."),
        ("assistant", "Updated the staging settings to port 6543."),
    ])
    text = await prompt_context(service, settings, me, "Which Python formatter do I use?", "another-session")
    assert [(kind, body) for _, kind, body in entries(text)] == [
        ("preference", "I prefer black over autopep8, and ruff should do the linting.")], text
    assert await prompt_context(service, settings, me, "Write a limerick about penguins on a ski trip",
                                "another-session") == ""


async def test_what_session_start_gave_is_not_recalled_again(formatter: None, service: MemoryService,
                                                             settings: Settings, me: Principal) -> None:
    await service.write(me, "Production deploys happen only on Tuesdays after the standup.", kind="procedure",
                        pinned=True, priority=10, scope="user")
    start = await session_context(service, settings, me, "claude-sonnet-4-5", session_id="session-b")
    assert "Tuesdays" in start and "I prefer black over autopep8" in start   # pinned core, recent
    ask = "Should I format this Python code with black or with autopep8?"
    # Neither the fact nor its episode or the assistant's echo of it: the start block said it.
    assert await prompt_context(service, settings, me, ask, "session-b") == ""
    assert await prompt_context(service, settings, me, "Which day of the week can we deploy production?",
                                "session-b") == ""
    # Another session, whose start block was not shown, is given it.
    assert "I prefer black over autopep8" in await prompt_context(service, settings, me, ask, "session-c")
    # A new start block (compaction, resume) replaces what the session was given.
    await service.write(me, "Deploy freezes start two days before every public holiday.", kind="procedure",
                        pinned=True, priority=9, scope="user")
    freeze = "When do deploy freezes start before a public holiday?"
    assert "two days before" in await prompt_context(service, settings, me, freeze, "session-b")
    again = await session_context(service, settings, me, "claude-sonnet-4-5", session_id="session-b")
    assert "public holiday" in again
    assert await prompt_context(service, settings, me, freeze, "session-b") == ""


async def test_recalled_and_session_start_text_is_redacted(service: MemoryService, settings: Settings,
                                                           me: Principal, caplog: pytest.LogCaptureFixture) -> None:
    """Written through the service, as an agent's memory_write can: nothing redacts it on the way
    in, so the way out must, and says once which memories to forget."""
    plain = await service.write(me, f"The CI deploy token for the shop repository is {TOKEN}", kind="fact",
                                scope="project", title=f"deploy token {TOKEN}")
    pinned = await service.write(me, f"Pinned: the release bot authenticates with {TOKEN}", kind="procedure",
                                 pinned=True, priority=5, scope="user")
    with caplog.at_level(logging.WARNING, logger="mcp_memory.capture.recall"):
        start = await session_context(service, settings, me, None, session_id="s1")
    [line] = [r.getMessage() for r in caplog.records if r.name == "mcp_memory.capture.recall"]
    assert "2 memories shown redacted" in line and str(plain.memory.id) in line and str(pinned.memory.id) in line
    recalled = await prompt_context(service, settings, me, "Which token does CI use to deploy the shop repository?",
                                    "s2")
    assert len(entries(start)) == 2 and entries(recalled)
    for text in (start, recalled):
        assert TOKEN not in text and TOKEN[:12] not in text
        assert "[REDACTED" in text


async def test_a_ledger_that_cannot_be_kept_costs_nothing_but_the_dedup(
        formatter: None, service: MemoryService, settings: Settings, me: Principal, tmp_path: Path) -> None:
    ask = "Should I format this Python code with black or with autopep8?"
    await session_context(service, settings, me, None, session_id="s1")
    ledger = Ledger(settings, me, "s1")
    assert stat.S_IMODE(ledger.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(ledger.folder.stat().st_mode) == 0o700
    hostile = Ledger(settings, me, "../../../etc/passwd\x00")   # the id comes from the harness's JSON
    assert hostile.path.parent == ledger.folder and hostile.path.name.endswith(".json")
    ledger.path.write_text('{"ids": ["torn')   # a torn write, a crash mid-way
    assert "black over autopep8" in await prompt_context(service, settings, me, ask, "s1")
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("")
    where = settings.model_copy(update={"data_dir": blocked})   # the ledger's folder cannot be made
    assert "black over autopep8" in await session_context(service, where, me, None, session_id="s2")
    assert "black over autopep8" in await prompt_context(service, where, me, ask, "s2")


async def test_a_question_is_shown_by_its_reply(service: MemoryService, settings: Settings, me: Principal,
                                                tmp_path: Path) -> None:
    """A captured turn and the reply to it are one entry; when the turn only asks ("Can you find out
    why?"), the reply is what holds the answer, however the question ranks against the prompt."""
    await capture(service, settings, me, tmp_path, "11111111-aaaa-4000-8000-000000000005", [
        ("user", "The order confirmation emails sometimes go out twice. Can you find out why?"),
        ("assistant", "The task is enqueued in the view before the transaction commits, so a retried request "
                      "enqueues it again."),
        ("user", "I prefer one commit per fix, with the ticket number in the subject."),
        ("assistant", "Will do."),
    ])
    text = await prompt_context(service, settings, me, "why were customers getting their order confirmation mail "
                                "twice?", "another-session")
    assert [body for _, _, body in entries(text)][:1] == [
        "Assistant: The task is enqueued in the view before the transaction commits, so a retried request "
        "enqueues it again."], text


async def test_a_hit_counts_by_its_own_closeness_among_many_closer_notes(service: MemoryService, settings: Settings,
                                                                        me: Principal) -> None:
    """Whether a hit is close enough to the prompt is its own cosine, computed exactly. It was read
    off the 100 memories nearest the prompt, a list of its own: a store with more notes closer than
    the answer (here 200, nearly all of them) left the answer, found by its rarer word, out."""
    answer = await service.write(me, "The staging database sits behind pgbouncer, so connect on port 6543, not 5432.",
                                 kind="fact", scope="project")
    await service.write_many(me, [WriteItem(content=f"Note {i}: someone asked again which port the staging Postgres "
                                                    f"listens on; ticket #{i * 37 + 1000}.", kind="note")
                                  for i in range(200)])
    found = await service.recall_search(me, "what port does pgbouncer listen on for staging?", limit=20)
    assert found.cosine is not None and set(found.cosine) == {h.id for h in found.hits}
    text = await prompt_context(service, settings, me, "what port does pgbouncer listen on for staging?",
                                "another-session")
    shown = entries(text)
    assert str(answer.memory.id) in [i for i, _, _ in shown], text
    assert len(shown) == 2, text   # the notes, alike but for their numbers, count once


async def test_recall_searches_as_memory_search_does(service: MemoryService, settings: Settings,
                                                     me: Principal) -> None:
    """One search for both: recall's hits are memory_search's, with its stages (the words about
    time left out of what is matched, versions, the present-tense focus, the graph's keyed facts),
    never reranked; recall only chooses among them."""
    for text in ("Ana lives in Oslo, near the harbour.", "Ana moved to Lisbon last month.",
                 "Ana drives a Kia Niro.", "Ben lives in Porto."):
        await service.write(me, text, kind="fact", scope="project")
    for query in ("Where does Ana live these days?", "which car does Ana drive now?"):
        found = await service.recall_search(me, query, limit=10)
        searched = await service.search(me, query, limit=10)
        assert [h.id for h in found.hits] == [h.id for h in searched.hits]
        assert set(found.memories) == {h.id for h in found.hits}

"""Transcripts in, turns out: Claude Code session JSONL, OpenClaw session JSONL (or the message
list an OpenClaw hook event carries), and plain "Speaker: text" lines.

A turn is one speaker's uninterrupted contribution: Claude Code writes every content block of a
reply as its own line, and tool results come back as user lines, so consecutive lines of one
role merge, and tool calls / results are folded into the assistant turn as short summaries.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from .redact import marker_end, redact

Role = Literal["user", "assistant"]
Format = Literal["claude-code", "openclaw", "plain"]

TOOL_INPUT_CHARS = 120    # a tool call is shown as name(first characters of its input)
TOOL_RESULT_CHARS = 120   # a tool's output: its start and its length; the rest is cut (and not embedded)
ASSISTANT_NAMES = {"assistant", "ai", "claude", "bot", "agent", "model", "gpt", "openclaw", "system"}
USER_NAMES = {"user", "human", "me", "you", "customer"}


@dataclass
class Turn:
    role: Role
    text: str
    at: datetime | None = None
    speaker: str | None = None     # the name a plain transcript gave
    tools: list[str] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)   # secret kinds taken out of its tool summaries

    @property
    def digest(self) -> str:
        """Identifies the turn for delta tracking: who said what, when."""
        stamp = self.at.isoformat() if self.at else ""
        # surrogatepass: a lone surrogate from a JSON escape must not crash the digest (capture
        # cleans it before storing); for any other text this is sha256_hex, as cursors hold.
        raw = f"{self.role}\x1f{stamp}\x1f{self.text}".encode("utf-8", "surrogatepass")
        return hashlib.sha256(raw).hexdigest()[:16]

    def label(self) -> str:
        return self.speaker or self.role.capitalize()


@dataclass
class Transcript:
    format: Format
    turns: list[Turn]
    session_id: str | None = None
    cwd: str | None = None
    # Line numbers (1-based) of JSONL lines that are not JSON objects (torn by a crash or two
    # writers); each costs only itself. A last line still being written is not one of them.
    unreadable: list[int] = field(default_factory=list)


class TranscriptError(ValueError):
    """The file is not a transcript we can read."""


def _time(value: Any) -> datetime | None:
    if isinstance(value, int | float):  # OpenClaw messages carry epoch milliseconds
        try:
            return datetime.fromtimestamp(value / 1000 if value > 1e11 else value).astimezone()
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _cut(text: str, limit: int) -> str:
    """White space folded, then the first `limit` characters; a redaction marker the cut would
    split is kept whole. Redact before calling this: a secret across the cut would leave its start."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    end = marker_end(text, limit)
    return text if end >= len(text) else text[:end] + "…"


def _block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if isinstance(block, dict):
        if isinstance(block.get("text"), str):
            return block["text"]
        if "content" in block:
            return _blocks_text(block["content"])
    return ""


def _blocks_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (_block_text(b) for b in content) if t)
    return ""


def _redact_values(value: Any) -> Any:
    """Every string inside a tool's arguments redacted as the text it is (a key file's lines,
    a script), before JSON escapes its line breaks."""
    if isinstance(value, str):
        return redact(value)[0]
    if isinstance(value, dict):
        return {k: _redact_values(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_values(v) for v in value]
    return value


def _tool_call(name: Any, args: Any) -> str:
    """name(start of its input): the whole input redacted first, its values and then the JSON
    they make (`"password": "…"` is a secret only with its name), and only then cut."""
    shown = args if isinstance(args, str) else json.dumps(_redact_values(args), ensure_ascii=False, default=str)
    return f"[tool {redact(str(name))[0]}({_cut(redact(shown)[0], TOOL_INPUT_CHARS)})]"


def _tool_result(text: str, error: bool = False) -> str:
    label = "tool error" if error else "tool output"
    if not text.strip():
        return f"[{label}: empty]"
    return f"[{label}, {len(text)} chars: {_cut(redact(text)[0], TOOL_RESULT_CHARS)}]"


_MARKERS = re.compile(r"\[REDACTED:([a-z0-9\-]+)\]")


class _Builder:
    """Merges consecutive pieces of one role into a turn."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []

    def add(self, role: Role, text: str, at: datetime | None, *, tool: str | None = None) -> None:
        text = text.strip()
        if not text and not tool:
            return
        last = self.turns[-1] if self.turns else None
        if last is None or last.role != role:
            last = Turn(role=role, text="", at=at)
            self.turns.append(last)
        if tool:
            last.tools.append(tool)
            last.redacted.extend(k for k in _MARKERS.findall(tool) if k not in last.redacted)
        piece = tool or text
        last.text = f"{last.text}\n{piece}" if last.text else piece
        last.at = last.at or at

    def result(self) -> list[Turn]:
        # A turn of nothing but tool summaries still says what was done; one with no text at all goes.
        return [t for t in self.turns if t.text.strip()]


def _add_blocks(out: _Builder, role: str, content: Any, at: datetime | None, *,
                error_flag: str | None = None) -> None:
    """A message's content blocks, in either harness's naming (Claude Code: tool_use / input /
    tool_result; OpenClaw: toolCall / arguments / toolResult). Tool calls and their output
    belong to the assistant's work, whichever line carries them; `error_flag` is the key that
    marks a failed tool where the format has one. Thinking and images are not stored."""
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text":
            out.add(role, block.get("text") or "", at)
        elif btype in ("tool_use", "toolCall"):
            out.add("assistant", "", at, tool=_tool_call(block.get("name"), block.get("arguments", block.get("input"))))
        elif btype in ("tool_result", "toolResult"):
            failed = bool(block.get(error_flag)) if error_flag else False
            out.add("assistant", "", at, tool=_tool_result(_blocks_text(block.get("content")), failed))


# --- Claude Code ---------------------------------------------------------------------------------

def _claude_code(entries: Iterable[dict[str, Any]]) -> Transcript:
    """~/.claude/projects/<project>/<session>.jsonl: lines of type user / assistant (others:
    summary, system, file-history-snapshot… are not conversation), each with `message`
    (role, content: a string or blocks of text / thinking / tool_use / tool_result), `timestamp`,
    `sessionId`, `cwd`; `isSidechain` marks a subagent's lines, `isMeta` the harness's own."""
    out = _Builder()
    session = cwd = None
    for e in entries:
        session = session or e.get("sessionId")
        cwd = cwd or e.get("cwd")
        kind = e.get("type")
        if kind not in ("user", "assistant") or e.get("isSidechain") or e.get("isMeta"):
            continue
        message = e.get("message") or {}
        at = _time(e.get("timestamp"))
        content = message.get("content")
        if isinstance(content, str):
            if kind == "user" and content.lstrip().startswith(("<command-", "<local-command-")):
                continue  # slash-command bookkeeping, not something the user said
            out.add(kind, content, at)
            continue
        _add_blocks(out, kind, content, at, error_flag="is_error")
    return Transcript("claude-code", out.result(), session, cwd)


# --- OpenClaw ------------------------------------------------------------------------------------

def openclaw_messages(messages: Sequence[Any], out: _Builder | None = None,
                      at: datetime | None = None) -> list[Turn]:
    """Messages as OpenClaw keeps them (role user / assistant / toolResult, content a string or
    blocks of text / thinking / toolCall), from a transcript line or a hook event."""
    out = out or _Builder()
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        when = _time(message.get("timestamp")) or at
        content = message.get("content")
        if role in ("toolResult", "tool"):
            out.add("assistant", "", when, tool=_tool_result(_blocks_text(content), bool(message.get("isError"))))
            continue
        if role not in ("user", "assistant"):
            continue
        if isinstance(content, str):
            out.add(role, content, when)
            continue
        _add_blocks(out, role, content, when)
    return out.result()


def _openclaw(entries: Iterable[dict[str, Any]]) -> Transcript:
    """~/.openclaw/agents/<agent>/sessions/<session>.jsonl: a `session` line (id, timestamp,
    cwd), then `message` lines whose `message` has the role and content; model changes,
    compactions and custom events are not conversation."""
    out = _Builder()
    session = cwd = None
    for e in entries:
        if e.get("type") == "session":
            session = session or e.get("id")
            cwd = cwd or e.get("cwd")
        elif e.get("type") == "message" and isinstance(e.get("message"), dict):
            openclaw_messages([e["message"]], out, _time(e.get("timestamp")))
    return Transcript("openclaw", out.result(), session, cwd)


# --- plain text ----------------------------------------------------------------------------------

_SPEAKER = re.compile(r"^\s*(?:\[(?P<at>[^\]]{4,40})\]\s*)?(?P<name>[A-Za-z][\w .'-]{0,39}?)\s*:\s(?P<text>.*)$")


def _plain(text: str) -> Transcript:
    """"Speaker: text" lines, optionally "[2025-01-02 10:00] Speaker: text"; a line without a
    speaker continues the turn before it. Names like User / Human are the user, Assistant / AI /
    Claude the assistant; otherwise the first name seen is the user and any other the assistant."""
    turns: list[Turn] = []
    first: str | None = None
    for line in text.splitlines():
        match = _SPEAKER.match(line)
        if match and len(match["name"].split()) <= 3:
            name = match["name"].strip()
            low = name.lower()
            first = first or name
            role: Role = "assistant" if low in ASSISTANT_NAMES else "user" if low in USER_NAMES or name == first \
                else "assistant"
            speaker = None if low in ("user", "assistant") else name
            turns.append(Turn(role=role, text=match["text"].strip(), at=_time(match["at"]), speaker=speaker))
        elif turns and line.strip():
            turns[-1].text += "\n" + line.strip()
    return Transcript("plain", [t for t in turns if t.text.strip()])


# --- entry points --------------------------------------------------------------------------------

_DECODER = json.JSONDecoder()
SALVAGE_TRIES = 20   # starts of an object tried inside one broken line


def _salvage(line: str) -> dict[str, Any] | None:
    """A whole object at the end of a broken line: a writer that died mid-line leaves its torn
    start glued to the next writer's complete line."""
    at = line.find('{"', 1)
    for _ in range(SALVAGE_TRIES):
        if at < 0:
            return None
        try:
            value, end = _DECODER.raw_decode(line, at)
        except ValueError:
            value, end = None, 0
        if isinstance(value, dict) and not line[end:].strip():
            return value
        at = line.find('{"', at + 1)
    return None


def _json_lines(text: str) -> tuple[list[dict[str, Any]], list[int]] | None:
    """The lines as JSON objects and the numbers of the lines that are not, or None if this is
    not JSONL (no line, or fewer than half of them, is an object). A last line cut off mid-write
    (the harness is still appending) is left for the next run. Only \\n ends a line: JSON text
    may hold U+2028, U+0085 or a form feed raw, which `str.splitlines` would tear apart."""
    entries: list[dict[str, Any]] = []
    bad: list[int] = []
    numbered = [(n, line) for n, line in enumerate(text.split("\n"), 1) if line.strip()]
    for i, (n, line) in enumerate(numbered):
        try:
            value = json.loads(line)
        except ValueError:
            if i == len(numbered) - 1 and not text.endswith("\n"):
                break
            value = _salvage(line)
            if value is not None:
                entries.append(value)
            bad.append(n)
            continue
        if isinstance(value, dict):
            entries.append(value)
        else:
            bad.append(n)
    if not entries or len(bad) > len(entries):
        return None
    return entries, bad


def detect(entries: list[dict[str, Any]]) -> Format:
    for e in entries[:50]:
        if e.get("type") == "session" or (e.get("type") == "message" and isinstance(e.get("message"), dict)):
            return "openclaw"
        if e.get("type") in ("user", "assistant") and ("sessionId" in e or "uuid" in e):
            return "claude-code"
    return "claude-code"


def parse_text(text: str, fmt: Format | None = None) -> Transcript:
    if fmt == "plain":
        return _plain(text)
    lines = _json_lines(text) if text.lstrip().startswith("{") or fmt in ("claude-code", "openclaw") else None
    if lines is None:
        if fmt in ("claude-code", "openclaw"):
            raise TranscriptError(f"not a {fmt} transcript: expected one JSON object per line")
        return _plain(text)
    entries, unreadable = lines
    fmt = fmt or detect(entries)
    transcript = _openclaw(entries) if fmt == "openclaw" else _claude_code(entries)
    transcript.unreadable = unreadable
    return transcript


def read(path: Path, fmt: Format | None = None) -> Transcript:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise TranscriptError(f"transcript {path}: {exc.strerror or exc}") from None
    return parse_text(text, fmt)
